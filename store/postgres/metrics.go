package postgres

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/runstream/runstream/store"
)

type metrics struct {
	appends     *prometheus.CounterVec
	appendTime  *prometheus.HistogramVec
	checkpoints prometheus.Counter
	skew        *prometheus.HistogramVec
}

// skewBuckets bound persistedAt - emittedAt in seconds, both signs: a
// negative skew is a producer clock ahead of the database's.
var skewBuckets = []float64{-3600, -300, -60, -10, -1, 0, 0.1, 0.5, 1, 5, 10, 60, 300, 3600}

// observeSkew records how far an inserted event's emittedAt is from its
// persistedAt (RunEvents v1 asks operators to watch the delta). Types
// outside the contract's twelve share one label, so a producer cannot
// grow the series.
func (m *metrics) observeSkew(w *store.RunEventWrite, persisted time.Time) {
	emitted, err := time.Parse(time.RFC3339Nano, w.EmittedAt)
	if err != nil {
		return // validated as RFC 3339 already; nothing to observe otherwise
	}
	typ := w.EventType
	if !store.IsKnownEvent(typ) {
		typ = "other"
	}
	m.skew.WithLabelValues(typ).Observe(persisted.Sub(emitted).Seconds())
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
		skew: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "runstream_store_clock_skew_seconds",
			Help:    "persistedAt - emittedAt of each inserted event, by event type (\"other\" for types outside the contract): a producer's clock or queue far from the database's. Negative: emittedAt in the future.",
			Buckets: skewBuckets,
		}, []string{"event_type"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.appends, m.appendTime, m.checkpoints, m.skew} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
