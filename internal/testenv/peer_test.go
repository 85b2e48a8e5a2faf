package testenv

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestPeerCopies_Match compares the copies in testdata/peer with the peer's
// interop data they were taken from (testdata/README.md), when it is
// present: a change on the peer's side fails here, with what to do, instead
// of the copy going stale unnoticed. Without the peer's data it skips, as
// the schema checks do.
func TestPeerCopies_Match(t *testing.T) {
	copies := map[string][]string{
		KeyVectorsFile: {"vectors", KeyVectorsFile},
	}
	for name, orig := range copies {
		t.Run(name, func(t *testing.T) {
			ours, err := os.ReadFile(Testdata(t, "peer", name))
			if err != nil {
				t.Fatalf("the repository's copy: %v", err)
			}
			peerFile := PeerPath(t, orig...)
			theirs, err := os.ReadFile(peerFile)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(ours, theirs) {
				t.Errorf("testdata/peer/%s differs from %s: check what changed on the peer's side, then copy it over and update the date in testdata/README.md", name, peerFile)
			}
		})
	}
}

// TestPeerDir_RelativeToRoot: a relative RUNSTREAM_PEER_DIR is taken from
// the repository's root, whichever package's directory the test runs in.
func TestPeerDir_RelativeToRoot(t *testing.T) {
	t.Setenv("RUNSTREAM_PEER_DIR", "somewhere")
	dir, explicit := PeerDir(t)
	if want := filepath.Join(ModuleRoot(t), "somewhere"); dir != want || !explicit {
		t.Fatalf("PeerDir = %s, %v; want %s, true", dir, explicit, want)
	}
	t.Setenv("RUNSTREAM_PEER_DIR", "")
	dir, explicit = PeerDir(t)
	if want := filepath.Join(ModuleRoot(t), "..", "shared", "peer"); dir != want || explicit {
		t.Fatalf("PeerDir with RUNSTREAM_PEER_DIR empty = %s, %v; want the default %s, false", dir, explicit, want)
	}
}
