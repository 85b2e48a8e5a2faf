package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// version is the release this binary is, set at link time
// (go build -ldflags "-X main.version=v1.2.3"); without it, the module
// version the Go toolchain recorded ("(devel)" for a build from a
// checkout).
var version string

// buildInfo is what the binary knows of its own build.
type buildInfo struct {
	Version   string
	Revision  string // the commit, "unknown" when built outside a VCS checkout (go run, go test)
	Modified  bool   // the checkout had uncommitted changes
	GoVersion string
}

// readBuildInfo reads version, commit and Go version from the build
// information the Go toolchain embeds (runtime/debug.ReadBuildInfo).
func readBuildInfo() buildInfo {
	b := buildInfo{Version: version, Revision: "unknown", GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		b.Version = cmp.Or(b.Version, "unknown")
		return b
	}
	b.Version = cmp.Or(b.Version, bi.Main.Version, "(devel)")
	b.GoVersion = cmp.Or(bi.GoVersion, b.GoVersion)
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// revisionLabel is the commit with "-dirty" when the tree had changes.
func (b buildInfo) revisionLabel() string {
	if b.Modified {
		return b.Revision + "-dirty"
	}
	return b.Revision
}

func (b buildInfo) write(w io.Writer) {
	mod := ""
	if b.Modified {
		mod = " (modified: built with uncommitted changes)"
	}
	fmt.Fprintf(w, "runstream %s\ncommit    %s%s\ngo        %s %s/%s\n", b.Version, b.Revision, mod, b.GoVersion, runtime.GOOS, runtime.GOARCH)
}

// buildInfoCollector is runstream_build_info{version,revision,goversion} 1,
// in every registry the commands build (newRegistry).
func buildInfoCollector(b buildInfo) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "runstream_build_info",
		Help:        "Always 1; the labels say which build of runstream this process runs (revision ends in -dirty for a build with uncommitted changes).",
		ConstLabels: prometheus.Labels{"version": b.Version, "revision": b.revisionLabel(), "goversion": b.GoVersion},
	})
	g.Set(1)
	return g
}

func runVersion(_ context.Context, env *environment, args []string) error {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprint(env.stderr, "Usage: runstream version (or runstream --version, runstream -v)\n\nPrints the version, the commit it was built from and the Go version.\n")
		return flag.ErrHelp
	}
	if len(args) > 0 {
		return usageError{fmt.Errorf("version takes no arguments, got %q", args)}
	}
	readBuildInfo().write(env.stdout)
	return nil
}
