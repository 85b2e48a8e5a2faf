package client

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/testenv"
)

func spoolBody(run string, i int) []byte {
	return fmt.Appendf(nil, `{"eventId":"e%d","eventType":"StepStarted","runId":%q,"stepId":"s%d"}`, i, run, i)
}

// fillSpool writes n events over two runs to a fresh spool in dir and
// closes it.
func fillSpool(t *testing.T, dir string, n int) {
	t.Helper()
	s, err := openSpool(dir, DefaultMaxSpoolBytes, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := s.put(spoolBody("run"+strconv.Itoa(i%2), i), "run"+strconv.Itoa(i%2)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
}

func segPath(t *testing.T, dir string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "*"+segSuffix))
	if len(m) != 1 {
		t.Fatalf("segments %v, want one", m)
	}
	return m[0]
}

// frameOffsets is where each frame of a segment starts.
func frameOffsets(t *testing.T, path string) []int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for off := segHeaderLen; off < int64(len(b)); {
		_, n, err := readFrame(bytes.NewReader(b[off:]), int64(len(b))-off)
		if err != nil {
			t.Fatal(err)
		}
		offs = append(offs, off)
		off += n
	}
	return offs
}

func TestSpool_ReopenCounts(t *testing.T) {
	dir := t.TempDir()
	fillSpool(t, dir, 5)
	s, err := openSpool(dir, DefaultMaxSpoolBytes, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if s.pending.Load() != 5 || s.runs["run0"].queued != 3 || s.runs["run1"].queued != 2 {
		t.Errorf("pending %d, runs %+v %+v; want 5 = 3 + 2", s.pending.Load(), s.runs["run0"], s.runs["run1"])
	}
}

// TestSpool_Corrupt: a record in the middle that fails its checksum, or
// passes it but is not an event, is ErrSpoolCorrupt naming the file and
// the offset, and the spool's files are left exactly as they were.
func TestSpool_Corrupt(t *testing.T) {
	tests := []struct {
		name  string
		frame int // which frame to damage
		what  string
		mod   func(b []byte, off int64) []byte
	}{
		{"checksum", 1, "CRC32C", func(b []byte, off int64) []byte { b[off+frameHeaderLen+3] ^= 0xff; return b }},
		{"length", 2, "length", func(b []byte, off int64) []byte { copy(b[off:], []byte{0, 0, 0, 0}); return b }},
		{"last record's checksum", 3, "CRC32C", func(b []byte, off int64) []byte { b[len(b)-2] ^= 0x01; return b }},
		{"last record's length", 3, "CRC32C", func(b []byte, off int64) []byte { b[off] -= 1; return b[:len(b)-1] }},
		{"not an event", 0, "not an event", func(b []byte, off int64) []byte {
			body := []byte(`{"hello":"world"}`)
			return append(append(append([]byte{}, b[:off]...), appendFrame(nil, body)...), b[off+frameHeaderLen+int64(len(spoolBody("run0", 0))):]...)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			fillSpool(t, dir, 4)
			path := segPath(t, dir)
			off := frameOffsets(t, path)[tt.frame]
			b, _ := os.ReadFile(path)
			b = tt.mod(b, off)
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			before := dirContents(t, dir)
			_, err := openSpool(dir, DefaultMaxSpoolBytes, slog.New(slog.DiscardHandler))
			if !errors.Is(err, ErrSpoolCorrupt) {
				t.Fatalf("openSpool = %v, want ErrSpoolCorrupt", err)
			}
			for _, want := range []string{path, "offset " + strconv.FormatInt(off, 10), tt.what, "nothing was deleted"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if after := dirContents(t, dir); after != before {
				t.Errorf("the spool changed:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// dirContents is every file of dir but LOCK, with its bytes.
func dirContents(t *testing.T, dir string) string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range es {
		if e.Name() == lockName {
			continue
		}
		data, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		fmt.Fprintf(&b, "%s:%x;", e.Name(), data)
	}
	return b.String()
}

// TestSpool_TornTail: the last record cut short, its data missing (the
// file grew but holds zeros or stale bytes) is a write a crash interrupted:
// it is cut, with a warning, and the records before it are kept.
func TestSpool_TornTail(t *testing.T) {
	tests := []struct {
		name string
		mod  func(b []byte, last int64) []byte
	}{
		{"cut in the header", func(b []byte, last int64) []byte { return b[:last+3] }},
		{"cut in the body", func(b []byte, last int64) []byte { return b[:len(b)-5] }},
		{"body never written", func(b []byte, last int64) []byte {
			for i := last + frameHeaderLen; i < int64(len(b)); i++ {
				b[i] = 0
			}
			return b
		}},
		{"zeros", func(b []byte, last int64) []byte {
			for i := last; i < int64(len(b)); i++ {
				b[i] = 0
			}
			return b
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			fillSpool(t, dir, 4)
			path := segPath(t, dir)
			offs := frameOffsets(t, path)
			b, _ := os.ReadFile(path)
			if err := os.WriteFile(path, tt.mod(b, offs[3]), 0o600); err != nil {
				t.Fatal(err)
			}
			var logs testenv.Buffer
			s, err := openSpool(dir, DefaultMaxSpoolBytes, slog.New(slog.NewTextHandler(&logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			if s.pending.Load() != 3 {
				t.Errorf("pending %d, want the 3 whole records", s.pending.Load())
			}
			if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "torn") {
				t.Errorf("no warning about the torn record: %q", logs.String())
			}
			// Appends go on after the cut, and the spool reads whole.
			if err := s.put(spoolBody("run9", 9), "run9"); err != nil {
				t.Fatal(err)
			}
			s.close()
			if got := len(frameOffsets(t, path)); got != 4 {
				t.Errorf("%d records after the cut and one more put, want 4", got)
			}
		})
	}
}

func TestSpool_Locked(t *testing.T) {
	dir := t.TempDir()
	s, err := openSpool(dir, DefaultMaxSpoolBytes, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	_, err = openSpool(dir, DefaultMaxSpoolBytes, slog.New(slog.DiscardHandler))
	if !errors.Is(err, ErrSpoolLocked) || !strings.Contains(err.Error(), "process "+strconv.Itoa(os.Getpid())) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second open = %v, want ErrSpoolLocked naming %s and this process", err, dir)
	}
}

// FuzzReadFrame: the record decoder never panics, and what it accepts
// encodes back to the same bytes.
func FuzzReadFrame(f *testing.F) {
	f.Add(appendFrame(nil, spoolBody("r", 1)))
	f.Add(appendFrame(nil, []byte(`{}`)))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{255, 255, 255, 255, 1, 2, 3, 4, 5})
	f.Add(append(appendFrame(nil, []byte(`{"runId":"a","eventType":"X"}`)), 1, 2, 3))
	f.Fuzz(func(t *testing.T, data []byte) {
		body, n, err := readFrame(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			if body != nil || n != 0 {
				t.Fatalf("an error with a body or a size: %v", err)
			}
			return
		}
		if n > int64(len(data)) {
			t.Fatalf("size %d past the data's %d bytes", n, len(data))
		}
		if got := appendFrame(nil, body); !bytes.Equal(got, data[:n]) {
			t.Fatalf("re-encoded %x, read %x", got, data[:n])
		}
		_, _ = recordRun(body)
	})
}

// TestSpool_DirCreated0700: a SpoolDir that does not exist is created
// 0700, whatever the umask allows.
func TestSpool_DirCreated0700(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "spool")
	s, err := openSpool(dir, DefaultMaxSpoolBytes, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	fi, err := os.Lstat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		t.Errorf("the spool directory was created %04o, want 0700", perm)
	}
}

// needRoot skips a test that chowns files to another user (the tests run
// as root in CI: scripts/test.sh).
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to give files to another user (uid 65534, nobody)")
	}
}

const nobody = 65534

// TestSpool_UnsafeDir: a spool directory another local user could write
// in, or redirect, is ErrSpoolUnsafe saying what is wrong and how to fix
// it, and nothing is created in it.
func TestSpool_UnsafeDir(t *testing.T) {
	tests := []struct {
		name  string
		root  bool
		setup func(t *testing.T, dir string) string // returns the SpoolDir to open
		want  []string
	}{
		{"world-writable", false, func(t *testing.T, dir string) string {
			must(t, os.Chmod(dir, 0o777))
			return dir
		}, []string{"writable by its group or by others", "mode 0777", "chmod 0700"}},
		{"world-writable sticky", false, func(t *testing.T, dir string) string {
			must(t, os.Chmod(dir, 0o777|os.ModeSticky))
			return dir
		}, []string{"writable by its group or by others", "chmod 0700"}},
		{"group-writable", false, func(t *testing.T, dir string) string {
			must(t, os.Chmod(dir, 0o770))
			return dir
		}, []string{"mode 0770", "chmod 0700"}},
		{"owned by another user", true, func(t *testing.T, dir string) string {
			must(t, os.Chown(dir, nobody, nobody))
			return dir
		}, []string{"owned by uid 65534", "chown 0 "}},
		{"symbolic link", false, func(t *testing.T, dir string) string {
			link := filepath.Join(t.TempDir(), "link")
			must(t, os.Symlink(dir, link))
			return link
		}, []string{"is a symbolic link", "real directory"}},
		{"a file", false, func(t *testing.T, dir string) string {
			f := filepath.Join(dir, "file")
			must(t, os.WriteFile(f, nil, 0o600))
			return f
		}, []string{"not a directory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.root {
				needRoot(t)
			}
			dir := filepath.Join(t.TempDir(), "spool")
			must(t, os.Mkdir(dir, 0o700))
			spoolDir := tt.setup(t, dir)
			_, err := openSpool(spoolDir, DefaultMaxSpoolBytes, slog.New(slog.DiscardHandler))
			if !errors.Is(err, ErrSpoolUnsafe) {
				t.Fatalf("openSpool = %v, want ErrSpoolUnsafe", err)
			}
			for _, want := range append(tt.want, spoolDir) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if es, _ := os.ReadDir(dir); len(es) > 0 && tt.name != "a file" {
				t.Errorf("the spool directory holds %v, want nothing created", es)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestSpool_PlantedFiles: files planted in the spool directory (while it
// was writable by others, before it was made 0700) are ErrSpoolUnsafe
// naming the file; nothing is read, delivered or written through them.
func TestSpool_PlantedFiles(t *testing.T) {
	segment := segName(1)
	tests := []struct {
		name string
		root bool
		// plant sets up dir (a 0700 directory of ours, with one event of
		// run0 spooled when fill is set) and outside (a directory beside
		// it); it returns the file that must stay unchanged, if any.
		fill  bool
		plant func(t *testing.T, dir, outside string) string
		want  string
	}{
		{"LOCK symlink to a victim", false, false, func(t *testing.T, dir, outside string) string {
			victim := filepath.Join(outside, "victim")
			must(t, os.WriteFile(victim, []byte("precious\n"), 0o600))
			must(t, os.Symlink(victim, filepath.Join(dir, lockName)))
			return victim
		}, "LOCK is a symbolic link"},
		{"LOCK symlink to a file inside", false, false, func(t *testing.T, dir, outside string) string {
			victim := filepath.Join(dir, "notes")
			must(t, os.WriteFile(victim, []byte("precious\n"), 0o600))
			must(t, os.Symlink("notes", filepath.Join(dir, lockName)))
			return victim
		}, "LOCK is a symbolic link"},
		{"LOCK hard link to a victim", false, false, func(t *testing.T, dir, outside string) string {
			victim := filepath.Join(outside, "victim")
			must(t, os.WriteFile(victim, []byte("precious\n"), 0o600))
			must(t, os.Link(victim, filepath.Join(dir, lockName)))
			return victim
		}, "LOCK has 2 hard links"},
		{"segment symlink", false, false, func(t *testing.T, dir, outside string) string {
			// A whole, valid segment elsewhere, linked in.
			fillSpool(t, outside, 2)
			must(t, os.Symlink(filepath.Join(outside, segment), filepath.Join(dir, segment)))
			return filepath.Join(outside, segment)
		}, segment + " is a symbolic link"},
		{"segment of another user", true, true, func(t *testing.T, dir, outside string) string {
			must(t, os.Chown(filepath.Join(dir, segment), nobody, nobody))
			return filepath.Join(dir, segment)
		}, segment + " is owned by uid 65534"},
		{"segment writable by others", false, true, func(t *testing.T, dir, outside string) string {
			must(t, os.Chmod(filepath.Join(dir, segment), 0o666))
			return filepath.Join(dir, segment)
		}, segment + " is writable by its group or by others"},
		{"cursor symlink", false, true, func(t *testing.T, dir, outside string) string {
			victim := filepath.Join(outside, "victim")
			must(t, os.WriteFile(victim, []byte("precious\n"), 0o600))
			must(t, os.Symlink(victim, filepath.Join(dir, cursorName)))
			return victim
		}, cursorName + " is a symbolic link"},
		{"segment FIFO", false, false, func(t *testing.T, dir, outside string) string {
			must(t, syscall.Mkfifo(filepath.Join(dir, segment), 0o600))
			return ""
		}, segment + " is not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.root {
				needRoot(t)
			}
			dir, outside := t.TempDir(), t.TempDir()
			if tt.fill {
				fillSpool(t, dir, 1)
			}
			victim := tt.plant(t, dir, outside)
			var before []byte
			if victim != "" {
				before, _ = os.ReadFile(victim)
			}
			_, err := openSpool(dir, DefaultMaxSpoolBytes, slog.New(slog.DiscardHandler))
			if !errors.Is(err, ErrSpoolUnsafe) {
				t.Fatalf("openSpool = %v, want ErrSpoolUnsafe", err)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), dir) {
				t.Errorf("error %q does not say %q of %s", err, tt.want, dir)
			}
			if victim != "" {
				if after, _ := os.ReadFile(victim); !bytes.Equal(after, before) {
					t.Errorf("%s changed: %q, was %q", victim, after, before)
				}
			}
		})
	}
}

// TestSpool_PlantedEventNeverDelivered: an event another local user wrote
// in a world-writable spool directory is never sent with the Client's
// token: the directory is refused, and once it is made 0700 the planted
// segment, still that user's, is refused too.
func TestSpool_PlantedEventNeverDelivered(t *testing.T) {
	needRoot(t)
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	// The neighbour's spool, written as the client would, then given away.
	dir := t.TempDir()
	fillSpool(t, dir, 3)
	es, _ := os.ReadDir(dir)
	for _, e := range es {
		must(t, os.Chown(filepath.Join(dir, e.Name()), nobody, nobody))
	}
	must(t, os.Chmod(dir, 0o777))
	cfg := Config{URL: srv.URL, SpoolDir: dir, DrainInterval: time.Millisecond, Logger: slog.New(slog.DiscardHandler)}
	if c, err := New(cfg); !errors.Is(err, ErrSpoolUnsafe) || !strings.Contains(err.Error(), "mode 0777") {
		if c != nil {
			c.Close()
		}
		t.Fatalf("New on a 0777 directory = %v, want ErrSpoolUnsafe for its mode", err)
	}
	must(t, os.Chmod(dir, 0o700))
	if c, err := New(cfg); !errors.Is(err, ErrSpoolUnsafe) || !strings.Contains(err.Error(), "owned by uid 65534") {
		if c != nil {
			c.Close()
		}
		t.Fatalf("New on the directory made 0700 = %v, want ErrSpoolUnsafe for the planted segment", err)
	}
	time.Sleep(20 * time.Millisecond)
	if n := requests.Load(); n != 0 {
		t.Errorf("the API got %d requests, want none", n)
	}
}

// TestSpool_PlantedTmpAndRejected: a symbolic link planted as cursor.tmp or
// rejected.ndjson, files the spool creates later, is never written
// through: cursor.tmp is replaced, rejected.ndjson refused.
func TestSpool_PlantedTmpAndRejected(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	fillSpool(t, dir, 2)
	victim := filepath.Join(outside, "victim")
	must(t, os.WriteFile(victim, []byte("precious\n"), 0o600))
	s, err := openSpool(dir, DefaultMaxSpoolBytes, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	must(t, os.Symlink(victim, filepath.Join(dir, cursorName+".tmp")))
	must(t, os.Symlink(victim, filepath.Join(dir, rejectedName)))
	r := s.readFrom()
	rec, ok, err := r.read()
	r.close()
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := s.advance(rec.end, []consumed{{runID: rec.runID}}, nil); err != nil {
		t.Fatalf("advance with a planted cursor.tmp: %v", err)
	}
	if err := s.reject(rec, errors.New("refused")); !errors.Is(err, ErrSpoolUnsafe) {
		t.Errorf("reject through a planted rejected.ndjson = %v, want ErrSpoolUnsafe", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
		t.Errorf("the victim changed: %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(dir, cursorName)); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("cursor: %v, %v; want a regular file", fi, err)
	}
}

// TestSpool_OverCapOnOpen: a spool holding more than MaxSpoolBytes (written
// with a larger one) is ErrSpoolFull before it is read, saying how much it
// holds and what to set; with the cap raised it opens.
func TestSpool_OverCapOnOpen(t *testing.T) {
	dir := t.TempDir()
	s, err := openSpool(dir, DefaultMaxSpoolBytes, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	body := spoolBody("run0", 0)
	body = append(body[:len(body)-1], []byte(`,"payload":{"pad":"`+strings.Repeat("x", 1000)+`"}}`)...)
	for range 100 {
		must(t, s.put(body, "run0"))
	}
	must(t, s.close())
	size := fileSize(t, segPath(t, dir))
	before := dirContents(t, dir)
	_, err = openSpool(dir, minSpoolBytes, slog.New(slog.DiscardHandler))
	if !errors.Is(err, ErrSpoolFull) {
		t.Fatalf("openSpool over the cap = %v, want ErrSpoolFull", err)
	}
	for _, want := range []string{dir, fmt.Sprintf("holds %d bytes", size), fmt.Sprintf("MaxSpoolBytes (%d)", minSpoolBytes), fmt.Sprintf("at least %d", size)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if after := dirContents(t, dir); after != before {
		t.Error("the spool changed")
	}
	s, err = openSpool(dir, size, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("openSpool with MaxSpoolBytes = its size: %v", err)
	}
	defer s.close()
	if s.pending.Load() != 100 {
		t.Errorf("pending %d, want 100", s.pending.Load())
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
