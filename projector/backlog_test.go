package projector_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/record"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// countingSource is the store, counting the projector's resync queries
// about the runs in mine (the resync set is shared by every test using
// the Redis server, and every projector retries other tests' runs too).
type countingSource struct {
	st           *postgres.Store
	mine         map[string]bool
	single, many atomic.Int64
	manyRuns     atomic.Int64
	fetches      atomic.Int64
}

func (s *countingSource) FetchEvents(ctx context.Context, id string, o store.FetchOptions) ([]store.RunEventRecord, error) {
	if s.mine[id] {
		s.fetches.Add(1)
	}
	return s.st.FetchEvents(ctx, id, o)
}

func (s *countingSource) ProjectSnapshot(ctx context.Context, id string) (store.RunSnapshot, error) {
	if s.mine[id] {
		s.single.Add(1)
	}
	return s.st.ProjectSnapshot(ctx, id)
}

func (s *countingSource) ProjectSnapshots(ctx context.Context, ids []string) (map[string]store.RunSnapshot, error) {
	n := 0
	for _, id := range ids {
		if s.mine[id] {
			n++
		}
	}
	if n > 0 {
		s.many.Add(1)
		s.manyRuns.Add(int64(n))
	}
	return s.st.ProjectSnapshots(ctx, ids)
}

// publishLate publishes recs stamped a minute after they were persisted:
// a relay's backlog published after a broker outage.
func (f *fixture) publishLate(t *testing.T, recs []store.RunEventRecord) {
	t.Helper()
	for i := range recs {
		kr, err := record.New(topic, &recs[i])
		if err != nil {
			t.Fatal(err)
		}
		at, err := time.Parse(time.RFC3339Nano, recs[i].PersistedAt)
		if err != nil {
			t.Fatal(err)
		}
		kr.Timestamp = at.Add(time.Minute)
		if err := f.producer.ProduceSync(context.Background(), kr).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// projectLateBacklog appends 200 runs, publishes each run's events from
// its (from+1)th on a minute after they were persisted (a relay's backlog
// after a broker outage; from > 0: the first ones went to a Redis that
// lost them), and runs a projector without convergence over them until
// every snapshot equals the store: the projector's own handling of the
// backlog is what is tested. It returns the runs, the store as the
// projector's source, counting its queries about them, and the projector.
func projectLateBacklog(t *testing.T, from int) (map[string][]store.RunEventRecord, *countingSource, *running) {
	t.Helper()
	f := newFixture(t)
	runs := f.appendRuns(t, seed(t), 200)
	var backlog []store.RunEventRecord
	src := &countingSource{st: f.store, mine: map[string]bool{}}
	for id, recs := range runs {
		backlog = append(backlog, recs[from:]...)
		src.mine[id] = true
	}
	f.publishLate(t, backlog)
	cfg := testConfig(f.brokers, "g-"+testenv.RandomID(4))
	cfg.DisableConvergence = true
	run := runProjector(t, cfg, f.rdb, src)
	f.waitConverged(t, keys(runs), 60*time.Second)
	return runs, src, run
}

// TestProjector_LateBacklogNeedsNoStore: a relay's backlog published a
// minute after it was persisted (a broker outage), for runs Redis does not
// hold yet, is in each run's order: the projector applies it like any
// other records, with no read of the store at all (issue 34: a backlog
// used to turn the projector into a one-run-at-a-time resync loop), and
// every snapshot reaches the store's state.
func TestProjector_LateBacklogNeedsNoStore(t *testing.T) {
	t.Parallel()
	runs, src, run := projectLateBacklog(t, 0)
	if a, b, c := src.single.Load(), src.many.Load(), src.fetches.Load(); a+b+c != 0 {
		t.Errorf("the store was read for the late backlog's runs (%d single projections, %d batched, %d event fetches); want none: late records are in their runs' order", a, b, c)
	}
	if got := counter(t, run.reg, "runstream_projector_non_contiguous_total", ""); got != 0 {
		t.Errorf("PROJECTOR_NON_CONTIGUOUS_FETCH_DETECTED counted %v times for a late backlog, want 0", got)
	}
	// Freshness: a sample per run written, each at least the time from
	// the run's first append until the projector started.
	n, sum := histogram(t, run.reg, "runstream_projector_commit_to_visible_seconds")
	if n < uint64(len(runs)) || sum <= 0 {
		t.Errorf("commit-to-visible: %d samples summing %vs, want at least one per run (%d)", n, sum, len(runs))
	}
}

// TestProjector_BacklogForLostRunsResyncsInGroups: a late backlog for runs
// whose snapshots Redis lost (each run's first record on the topic is not
// its first event) is resynced from the store a group of runs per query,
// never a run per query, and counted as missing snapshots, not as gaps of
// the bus.
func TestProjector_BacklogForLostRunsResyncsInGroups(t *testing.T) {
	t.Parallel()
	runs, src, run := projectLateBacklog(t, 1)
	if n := src.single.Load(); n != 0 {
		t.Errorf("%d runs resynced one query each; want none (the runs of a group share one query)", n)
	}
	if q, r := src.many.Load(), src.manyRuns.Load(); q == 0 || q > int64(len(runs))/10 || r > int64(len(runs)) {
		t.Errorf("%d batched queries for %d runs (%d runs asked); want at least one, at most one per 10 runs, each run asked once", q, len(runs), r)
	}
	if got := counter(t, run.reg, "runstream_projector_non_contiguous_total", ""); got != 0 {
		t.Errorf("PROJECTOR_NON_CONTIGUOUS_FETCH_DETECTED counted %v times for lost snapshots, want 0", got)
	}
	if got := counter(t, run.reg, "runstream_projector_missing_snapshots_total", ""); got != float64(len(runs)) {
		t.Errorf("runstream_projector_missing_snapshots_total = %v, want %d (one per run)", got, len(runs))
	}
}

// histogram returns the sample count and sum of a histogram in reg.
func histogram(t *testing.T, reg *prometheus.Registry, name string) (uint64, float64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			h := mf.GetMetric()[0].GetHistogram()
			return h.GetSampleCount(), h.GetSampleSum()
		}
	}
	return 0, 0
}

// TestProjector_MissingSnapshotIsNotABusGap: Redis loses a run's snapshot
// and the run's next event arrives: the run is resynced from the store and
// counted as missing (REDIS_SNAPSHOTS_LOST), not as a gap of the bus
// (PROJECTOR_NON_CONTIGUOUS_FETCH_DETECTED).
func TestProjector_MissingSnapshotIsNotABusGap(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	runs := f.appendRuns(t, seed(t), 1)
	id := keys(runs)[0]
	recs := runs[id]
	if len(recs) < 3 {
		t.Fatalf("the generated run has %d events, want at least 3", len(recs))
	}
	n := len(recs)
	f.publish(t, recs[:n-1])
	cfg := testConfig(f.brokers, "g-"+testenv.RandomID(4))
	cfg.DisableConvergence = true
	cfg.DisableSnapshotCache = true // every batch reads Redis
	run := runProjector(t, cfg, f.rdb, f.store)
	testenv.WaitFor(t, 30*time.Second, "the first events projected", func() bool {
		s, ok := redisSnapshot(t, f.rdb, id)
		return ok && s.LastEventSeq == int64(n-1)
	})
	if err := f.rdb.Del(context.Background(), snapshots.Key(id)).Err(); err != nil {
		t.Fatal(err)
	}
	f.publish(t, recs[n-1:])
	f.waitConverged(t, []string{id}, 30*time.Second)
	if got := counter(t, run.reg, "runstream_projector_missing_snapshots_total", ""); got != 1 {
		t.Errorf("missing snapshots counted %v, want 1", got)
	}
	if got := counter(t, run.reg, "runstream_projector_non_contiguous_total", ""); got != 0 {
		t.Errorf("PROJECTOR_NON_CONTIGUOUS_FETCH_DETECTED counted %v times for a snapshot Redis lost, want 0", got)
	}
}
