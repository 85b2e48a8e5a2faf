package opstest_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestArchitecturePackageTable keeps docs/ARCHITECTURE.md's package table
// true to the code: every package `go list` knows is in it once, nothing
// else is, and each package imports only packages of rows above its own
// (or its own row), which is the dependency rule the document states.
func TestArchitecturePackageTable(t *testing.T) {
	root := moduleRoot(t)
	rows := packageTable(t, filepath.Join(root, "docs", "ARCHITECTURE.md"))
	rowOf := map[string]int{}
	for i, pkgs := range rows {
		for _, p := range pkgs {
			if _, dup := rowOf[p]; dup {
				t.Errorf("package %s is in the table twice", p)
			}
			rowOf[p] = i
		}
	}
	pkgs := goList(t, root)
	for _, p := range pkgs {
		if _, ok := rowOf[p.rel]; !ok {
			t.Errorf("package %s is not in docs/ARCHITECTURE.md's package table", p.rel)
		}
	}
	listed := map[string]bool{}
	for _, p := range pkgs {
		listed[p.rel] = true
	}
	for p := range rowOf {
		if !listed[p] {
			t.Errorf("docs/ARCHITECTURE.md's package table names %s, which go list does not know", p)
		}
	}
	for _, p := range pkgs {
		for _, imp := range p.imports {
			if rowOf[imp] > rowOf[p.rel] {
				t.Errorf("%s imports %s, whose row is below its own in docs/ARCHITECTURE.md: move a row, or the dependency", p.rel, imp)
			}
		}
	}
}

type listedPackage struct {
	rel     string   // path in the module
	imports []string // the module's packages it imports (not its tests')
}

// goList lists the module's packages and their imports of each other.
func goList(t *testing.T, root string) []listedPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	modPath := modulePath(t, root)
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("reading go list: %v", err)
		}
		lp := listedPackage{rel: strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, modPath), "/")}
		for _, imp := range p.Imports {
			if rel, ok := strings.CutPrefix(imp, modPath+"/"); ok {
				lp.imports = append(lp.imports, rel)
			}
		}
		pkgs = append(pkgs, lp)
	}
	return pkgs
}

func modulePath(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if m, ok := strings.CutPrefix(line, "module "); ok {
			return strings.TrimSpace(m)
		}
	}
	t.Fatal("go.mod has no module line")
	return ""
}

// packageTable reads the "## Packages" table: each row's first cell names
// one or more packages in backquotes.
func packageTable(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pkgName := regexp.MustCompile("`([^`]+)`")
	var rows [][]string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == "## Packages"
		case in && strings.HasPrefix(line, "| `"):
			first := strings.SplitN(strings.TrimPrefix(line, "|"), "|", 2)[0]
			var pkgs []string
			for _, m := range pkgName.FindAllStringSubmatch(first, -1) {
				pkgs = append(pkgs, m[1])
			}
			rows = append(rows, pkgs)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatalf("%s has no package table under \"## Packages\"", path)
	}
	return rows
}
