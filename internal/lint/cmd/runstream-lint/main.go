// Command runstream-lint is staticcheck with runstream's own checks added
// (package internal/lint). It takes staticcheck's flags and reads
// staticcheck.conf at the repository's root; scripts/test.sh and `make
// lint` run it on every module of the repository. It is built from this
// module with the staticcheck version go.mod pins, so a fresh machine
// needs nothing but Go.
package main

import (
	"os"

	"github.com/runstream/runstream/internal/lint"

	"honnef.co/go/tools/lintcmd"
	"honnef.co/go/tools/lintcmd/version"
	"honnef.co/go/tools/simple"
	"honnef.co/go/tools/staticcheck"
	"honnef.co/go/tools/stylecheck"
	"honnef.co/go/tools/unused"
)

func main() {
	cmd := lintcmd.NewCommand("runstream-lint")
	cmd.SetVersion(version.Version, version.MachineVersion)
	cmd.ParseFlags(os.Args[1:])
	cmd.AddAnalyzers(simple.Analyzers...)
	cmd.AddAnalyzers(staticcheck.Analyzers...)
	cmd.AddAnalyzers(stylecheck.Analyzers...)
	cmd.AddAnalyzers(unused.Analyzer)
	cmd.AddAnalyzers(lint.Analyzers...)
	cmd.Run()
}
