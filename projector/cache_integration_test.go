package projector_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/projector"
	"github.com/runstream/runstream/reduce"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
)

// TestProjector_StaleCacheEntryLosesItsGuard: the projector holds a run's
// snapshot at watermark 3 in its cache when another writer (another
// projector after a rebalance) moves the run to 6 in Redis. The projector's
// next batch (events 4-9) starts from its cached snapshot at 3, so its
// guarded write must lose; it then reloads the other writer's snapshot and
// applies only 7-9 on top. The other writer's snapshot carries a marker (a
// projectId of its own) that survives only if the projector really built
// on it: the final snapshot is exactly the other writer's plus events 7-9,
// with no event applied twice.
func TestProjector_StaleCacheEntryLosesItsGuard(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	id := workload.NewIdentity("tenant_a")
	now := time.Now()
	evs := []store.RunEventWrite{
		workload.Event(id, store.EventRunStarted, "", 1, 1, now, nil),
		workload.Event(id, store.EventStepStarted, "a", 1, 1, now, nil),
		workload.Event(id, store.EventStepFailed, "a", 1, 1, now, map[string]any{"errorCode": "X"}),
		workload.Event(id, store.EventStepStarted, "a", 2, 2, now, nil), // 4
		workload.Event(id, store.EventStepCompleted, "a", 2, 2, now, nil),
		workload.Event(id, store.EventStepStarted, "b", 1, 1, now, nil), // 6: the other writer's watermark
		workload.Event(id, store.EventStepFailed, "b", 1, 1, now, map[string]any{"errorCode": "Y"}),
		workload.Event(id, store.EventStepStarted, "c", 1, 1, now, nil),
		workload.Event(id, store.EventStepCompleted, "c", 1, 1, now, nil), // 9
	}
	for _, r := range f.store.AppendBatch(ctx, evs) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	recs, err := f.store.FetchEvents(ctx, id.RunID, store.FetchOptions{})
	if err != nil || len(recs) != 9 {
		t.Fatalf("fetched %d events, %v", len(recs), err)
	}
	f.publish(t, recs[:3])
	run := startProjector(t, f.brokers, "g-"+testenv.RandomID(4), f.rdb, f.store)
	testenv.WaitFor(t, 30*time.Second, "events 1-3 projected", func() bool {
		s, ok := redisSnapshot(t, f.rdb, id.RunID)
		return ok && s.LastEventSeq == 3
	})

	other, _ := reduce.Project(store.RunSnapshot{}, recs[:6])
	other.ProjectID = "proj_other_writer"
	body, err := json.Marshal(other)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.rdb.Set(ctx, snapshots.Key(id.RunID), body, 0).Err(); err != nil {
		t.Fatal(err)
	}
	f.publish(t, recs[3:])
	want, _ := reduce.Project(other, recs[6:])
	testenv.WaitUntil(t, 30*time.Second, func() error {
		got, _ := redisSnapshot(t, f.rdb, id.RunID)
		if d := cmp.Diff(want, got); d != "" {
			return &diffErr{d}
		}
		return nil
	})
	if got := counter(t, run.reg, "runstream_projector_snapshot_cache_hits_total", ""); got < 1 {
		t.Fatalf("cache hits = %v; the second batch should have started from the cached snapshot", got)
	}
	if got := counter(t, run.reg, "runstream_projector_write_conflicts_total", ""); got < 1 {
		t.Fatalf("write conflicts = %v; the write from the stale cached snapshot must have lost its guard", got)
	}
}

type diffErr struct{ d string }

func (e *diffErr) Error() string { return "snapshot differs (-want +got):\n" + e.d }

// TestProjector_ManyRunsPerBatch: 1500 runs interleaved, so a poll batch
// holds far more runs than one group of reads and writes (128): with the
// cache off every batch reads all its snapshots from Redis group by group
// while the writes of earlier groups are in flight, and with a tiny cache
// most runs go through both paths. Every snapshot ends equal to the
// reducer's projection of the run's events.
func TestProjector_ManyRunsPerBatch(t *testing.T) {
	t.Parallel()
	for _, cache := range []int64{0, 64 << 10} { // 0: the cache off
		f := newFixture(t)
		rng := seed(t)
		runs := map[string][]store.RunEventRecord{}
		persisted := store.FormatPersistedAt(time.Now())
		for range 1500 {
			evs := workload.Run(rng, "tenant_a", workload.Options{})
			evs = evs[:min(len(evs), 6)] // a prefix: many runs, few records
			recs := make([]store.RunEventRecord, len(evs))
			for i, w := range evs {
				recs[i] = store.RunEventRecord{RunEventWrite: w, RunSeq: int64(i + 1), PersistedAt: persisted}
			}
			runs[evs[0].RunID] = recs
		}
		t.Cleanup(func() {
			for id := range runs {
				f.rdb.Del(context.Background(), snapshots.Key(id))
			}
		})
		f.publish(t, interleave(runs))
		reg := prometheus.NewRegistry()
		p, err := projector.New(projector.Config{Brokers: f.brokers, Topic: topic, Group: "g-" + testenv.RandomID(4),
			SnapshotCacheBytes: cache, DisableSnapshotCache: cache == 0, Registerer: reg}, f.rdb, f.store)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		testenv.WaitUntil(t, 60*time.Second, func() error {
			for id, recs := range runs {
				want, _ := reduce.Project(store.RunSnapshot{}, recs)
				got, _ := redisSnapshot(t, f.rdb, id)
				if d := cmp.Diff(want, got); d != "" {
					return &diffErr{id + ": " + d}
				}
			}
			return nil
		})
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := counter(t, reg, "runstream_projector_write_conflicts_total", ""); got != 0 {
			t.Fatalf("cache %d: %v write conflicts with a single projector", cache, got)
		}
	}
}
