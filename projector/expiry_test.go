package projector_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
)

// TestProjector_SnapshotTTL: with a retention, terminal runs leave Redis
// (snapshot and catalog entries) ttl after their terminal event and open
// runs stay; neither a replay of an expired run's records nor a late
// record of one brings it back, and convergence after Redis lost
// everything restores the open runs and only them. In both encodings.
func TestProjector_SnapshotTTL(t *testing.T) {
	t.Parallel()
	for _, enc := range []snapshots.Encoding{snapshots.EncodingJSON, snapshots.EncodingGzip} {
		t.Run(enc.String(), func(t *testing.T) {
			t.Parallel()
			testSnapshotTTL(t, enc)
		})
	}
}

func testSnapshotTTL(t *testing.T, enc snapshots.Encoding) {
	f := newFixture(t)
	srv := testenv.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	f.rdb = rdb
	ctx := context.Background()
	rng := seed(t)
	const ttl = 3 * time.Second
	ended := map[string][]store.RunEventRecord{}
	open := map[string][]store.RunEventRecord{}
	var all []store.RunEventRecord
	for i := range 24 {
		evs := workload.Run(rng, "tenant_ttl", workload.Options{})
		if i%3 == 0 {
			// Open: everything before its terminal event.
			for j, ev := range evs {
				if ev.EventType == store.EventRunCompleted || ev.EventType == store.EventRunFailed || ev.EventType == store.EventRunCancelled {
					evs = evs[:j]
					break
				}
			}
		}
		for _, r := range f.store.AppendBatch(ctx, evs) {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
		recs, err := f.store.FetchEvents(ctx, evs[0].RunID, store.FetchOptions{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			open[evs[0].RunID] = recs
		} else {
			ended[evs[0].RunID] = recs
		}
		all = append(all, recs...)
	}
	f.publish(t, all)
	f.clearOutbox(t)
	cfg := testConfig(f.brokers, "g-"+testenv.RandomID(4))
	cfg.ConvergeInterval, cfg.ConvergeGrace, cfg.SnapshotTTL = 200*time.Millisecond, 100*time.Millisecond, ttl
	cfg.SnapshotEncoding = enc
	run := runProjector(t, cfg, rdb, f.store)
	f.waitConverged(t, keys(open), 30*time.Second)
	for id := range open {
		// Only terminal snapshots are compressed: open runs stay JSON.
		raw, err := rdb.Get(ctx, snapshots.Key(id)).Bytes()
		if err != nil || snapshots.IsCompressed(raw) {
			t.Fatalf("open run %s stored compressed=%v (%v) under %s", id, snapshots.IsCompressed(raw), err, enc)
		}
	}

	gone := func(what string) {
		t.Helper()
		testenv.WaitUntil(t, 15*time.Second, func() error {
			for id := range ended {
				if n, err := rdb.Exists(ctx, snapshots.Key(id)).Result(); err != nil || n != 0 {
					return fmt.Errorf("%s: the ended run %s is still in Redis (%v)", what, id, err)
				}
			}
			counts, total, err := snapshots.CatalogCounts(ctx, rdb, "tenant_ttl")
			if err != nil {
				return err
			}
			if total != int64(len(open)) || counts[store.RunCompleted]+counts[store.RunFailed]+counts[store.RunCancelled] != 0 {
				return fmt.Errorf("%s: catalog holds %d runs (%v), want the %d open ones", what, total, counts, len(open))
			}
			return nil
		})
	}
	gone("after the retention")
	f.waitConverged(t, keys(open), 5*time.Second)
	for id := range ended {
		s, err := f.store.ProjectSnapshot(ctx, id)
		if err != nil || !store.IsTerminalRunStatus(s.Status) || s.TerminalAt == "" {
			t.Fatalf("ended run %s in the store: %s terminalAt %q, %v", id, s.Status, s.TerminalAt, err)
		}
	}

	// A replay of every record (a consumer reset to the earliest offset),
	// then a late duplicate of one record of each ended run. No write of an
	// ended run may land meanwhile, not even a half-built one that the
	// replay's later records would expire again: every landed write
	// publishes a notification.
	sub := rdb.Subscribe(ctx, snapshots.UpdatesChannelOf(rdb))
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	resurrected := make(chan string, len(all))
	go func() {
		for m := range sub.Channel() {
			if n, err := snapshots.ParseNotification([]byte(m.Payload)); err == nil && ended[n.RunID] != nil {
				resurrected <- n.RunID
			}
		}
	}()
	// The replay's first half first: each ended run's opening events,
	// which alone would make an open, half-built snapshot.
	var firstHalf, rest []store.RunEventRecord
	for _, recs := range ended {
		firstHalf = append(firstHalf, recs[:len(recs)/2]...)
		rest = append(rest, recs[len(recs)/2:]...)
		rest = append(rest, recs[len(recs)/2]) // a late duplicate
	}
	for _, recs := range open {
		rest = append(rest, recs...)
	}
	f.publish(t, firstHalf)
	testenv.WaitUntil(t, 20*time.Second, func() error {
		select {
		case id := <-resurrected:
			t.Fatalf("a write of the expired run %s landed during the replay", id)
		default:
		}
		if got := counter(t, run.reg, "runstream_projector_expired_writes_total", ""); got < float64(len(ended)) {
			return fmt.Errorf("runstream_projector_expired_writes_total = %v, want at least %d (each ended run's opening events resolved against the store)", got, len(ended))
		}
		return nil
	})
	f.publish(t, rest)
	testenv.WaitUntil(t, 20*time.Second, func() error {
		if got := counter(t, run.reg, "runstream_projector_expired_writes_total", ""); got < float64(2*len(ended)) {
			return fmt.Errorf("runstream_projector_expired_writes_total = %v, want at least %d (the replay reached each ended run's end)", got, 2*len(ended))
		}
		return nil
	})
	gone("after a replay and late duplicates")
	select {
	case id := <-resurrected:
		t.Fatalf("a write of the expired run %s landed during the replay", id)
	default:
	}

	// Redis loses everything: convergence brings back the open runs, and
	// never the expired ones.
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	f.waitConverged(t, keys(open), 30*time.Second)
	passes := counter(t, run.reg, "runstream_converge_passes_total", "window")
	testenv.WaitUntil(t, 10*time.Second, func() error {
		if got := counter(t, run.reg, "runstream_converge_passes_total", "window"); got < passes+3 {
			return fmt.Errorf("%v window passes since the full one, want 3", got-passes)
		}
		return nil
	})
	gone("after Redis lost everything")
	if got := counter(t, run.reg, "runstream_converge_runs_total", "missing"); got != float64(len(open)) {
		t.Errorf("convergence repaired %v missing runs, want the %d open ones only", got, len(open))
	}
}
