package etl

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/runstream/runstream/consumer"
	"github.com/runstream/runstream/store"
)

// Results of runstream_etl_events_total.
const (
	resultApplied      = "applied"
	resultGapFilled    = "gap_filled"
	resultUnknownType  = "unknown_type"
	resultDuplicate    = "duplicate"
	resultHandlerError = "handler_error"
	resultDeadLettered = "dead_lettered"
)

type metrics struct {
	events    *prometheus.CounterVec
	gaps      prometheus.Counter
	flushTime prometheus.Histogram
	retired   prometheus.Counter
	dropped   prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runstream_etl_events_total",
			Help: "Events by what the ETL did with them: applied, gap_filled (fetched from the store and applied), unknown_type (moves only its run's last_event_seq), duplicate (at or below the run's checkpoint: skipped), handler_error (a failed attempt, retried), dead_lettered.",
		}, []string{"result"}),
		gaps: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "runstream_etl_gaps_total",
			Help: "Runs whose next record jumped past the checkpoint; the missing events were fetched from the store first.",
		}),
		flushTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "runstream_etl_flush_seconds",
			Help:    "Time to read back and write the rows of one transaction's events (one partition batch); batched, from the read-back to the commit (the writes go with the checkpoints).",
			Buckets: prometheus.ExponentialBuckets(0.0002, 2, 16),
		}),
		retired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "runstream_etl_retired_events_total",
			Help: "Events of runs whose month the retention (--etl-retention) closed and that have no rows (dropped with their partition): not written, so a late event never brings back part of a run.",
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "runstream_etl_partitions_dropped_total",
			Help: "Partitions of runs and step_attempts the retention (--etl-retention) detached and dropped.",
		}),
	}
	for _, r := range []string{resultApplied, resultGapFilled, resultUnknownType, resultDuplicate, resultHandlerError, resultDeadLettered} {
		m.events.WithLabelValues(r) // present at 0 from the start
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.events, m.gaps, m.flushTime, m.retired, m.dropped} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// hooks count what the consumer reports.
func (m *metrics) hooks() consumer.Hooks {
	applied := m.events.WithLabelValues(resultApplied)
	gapFilled := m.events.WithLabelValues(resultGapFilled)
	unknown := m.events.WithLabelValues(resultUnknownType)
	dup := m.events.WithLabelValues(resultDuplicate)
	failed := m.events.WithLabelValues(resultHandlerError)
	dead := m.events.WithLabelValues(resultDeadLettered)
	return consumer.Hooks{
		Delivered: func(ev *consumer.Event) {
			switch {
			case !store.IsKnownEvent(ev.EventType):
				unknown.Inc()
			case ev.FromStore():
				gapFilled.Inc()
			default:
				applied.Inc()
			}
		},
		Duplicate:    func(*consumer.Event) { dup.Inc() },
		Gap:          func(string, int64, int64) { m.gaps.Inc() },
		HandlerError: func(*consumer.Event, int, error) { failed.Inc() },
		DeadLettered: func(string, int32, int64, string) { dead.Inc() },
	}
}
