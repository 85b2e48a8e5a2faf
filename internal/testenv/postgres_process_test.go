package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// Kill waits on the shared memory id the postmaster recorded: the parser
// must find it where Postgres 15 writes it.
func TestPostmasterShmID(t *testing.T) {
	dir := t.TempDir()
	pid := filepath.Join(dir, "postmaster.pid")
	body := "7162\n/tmp/data\n1795773282\n34671\n/tmp\n127.0.0.1\n  9989981        36\nready   \n"
	if err := os.WriteFile(pid, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := postmasterShmID(pid); got != 36 {
		t.Fatalf("shm id %d, want 36", got)
	}
	if got := postmasterShmID(filepath.Join(dir, "missing")); got != -1 {
		t.Fatalf("no file: %d, want -1", got)
	}
	if shmAttached(-5) {
		t.Fatal("a segment that does not exist has no attachments")
	}
}
