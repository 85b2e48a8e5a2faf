package reduce

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
)

// BenchmarkProject folds realistic runs (internal/workload: steps with
// artifacts and durations, retries, failures, unknown types) into empty
// snapshots, as the analytics ETL and a projector's catch-up do. Run with
// go test -bench Project -benchmem ./reduce/.
func BenchmarkProject(b *testing.B) {
	runs, perRun := benchRuns()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		Project(store.RunSnapshot{}, runs[i%len(runs)])
	}
	b.ReportMetric(perRun, "events/run")
}

// BenchmarkProjection folds the same runs an event at a time, as the ETL
// sink does, with and without Options.ArtifactCounts.
func BenchmarkProjection(b *testing.B) {
	runs, perRun := benchRuns()
	for _, bc := range []struct {
		name string
		opts Options
	}{{"all", Options{}}, {"artifact_counts", Options{ArtifactCounts: true}}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				p := NewProjection(store.RunSnapshot{}, bc.opts)
				evs := runs[i%len(runs)]
				for j := range evs {
					p.Add(&evs[j])
				}
				_ = p.Snapshot()
			}
			b.ReportMetric(perRun, "events/run")
		})
	}
}

// benchRuns makes 200 realistic runs and their mean length.
func benchRuns() ([][]store.RunEventRecord, float64) {
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	var runs [][]store.RunEventRecord
	events := 0
	for range 200 {
		var recs []store.RunEventRecord
		for i, w := range workload.Run(rng, "tenant_bench", workload.Options{Start: start}) {
			recs = append(recs, store.RunEventRecord{RunEventWrite: w, RunSeq: int64(i + 1),
				PersistedAt: store.FormatPersistedAt(start.Add(time.Duration(i) * time.Millisecond))})
		}
		runs = append(runs, recs)
		events += len(recs)
	}
	return runs, float64(events) / float64(len(runs))
}
