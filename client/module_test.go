package client_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// importerGo is the Go release an engine's module needs to import the
// client: the go line of the main module's go.mod, which is the highest of
// its dependencies' (golang.org/x/text, franz-go, the Prometheus client,
// ... declare go 1.26.0). client/README.md states it.
const importerGo = "1.26.0"

// TestModule_ImportableOnGo1260 builds an engine's module as a module of
// its own: go 1.26.0 in its go.mod and no toolchain line, requiring this
// module (replaced by the checkout), importing the client alone. go mod
// tidy must leave its go line as it is: a dependency that needed a later
// release (go 1.26.8 in this module's go.mod did) would raise it, and make
// every importer build with that exact toolchain or newer.
func TestModule_ImportableOnGo1260(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build an importing module: %v", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod); m == nil || string(m[1]) != importerGo {
		t.Errorf("go.mod's go line is not go %s (%q): every importer would need its release; name the release this repository builds with in a toolchain line, which importers ignore", importerGo, m)
	}

	dir := t.TempDir()
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("go.sum", string(sum))
	write("go.mod", "module example.com/engine\n\ngo "+importerGo+"\n\nrequire github.com/runstream/runstream v0.0.0\n\nreplace github.com/runstream/runstream => "+root+"\n")
	write("main.go", `package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/runstream/runstream/client"
)

func main() {
	c, err := client.New(client.Config{URL: "http://127.0.0.1:1", DisableFailOpen: true})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	run := c.Run(client.RunOptions{TenantID: "t", ProjectID: "p", EnvironmentID: "e", PlanID: "plan", PlanVersion: "1"})
	_, err = run.Step("s").Completed(context.Background(), client.StepCompleted{DurationMs: new(int64(1))})
	var ev client.Event
	fmt.Println(ev.RunID, errors.Is(err, client.ErrSchemaValidation))
}
`)
	env := append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod", "GOWORK=off")
	for _, args := range [][]string{{"mod", "tidy"}, {"build", "-o", os.DevNull, "."}} {
		cmd := exec.Command(goBin, args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s in a module importing the client: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	after, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(after), "\ngo "+importerGo+"\n") || strings.Contains(string(after), "toolchain") {
		t.Errorf("go mod tidy changed the importer's go line (a dependency needs a later release):\n%s", after)
	}
}
