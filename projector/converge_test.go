package projector_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runstream/runstream/internal/relay"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/record"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
)

// startConverging starts a projector whose convergence passes run every
// interval (convergenceOff: off) with a short grace.
func startConverging(t *testing.T, f *fixture, group string, rdb redis.UniversalClient, interval time.Duration) *running {
	t.Helper()
	cfg := testConfig(f.brokers, group)
	cfg.ConvergeInterval, cfg.ConvergeGrace = interval, 100*time.Millisecond
	if interval == convergenceOff {
		cfg.ConvergeInterval, cfg.DisableConvergence = 0, true
	}
	return runProjector(t, cfg, rdb, f.store)
}

// convergenceOff is the interval that makes startConverging turn
// convergence off (Config.DisableConvergence).
const convergenceOff time.Duration = -1

// waitRepaired waits until runstream_converge_runs_total{cause} counts at
// least want runs. A pass counts the runs it repaired when its Repair
// returns, a moment after their snapshots were written, so a test that
// has just seen them converged may look too early.
func waitRepaired(t *testing.T, reg *prometheus.Registry, cause string, want int) {
	t.Helper()
	testenv.WaitUntil(t, 10*time.Second, func() error {
		if got := counter(t, reg, "runstream_converge_runs_total", cause); got < float64(want) {
			return fmt.Errorf("runstream_converge_runs_total{cause=%s} = %v, want %d (missing %v, behind %v, stale %v)", cause, got, want,
				counter(t, reg, "runstream_converge_runs_total", "missing"), counter(t, reg, "runstream_converge_runs_total", "behind"),
				counter(t, reg, "runstream_converge_runs_total", "stale"))
		}
		return nil
	})
}

// clearOutbox stands for the relay: every event has left the outbox,
// published or dead-lettered, so nothing is still on its way.
func (f *fixture) clearOutbox(t *testing.T) {
	t.Helper()
	if _, err := f.store.Pool().Exec(context.Background(), `DELETE FROM outbox`); err != nil {
		t.Fatal(err)
	}
}

// TestConverge_DeadLetteredTail: a run's last events never reach Kafka
// (dead-lettered), so no later event reveals a gap. Convergence brings the
// snapshot to the store's state, and counts the run as behind.
func TestConverge_DeadLetteredTail(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	runs := f.appendRuns(t, seed(t), 6)
	var published []store.RunEventRecord
	for _, recs := range runs {
		published = append(published, recs[:len(recs)-2]...) // the last two are dead letters
	}
	f.publish(t, published)
	f.clearOutbox(t)
	run := startConverging(t, f, "g-"+testenv.RandomID(4), f.rdb, 200*time.Millisecond)
	f.waitConverged(t, keys(runs), 30*time.Second)
	waitRepaired(t, run.reg, "behind", 1)
	for id := range runs {
		s, _ := redisSnapshot(t, f.rdb, id)
		if s.Stale {
			t.Fatalf("run %s is still stale after convergence", id)
		}
	}
}

// TestConverge_ReplayOntoMissingSnapshot: Redis lost a finished run's
// snapshot, then its first event is replayed (relay dlq retry publishes it
// again, marked redelivered). The projector must not write the
// replayed event onto nothing as if the run had just started: the
// snapshot comes back as the store's state, and no notification ever
// shows the run at runSeq 1. Convergence is off here, so the projector's
// own handling of the late event is what is tested.
func TestConverge_ReplayOntoMissingSnapshot(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	runs := f.appendRuns(t, seed(t), 3)
	var all []store.RunEventRecord
	var victim string
	for id, recs := range runs {
		all = append(all, recs...)
		victim = id
	}
	f.publish(t, all)
	group := "g-" + testenv.RandomID(4)
	startConverging(t, f, group, f.rdb, convergenceOff)
	f.waitConverged(t, keys(runs), 30*time.Second)
	want, _ := redisSnapshot(t, f.rdb, victim)

	w := &seqWatcher{seqs: map[int64]bool{}}
	w.watch(t, f.rdb, victim)
	if err := f.rdb.Del(context.Background(), snapshots.Key(victim)).Err(); err != nil {
		t.Fatal(err)
	}
	first := runs[victim][0]
	kr, err := record.New(topic, &first)
	if err != nil {
		t.Fatal(err)
	}
	record.MarkRedelivered(kr) // as the relay publishes a retried dead letter
	if err := f.producer.ProduceSync(context.Background(), kr).FirstErr(); err != nil {
		t.Fatal(err)
	}
	testenv.WaitUntil(t, 30*time.Second, func() error {
		got, ok := redisSnapshot(t, f.rdb, victim)
		if !ok {
			return errors.New("no snapshot yet")
		}
		if got.LastEventSeq != want.LastEventSeq || got.Status != want.Status || got.Stale {
			return fmt.Errorf("snapshot is %s at %d (stale %v), want %s at %d", got.Status, got.LastEventSeq, got.Stale, want.Status, want.LastEventSeq)
		}
		return nil
	})
	if w.saw(1) && want.LastEventSeq != 1 {
		t.Fatalf("a notification showed run %s regressed to runSeq 1 (store is at %d)", victim, want.LastEventSeq)
	}
}

// TestConverge_RedisLostEverything: Redis comes back empty (restarted
// without persistence, or FLUSHALL) while every run is idle: no event will
// ever reveal the loss. The cursor went with the data, so the next pass
// checks every run: snapshots and run index entries come back, equal to
// the store's projection.
func TestConverge_RedisLostEverything(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		lose func(*testenv.RedisProcess, *redis.Client)
	}{
		{"restarted empty", func(srv *testenv.RedisProcess, _ *redis.Client) { srv.Kill(); srv.Restart() }},
		{"FLUSHALL", func(_ *testenv.RedisProcess, rdb *redis.Client) {
			if err := rdb.FlushAll(context.Background()).Err(); err != nil {
				t.Error(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			srv := testenv.StartRedis(t)
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
			t.Cleanup(func() { _ = rdb.Close() })
			f.rdb = rdb
			runs := f.appendRuns(t, seed(t), 30)
			var all []store.RunEventRecord
			for _, recs := range runs {
				all = append(all, recs...)
			}
			f.publish(t, all)
			f.clearOutbox(t)
			group := "g-" + testenv.RandomID(4)
			run := startConverging(t, f, group, rdb, 200*time.Millisecond)
			f.waitConverged(t, keys(runs), 30*time.Second)
			// Idle means read and committed too: a projector that wrote the
			// snapshots but had not committed its offsets yet reads those
			// records again after the loss and restores the runs itself
			// (seen under load), which is not what this test is about.
			waitCommittedAtEnd(t, kadm.NewClient(f.producer), group, 30*time.Second)

			tc.lose(srv, rdb)
			lost := time.Now()
			f.waitConverged(t, keys(runs), 30*time.Second)
			t.Logf("30 idle runs back %v after Redis lost everything", time.Since(lost).Round(time.Millisecond))
			ctx := context.Background()
			for id, recs := range runs {
				if _, err := rdb.ZScore(ctx, snapshots.IndexKey(recs[0].TenantID), id).Result(); err != nil {
					t.Fatalf("run %s is not back in its tenant's run index: %v", id, err)
				}
			}
			waitRepaired(t, run.reg, "missing", len(runs))
		})
	}
}

// seqWatcher records the lastEventSeq of every notification of one run.
type seqWatcher struct {
	mu   sync.Mutex
	seqs map[int64]bool
}

func (w *seqWatcher) watch(t *testing.T, rdb redis.UniversalClient, runID string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sub := rdb.Subscribe(ctx, snapshots.UpdatesChannel)
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			msg, err := sub.ReceiveMessage(ctx)
			if err != nil {
				return
			}
			if !strings.Contains(msg.Payload, runID) {
				continue
			}
			var u struct {
				LastEventSeq int64 `json:"lastEventSeq"`
			}
			if json.Unmarshal([]byte(msg.Payload), &u) == nil {
				w.mu.Lock()
				w.seqs[u.LastEventSeq] = true
				w.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { cancel(); _ = sub.Close(); <-done })
}

func (w *seqWatcher) saw(seq int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seqs[seq]
}

// TestConverge_DeadLetteredTailThroughTheRelay: the relay itself
// dead-letters the runs' last events while the broker refuses every
// produce (kfake fault injection), then the broker accepts again. No later
// event comes to reveal the gap; convergence brings every snapshot to the
// store's state, not stale.
func TestConverge_DeadLetteredTailThroughTheRelay(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	client, err := kgo.NewClient(append(relay.ClientOptions(f.brokers), kgo.RecordDeliveryTimeout(3*time.Second))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	rl, err := relay.New(relay.Config{Topic: topic, PollInterval: 50 * time.Millisecond, RebalanceInterval: 100 * time.Millisecond,
		BackoffBase: 10 * time.Millisecond, BackoffMax: 50 * time.Millisecond, MaxAttempts: 2, RetryWindow: time.Millisecond},
		f.store.Pool(), client)
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	relayDone := make(chan error, 1)
	go func() { relayDone <- rl.Run(rctx) }()
	t.Cleanup(func() { cancel(); <-relayDone })
	run := startConverging(t, f, "g-"+testenv.RandomID(4), f.rdb, 200*time.Millisecond)

	// The runs' heads go through; their tails are refused and dead-lettered.
	rng := seed(t)
	var heads, tails []store.RunEventWrite
	var ids []string
	for range 5 {
		evs := workload.Run(rng, "tenant_a", workload.Options{})
		heads = append(heads, evs[:len(evs)-2]...)
		tails = append(tails, evs[len(evs)-2:]...)
		ids = append(ids, evs[0].RunID)
	}
	for _, r := range f.store.AppendBatch(ctx, heads) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	outboxEmpty := func() bool {
		var n int
		err := f.store.Pool().QueryRow(ctx, `SELECT count(*) FROM outbox`).Scan(&n)
		return err == nil && n == 0
	}
	testenv.WaitFor(t, 30*time.Second, "the runs' heads published", outboxEmpty)
	refused := f.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: topic, Err: kerr.InvalidRecord, Count: -1})
	for _, r := range f.store.AppendBatch(ctx, tails) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	testenv.WaitFor(t, 30*time.Second, "the tails dead-lettered", func() bool {
		dls, err := f.store.Outbox().ListDeadLetters(ctx, "", 100)
		return err == nil && len(dls) == len(tails) && outboxEmpty()
	})
	refused.Remove()
	f.waitConverged(t, ids, 30*time.Second)
	waitRepaired(t, run.reg, "behind", len(ids))
}
