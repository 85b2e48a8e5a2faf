package lake

import (
	"testing"

	"github.com/runstream/runstream/internal/testenv/testmetrics"
)

// TestMetricsDoc: the package comment's metric list names exactly the
// metrics the package registers.
func TestMetricsDoc(t *testing.T) {
	var names testmetrics.Names
	if _, err := newMetrics(&names); err != nil {
		t.Fatal(err)
	}
	testmetrics.CheckDoc(t, ".", names.Names())
}
