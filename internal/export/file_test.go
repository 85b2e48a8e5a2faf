package export_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/export"
	"github.com/runstream/runstream/store"
)

// TestCreate_WritesOnlyARegularFileOfItsOwn: --out FILE and FILE.partial
// must each be absent or a regular file with one link. A planted
// FILE.partial symlink (the export wrote through it) or hard link, and a
// FILE that is a symlink, a FIFO, a directory or a device node (the
// rename replaced it), are refused before anything is written, for a
// fresh export and a resumed one alike, and the victim is untouched; a
// FIFO does not block the open. What takes FILE's name while the export
// runs is not replaced by Finish.
func TestCreate_WritesOnlyARegularFileOfItsOwn(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	const precious = "precious\n"
	if err := os.WriteFile(victim, []byte(precious), 0o600); err != nil {
		t.Fatal(err)
	}
	plant := map[string]func(p string) error{
		"a symbolic link": func(p string) error { return os.Symlink(victim, p) },
		"a dangling link": func(p string) error { return os.Symlink(filepath.Join(dir, "nowhere"), p) },
		"a hard link":     func(p string) error { return os.Link(victim, p) },
		"a FIFO":          func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"a directory":     func(p string) error { return os.Mkdir(p, 0o700) },
		"a device node":   func(p string) error { return syscall.Mknod(p, syscall.S_IFCHR|0o600, 0x0103) }, // /dev/null's 1:3
	}
	for what, mk := range plant {
		for _, where := range []string{"", export.PartialSuffix} {
			for _, resume := range []bool{false, true} {
				out := filepath.Join(dir, fmt.Sprintf("%s-%s-%v-out", strings.ReplaceAll(what, " ", "_"), where, resume))
				if err := mk(out + where); err != nil {
					if what == "a device node" && os.Geteuid() != 0 {
						continue // only root makes one
					}
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() {
					f, err := export.Create(out, resume, store.AuditPosition{})
					if err == nil {
						f.Suspend()
					}
					done <- err
				}()
				select {
				case err := <-done:
					if err == nil || !strings.Contains(err.Error(), "an export writes only a regular file of its own") {
						t.Errorf("--out with %s at %s (resume %v): %v, want a refusal naming it", what, out+where, resume, err)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("--out with %s at %s: Create blocked", what, out+where)
				}
				if b, _ := os.ReadFile(victim); string(b) != precious {
					t.Fatalf("--out with %s at %s changed the victim: %q", what, out+where, b)
				}
				if fi, err := os.Lstat(out + where); err != nil || fi.Mode().IsRegular() && what != "a hard link" {
					t.Fatalf("--out with %s at %s: it was replaced (%v, %v)", what, out+where, fi, err)
				}
			}
		}
	}

	// A plain export works, and Finish does not replace what took its
	// name meanwhile.
	out := filepath.Join(dir, "good.ndjson")
	f, err := export.Create(out, false, store.AuditPosition{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Writer().Write([]byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	if err := f.Finish(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(out); string(b) != "{}\n" {
		t.Fatalf("the export wrote %q", b)
	}
	late := filepath.Join(dir, "late.ndjson")
	if f, err = export.Create(late, false, store.AuditPosition{}); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, late); err != nil {
		t.Fatal(err)
	}
	if err := f.Finish(); err == nil || !strings.Contains(err.Error(), "a symbolic link") {
		t.Fatalf("Finish onto a link planted meanwhile: %v, want a refusal", err)
	}
	if fi, err := os.Lstat(late); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("Finish replaced the planted link: %v %v", fi, err)
	}
}
