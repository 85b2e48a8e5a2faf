package lakebench

import (
	"context"
	"testing"

	"github.com/runstream/runstream/internal/testenv"
)

// TestBenchLake_Small: a small bench round runs both sinks on one topic,
// finds every event in the lake exactly once, and reports rates, files
// and bytes per event.
func TestBenchLake_Small(t *testing.T) {
	rep, err := Run(context.Background(), Config{PostgresURL: testenv.PostgresURL(t), Partitions: 2, Events: 4000,
		ActiveRuns: 50, Rounds: 1, StoreSample: 500, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	m := rep.Median
	if !m.ExactlyOnce || m.LakeEventsPerSec <= 0 || m.ETLEventsPerSec <= 0 || m.Files == 0 || m.ParquetBytesPerEvent <= 0 ||
		rep.StoreBytesPerEvent <= 0 || m.RecordBytes <= 0 {
		t.Fatalf("report %+v", rep)
	}
}
