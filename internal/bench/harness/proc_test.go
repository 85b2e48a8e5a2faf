package harness

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestProcKB reads the "Key: N kB" lines procMemory and dirtyMB need, and
// reports a key that is absent, unreadable or in a file that is not there
// as not found.
func TestProcKB(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meminfo")
	if err := os.WriteFile(path, []byte("MemTotal:       24683656 kB\nDirty:              1024 kB\nWriteback:  lots kB\nVmRSS:\t  2048 kB\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	kb, found := ProcKB(path, "Dirty", "Writeback", "VmRSS", "VmHWM")
	if want := []uint64{1024, 0, 2048, 0}; !slices.Equal(kb, want) {
		t.Errorf("kB = %v, want %v", kb, want)
	}
	if want := []bool{true, false, true, false}; !slices.Equal(found, want) {
		t.Errorf("found = %v, want %v", found, want)
	}
	kb, found = ProcKB(filepath.Join(t.TempDir(), "absent"), "Dirty")
	if kb[0] != 0 || found[0] {
		t.Errorf("absent file: %v %v, want 0, not found", kb, found)
	}
	if rss, hwm := ProcMemory(path); rss != 2048<<10 || hwm != 0 {
		t.Errorf("ProcMemory = %d, %d; want %d, 0", rss, hwm, 2048<<10)
	}
}
