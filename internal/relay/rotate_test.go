package relay_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/runstream/runstream/internal/relay"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// appendHeld appends ev in a transaction of its own left open (the caller
// commits or rolls it back): an append that took its outbox id, and so
// its part, and has not committed.
func appendHeld(ctx context.Context, t *testing.T, pool *pgxpool.Pool, ev store.RunEventWrite) (pgx.Tx, int64) {
	t.Helper()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Error(err)
		return nil, 0
	}
	var status int
	var seq int64
	if err := tx.QueryRow(ctx, `SELECT o_status, o_run_seq FROM runstream_append($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,1,1,$11,NULL,$12)`,
		ev.RunID, ev.TenantID, ev.ProjectID, ev.EnvironmentID, ev.PlanID, ev.PlanVersion, ev.EventID, ev.EventType,
		ev.IdempotencyKey, ev.StepID, ev.EmittedAt, postgres.ShardOf(ev.RunID)).Scan(&status, &seq); err != nil || status > 1 {
		_ = tx.Rollback(ctx)
		t.Errorf("held append: status %d, %v", status, err)
		return nil, 0
	}
	return tx, seq
}

// pause waits d, or returns at once when stop is closed.
func pause(d time.Duration, stop <-chan struct{}) {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-stop:
	}
}

// TestRelay_PartSwitchesKeepOrderAndLoseNothing is a property test of the
// outbox's rotation (migration 0011): appenders (single events, batches,
// and appends held open in a transaction for a while, so their rows land
// in a part after appends left it) run while two relays publish and
// rotate the parts as often as they can (a step every 20 ms, a switch
// whenever the other part is truncated), and one relay is stopped and
// replaced midway. Whatever the interleaving, every event reaches the
// topic, each run's events first appear in runSeq order (a run's events
// sit in both parts across a switch), nothing is dead-lettered, and the
// outbox drains. RELAY_SEED replays a seed's choices (not the scheduling).
func TestRelay_PartSwitchesKeepOrderAndLoseNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	rng := seed(t)
	cfg := testConfig()
	cfg.OutboxSwitchBytes = 1
	cfg.BatchSize = 10 + rng.IntN(300)
	rotateFast := func(r *relay.Relay) { r.SetRotation(20*time.Millisecond, 100*time.Millisecond) }
	relays := []*running{startRelay(t, f.pool, f.brokers, cfg, rotateFast), startRelay(t, f.pool, f.brokers, cfg, rotateFast)}

	var (
		mu   sync.Mutex
		want = map[string]int64{}
	)
	record := func(runID string, seq int64) {
		mu.Lock()
		defer mu.Unlock()
		want[runID] = max(want[runID], seq)
	}
	appenders := 2 + rng.IntN(3)
	runsEach := 15 + rng.IntN(20)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var appended sync.WaitGroup
	for a := range appenders {
		arng := rand.New(rand.NewPCG(rng.Uint64(), uint64(a)))
		wg.Add(1)
		appended.Add(1)
		go func() {
			defer wg.Done()
			defer appended.Done()
			// A few runs at a time, their events interleaved.
			var open [][]store.RunEventWrite
			left := runsEach
			for left > 0 || len(open) > 0 {
				for left > 0 && len(open) < 4 {
					open = append(open, workload.Run(arng, "tenant_a", workload.Options{}))
					left--
				}
				i := arng.IntN(len(open))
				n := 1 + arng.IntN(min(len(open[i]), 5))
				evs := open[i][:n]
				if open[i] = open[i][n:]; len(open[i]) == 0 {
					open = append(open[:i], open[i+1:]...)
				}
				switch p := arng.Float64(); {
				case p < 0.1:
					// Held open for up to 60 ms: rotation steps pass meanwhile.
					for _, ev := range evs {
						tx, seq := appendHeld(ctx, t, f.pool, ev)
						if tx == nil {
							return
						}
						pause(time.Duration(arng.IntN(60))*time.Millisecond, nil)
						if err := tx.Commit(ctx); err != nil {
							t.Error(err)
							return
						}
						record(ev.RunID, seq)
					}
				case p < 0.5:
					for _, r := range f.store.AppendBatch(ctx, evs) {
						if r.Err != nil {
							t.Error(r.Err)
							return
						}
						record(evs[0].RunID, r.Result.RunSeq)
					}
				default:
					for _, ev := range evs {
						res, err := f.store.AppendEvent(ctx, ev)
						if err != nil {
							t.Error(err)
							return
						}
						record(ev.RunID, res.RunSeq)
					}
				}
				pause(time.Duration(arng.IntN(4))*time.Millisecond, stop)
			}
		}()
	}
	// Midway, a relay leaves and another comes.
	replaceAfter := time.Duration(300+rng.IntN(1500)) * time.Millisecond
	pause(replaceAfter, nil)
	relays[0].stop(t)
	relays = append(relays, startRelay(t, f.pool, f.brokers, cfg, rotateFast))
	appended.Wait()
	close(stop)
	wg.Wait()
	if t.Failed() {
		return
	}
	c := newConsumer(t, f.brokers)
	c.waitComplete(t, want, 90*time.Second)
	testenv.WaitFor(t, 30*time.Second, "the outbox to drain", func() bool { return outboxRows(t, f.pool) == 0 })
	c.poll(t)
	c.checkOrder(t)
	var switches, truncations, dead float64
	for _, r := range relays {
		switches += counterWith(t, r.reg, "runstream_relay_outbox_rotations_total", "switch")
		truncations += counterWith(t, r.reg, "runstream_relay_outbox_rotations_total", "truncate")
		dead += counter(t, r.reg, "runstream_relay_dead_letters_total")
	}
	if dead != 0 {
		t.Fatalf("%v events dead-lettered", dead)
	}
	var maxID int64
	if err := f.pool.QueryRow(ctx, `SELECT last_value FROM outbox_id_seq`).Scan(&maxID); err != nil {
		t.Fatal(err)
	}
	events := int64(0)
	for _, n := range want {
		events += n
	}
	t.Logf("%d events of %d runs from %d appenders, relay batch %d, one relay replaced after %v: %v switches, %v truncations, last id %d (block %d)",
		events, len(want), appenders, cfg.BatchSize, replaceAfter, switches, truncations, maxID, maxID>>24)
	if switches < 2 || truncations < 2 {
		t.Fatalf("%v switches and %v truncations: the parts were not rotated enough to test anything", switches, truncations)
	}
}

// counterWith is counter for one label value.
func counterWith(t *testing.T, reg *prometheus.Registry, name, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestRelay_TruncationCutOffLosesNothing cuts the truncation of a drained
// part off while it waits for its lock (behind a reader of the outbox,
// which the test holds): once by killing its connection, once by stopping
// the relay. Appends go on meanwhile without waiting (into the other
// part), one of them open since before the switch, its row in the part to
// be truncated. Once the reader is gone, everything reaches the topic in
// order and the part is truncated.
func TestRelay_TruncationCutOffLosesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	rng := seed(t)
	cfg := testConfig()
	cfg.OutboxSwitchBytes = 1
	waitLong := func(r *relay.Relay) { r.SetRotation(20*time.Millisecond, time.Minute) }
	want := map[string]int64{}
	appendSome := func() {
		t.Helper()
		start := time.Now()
		for id, n := range appendRuns(t, f.store, rng, 2) {
			want[id] = n
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("appends took %v: they waited for the truncation's lock", d)
		}
	}
	appendSome()
	// A straggler: its id, and so its part, taken before the first switch.
	late := workload.NewIdentity("tenant_a")
	tx, _ := appendHeld(ctx, t, f.pool, workload.Event(late, store.EventRunStarted, "", 1, 1, time.Now(), nil))
	if tx == nil {
		t.FailNow()
	}
	defer func() { _ = tx.Rollback(ctx) }()

	// A reader holds both parts: truncations wait behind it, and the
	// relays' reads behind them.
	reader, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = reader.Rollback(ctx) }()
	if _, err := reader.Exec(ctx, `SELECT count(*) FROM outbox`); err != nil {
		t.Fatal(err)
	}
	first := startRelay(t, f.pool, f.brokers, cfg, waitLong)
	c := newConsumer(t, f.brokers)
	c.waitComplete(t, want, 30*time.Second)
	testenv.WaitFor(t, 10*time.Second, "a switch", func() bool {
		return counterWith(t, first.reg, "runstream_relay_outbox_rotations_total", "switch") > 0
	})
	appendSome()
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	want[late.RunID] = 1
	lockWaiter := func() int32 {
		t.Helper()
		var pid int32
		testenv.WaitFor(t, 30*time.Second, "a truncation waiting for its lock", func() bool {
			err := f.pool.QueryRow(ctx, `SELECT pid FROM pg_locks
				WHERE NOT granted AND relation IN ('outbox_0'::regclass, 'outbox_1'::regclass) AND mode = 'AccessExclusiveLock'`).Scan(&pid)
			return err == nil
		})
		return pid
	}
	// The straggler's row was published, so its part is empty, and the
	// truncation waits.
	waiter := lockWaiter()
	appendSome()
	if _, err := f.pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, waiter); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 30*time.Second, "the next truncation to wait", func() bool { return lockWaiter() != waiter })
	appendSome()
	first.stop(t)
	appendSome()
	second := startRelay(t, f.pool, f.brokers, cfg, waitLong)
	lockWaiter()
	if err := reader.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	appendSome()
	c.waitComplete(t, want, 60*time.Second)
	testenv.WaitFor(t, 30*time.Second, "a truncation once the reader is gone", func() bool {
		return counterWith(t, second.reg, "runstream_relay_outbox_rotations_total", "truncate") > 0
	})
	testenv.WaitFor(t, 10*time.Second, "the outbox to drain", func() bool { return outboxRows(t, f.pool) == 0 })
	c.poll(t)
	c.checkOrder(t)
	if n := counterWith(t, first.reg, "runstream_relay_outbox_rotations_total", "truncate"); n != 0 {
		t.Fatalf("the first relay truncated %v times although the reader held the parts throughout", n)
	}
}
