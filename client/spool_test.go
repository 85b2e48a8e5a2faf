package client

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

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
