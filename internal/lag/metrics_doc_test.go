package lag

import (
	"testing"

	"github.com/runstream/runstream/internal/testenv/testmetrics"
)

// TestMetricsDoc: the package comment's metric list names exactly the
// metrics the package registers.
func TestMetricsDoc(t *testing.T) {
	var names testmetrics.Names
	e, err := NewExporter(nil, nil, 0, &names, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.WatchOutbox(nil, &names); err != nil {
		t.Fatal(err)
	}
	testmetrics.CheckDoc(t, ".", names.Names())
}
