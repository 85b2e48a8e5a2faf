package consumer

import (
	"log/slog"
	"testing"

	"github.com/runstream/runstream/internal/testenv/testmetrics"
)

// TestMetricsDoc: the package comment's metric list names exactly the
// metrics the package registers on Config.Registerer (convergence's are
// internal/converge's, checked there).
func TestMetricsDoc(t *testing.T) {
	var names testmetrics.Names
	c := &Consumer{cfg: Config{Group: "g", Registerer: &names}, log: slog.New(slog.DiscardHandler)}
	if c.registerResets() == nil {
		t.Fatal("registerResets registered nothing")
	}
	testmetrics.CheckDoc(t, ".", names.Names())
}
