package relay

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	published, batches, retries, deadLetters, unavailable prometheus.Counter
	publishTime, commitToAck                              prometheus.Histogram
	ownedShards, backlog, oldestAge, deadLetterRows       prometheus.Gauge
	outboxBytes                                           prometheus.Gauge
	rotations                                             *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
	m := &metrics{
		published:   counter("runstream_relay_published_total", "Records acknowledged by the broker."),
		batches:     counter("runstream_relay_batches_total", "Outbox rounds that published at least one record."),
		retries:     counter("runstream_relay_retries_total", "Outbox rows whose publish was refused and will be retried."),
		deadLetters: counter("runstream_relay_dead_letters_total", "Outbox rows moved to the dead-letter table after too many refusals (EVENT_BUS_DELIVERY_FAILED)."),
		unavailable: counter("runstream_relay_broker_unavailable_total", "Rounds that found the broker unreachable (the relay backs off; nothing is dead-lettered)."),
		publishTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "runstream_relay_publish_seconds", Help: "Time from producing one wave of records until the broker acknowledged all of them.",
			Buckets: prometheus.ExponentialBuckets(0.0002, 2, 16),
		}),
		commitToAck: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "runstream_relay_commit_to_ack_seconds", Help: "Time from the event's commit (its transaction's commit timestamp with track_commit_timestamp on, else its outbox row's creation just before) to the broker's acknowledgement.",
			// Bounds at the latency objective (20 ms: issue 3) and around
			// it, so the share of events within it is exact, not
			// interpolated.
			Buckets: []float64{0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075,
				0.1, 0.15, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}),
		ownedShards:    gauge("runstream_relay_owned_shards", "Outbox shards this relay owns."),
		backlog:        gauge("runstream_outbox_backlog_rows", "Rows waiting in the outbox, all shards."),
		oldestAge:      gauge("runstream_outbox_oldest_age_seconds", "Age of the oldest row waiting in the outbox (0 when empty)."),
		deadLetterRows: gauge("runstream_outbox_dead_letters", "Rows in the outbox dead-letter table."),
		outboxBytes:    gauge("runstream_outbox_bytes", "Size on disk of the outbox, both parts with their indexes (0 rows take little once a drained part is truncated)."),
		rotations: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "runstream_relay_outbox_rotations_total",
			Help: "Steps of the outbox's rotation this relay took: switch (appends moved to the other part), truncate (a drained part's files returned)."}, []string{"step"}),
	}
	for _, s := range []string{"switch", "truncate"} {
		m.rotations.WithLabelValues(s)
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.published, m.batches, m.retries, m.deadLetters, m.unavailable,
			m.publishTime, m.commitToAck, m.ownedShards, m.backlog, m.oldestAge, m.deadLetterRows, m.outboxBytes, m.rotations} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
