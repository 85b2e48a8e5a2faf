package etlbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/bench/harness"
	"github.com/runstream/runstream/internal/etl"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/record"
	"github.com/runstream/runstream/reduce"
	"github.com/runstream/runstream/store"
)

// Generate makes events records of realistic runs, active of them in
// flight at once: each record belongs to a random in-flight run, and a run
// that has emitted its last event makes room for a new one. Each run's
// records are its events as the store would hold them (engine retries with
// a repeated idempotency key are dropped, as the store answers them as
// duplicates; runSeq contiguous from 1), with persistedAt in topic order.
// The runs still in flight at the end are cut short.
func Generate(seed uint64, events, active int) (runs [][]store.RunEventRecord, order []store.RunEventRecord) {
	rng := mrand.New(mrand.NewPCG(seed, 11))
	start := time.Now().Add(-time.Hour)
	type inFlight struct {
		run  int
		left []store.RunEventWrite
		seq  int64
		keys map[string]bool
	}
	newRun := func() *inFlight {
		runs = append(runs, nil)
		return &inFlight{run: len(runs) - 1, keys: map[string]bool{},
			left: workload.Run(rng, "tenant_bench_etl", workload.Options{Start: start})}
	}
	slots := make([]*inFlight, 0, active)
	order = make([]store.RunEventRecord, 0, events)
	clock := start
	for len(order) < events {
		if len(slots) < active {
			slots = append(slots, newRun())
		}
		i := rng.IntN(len(slots))
		f := slots[i]
		w := f.left[0]
		f.left = f.left[1:]
		if !f.keys[w.IdempotencyKey] {
			f.keys[w.IdempotencyKey] = true
			f.seq++
			clock = clock.Add(10 * time.Microsecond)
			rec := store.RunEventRecord{RunEventWrite: w, RunSeq: f.seq, PersistedAt: store.FormatPersistedAt(clock)}
			runs[f.run] = append(runs[f.run], rec)
			order = append(order, rec)
		}
		if len(f.left) == 0 {
			slots[i] = newRun()
		}
	}
	// Runs opened but never given an event are not runs of the topic.
	kept := runs[:0]
	for _, r := range runs {
		if len(r) > 0 {
			kept = append(kept, r)
		}
	}
	return kept, order
}

// fill produces order as the relay would (record.New, murmur2 key
// partitioning) and returns the mean record value size.
func (b *bench) fill(ctx context.Context, order []store.RunEventRecord) (float64, error) {
	size, err := b.kafka.Fill(ctx, len(order), func(i int) (*kgo.Record, error) {
		return record.New(b.kafka.Topic, &order[i])
	}, b.cfg.Progress, "fill"+b.label)
	return harness.Round(size, 1), err
}

// noStore is the sink's gap source: the topic has no gaps, so a call
// is a bug; it fails and is counted.
type noStore struct{ calls atomic.Int64 }

func (s *noStore) FetchEvents(_ context.Context, runID string, _ store.FetchOptions) ([]store.RunEventRecord, error) {
	s.calls.Add(1)
	return nil, fmt.Errorf("bench: the topic has no gaps, yet run %s was fetched", runID)
}

// writeAllocProfile writes the allocation profile as of the last GC (a
// profile's counts are only complete after one) to w.
func (b *bench) writeAllocProfile(w io.Writer) {
	runtime.GC()
	if err := pprof.Lookup("allocs").WriteTo(w, 0); err != nil {
		b.cfg.Logger.Warn("writing the allocation profile failed", "err", err)
	}
}

// runSink runs the ETL until its group committed the whole topic.
func (b *bench) runSink(ctx context.Context, pool *pgxpool.Pool, rep *Report) error {
	reg := prometheus.NewRegistry()
	src := &noStore{}
	group := "bench-etl-" + harness.RandomHex(6)
	e, err := etl.New(etl.Config{Brokers: b.kafka.Addrs, Topic: b.kafka.Topic, Group: group, Fetcher: src,
		MaxPollRecords: b.cfg.Batch, MaxQueuedRecords: b.cfg.MaxQueued, DisableBatching: b.cfg.DisableBatching, Registerer: reg, Logger: b.cfg.Logger}, pool)
	if err != nil {
		return err
	}
	runtime.GC()
	if b.cfg.AllocProfileBase != nil {
		b.writeAllocProfile(b.cfg.AllocProfileBase)
	}
	w, err := harness.StartWindow(b.cfg.CPUProfile)
	if err != nil {
		return err
	}
	start := time.Now()
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.Run(rctx) }()
	err = b.waitCommitted(ctx, group, rep.Events, done)
	rep.Window = time.Since(start)
	rep.CPU = w.Stop()
	if b.cfg.AllocProfile != nil {
		b.writeAllocProfile(b.cfg.AllocProfile)
	}
	cancel()
	if runErr := <-done; runErr != nil {
		err = errors.Join(err, fmt.Errorf("the ETL stopped with an error: %w", runErr))
	}
	if err != nil {
		return err
	}
	if rep.Committed, err = b.kafka.CommittedSum(ctx, group); err != nil {
		return err
	}
	rep.StoreCalls = src.calls.Load()
	byResult := map[string]*int64{"applied": &rep.Applied, "unknown_type": &rep.UnknownType, "duplicate": &rep.Duplicates,
		"gap_filled": &rep.GapFilled, "handler_error": &rep.HandlerError, "dead_lettered": &rep.DeadLettered}
	mfs, err := reg.Gather()
	if err != nil {
		return err
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case "runstream_etl_events_total":
				for _, l := range m.GetLabel() {
					if p := byResult[l.GetValue()]; p != nil {
						*p = int64(m.GetCounter().GetValue())
					}
				}
			case "runstream_etl_flush_seconds":
				rep.Flushes = int64(m.GetHistogram().GetSampleCount())
				rep.FlushTime = time.Duration(m.GetHistogram().GetSampleSum() * float64(time.Second))
			}
		}
	}
	return nil
}

// waitCommitted polls until group's committed offsets add up to end,
// failing when the ETL (its Run's result on done) stops.
func (b *bench) waitCommitted(ctx context.Context, group string, end int64, done chan error) error {
	exited := func() error {
		select {
		case err := <-done:
			done <- err // for the caller, who waits for the ETL's end
			return fmt.Errorf("the ETL stopped during the bench: %v", err)
		default:
			return nil
		}
	}
	return b.kafka.WaitCommitted(ctx, harness.Wait{Group: group, End: end, Who: "the ETL", Phase: "sink" + b.label,
		Poll: 10 * time.Millisecond, Stall: stall, Exited: exited, Progress: b.cfg.Progress})
}

// row is what the check compares of a run's row.
type row struct {
	status                  string
	steps, failed, attempts int
}

// expect works out each run's row with reduce, for the runs
// that get one (those with an event of a known type), by run ID.
func expect(runs [][]store.RunEventRecord) map[string]row {
	want := make(map[string]row, len(runs))
	for _, recs := range runs {
		knownEvent := false
		for i := range recs {
			knownEvent = knownEvent || store.IsKnownEvent(recs[i].EventType)
		}
		if !knownEvent {
			continue // no row: only events of unknown types
		}
		snap, _ := reduce.Project(store.RunSnapshot{}, recs)
		attempts := 0
		for _, st := range snap.Steps {
			attempts += 1 + len(st.Attempts)
		}
		want[snap.RunID] = row{snap.Status, len(snap.Steps), snap.FailedSteps, attempts}
	}
	return want
}

// verify counts the rows and checks each run's against what expect
// worked out.
func verify(ctx context.Context, pool *pgxpool.Pool, want map[string]row, rep *Report) error {
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM step_attempts)`).Scan(&rep.RunRows, &rep.AttemptRows); err != nil {
		return fmt.Errorf("counting the sink's rows: %w", err)
	}
	got := make(map[string]row, len(want))
	rows, err := pool.Query(ctx, `SELECT run_id, status, steps, failed_steps, attempts_total FROM runs`)
	if err != nil {
		return fmt.Errorf("reading the sink's runs: %w", err)
	}
	for rows.Next() {
		var id string
		var r row
		if err := rows.Scan(&id, &r.status, &r.steps, &r.failed, &r.attempts); err != nil {
			rows.Close()
			return err
		}
		got[id] = r
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	ids := make([]string, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	slices.Sort(ids) // the same first problem for the same rows
	for _, id := range ids {
		w := want[id]
		g, ok := got[id]
		switch {
		case !ok:
			rep.Missing++
			if rep.FirstProblem == "" {
				rep.FirstProblem = fmt.Sprintf("run %s has no row", id)
			}
		case g != w:
			rep.Wrong++
			if rep.FirstProblem == "" {
				rep.FirstProblem = fmt.Sprintf("run %s: row %+v, reducer %+v", id, g, w)
			}
		default:
			rep.Verified++
		}
	}
	return nil
}
