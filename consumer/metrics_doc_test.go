package consumer

import (
	"log/slog"
	"testing"

	"github.com/runstream/runstream/internal/testenv"
)

// TestMetricsDoc: the package comment's metric list names exactly the
// metrics the package registers on Config.Registerer (convergence's are
// internal/converge's, checked there).
func TestMetricsDoc(t *testing.T) {
	var names testenv.MetricNames
	c := &Consumer{cfg: Config{Group: "g", Registerer: &names}, log: slog.New(slog.DiscardHandler)}
	if c.registerResets() == nil {
		t.Fatal("registerResets registered nothing")
	}
	testenv.CheckMetricDoc(t, ".", names.Names())
}
