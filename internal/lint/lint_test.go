package lint_test

import (
	"testing"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/runstream/runstream/internal/lint"
)

// TestAnalyzers runs the checks on testdata/src: product code, a command
// under cmd/, tests, and a package under internal/testenv, with a // want
// comment on each line that must be reported. The checks run as one
// analyzer, so that a line no check may report is checked against all of
// them (and the standard library is loaded once).
func TestAnalyzers(t *testing.T) {
	all := &analysis.Analyzer{
		Name: "all",
		Doc:  "every check of package lint",
		Run: func(pass *analysis.Pass) (any, error) {
			for _, a := range lint.Analyzers {
				if _, err := a.Analyzer.Run(pass); err != nil {
					return nil, err
				}
			}
			return nil, nil
		},
	}
	analysistest.Run(t, analysistest.TestData(), all, "product", "example.com/cmd/tool", "example.com/internal/testenv")
}
