package projector

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/runstream/runstream/reduce"
)

type metrics struct {
	events         *prometheus.CounterVec
	applied        prometheus.Counter // events{result="applied"}, and so on
	duplicates     prometheus.Counter
	unknownType    prometheus.Counter
	cacheHits      prometheus.Counter
	cacheMisses    prometheus.Counter
	nonContiguous  prometheus.Counter
	causal         prometheus.Counter
	undecodable    prometheus.Counter
	resyncs        *prometheus.CounterVec
	staleRuns      prometheus.Gauge
	conflicts      prometheus.Counter
	batchTime      prometheus.Histogram
	lagRecords     *prometheus.GaugeVec
	lagSeconds     *prometheus.GaugeVec
	redisFailures  prometheus.Counter
	lagHighAlerted prometheus.Counter
	expiredWrites  prometheus.Counter
	expiredSwept   prometheus.Counter
	offsetResets   prometheus.Counter
	missing        prometheus.Counter

	commitToVisible prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	m := &metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "runstream_projector_events_total",
			Help: "Records processed by result: applied, duplicate (runSeq <= watermark), gap (runSeq > watermark+1), unknown_type."}, []string{"result"}),
		nonContiguous: c("runstream_projector_non_contiguous_total", "Gaps seen (alert PROJECTOR_NON_CONTIGUOUS_FETCH_DETECTED): the run was marked stale and resynced."),
		causal:        c("runstream_projector_causal_violations_total", "Events applied although their transition is impossible (alert PROJECTOR_CAUSAL_VIOLATION)."),
		undecodable:   c("runstream_projector_undecodable_records_total", "Records that could not be decoded; their run is resynced from the store."),
		resyncs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "runstream_projector_resyncs_total",
			Help: "Resyncs from the store by mode (from_snapshot, full) and result (ok, no_advance, error)."}, []string{"mode", "result"}),
		staleRuns: prometheus.NewGauge(prometheus.GaugeOpts{Name: "runstream_projector_stale_runs", Help: "Runs marked stale whose resync has not finished."}),
		conflicts: c("runstream_projector_write_conflicts_total", "Guarded snapshot writes that found another watermark (another projector wrote first)."),
		batchTime: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "runstream_projector_batch_seconds",
			Help: "Time to reduce and write one poll batch.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}),
		lagRecords: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "runstream_projector_lag_records",
			Help: "Records between the last processed offset and the partition's end."}, []string{"partition"}),
		lagSeconds: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "runstream_projector_lag_seconds",
			Help: "Now minus persistedAt of the last applied event, per partition; 0 when caught up (alert PROJECTOR_LAG_HIGH above 5s)."}, []string{"partition"}),
		redisFailures:  c("runstream_projector_redis_failures_total", "Batches whose Redis reads or writes failed; they are retried, not committed."),
		lagHighAlerted: c("runstream_projector_lag_high_total", "Times a partition's lag crossed the PROJECTOR_LAG_HIGH threshold."),
		expiredWrites:  c("runstream_projector_expired_writes_total", "Snapshot writes not made because the run ended more than --snapshot-ttl ago (a late or replayed event of an expired run); whatever Redis held of it was deleted."),
		expiredSwept:   c("runstream_projector_expired_catalog_runs_total", "Expired runs the projector holding the convergence lease swept from the runs catalogs of tenants that wrote nothing meanwhile."),
	}
	m.applied = m.events.WithLabelValues(string(reduce.Applied))
	m.duplicates = m.events.WithLabelValues(string(reduce.Duplicate))
	m.unknownType = m.events.WithLabelValues(string(reduce.UnknownType))
	m.cacheHits = c("runstream_projector_snapshot_cache_hits_total", "Runs of a batch whose snapshot came from the projector's cache (no Redis read).")
	m.cacheMisses = c("runstream_projector_snapshot_cache_misses_total", "Runs of a batch whose snapshot was read from Redis although the cache is on.")
	m.offsetResets = c("runstream_projector_offset_resets_total", "Partitions whose consumption restarted past records no longer in the topic "+
		"(the group's committed offset deleted by retention, or records the broker lost); convergence repairs their runs from the store.")
	m.missing = c("runstream_projector_missing_snapshots_total", "Runs whose snapshot Redis did not hold when a later event (runSeq > 1) came: "+
		"Redis lost it (restarted empty, failed over, evicted), or the run's first events never reached the topic (dead letters); "+
		"resynced FULL from the store. Not a gap of the bus (alert REDIS_SNAPSHOTS_LOST, not PROJECTOR_NON_CONTIGUOUS_FETCH_DETECTED).")
	m.commitToVisible = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "runstream_projector_commit_to_visible_seconds",
		Help: "Freshness: from an event's persistedAt (its commit) until the projector's snapshot write that made it visible succeeded; " +
			"one sample per run written, for the oldest event the write made visible (alert SNAPSHOT_FRESHNESS_LOW).",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}})
	if reg != nil {
		for _, col := range []prometheus.Collector{m.commitToVisible, m.missing, m.events, m.nonContiguous, m.causal, m.undecodable, m.resyncs,
			m.staleRuns, m.conflicts, m.batchTime, m.lagRecords, m.lagSeconds, m.redisFailures, m.lagHighAlerted,
			m.cacheHits, m.cacheMisses, m.expiredWrites, m.expiredSwept, m.offsetResets} {
			if err := reg.Register(col); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
