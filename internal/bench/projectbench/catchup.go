package projectbench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runstream/runstream/internal/bench/harness"
	"github.com/runstream/runstream/internal/retry"
	"github.com/runstream/runstream/reduce"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
)

// writeLog is the projector's guarded writes of the catch-up, as its
// notifications told them: run and new watermark, in order.
type writeLog struct {
	want     []int64      // per run: its last runSeq
	complete atomic.Int64 // runs notified at their last runSeq

	mu      sync.Mutex
	last    []int64 // per run: the last watermark notified
	writes  []loggedWrite
	regress int64 // notifications that did not move their run's watermark forward
}

type loggedWrite struct{ run, seq int32 }

func (l *writeLog) add(r int, seq int64, _ time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if seq <= l.last[r] {
		l.regress++
	}
	l.last[r] = seq
	l.writes = append(l.writes, loggedWrite{int32(r), int32(seq)})
	if seq == l.want[r] {
		l.complete.Add(1)
	}
}

// catchUp fills a topic, times the projector reducing it into Redis while
// recording its writes from their notifications, checks every snapshot,
// and replays the same writes with the guarded script alone.
func (b *bench) catchUp(ctx context.Context) (_ *CatchUpReport, err error) {
	cfg := b.cfg
	tenant := b.prefix + "_catchup"
	runs := min(cfg.Runs, cfg.Events)
	plans := newPlans(tenant, runs, cfg.Events, true, time.Now().Add(-10*time.Minute))
	ids := make([]string, runs)
	index := make(map[string]int, 2*runs)
	wlog := &writeLog{want: make([]int64, runs), last: make([]int64, runs)}
	for i, p := range plans {
		ids[i] = p.id.RunID
		index[p.id.RunID] = i
		wlog.want[i] = int64(p.events)
	}
	b.track(tenant, ids...)
	defer func() { _ = b.unlink(ctx) }()
	rep := &CatchUpReport{Events: int64(cfg.Events), Runs: runs, Target: TargetCatchUpRatio}
	kafka, err := b.openBroker(ctx)
	if err != nil {
		return nil, err
	}
	defer kafka.Close(ctx)
	start := time.Now()
	if rep.RecordBytes, err = b.fill(ctx, kafka, plans, cfg.Events, "fill"); err != nil {
		return nil, err
	}
	rep.RecordBytes = harness.Round(rep.RecordBytes, 1)
	rep.Fill = time.Since(start)

	// The subscriber stays through the baseline, so both publish to the
	// same subscribers.
	sub, err := b.subscribe(ctx, index, wlog.add)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, sub.close()) }()
	src := &noStore{mine: index}
	group := "bench-project-" + harness.RandomHex(6)
	runtime.GC()
	w, err := harness.StartWindow(cfg.CatchUpCPUProfile)
	if err != nil {
		return nil, err
	}
	start = time.Now()
	r, err := b.startProjector(ctx, kafka.Addrs, kafka.Topic, group, src, noLagAlert)
	if err == nil {
		err = b.waitCommitted(ctx, kafka, group, rep.Events, func() error { return errors.Join(r.exited(), sub.exited()) }, "catch-up", nil)
	}
	rep.Window = time.Since(start)
	rep.CPU = w.Stop()
	if r != nil {
		err = errors.Join(err, r.stop())
	}
	if err != nil {
		return nil, err
	}
	m, err := readMetrics(r.reg)
	if err != nil {
		return nil, err
	}
	rep.Applied, rep.Duplicates, rep.Gaps = m.events["applied"]+m.events["unknown_type"], m.events["duplicate"], m.events["gap"]
	rep.Conflicts, rep.Resyncs, rep.Undecodable = m.conflicts, m.resyncs, m.undecodable
	rep.CacheHits, rep.CacheMisses = m.cacheHits, m.cacheMisses
	rep.Batches, rep.BatchTime = m.batches, m.batchTime
	rep.StoreCalls = src.calls.Load()
	if rep.Committed, err = kafka.CommittedSum(ctx, group); err != nil {
		return nil, err
	}
	kafka.Close(ctx) // the broker's records are not needed any more

	// Each write published its notification before its batch was
	// committed; the last ones may still be on their way to us.
	for deadline := time.Now().Add(10 * time.Second); wlog.complete.Load() < int64(runs) && time.Now().Before(deadline); {
		if err := sub.exited(); err != nil {
			return nil, err
		}
		retry.Sleep(ctx, 5*time.Millisecond)
	}
	rep.UnnotifiedRuns = int64(runs) - wlog.complete.Load()
	chk, err := b.verifySnapshots(ctx, tenant, ids,
		func(i int) int64 { return int64(plans[i].events) }, func(i int) string { return plans[i].wantStatus() })
	if err != nil {
		return nil, err
	}
	rep.Verified, rep.Wrong, rep.Missing, rep.FirstProblem = chk.verified, chk.wrong, chk.missing, chk.first
	wlog.mu.Lock()
	writes := wlog.writes
	rep.Writes, rep.Regressions = int64(len(writes)), wlog.regress
	wlog.mu.Unlock()
	// The baseline starts from the same Redis as the projector did.
	if err := b.unlink(ctx); err != nil {
		return nil, err
	}
	pipeline := max(int(math.Round(harness.Div(float64(len(writes)), float64(rep.Batches)))), 1)
	if rep.Baseline, err = b.baseline(ctx, tenant, plans, writes, pipeline); err != nil {
		return nil, err
	}
	rep.Baseline.Events = rep.Events
	rep.Ratio = harness.Ratio(rep.EventsPerSec(), rep.Baseline.EventsPerSec())
	return rep, nil
}

// noLagAlert is the projector's lag threshold in the catch-up phases:
// a backlog is their point, PROJECTOR_LAG_HIGH warnings would be noise.
const noLagAlert = 24 * time.Hour

// snapshotTemplate is one generated run's snapshot after each of its events,
// encoded as the projector encodes it.
type snapshotTemplate struct {
	bodies [][]byte
	status []string
}

// baseline replays the projector's writes with the guarded script alone,
// in their order, in pipelines of pipeline writes (the projector's mean
// writes per batch): run r's write to seq s stores template r mod
// baselineTemplates's snapshot after its event s (the same generator reduced
// by the same reducer, so the projector's sizes), guarded on the
// watermark the replay last wrote for r.
func (b *bench) baseline(ctx context.Context, tenant string, plans []*plan, writes []loggedWrite, pipeline int) (*ScriptBaseline, error) {
	maxEvents := plans[0].events
	tpls := make([]snapshotTemplate, min(baselineTemplates, len(plans)))
	for t := range tpls {
		p := newPlans(tenant, 1, maxEvents, true, time.Now().Add(-10*time.Minute))[0]
		var cur store.RunSnapshot
		for range maxEvents {
			cur, _ = reduce.Apply(cur, p.nextRecord())
			body, err := json.Marshal(cur)
			if err != nil {
				return nil, fmt.Errorf("encoding a template snapshot: %w", err)
			}
			tpls[t].bodies = append(tpls[t].bodies, body)
			tpls[t].status = append(tpls[t].status, cur.Status)
		}
	}
	ids := make([]string, len(plans))
	last := make([]int64, len(plans))
	for i, p := range plans {
		ids[i] = "bench-baseline-" + p.id.RunID
		last[i] = -1 // no snapshot yet
	}
	b.track("", ids...)
	defer func() { _ = b.unlink(ctx) }()

	rep := &ScriptBaseline{Writes: int64(len(writes)), Pipeline: pipeline}
	var written atomic.Int64
	stop := b.progress("baseline", rep.Writes, written.Load)
	defer stop()
	ws := make([]snapshots.EncodedWrite, 0, pipeline)
	var bodyBytes int64
	runtime.GC()
	w, err := harness.StartWindow(nil)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	for lo := 0; lo < len(writes); lo += pipeline {
		ws = ws[:0]
		for _, w := range writes[lo:min(lo+pipeline, len(writes))] {
			t := &tpls[int(w.run)%len(tpls)]
			seq := int64(w.seq)
			ws = append(ws, snapshots.EncodedWrite{RunID: ids[w.run], TenantID: tenant, Status: t.status[seq-1],
				Snapshot: t.bodies[seq-1], LastEventSeq: seq, Expected: last[w.run]})
			last[w.run] = seq
			bodyBytes += int64(len(t.bodies[seq-1]))
		}
		lost, err := snapshots.WriteEncoded(ctx, b.rdb, ws)
		if err != nil {
			return nil, fmt.Errorf("baseline writes: %w", err)
		}
		rep.Lost += int64(lost)
		written.Add(int64(len(ws)))
	}
	rep.Window = time.Since(start)
	rep.CPU = w.Stop()
	rep.SnapshotBytes = harness.Round(harness.Div(float64(bodyBytes), float64(len(writes))), 1)
	return rep, nil
}
