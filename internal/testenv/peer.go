package testenv

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Testdata returns a path in the repository's top-level testdata/, where
// copies of data from outside the repository live, each documented in
// testdata/README.md.
func Testdata(t testing.TB, elem ...string) string {
	t.Helper()
	return filepath.Join(append([]string{ModuleRoot(t), "testdata"}, elem...)...)
}

// KeyVectorsFile is the peer implementation's idempotency-key vectors,
// copied into testdata/peer (see testdata/README.md).
const KeyVectorsFile = "RunEvents.v2.0.1.idempotency_vectors.json"

// PeerDir returns the directory of the peer implementation's interop data
// (its JSON Schemas and key vectors): RUNSTREAM_PEER_DIR, relative to the
// repository's root when relative, by default ../shared/peer beside the
// checkout. explicit reports whether RUNSTREAM_PEER_DIR was set.
func PeerDir(t testing.TB) (dir string, explicit bool) {
	t.Helper()
	dir, explicit = os.LookupEnv("RUNSTREAM_PEER_DIR")
	if !explicit || dir == "" {
		dir, explicit = filepath.Join("..", "shared", "peer"), false
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(ModuleRoot(t), dir)
	}
	return dir, explicit
}

// PeerPath returns a path inside the peer's interop data (PeerDir). When
// the path is missing it skips t: the tests that read the peer's own files
// are an extra check, and a checkout with nothing beside it still passes.
// When RUNSTREAM_PEER_DIR was set (.ci/run sets it) a missing path fails t
// instead, so that CI cannot lose the check without noticing.
func PeerPath(t testing.TB, elem ...string) string {
	t.Helper()
	dir, explicit := PeerDir(t)
	p := filepath.Join(append([]string{dir}, elem...)...)
	if _, err := os.Stat(p); err != nil {
		if explicit {
			t.Fatalf("RUNSTREAM_PEER_DIR=%s is set but %s is missing (%v): point it at the peer's interop data, or unset it to skip the peer checks", dir, p, err)
		}
		t.Skipf("the peer's interop data is not at %s (set RUNSTREAM_PEER_DIR to check against it)", p)
	}
	return p
}

// PeerSchemas compiles the peer's v2 RunEventWrite and RunEventRecord
// schemas (with format assertions on), or skips t as PeerPath does.
func PeerSchemas(t testing.TB) (write, record *jsonschema.Schema) {
	t.Helper()
	dir := PeerPath(t, "schemas")
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no peer schemas in %s: %v", dir, err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	ids := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		id, _ := doc.(map[string]any)["$id"].(string)
		if err := c.AddResource(id, doc); err != nil {
			t.Fatal(err)
		}
		ids[filepath.Base(f)] = id
	}
	if write, err = c.Compile(ids["RunEventWrite.v2.0.schema.json"]); err != nil {
		t.Fatal(err)
	}
	if record, err = c.Compile(ids["RunEventRecord.v2.0.schema.json"]); err != nil {
		t.Fatal(err)
	}
	return write, record
}

// ValidateJSON validates a JSON document against sch.
func ValidateJSON(sch *jsonschema.Schema, doc []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return err
	}
	return sch.Validate(inst)
}
