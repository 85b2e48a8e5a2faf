// Package lint holds runstream's own checks, which run with staticcheck's
// in one command (internal/lint/cmd/runstream-lint, run by `make lint` and
// `make test`; staticcheck.conf at the repository's root says which checks
// run). They enforce rules of the project's Go style that no stock check
// covers:
//
//   - RS1001: no bare time.Sleep in product code. A wait there must end
//     when its context does (retry.Sleep, or a timer in a select on
//     ctx.Done()), or shutdown waits for it. Tests may sleep, and so may
//     internal/testenv, the tests' helpers.
//   - RS1002: no fmt.Print, Printf or Println outside cmd/: packages write
//     to the io.Writer or *slog.Logger they are given, never to the
//     process's standard output.
//   - RS1003: no slog.Default, and no log.Print*, log.Fatal* or log.Panic*
//     outside cmd/: packages take the *slog.Logger main builds.
//
// The rules are for product code: tests are exempt (an example prints
// what its Output comment checks, a helper process writes to its stdout, a
// test may sleep). Each analyzer looks at every use of a forbidden
// function, a call or not, so that passing time.Sleep as a value is caught
// too.
package lint

import (
	"go/ast"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
	"honnef.co/go/tools/analysis/lint"
)

// Analyzers are the checks of this package, for lintcmd.
var Analyzers = []*lint.Analyzer{
	{
		Analyzer: &analysis.Analyzer{
			Name: "RS1001",
			Doc:  "no bare time.Sleep in product code",
			Run:  forbid(isTestCode, "use retry.Sleep(ctx, d) or a timer in a select on ctx.Done(), so the wait ends with its context", "time.Sleep"),
		},
		Doc: &lint.RawDocumentation{
			Title:    "No bare time.Sleep in product code",
			Text:     "A wait in product code must end when its context is cancelled, or shutdown waits for it: use retry.Sleep(ctx, d), or a timer in a select on ctx.Done(). Tests and internal/testenv may sleep.",
			Severity: lint.SeverityError,
		},
	},
	{
		Analyzer: &analysis.Analyzer{
			Name: "RS1002",
			Doc:  "no fmt.Print family outside cmd/",
			Run:  forbid(isCommandOrTest, "write to the io.Writer or *slog.Logger the package is given; only cmd/ writes to standard output", "fmt.Print", "fmt.Printf", "fmt.Println"),
		},
		Doc: &lint.RawDocumentation{
			Title:    "No fmt.Print, Printf or Println outside cmd/",
			Text:     "Packages write to the io.Writer or *slog.Logger they are given, never to the process's standard output; only the commands in cmd/ do.",
			Severity: lint.SeverityError,
		},
	},
	{
		Analyzer: &analysis.Analyzer{
			Name: "RS1003",
			Doc:  "no default loggers outside cmd/",
			Run: forbid(isCommandOrTest, "take a *slog.Logger from the caller (a Config field or a parameter); only cmd/ builds loggers",
				"log/slog.Default", "log.Print", "log.Printf", "log.Println", "log.Fatal", "log.Fatalf", "log.Fatalln", "log.Panic", "log.Panicf", "log.Panicln"),
		},
		Doc: &lint.RawDocumentation{
			Title:    "No slog.Default or log.Print*, log.Fatal*, log.Panic* outside cmd/",
			Text:     "Packages log through the *slog.Logger they are given, which main builds; a nil logger means discard.",
			Severity: lint.SeverityError,
		},
	},
}

// forbid returns an analyzer's Run that reports every use of the named
// package-level functions ("import/path.Name") in files that allowed does
// not exempt.
func forbid(allowed func(pass *analysis.Pass, file *ast.File) bool, fix string, names ...string) func(*analysis.Pass) (any, error) {
	banned := map[string]bool{}
	for _, n := range names {
		banned[n] = true
	}
	return func(pass *analysis.Pass) (any, error) {
		for _, file := range pass.Files {
			if allowed(pass, file) {
				continue
			}
			ast.Inspect(file, func(n ast.Node) bool {
				id, ok := n.(*ast.Ident)
				if !ok {
					return true
				}
				fn, ok := pass.TypesInfo.Uses[id].(*types.Func)
				if !ok || fn.Pkg() == nil || fn.Signature().Recv() != nil {
					return true
				}
				if name := fn.Pkg().Path() + "." + fn.Name(); banned[name] {
					pass.Reportf(id.Pos(), "%s is not allowed here: %s", shortName(fn), fix)
				}
				return true
			})
		}
		return nil, nil
	}
}

// shortName is fn as code spells it: time.Sleep, slog.Default.
func shortName(fn *types.Func) string {
	return fn.Pkg().Name() + "." + fn.Name()
}

// isTestFile reports whether file is a _test.go file.
func isTestFile(pass *analysis.Pass, file *ast.File) bool {
	return strings.HasSuffix(pass.Fset.File(file.Pos()).Name(), "_test.go")
}

// isTestCode reports whether file is a test or belongs to internal/testenv
// and its subpackages, the helpers only tests import.
func isTestCode(pass *analysis.Pass, file *ast.File) bool {
	return isTestFile(pass, file) || underPath(pass.Pkg.Path(), "internal/testenv")
}

// isCommandOrTest reports whether file is a test or belongs to a command,
// a package under a cmd/ directory.
func isCommandOrTest(pass *analysis.Pass, file *ast.File) bool {
	return isTestFile(pass, file) || underPath(pass.Pkg.Path(), "cmd")
}

// underPath reports whether the import path pkg has the path elements
// elems in sequence, as in github.com/runstream/runstream/<elems>/...
func underPath(pkg, elems string) bool {
	// Test variants are "p [p.test]" or "p_test"; the path is what counts.
	pkg, _, _ = strings.Cut(pkg, " ")
	pkg = strings.TrimSuffix(pkg, "_test")
	p := "/" + pkg + "/"
	return strings.Contains(p, "/"+elems+"/")
}
