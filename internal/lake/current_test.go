package lake_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runstream/runstream/consumer"
	"github.com/runstream/runstream/internal/lake"
	"github.com/runstream/runstream/internal/lake/laketest"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
)

// TestLake_CurrentState: the current-state table has one row per run,
// equal to the reducer's projection of the store's events; publishing
// again swaps the manifest to a new generation, keeps the previous one
// for readers that read the old manifest, and deletes the older ones.
func TestLake_CurrentState(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2)
	rng := seeded(t)
	runs := f.runs(t, rng, 15)
	f.kafka.Publish(t, f.topic, interleave(rng, runs, 0.1))
	r, _ := f.start(t, f.dir, f.config("lake-"+testenv.RandomID(4)))
	testenv.WaitUntil(t, 60*time.Second, func() error { return exactlyOnce(t, f.dir, runs) })
	ctx := context.Background()
	// A window's files are uploaded before its state commits: wait for the
	// state, which the table is made from, to hold every run's last event.
	testenv.WaitUntil(t, 60*time.Second, func() error {
		if ok, err := r.lake.PublishCurrent(ctx); !ok || err != nil {
			return fmt.Errorf("PublishCurrent = %v, %v", ok, err)
		}
		return laketest.CurrentAgrees(ctx, f.dir, runs)
	})
	var gens []string
	for range 3 {
		ok, err := r.lake.PublishCurrent(ctx)
		if err != nil || !ok {
			t.Fatalf("PublishCurrent = %v, %v", ok, err)
		}
		man, _, err := laketest.ReadCurrent(ctx, f.dir)
		if err != nil {
			t.Fatal(err)
		}
		gens = append(gens, man.Generation)
		if err := laketest.CurrentAgrees(ctx, f.dir, runs); err != nil {
			t.Fatal(err)
		}
	}
	objs, err := f.dir.List(ctx, "current/")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.Key != lake.ManifestKey && !strings.HasPrefix(o.Key, "current/"+gens[2]+"/") && !strings.HasPrefix(o.Key, "current/"+gens[1]+"/") {
			t.Fatalf("%s is left from an older generation (the last two are %s and %s)", o.Key, gens[1], gens[2])
		}
	}
}

// TestLake_CurrentRetention: a run that ended longer than
// CurrentRetention ago leaves the current-state table, and its state row
// keeps only its checkpoint; a run still open stays however old its row;
// a late duplicate of a trimmed run writes nothing again, and a new event
// of one (appended after it ended) first folds its snapshot again from
// the store, so it comes back to the table whole, not as its last event.
func TestLake_CurrentRetention(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2)
	rng := seeded(t)
	ctx := context.Background()
	runs := f.runs(t, rng, 6)
	openID := workload.NewIdentity("tenant_a")
	for _, ev := range []store.RunEventWrite{
		workload.Event(openID, store.EventRunStarted, "", 1, 1, time.Now(), nil),
		workload.Event(openID, store.EventStepStarted, "s1", 1, 1, time.Now(), nil),
	} {
		if _, err := f.store.AppendEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	open, err := f.store.FetchEvents(ctx, openID.RunID, store.FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	all := append(slices.Clone(runs), open)
	f.kafka.Publish(t, f.topic, interleave(rng, all, 0.1))
	cfg := f.config("lake-" + testenv.RandomID(4))
	cfg.CurrentRetention = time.Hour
	r, _ := f.start(t, f.dir, cfg)
	testenv.WaitUntil(t, 60*time.Second, func() error { return exactlyOnce(t, f.dir, all) })
	publish := func() {
		t.Helper()
		if ok, err := r.lake.PublishCurrent(ctx); !ok || err != nil {
			t.Fatalf("PublishCurrent = %v, %v", ok, err)
		}
	}
	testenv.WaitUntil(t, 60*time.Second, func() error {
		publish()
		return laketest.CurrentAgrees(ctx, f.dir, all)
	})

	// Two hours pass: every row was last written then, and the ended
	// runs ended then (the open one gets a terminalAt too, which its
	// status must outweigh).
	if _, err := f.state.Exec(ctx, `UPDATE lake_runs SET updated_at = now() - interval '2 hours',
		snapshot = jsonb_set(snapshot::jsonb, '{terminalAt}', to_jsonb(to_char((now() - interval '2 hours') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')))::text`); err != nil {
		t.Fatal(err)
	}
	publish()
	if got := counter(t, r.reg, "runstream_lake_runs_trimmed_total"); got != float64(len(runs)) {
		t.Fatalf("runs trimmed: %v, want the %d ended ones", got, len(runs))
	}
	if err := laketest.CurrentAgrees(ctx, f.dir, [][]store.RunEventRecord{open}); err != nil {
		t.Fatalf("after the ended runs' retention: %v", err)
	}
	var rows, checkpoints int
	if err := f.state.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE run_seq > 0) FROM lake_runs`).Scan(&rows, &checkpoints); err != nil {
		t.Fatal(err)
	}
	if rows != len(all) || checkpoints != len(all) {
		t.Fatalf("lake_runs: %d rows, %d with a checkpoint; want every run's (%d) kept", rows, checkpoints, len(all))
	}

	// A late duplicate of one trimmed run, and a new event of another,
	// read by a lake that starts again (a running one may still hold the
	// runs' snapshots in its windows).
	// The store no longer has runs[2]'s events (its own retention): that
	// run's new event is written, and the lake keeps no snapshot of it
	// rather than one of the new event alone.
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	// And it fails its first seven reads of runs[3]: the rebuild waits
	// for it, and the record is not dead-lettered for a store's outage.
	failing := &atomic.Int32{}
	failing.Store(7) // more than the consumer's MaxAttempts (5): a handler error would dead-letter
	cfg.Fetcher = forgetfulStore{Fetcher: f.store, forgot: runs[2][0].RunID, failing: runs[3][0].RunID, failures: failing}
	cfg.CheckpointRetention = time.Hour
	r, _ = f.start(t, f.dir, cfg)
	for _, i := range []int{1, 2, 3} {
		late := runs[i][0]
		id := workload.Identity{RunID: late.RunID, TenantID: late.TenantID, ProjectID: late.ProjectID,
			EnvironmentID: late.EnvironmentID, PlanID: late.PlanID, PlanVersion: late.PlanVersion}
		if _, err := f.store.AppendEvent(ctx, workload.Event(id, "StepHeartbeatRecorded", "late", 1, 1, time.Now(), nil)); err != nil {
			t.Fatal(err)
		}
		if runs[i], err = f.store.FetchEvents(ctx, late.RunID, store.FetchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	all = append(slices.Clone(runs), open)
	f.kafka.Publish(t, f.topic, []store.RunEventRecord{runs[0][1], runs[1][len(runs[1])-1], runs[2][len(runs[2])-1], runs[3][len(runs[3])-1]})
	testenv.WaitUntil(t, 60*time.Second, func() error { return exactlyOnce(t, f.dir, all) })
	testenv.WaitUntil(t, 60*time.Second, func() error {
		publish()
		return laketest.CurrentAgrees(ctx, f.dir, [][]store.RunEventRecord{runs[1], runs[3], open})
	})
	if got := counter(t, r.reg, "runstream_lake_runs_rebuilt_total"); got != 3 {
		t.Fatalf("runs rebuilt from the store: %v, want 3 (the duplicate's run and the two new events' the store still has)", got)
	}
	if failing.Load() > 0 {
		t.Fatalf("the store's reads of runs[3] were never retried (%d failures left)", failing.Load())
	}
	if got := counter(t, r.reg, "runstream_lake_events_skipped_total", "reason", "dead_lettered"); got != 0 {
		t.Fatalf("%v records dead-lettered, want none for the store's failures", got)
	}

	var seq int64
	var snapshot *string
	if err := f.state.QueryRow(ctx, `SELECT run_seq, snapshot FROM lake_runs WHERE run_id = $1`, runs[2][0].RunID).Scan(&seq, &snapshot); err != nil {
		t.Fatal(err)
	}
	if want := runs[2][len(runs[2])-1].RunSeq; seq != want || snapshot != nil {
		t.Fatalf("the run the store forgot: checkpoint %d, snapshot %v; want %d and none", seq, snapshot != nil, want)
	}

	// Two more hours: the rows left with no snapshot (every ended run's
	// but the two rebuilt) are forgotten; the others stay.
	if _, err := f.state.Exec(ctx, `UPDATE lake_runs SET updated_at = now() - interval '2 hours'`); err != nil {
		t.Fatal(err)
	}
	if forgotten := counter(t, r.reg, "runstream_lake_runs_forgotten_total"); forgotten != 0 {
		t.Fatalf("runs forgotten before their time: %v", forgotten)
	}
	publish()
	ids, err := f.state.Query(ctx, `SELECT run_id FROM lake_runs`)
	if err != nil {
		t.Fatal(err)
	}
	left, err := pgx.CollectRows(ids, pgx.RowTo[string])
	if err != nil || len(left) != 3 || !slices.Contains(left, open[0].RunID) || !slices.Contains(left, runs[1][0].RunID) || !slices.Contains(left, runs[3][0].RunID) {
		t.Fatalf("rows after the checkpoint retention: %v, %v; want the open run's and the two rebuilt runs'", left, err)
	}
	if got := counter(t, r.reg, "runstream_lake_runs_forgotten_total"); got != float64(len(all)-3) {
		t.Fatalf("runs forgotten: %v, want %d", got, len(all)-3)
	}
}

// forgetfulStore is a store whose retention took one run's events
// (forgot), and which fails its first reads of another (failing, while
// failures is above 0).
type forgetfulStore struct {
	consumer.Fetcher
	forgot, failing string
	failures        *atomic.Int32
}

func (s forgetfulStore) FetchEvents(ctx context.Context, runID string, opts store.FetchOptions) ([]store.RunEventRecord, error) {
	switch {
	case runID == s.forgot:
		return nil, nil
	case runID == s.failing && s.failures.Add(-1) >= 0:
		return nil, errors.New("the store is down (a test's)")
	}
	return s.Fetcher.FetchEvents(ctx, runID, opts)
}
