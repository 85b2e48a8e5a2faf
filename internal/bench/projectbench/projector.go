package projectbench

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/runstream/runstream/projector"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
)

// runningProjector is a projector running in this process.
type runningProjector struct {
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan error
}

// startProjector starts projector.Run with a fresh registry.
func (b *bench) startProjector(ctx context.Context, brokers []string, topic, group string, src interface {
	FetchEvents(context.Context, string, store.FetchOptions) ([]store.RunEventRecord, error)
	ProjectSnapshot(context.Context, string) (store.RunSnapshot, error)
}, lagHigh time.Duration) (*runningProjector, error) {
	reg := prometheus.NewRegistry()
	p, err := projector.New(projector.Config{Brokers: brokers, Topic: topic, Group: group, MaxPollRecords: b.cfg.Batch,
		LagHighThreshold: lagHigh, DisableConvergence: b.cfg.DisableConvergence, SnapshotTTL: b.cfg.SnapshotTTL,
		Registerer: reg, Logger: b.cfg.Logger}, b.rdb, src)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	r := &runningProjector{reg: reg, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- p.Run(rctx) }()
	return r, nil
}

// exited reports the projector's error if it stopped on its own.
func (r *runningProjector) exited() error {
	select {
	case err := <-r.done:
		r.done = nil
		if err == nil {
			err = errors.New("it returned without an error")
		}
		return fmt.Errorf("the projector stopped during the bench: %w", err)
	default:
		return nil
	}
}

// stop cancels the projector and waits for it.
func (r *runningProjector) stop() error {
	if r.cancel == nil {
		return nil
	}
	r.cancel()
	r.cancel = nil
	if r.done == nil {
		return nil
	}
	return <-r.done
}

// noStore is the resync source of the catch-up and memory phases:
// their topics have no gaps and no undecodable records, so a projector
// that asks the store about one of their runs (mine) has a bug. The call
// fails (the projector logs it and leaves the run stale) and the report
// shows it. Other runs are another client's: the resync set
// runstream:resync is shared by everything using the Redis server, and
// every projector retries the stale runs it lists; those calls fail too,
// without counting.
type noStore struct {
	mine  map[string]int
	calls atomic.Int64
}

func (s *noStore) fail(runID string) error {
	if _, ok := s.mine[runID]; !ok {
		return fmt.Errorf("bench: run %q is not the bench's (another client left it in %s); the bench has no store for it", runID, snapshots.ResyncSetKey)
	}
	s.calls.Add(1)
	return fmt.Errorf("bench: the projector asked the store about run %q, but the topic has no gaps: a projector bug", runID)
}

func (s *noStore) FetchEvents(_ context.Context, runID string, _ store.FetchOptions) ([]store.RunEventRecord, error) {
	return nil, s.fail(runID)
}

func (s *noStore) ProjectSnapshot(_ context.Context, runID string) (store.RunSnapshot, error) {
	return store.RunSnapshot{}, s.fail(runID)
}

// ConvergenceHorizon, ChangedRuns and RunsBefore make noStore a
// converge.Heads, so the catch-up runs with convergence on, as in
// production: its passes take the lease, measure the group's lag (which
// holds the horizon back while the projector catches up) and move the
// cursor in Redis. The bench's runs exist only on the topic, so no window
// holds any run: what a pass costs the store itself is not in this
// measurement (one query over a BRIN range every 5 s, in one process).
func (s *noStore) ConvergenceHorizon(_ context.Context, grace time.Duration) (time.Time, error) {
	return time.Now().Add(-grace), nil
}

func (s *noStore) ChangedRuns(context.Context, time.Time, time.Time) ([]store.RunHead, error) {
	return nil, nil
}

func (s *noStore) RunsBefore(context.Context, string, time.Time, int) ([]store.RunHead, error) {
	return nil, nil
}

// metrics is a reading of a projector's registry.
type metrics struct {
	events                                               map[string]int64 // by result
	conflicts, resyncs, undecodable, gaps, redisFailures int64
	cacheHits, cacheMisses                               int64
	batches                                              int64
	batchTime                                            time.Duration
}

func readMetrics(reg *prometheus.Registry) (metrics, error) {
	m := metrics{events: map[string]int64{}}
	counters := map[string]*int64{
		"runstream_projector_write_conflicts_total":       &m.conflicts,
		"runstream_projector_resyncs_total":               &m.resyncs,
		"runstream_projector_undecodable_records_total":   &m.undecodable,
		"runstream_projector_non_contiguous_total":        &m.gaps,
		"runstream_projector_redis_failures_total":        &m.redisFailures,
		"runstream_projector_snapshot_cache_hits_total":   &m.cacheHits,
		"runstream_projector_snapshot_cache_misses_total": &m.cacheMisses,
	}
	mfs, err := reg.Gather()
	if err != nil {
		return m, fmt.Errorf("gathering the projector's metrics: %w", err)
	}
	for _, mf := range mfs {
		for _, met := range mf.GetMetric() {
			v := int64(met.GetCounter().GetValue())
			switch name := mf.GetName(); {
			case name == "runstream_projector_events_total":
				for _, lp := range met.GetLabel() {
					if lp.GetName() == "result" {
						m.events[lp.GetValue()] += v
					}
				}
			case name == "runstream_projector_batch_seconds":
				m.batches += int64(met.GetHistogram().GetSampleCount())
				m.batchTime += time.Duration(met.GetHistogram().GetSampleSum() * float64(time.Second))
			case counters[name] != nil:
				*counters[name] += v
			}
		}
	}
	return m, nil
}
