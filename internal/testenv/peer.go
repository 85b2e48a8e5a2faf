package testenv

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// PeerPath returns a path inside ../shared/peer (the peer implementation's
// interop data, DESIGN.md section 1.14), found from the module root. It
// skips t when the directory is missing, or fails it under
// RUNSTREAM_TEST_REQUIRE=1.
func PeerPath(t testing.TB, elem ...string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
	p := filepath.Join(append([]string{dir, "..", "shared", "peer"}, elem...)...)
	if _, err := os.Stat(p); err != nil {
		Missing(t, "the peer interop data (../shared/peer beside the checkout)")
	}
	return p
}

// PeerSchemas compiles the peer's v2 RunEventWrite and RunEventRecord
// schemas (with format assertions on).
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
