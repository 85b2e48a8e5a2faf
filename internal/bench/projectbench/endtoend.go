package projectbench

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/runstream/runstream/internal/bench/harness"
	"github.com/runstream/runstream/internal/relay"
	"github.com/runstream/runstream/internal/retry"
	"github.com/runstream/runstream/projector"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// seenLog records, per run, when each runSeq first showed as visible on
// the update channel.
type seenLog struct {
	mu      sync.Mutex
	at      [][]time.Time // by run index, then runSeq-1
	visible atomic.Int64
}

func (s *seenLog) mark(r int, seq int64, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for int64(len(s.at[r])) < seq {
		s.at[r] = append(s.at[r], now)
		s.visible.Add(1)
	}
}

func (s *seenLog) when(r int, seq int64) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if seq < 1 || int64(len(s.at[r])) < seq {
		return time.Time{}, false
	}
	return s.at[r][seq-1], true
}

// endToEnd runs store, relay and projector in this process and measures
// append-committed to snapshot-visible at the offered rate.
func (b *bench) endToEnd(ctx context.Context) (_ *EndToEndReport, err error) {
	cfg := b.cfg
	n := max(int(int64(cfg.Rate)*int64(cfg.Duration)/int64(time.Second)), 1)
	rep := &EndToEndReport{Rate: cfg.Rate, Duration: cfg.Duration, Appenders: cfg.Appenders, Runs: cfg.LatencyRuns,
		Offered: int64(n), TargetP99: TargetEndToEndP99, TargetRate: TargetEndToEndRate}
	tenant := b.prefix + "_latency"

	// Three pools, as three processes would have: the appenders' (the
	// API's), the relay's and the projector's (for resyncs).
	sc, relayPool, err := harness.MigratedSchema(ctx, cfg.PostgresURL, false)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, sc.Drop(ctx)) }()
	defer relayPool.Close()
	pcfg, err := pgxpool.ParseConfig(sc.URL)
	if err != nil {
		return nil, fmt.Errorf("parsing the Postgres URL (--postgres-url): %w", err)
	}
	pcfg.MaxConns = int32(cfg.Appenders)
	appendPool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("opening the appenders' pool: %w", err)
	}
	defer appendPool.Close()
	projPool, err := postgres.Connect(ctx, sc.URL)
	if err != nil {
		return nil, err
	}
	defer projPool.Close()
	st, err := postgres.New(appendPool, postgres.Config{Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	projStore, err := postgres.New(projPool, postgres.Config{Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	if err := harness.WarmPool(ctx, appendPool, cfg.Appenders); err != nil {
		return nil, err
	}
	kafka, err := b.openBroker(ctx)
	if err != nil {
		return nil, err
	}
	defer kafka.Close(ctx)

	// The runs: warmup runs first, then the measured ones, and their
	// writes, generated before the window.
	plans := newPlans(tenant, warmupRuns+cfg.LatencyRuns, 0, false, time.Now())
	seen := &seenLog{at: make([][]time.Time, len(plans))}
	ids := make([]string, len(plans))
	index := make(map[string]int, len(plans))
	for i, p := range plans {
		ids[i] = p.id.RunID
		index[p.id.RunID] = i
	}
	b.track(tenant, ids...)
	defer func() { _ = b.unlink(ctx) }()
	rng := mrand.New(mrand.NewPCG(mrand.Uint64(), 2))
	writes := make([]store.RunEventWrite, n)
	runOf := make([]int, n)
	for i := range writes {
		runOf[i] = warmupRuns + rng.IntN(cfg.LatencyRuns)
		writes[i] = plans[runOf[i]].next()
	}

	sub, err := b.subscribe(ctx, index, seen.mark)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, sub.close()) }()

	// The components, each owned by the group and stopped together.
	rctx, stopAll := context.WithCancel(ctx)
	g, gctx := errgroup.WithContext(rctx)
	defer func() {
		stopAll()
		if werr := g.Wait(); werr != nil && err == nil {
			err = werr
		}
	}()
	g.Go(func() error { return st.RunOutboxNotifier(gctx) })
	relayClient, err := kgo.NewClient(relay.ClientOptions(kafka.Addrs)...)
	if err != nil {
		return nil, fmt.Errorf("creating the relay's Kafka client: %w", err)
	}
	defer relayClient.Close()
	rl, err := relay.New(relay.Config{Topic: kafka.Topic, Partitions: cfg.Partitions, Logger: cfg.Logger,
		Registerer: prometheus.NewRegistry()}, relayPool, relayClient)
	if err != nil {
		return nil, err
	}
	g.Go(func() error { return rl.Run(gctx) })
	prj, err := projector.New(projector.Config{Brokers: kafka.Addrs, Topic: kafka.Topic, Group: "bench-project-" + harness.RandomHex(6),
		MaxPollRecords: cfg.Batch, SnapshotTTL: cfg.SnapshotTTL, Registerer: prometheus.NewRegistry(), Logger: cfg.Logger}, b.rdb, projStore)
	if err != nil {
		return nil, err
	}
	g.Go(func() error { return prj.Run(gctx) })

	// A plain consumer (no group) splits each event's time into the
	// relay's part (commit until the record can be read) and the
	// projector's (from then until visible).
	eventIndex := make(map[string]int, n)
	for i := range writes {
		eventIndex[writes[i].EventID] = i
	}
	topicAt := make([]time.Time, n)
	var onTopic atomic.Int64
	cons, err := kgo.NewClient(kgo.SeedBrokers(kafka.Addrs...), kgo.ConsumeTopics(kafka.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		return nil, fmt.Errorf("creating the bench's consumer: %w", err)
	}
	defer cons.Close()
	stopConsumer := harness.Consume(ctx, cons, func(r *kgo.Record, now time.Time) {
		for _, h := range r.Headers {
			if h.Key != "eventId" {
				continue
			}
			if i, ok := eventIndex[string(h.Value)]; ok && topicAt[i].IsZero() {
				topicAt[i] = now
				onTopic.Add(1)
			}
		}
	})
	defer stopConsumer()

	failed := func() error {
		if err := sub.exited(); err != nil {
			return err
		}
		if gctx.Err() != nil && ctx.Err() == nil {
			return errors.New("a component of the latency phase (store notifier, relay, projector, subscriber) stopped; see the log")
		}
		return ctx.Err()
	}

	// Warmup: every run's first events, waited for, so the group has
	// joined and every connection and script is ready before the window.
	warm := int64(0)
	for r := range warmupRuns {
		for range 2 {
			if _, err := st.AppendEvent(ctx, plans[r].next()); err != nil {
				return nil, fmt.Errorf("warmup append: %w", err)
			}
			warm++
		}
	}
	stopWarm := b.progress("warmup", warm, seen.visible.Load)
	deadline := time.Now().Add(stall)
	for seen.visible.Load() < warm {
		if err := failed(); err != nil {
			stopWarm()
			return nil, err
		}
		if time.Now().After(deadline) {
			stopWarm()
			return nil, fmt.Errorf("warmup: %d of %d events visible in Redis after %v", seen.visible.Load(), warm, stall)
		}
		retry.Sleep(ctx, 5*time.Millisecond)
	}
	stopWarm()

	returned := make([]time.Time, n)
	seqs := make([]int64, n)
	due := make([]time.Duration, n)
	var appended atomic.Int64
	stop := b.progress("latency", int64(n), appended.Load)
	runtime.GC()
	w, err := harness.StartWindow(nil)
	if err != nil {
		return nil, err
	}
	start, _ := harness.OpenLoop(ctx, n, cfg.Rate, cfg.Appenders, func(i int, at time.Time) {
		res, err := st.AppendEvent(ctx, writes[i])
		now := time.Now()
		due[i] = now.Sub(at)
		if err != nil {
			if ctx.Err() == nil {
				cfg.Logger.Warn("append failed in the latency phase", "err", err)
			}
			return
		}
		returned[i], seqs[i] = now, res.RunSeq
		appended.Add(1)
	}, nil)
	rep.Window = time.Since(start)
	stop()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bench interrupted during the latency phase: %w", err)
	}
	rep.Appended = appended.Load()
	rep.Errors = int64(n) - rep.Appended

	// The last events are still on their way.
	want := warm + rep.Appended
	stopVis := b.progress("visible", want, seen.visible.Load)
	deadline = time.Now().Add(grace)
	for (seen.visible.Load() < want || onTopic.Load() < rep.Appended) && time.Now().Before(deadline) {
		if err := failed(); err != nil {
			stopVis()
			return nil, err
		}
		retry.Sleep(ctx, 5*time.Millisecond)
	}
	stopVis()
	rep.CPU = w.Stop()

	stopConsumer() // topicAt is ours now

	var vis, dueLat, relayLat, projLat []time.Duration
	for i := range n {
		dueLat = append(dueLat, due[i])
		if seqs[i] == 0 {
			continue
		}
		at, ok := seen.when(runOf[i], seqs[i])
		if !ok {
			rep.Missing++
			continue
		}
		d := at.Sub(returned[i])
		if d < 0 {
			rep.BeforeReturn++
			d = 0
		}
		vis = append(vis, d)
		if t := topicAt[i]; !t.IsZero() {
			relayLat = append(relayLat, max(t.Sub(returned[i]), 0))
			projLat = append(projLat, max(at.Sub(t), 0))
		}
	}
	rep.Visible = int64(len(vis))
	rep.CommitToVisible = harness.Summarize(vis)
	rep.CommitToTopic = harness.Summarize(relayLat)
	rep.TopicToVisible = harness.Summarize(projLat)
	rep.DueToAppended = harness.Summarize(dueLat)
	rep.Foreign, rep.BadUpdates = sub.foreign.Load(), sub.bad.Load()

	// Every run's snapshot ends at the runSeq of its last append.
	last := make([]int64, len(plans))
	for r := range warmupRuns {
		last[r] = 2
	}
	for i := range n {
		last[runOf[i]] = max(last[runOf[i]], seqs[i])
	}
	var checkIDs []string
	var checkWant []int64
	for r, id := range ids {
		if last[r] > 0 {
			checkIDs = append(checkIDs, id)
			checkWant = append(checkWant, last[r])
		}
	}
	chk, err := b.verifySnapshots(ctx, tenant, checkIDs, func(i int) int64 { return checkWant[i] },
		func(int) string { return store.RunRunning })
	if err != nil {
		return nil, err
	}
	rep.Verified, rep.Wrong, rep.FirstProblem = chk.verified, chk.wrong+chk.missing, chk.first
	return rep, nil
}
