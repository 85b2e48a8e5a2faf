package relaybench

import (
	"context"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/bench/harness"
	"github.com/runstream/runstream/internal/retry"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// latencyEvent is what the consumer needs of a record's value.
type latencyEvent struct {
	EventID     string `json:"eventId"`
	PersistedAt string `json:"persistedAt"`
}

// latency appends at the offered rate with the relay running and measures
// each event's commit-to-consume time on the topic.
func (b *bench) latency(ctx context.Context) (_ *LatencyReport, err error) {
	cfg := b.cfg
	n := int(int64(cfg.Rate) * int64(cfg.Duration) / int64(time.Second))
	n = max(n, 1)
	rep := &LatencyReport{Rate: cfg.Rate, Duration: cfg.Duration, Warmup: cfg.Warmup, Appenders: cfg.Appenders, Offered: int64(n),
		TargetP99: TargetCommitToAckP99, TargetRate: TargetOfferedRate}

	// The appenders' store, on a pool of its own sized as `runstream api`
	// sizes its own (unless --append-conns): its appends beyond the pool's
	// connections share transactions, as the API's would.
	pcfg, err := pgxpool.ParseConfig(b.schema.URL)
	if err != nil {
		return nil, fmt.Errorf("parsing the Postgres URL (--postgres-url): %w", err)
	}
	if cfg.AppendConns > 0 {
		pcfg.MaxConns = int32(cfg.AppendConns)
	}
	rep.AppendConns = int(pcfg.MaxConns)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("opening the appenders' pool: %w", err)
	}
	if err := pool.QueryRow(ctx, `SELECT current_setting('track_commit_timestamp')::bool`).Scan(&rep.CommitTimestamps); err != nil {
		pool.Close()
		return nil, fmt.Errorf("reading track_commit_timestamp: %w", err)
	}
	defer pool.Close()
	storeMetrics := prometheus.NewRegistry()
	st, err := postgres.New(pool, postgres.Config{Logger: cfg.Logger, Registerer: storeMetrics})
	if err != nil {
		return nil, err
	}
	if err := harness.WarmPool(ctx, pool, rep.AppendConns); err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	nctx, stopNotifier := context.WithCancel(ctx)
	defer func() { stopNotifier(); wg.Wait() }()
	wg.Add(1)
	go func() { defer wg.Done(); _ = st.RunOutboxNotifier(nctx) }()

	// The events, generated before the window: the warmup's first, then
	// the window's n.
	runs := newRuns(cfg.Runs)
	rng := mrand.New(mrand.NewPCG(mrand.Uint64(), 1))
	warm := int(int64(cfg.Rate) * int64(cfg.Warmup) / int64(time.Second))
	n += warm
	writes := make([]store.RunEventWrite, n)
	index := make(map[string]int32, n)
	for i := range writes {
		writes[i] = latencyWrite(rng, runs[rng.IntN(len(runs))].id, i)
		index[writes[i].EventID] = int32(i)
	}

	// The consumer starts at the current end, so it sees exactly this
	// phase's records.
	from, _, err := b.kafka.EndOffsets(ctx)
	if err != nil {
		return nil, err
	}
	cons, err := b.newConsumer(from)
	if err != nil {
		return nil, err
	}
	defer cons.Close()
	consumeLat := make([]time.Duration, n)
	produceLat := make([]time.Duration, n)
	consumedAt := make([]time.Time, n)
	seen := make([]bool, n)
	var received, tsLogAppend atomic.Int64
	var dups, foreign, badValues int64
	stopConsumer := harness.Consume(ctx, cons, func(r *kgo.Record, now time.Time) {
		var ev latencyEvent
		if err := json.Unmarshal(r.Value, &ev); err != nil {
			badValues++
			return
		}
		i, ok := index[ev.EventID]
		if !ok {
			foreign++
			return
		}
		if seen[i] {
			dups++
			return
		}
		at, err := time.Parse(time.RFC3339Nano, ev.PersistedAt)
		if err != nil {
			badValues++
			return
		}
		seen[i] = true
		consumeLat[i] = now.Sub(at)
		consumedAt[i] = now
		produceLat[i] = r.Timestamp.Sub(at)
		if r.Attrs.TimestampType() == 1 {
			tsLogAppend.Add(1)
		}
		received.Add(1)
	})
	defer stopConsumer()

	// The window starts once the relays own every shard, as a relay that
	// has been running does.
	var before metrics
	for deadline := time.Now().Add(30 * time.Second); ; {
		if before, err = b.readMetrics(); err != nil {
			return nil, err
		}
		if before.ownedShards >= postgres.NumShards {
			break
		}
		if err := b.relayExited(); err != nil {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the relays own %.0f of %d outbox shards after 30s", before.ownedShards, postgres.NumShards)
		}
		if !retry.Sleep(ctx, 10*time.Millisecond) {
			return nil, fmt.Errorf("bench interrupted before the latency phase: %w", ctx.Err())
		}
	}
	var window *harness.Window
	defer func() { window.Stop() }()
	var txBefore txCounts
	// startWindow marks the end of the warmup: the relay's metrics, the
	// CPU and the profile count from here.
	startWindow := func() error {
		var err error
		if before, err = b.readMetrics(); err != nil {
			return err
		}
		if window, err = harness.StartWindow(cfg.LatencyCPUProfile); err != nil {
			return err
		}
		txBefore = appendTransactions(storeMetrics)
		return nil
	}
	appendLat := make([]time.Duration, n)
	appendedAt := make([]time.Time, n)
	appendErr := make([]bool, n)
	var appended atomic.Int64
	stop := b.progress("latency", int64(n), appended.Load)
	// Open loop: a slow database shows as append latency (from the due
	// time) instead of a lower offered rate.
	start, err := harness.OpenLoop(ctx, n, cfg.Rate, cfg.Appenders, func(i int, due time.Time) {
		_, err := st.AppendEvent(ctx, writes[i])
		appendedAt[i] = time.Now()
		appendLat[i] = appendedAt[i].Sub(due)
		if err != nil {
			appendErr[i] = true
			if ctx.Err() == nil {
				cfg.Logger.Warn("append failed in the latency phase", "err", err)
			}
			return
		}
		appended.Add(1)
	}, func(i int) error {
		if i == warm {
			return startWindow()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	rep.Window = time.Since(start) - cfg.Warmup
	txAfter := appendTransactions(storeMetrics)
	rep.SingleTransactions = txAfter.single - txBefore.single
	rep.SharedTransactions = txAfter.shared - txBefore.shared
	stop()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("bench interrupted during the latency phase: %w", ctx.Err())
	}
	rep.Appended = appended.Load() - int64(warm)
	for i := range warm {
		if appendErr[i] {
			rep.Appended++ // the warmup's failures are not the window's
		}
	}
	rep.Errors = int64(n-warm) - rep.Appended

	// The records of the last appends are still on their way.
	deadline := time.Now().Add(latencyGrace)
	for received.Load() < appended.Load() && time.Now().Before(deadline) {
		if err := b.relayExited(); err != nil {
			return nil, err
		}
		if !retry.Sleep(ctx, 5*time.Millisecond) {
			break
		}
	}
	rep.CPU = window.Stop()
	stopConsumer()
	after, err := b.readMetrics()
	if err != nil {
		return nil, err
	}

	rep.Received = 0
	for i := warm; i < n; i++ {
		if seen[i] {
			rep.Received++
		}
	}
	rep.Duplicates, rep.Foreign, rep.BadValues = dups, foreign, badValues
	rep.TimestampType = "CreateTime"
	if tsLogAppend.Load() > 0 {
		rep.TimestampType = "LogAppendTime"
	}
	var cLat, pLat, aLat, rLat []time.Duration
	for i := warm; i < n; i++ {
		if !appendErr[i] {
			aLat = append(aLat, appendLat[i])
		}
		if seen[i] {
			cLat = append(cLat, consumeLat[i])
			pLat = append(pLat, produceLat[i])
			if !appendErr[i] {
				rLat = append(rLat, consumedAt[i].Sub(appendedAt[i]))
			}
		}
	}
	rep.CommitToConsume = harness.Summarize(cLat)
	rep.AppendedToConsume = harness.Summarize(rLat)
	rep.CommitToProduce = harness.Summarize(pLat)
	rep.DueToAppended = harness.Summarize(aLat)
	h := after.commitToAck.since(before.commitToAck)
	rep.RelayCommitToAck = harness.Latency{P50: h.quantile(0.50), P95: h.quantile(0.95), P99: h.quantile(0.99)}
	rep.RelayWithinTarget, rep.RelayWithinExact = h.within(rep.TargetP99.Seconds())
	rep.RelayObservations = int64(h.count)
	rep.Rounds = int64(after.batches - before.batches)
	return rep, nil
}

// latencyWrite is a StepCompleted with a payload shaped like the drain's
// (about 300 bytes) and a stepId no other event of the phase has.
func latencyWrite(rng *mrand.Rand, id workload.Identity, i int) store.RunEventWrite {
	step := "step_l" + strconv.Itoa(i)
	return workload.Event(id, store.EventStepCompleted, step, 1, 1, time.Now(), map[string]any{
		"durationMs": rng.IntN(5000),
		"model":      "model.orders_" + strconv.Itoa(rng.IntN(97)),
		"warehouse":  "analytics_wh",
		"result":     map[string]any{"status": "success", "rowsAffected": rng.IntN(1000000), "bytesScanned": rng.IntN(1000000000)},
		"artifacts": []map[string]any{{
			"uri":       "s3://runstream-artifacts/" + id.RunID + "/" + step + "/1/run_results.json",
			"kind":      "dbt-run-results",
			"sizeBytes": rng.IntN(100000),
		}},
	})
}
