package postgres

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	appends     *prometheus.CounterVec
	appendTime  *prometheus.HistogramVec
	checkpoints prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		appends: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runstream_store_appends_total",
			Help: "Events offered to the Append Authority, by result: inserted, duplicate, duplicate_differs (a duplicate key whose body differs), rejected.",
		}, []string{"result"}),
		appendTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "runstream_store_append_seconds",
			Help:    "Time of one append transaction, by mode: single (one event) or batch (a batch request, or single appends sharing a transaction while the pool is saturated).",
			Buckets: prometheus.ExponentialBuckets(0.0002, 2, 14),
		}, []string{"mode"}),
		checkpoints: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "runstream_store_snapshot_checkpoints_total",
			Help: "Snapshots checkpointed into run_snapshots by projectSnapshot.",
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.appends, m.appendTime, m.checkpoints} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
