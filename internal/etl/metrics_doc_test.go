package etl

import (
	"testing"

	"github.com/runstream/runstream/internal/testenv"
)

// TestMetricsDoc: the package comment's metric list names exactly the
// metrics the package registers.
func TestMetricsDoc(t *testing.T) {
	var names testenv.MetricNames
	if _, err := newMetrics(&names); err != nil {
		t.Fatal(err)
	}
	testenv.CheckMetricDoc(t, ".", names.Names())
}
