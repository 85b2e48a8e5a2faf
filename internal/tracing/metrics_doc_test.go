package tracing

import (
	"io"
	"log/slog"
	"testing"

	"github.com/runstream/runstream/internal/testenv/testmetrics"
)

// TestMetricsDoc: the package comment's metric list names exactly the
// metrics the package registers.
func TestMetricsDoc(t *testing.T) {
	var names testmetrics.Names
	q, err := newQueue(failingExporter{}, &Config{QueueSize: 1, BatchSize: 1, Delay: 1, ExportTimeout: 1}, &names, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	_ = q.Shutdown(t.Context())
	testmetrics.CheckDoc(t, ".", names.Names())
}
