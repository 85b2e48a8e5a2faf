package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// The benchmarks measure the store without HTTP, with the load of
// `runstream bench append` and the pgbench scripts in bench/: 16 clients,
// StepCompleted events with a ~200-byte payload on random runs among 10,000.
// Run them with
//
//	RUNSTREAM_TEST_POSTGRES_URL=... go test ./store/postgres/ -run '^$' -bench Append -benchtime 5s
const (
	benchClients = 16
	benchRuns    = 10000
)

// benchStore returns a migrated store in a fresh schema, with a pool of one
// connection per client.
func benchStore(b *testing.B) *postgres.Store {
	b.Helper()
	pool, _ := testenv.Postgres(b, benchClients)
	if _, err := postgres.Migrate(context.Background(), pool); err != nil {
		b.Fatalf("Migrate: %v", err)
	}
	st, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		b.Fatal(err)
	}
	return st
}

// benchEvents generates n valid events before the timer starts, so their
// generation is not measured. stepIds are unique, so keys never collide.
func benchEvents(n int) []store.RunEventWrite {
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	ids := make([]workload.Identity, benchRuns)
	for i := range ids {
		ids[i] = workload.NewIdentity("tenant_bench")
	}
	evs := make([]store.RunEventWrite, n)
	now := time.Now()
	for i := range evs {
		id := ids[rng.IntN(len(ids))]
		step := fmt.Sprintf("step_%d", i)
		evs[i] = workload.Event(id, store.EventStepCompleted, step, 1, 1, now, map[string]any{
			"durationMs": rng.IntN(5000),
			"result":     map[string]any{"rowsAffected": rng.IntN(1000000)},
			"artifacts": []map[string]any{{
				"uri":  "s3://runstream-artifacts/" + id.RunID + "/" + step + "/1/run_results.json",
				"kind": "dbt-run-results", "sizeBytes": rng.IntN(100000)}},
		})
	}
	return evs
}

// parallelism makes RunParallel run benchClients goroutines.
func parallelism() int {
	p := runtime.GOMAXPROCS(0)
	return (benchClients + p - 1) / p
}

// BenchmarkAppendEvent_Parallel is one event per AppendEvent (validation
// included), from 16 goroutines: the store side of POST /v1/events.
func BenchmarkAppendEvent_Parallel(b *testing.B) {
	st := benchStore(b)
	evs := benchEvents(b.N)
	ctx := context.Background()
	var next atomic.Int64
	b.SetParallelism(parallelism())
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			w := evs[next.Add(1)-1]
			if _, err := st.AppendEvent(ctx, w); err != nil {
				b.Errorf("AppendEvent: %v", err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkAppendBatch100 is 100 events per AppendBatch (one transaction),
// from 16 goroutines: the store side of POST /v1/events:batch. One op is one
// batch.
func BenchmarkAppendBatch100(b *testing.B) {
	const batch = 100
	st := benchStore(b)
	evs := benchEvents(b.N * batch)
	ctx := context.Background()
	var next atomic.Int64
	b.SetParallelism(parallelism())
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := int(next.Add(1) - 1)
			for j, r := range st.AppendBatch(ctx, evs[i*batch:(i+1)*batch]) {
				if r.Err != nil {
					b.Errorf("AppendBatch item %d: %v", j, r.Err)
					return
				}
			}
		}
	})
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "events/s")
}
