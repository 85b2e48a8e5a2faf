package opstest_test

import (
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The test modules nested in the checkout (the console's browser tests,
// the OpenAPI contract test) build the main module's packages with their
// own dependency selection. Where a module compiled on both sides has a
// different version there (a newer golang.org/x/sys pulled in by a test
// dependency, say), every package above it is compiled twice, race
// instrumentation included: from an empty build cache that cost make test
// minutes. So each module that both sides compile must have one version.
var nestedTestModules = []string{
	"internal/httpapi/console/browsertest",
	"internal/httpapi/openapitest",
}

// TestNestedModules_CompileTheMainModulesVersions compares, for every
// nested test module, the versions of the modules whose packages it
// compiles (with its tests) against the main module's.
func TestNestedModules_CompileTheMainModulesVersions(t *testing.T) {
	root := moduleRoot(t)
	main := compiledModules(t, root)
	if len(main) < 10 {
		t.Fatalf("the main module compiles packages of %d modules; go list found too few: %v", len(main), main)
	}
	for _, dir := range nestedTestModules {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			nested := compiledModules(t, filepath.Join(root, dir))
			var differ []string
			for path, v := range nested {
				if mv, ok := main[path]; ok && mv != v {
					differ = append(differ, path+": "+v+" here, "+mv+" in the main module")
				}
			}
			sort.Strings(differ)
			if len(differ) > 0 {
				t.Errorf("%s compiles other versions than the main module of modules both build, so every package above them is compiled twice:\n  %s\n"+
					"raise the main module's requirement (go get MODULE@VERSION at the root, then go mod tidy here)",
					dir, strings.Join(differ, "\n  "))
			}
		})
	}
}

// compiledModules runs go list in dir and returns, for each module other
// than the standard library whose packages the module's packages and
// tests import, its version (the main and replaced modules have none).
func compiledModules(t *testing.T, dir string) map[string]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-test", "-f", "{{with .Module}}{{.Path}} {{.Version}}{{end}}", "./...")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list -deps -test ./... in %s: %v\n%s", dir, err, stderr)
	}
	mods := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, version, _ := strings.Cut(line, " ")
		if path != "" && version != "" {
			mods[path] = version
		}
	}
	return mods
}
