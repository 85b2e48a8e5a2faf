package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// ModuleRoot returns the directory of runstream's main module (the go.mod
// that declares github.com/runstream/runstream) above the test's working
// directory, passing over nested test modules such as the console's
// browser tests.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && isMainModule(b) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod of github.com/runstream/runstream above the test's directory")
		}
		dir = parent
	}
}

func isMainModule(gomod []byte) bool {
	for _, line := range strings.Split(string(gomod), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return f[1] == "github.com/runstream/runstream"
		}
	}
	return false
}

// BuildRunstream builds cmd/runstream into dir and returns the binary's
// path: a plain build, for tests that run the real binary as processes.
func BuildRunstream(t testing.TB, dir string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		// Not on PATH: the go command running this test sets GOROOT.
		goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	bin := filepath.Join(dir, "runstream")
	cmd := exec.Command(goBin, "build", "-o", bin, "./cmd/runstream")
	cmd.Dir = ModuleRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/runstream: %v\n%s", err, out)
	}
	return bin
}

// Tail returns the last n lines of a file, for failure messages (or why
// it could not be read).
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
