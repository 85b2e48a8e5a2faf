package client

import (
	"testing"
	"time"

	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
)

// BenchmarkPrepare is the client's own work per event before the request:
// key, validation, encoding.
func BenchmarkPrepare(b *testing.B) {
	id := workload.NewIdentity("tenant_bench")
	w := workload.Event(id, store.EventStepCompleted, "step_1", 1, 1, time.Now(), map[string]any{
		"durationMs": 1234, "result": map[string]any{"rowsAffected": 99},
		"artifacts": []map[string]any{{"uri": "s3://runstream-artifacts/x/step_1/1/run_results.json", "kind": "dbt-run-results", "sizeBytes": 4567}},
	})
	w.IdempotencyKey = ""
	b.ReportAllocs()
	for b.Loop() {
		ev := w
		if _, err := prepare(&ev); err != nil {
			b.Fatal(err)
		}
	}
}
