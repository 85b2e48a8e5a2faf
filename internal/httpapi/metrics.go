package httpapi

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	requests      *prometheus.CounterVec
	latency       *prometheus.HistogramVec
	ignoredFields prometheus.Counter
	watchers      prometheus.Gauge
	connections   prometheus.Gauge
	reclaimed     *prometheus.CounterVec
	rejected      *prometheus.CounterVec

	crossTenantConflicts prometheus.Counter
	conflictLog          *sampledLog // its WARN lines, sampled
	heldLog              *sampledLog // WARN lines about an audit horizon held back
	notificationsDropped *prometheus.CounterVec
	unrecordedActions    prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runstream_api_requests_total",
			Help: "HTTP requests by route pattern and status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "runstream_api_request_seconds",
			Help:    "HTTP request latency by route pattern.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}, []string{"route"}),
		ignoredFields: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "runstream_api_ignored_fields_total",
			Help: "Unknown top-level fields (a newer producer, or the non-canonical occurredAt) ignored and not stored on append.",
		}),
		watchers: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "runstream_api_sse_streams",
			Help: "Open Server-Sent Events streams (run and tenant watches).",
		}),
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "runstream_api_connections",
			Help: "Open client connections (bounded by --max-connections).",
		}),
		reclaimed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runstream_api_connections_reclaimed_total",
			Help: "Connections closed at --max-connections to give their slot to a new one, by kind: idle (keep-alive, no authenticated request), silent (no whole request header within 1s), idle_authenticated.",
		}, []string{"kind"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runstream_api_limit_rejections_total",
			Help: "Requests and connections refused at a limit (429/503 with Retry-After), by limit: connections, appends, tenant_appends, tenant_append_events, watchers, tenant_watchers, consistent_reads, tenant_consistent_reads, resyncs, stream_tickets.",
		}, []string{"limit"}),
		crossTenantConflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "runstream_api_cross_tenant_conflicts_total",
			Help: "Appends refused (403) because their runId belongs to another tenant; logged at WARN with both tenants.",
		}),
		conflictLog: &sampledLog{every: conflictLogEvery},
		heldLog:     &sampledLog{every: heldLogEvery},
		notificationsDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runstream_api_notifications_dropped_total",
			Help: "Messages on the Redis updates channel dropped instead of reaching a watcher, by reason: malformed (not a notification's JSON), invalid (a field breaks its rule).",
		}, []string{"reason"}),
		unrecordedActions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "runstream_api_operator_actions_unrecorded_total",
			Help: "Operator actions (retries, rebuilds, resyncs) that took effect but the audit log in the store did not take (each logged at ERROR).",
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.requests, m.latency, m.ignoredFields, m.watchers, m.connections, m.reclaimed, m.rejected,
			m.crossTenantConflicts, m.notificationsDropped, m.unrecordedActions} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
