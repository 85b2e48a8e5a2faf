// Package testmetrics holds each package's metric list to its code: a
// package's TestMetricsDoc registers its metrics on a [Names] and calls
// [CheckDoc], which compares them with the package comment's list. It is
// apart from package testenv so that the modules nested in the repository
// that use testenv (the console's browser tests) need not require
// Prometheus.
package testmetrics

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Names is a prometheus.Registerer that records the name of every
// metric registered on it. It reads each collector's descriptions, so
// vectors count before they have a child (a registry's Gather leaves them
// out until then). Pass it where a component takes its Registerer.
type Names struct {
	mu    sync.Mutex
	names map[string]bool
}

var _ prometheus.Registerer = (*Names)(nil)

// fqName reads a description's metric name: prometheus.Desc exports none,
// and its String is stable ("Desc{fqName: \"...\", ...").
var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// Register records the names of c's metrics.
func (m *Names) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.names == nil {
		m.names = map[string]bool{}
	}
	for d := range ch {
		if sm := fqName.FindStringSubmatch(d.String()); sm != nil {
			m.names[sm[1]] = true
		}
	}
	return nil
}

// MustRegister records the names of cs's metrics.
func (m *Names) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		_ = m.Register(c)
	}
}

// Unregister does nothing: a name once registered stays recorded.
func (m *Names) Unregister(prometheus.Collector) bool { return true }

// Names returns the recorded names, sorted.
func (m *Names) Names() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.names))
	for n := range m.names {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// docMetric is a metric name in a package doc's metric list.
var docMetric = regexp.MustCompile(`\brunstream_[a-z0-9_]+`)

// CheckDoc fails t unless the metric list in the package comment of
// the Go package in dir names exactly the metrics in registered (what the
// package registers on a fresh registry: [Names.Names]). The list is
// every runstream_ name from the comment's first line that starts with
// "Metrics" (or the heading "# Metrics") to the end of the comment or its
// next heading; labels after a name ("{result=...}") are not compared.
func CheckDoc(t testing.TB, dir string, registered []string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("reading the package in %s: %v", dir, err)
	}
	fset := token.NewFileSet()
	var doc string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatalf("parsing %s: %v", filepath.Join(dir, name), err)
		}
		if f.Doc != nil {
			doc += f.Doc.Text()
		}
	}
	if doc == "" {
		t.Fatalf("the package in %s has no package comment", dir)
	}
	var listed []string
	in := false
	for line := range strings.Lines(doc) {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "Metrics") || trimmed == "# Metrics":
			in = true
		case in && strings.HasPrefix(trimmed, "# "):
			in = false
		}
		if in {
			listed = append(listed, docMetric.FindAllString(line, -1)...)
		}
	}
	if len(listed) == 0 {
		t.Fatalf("the package comment in %s lists no metrics (a paragraph starting with \"Metrics\"); it registers %v", dir, registered)
	}
	slices.Sort(listed)
	listed = slices.Compact(listed)
	for _, n := range registered {
		if !slices.Contains(listed, n) {
			t.Errorf("%s registers %s, which its package comment's metric list does not name", dir, n)
		}
	}
	for _, n := range listed {
		if !slices.Contains(registered, n) {
			t.Errorf("the package comment in %s lists %s, which the package does not register", dir, n)
		}
	}
}
