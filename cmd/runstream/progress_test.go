package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/testenv"
)

// Off a terminal (a buffer, a file) progress writes plain lines, never \r
// frames: one per lineEvery and a last one when done.
func TestProgress_PlainLinesOffTerminal(t *testing.T) {
	var out testenv.Buffer
	p := newProgress(&out, 100, "runs")
	if p.tty {
		t.Fatal("a buffer taken for a terminal")
	}
	p.lineEvery = 20 * time.Millisecond
	for i := range int64(100) {
		p.set(i + 1)
		if i == 49 {
			time.Sleep(30 * time.Millisecond) // one line due at the next set
		}
	}
	p.done()
	got := out.String()
	if strings.Contains(got, "\r") {
		t.Fatalf("\\r frames off a terminal: %q", got)
	}
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], " 51%  51/100 runs") || !strings.HasPrefix(lines[1], "100%  100/100 runs") {
		t.Fatalf("lines %q, want one at 51%% and the last at 100%%", lines)
	}

	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Fatal("a regular file taken for a terminal")
	}
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		defer tty.Close()
		if !isTerminal(tty) {
			t.Fatal("/dev/tty not taken for a terminal")
		}
	}
}

// On a terminal the bar is redrawn in place.
func TestProgress_BarOnTerminal(t *testing.T) {
	var out testenv.Buffer
	p := newProgress(&out, 10, "runs")
	p.tty = true
	p.set(5)
	time.Sleep(110 * time.Millisecond)
	p.set(10)
	p.done()
	got := out.String()
	if strings.Count(got, "\r[") != 2 || !strings.Contains(got, "100%  10/10 runs") || !strings.HasSuffix(got, "\n") {
		t.Fatalf("bar output %q", got)
	}
}
