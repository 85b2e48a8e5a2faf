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
//
// When RUNSTREAM_TEST_BINARY names an executable (make test builds the
// binary once and sets it), that is returned instead and dir is unused:
// every package that runs the binary would otherwise build it, several at
// once, each compiling every dependency again without the race detector
// (from a cold build cache, minutes of the suite). The binary is shared:
// callers run it and never change it.
func BuildRunstream(t testing.TB, dir string) string {
	t.Helper()
	if bin := os.Getenv("RUNSTREAM_TEST_BINARY"); bin != "" {
		if fi, err := os.Stat(bin); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			t.Fatalf("RUNSTREAM_TEST_BINARY=%s is not an executable file (%v): unset it to build cmd/runstream here", bin, err)
		}
		return bin
	}
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
