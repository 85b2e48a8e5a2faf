package lag

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
)

// measureTimeout is the least time one group's measurement is given.
const measureTimeout = 5 * time.Second

// Exporter refreshes the lag gauges of some groups from one owned loop
// (a scrape never waits on a broker round trip).
type Exporter struct {
	client   *kgo.Client
	groups   []string
	interval time.Duration
	log      *slog.Logger
	records  *prometheus.GaugeVec
	seconds  *prometheus.GaugeVec
	// unapplied is each group's freshness: the age of the oldest commit
	// it has not applied (outbox and topic).
	unapplied *prometheus.GaugeVec
	// outboxAge, when set (WatchOutbox), reads the age of the store's
	// oldest unpublished commit; storeUp reports whether it answered.
	outboxAge func(context.Context) (time.Duration, error)
	storeUp   prometheus.Gauge
	// history, when set (KeepHistory), records every measurement.
	history *History
}

// KeepHistory records every group's measurement in h as well.
func (e *Exporter) KeepHistory(h *History) { e.history = h }

// NewExporter registers the gauges on reg. interval 0 means 10s.
func NewExporter(cl *kgo.Client, groups []string, interval time.Duration, reg prometheus.Registerer, log *slog.Logger) (*Exporter, error) {
	if interval == 0 {
		interval = 10 * time.Second
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &Exporter{client: cl, groups: groups, interval: interval, log: log.With("component", "lag"),
		records: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "runstream_consumer_lag_records",
			Help: "Records between a group's committed offset and the partition's end."}, []string{"group", "topic", "partition"}),
		seconds: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "runstream_consumer_lag_seconds",
			Help: "Now minus the timestamp of the group's oldest unconsumed record; 0 when caught up."}, []string{"group", "topic", "partition"}),
		unapplied: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "runstream_freshness_oldest_unapplied_seconds",
			Help: "Freshness per group: now minus the persistedAt of the oldest committed event the group has not applied yet, " +
				"whether it waits in the outbox (when the store is watched) or on the topic; 0 when none waits (alert SNAPSHOT_FRESHNESS_LOW)."},
			[]string{"group"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{e.records, e.seconds, e.unapplied} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return e, nil
}

// WatchOutbox makes every refresh read the age of the store's oldest
// unpublished commit with age (postgres.Outbox.HeadAge), count it in each
// group's freshness, and report whether the store answered as
// runstream_store_up on reg (alert STORE_UNREACHABLE). Call it before Run.
func (e *Exporter) WatchOutbox(age func(context.Context) (time.Duration, error), reg prometheus.Registerer) error {
	e.outboxAge = age
	e.storeUp = prometheus.NewGauge(prometheus.GaugeOpts{Name: "runstream_store_up",
		Help: "1 when this process's last read of the store (every lag refresh) succeeded, 0 when it failed (alert STORE_UNREACHABLE)."})
	if reg != nil {
		return reg.Register(e.storeUp)
	}
	return nil
}

// Run refreshes the gauges until ctx ends.
func (e *Exporter) Run(ctx context.Context) error {
	t := time.NewTicker(e.interval)
	defer t.Stop()
	for {
		e.refresh(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (e *Exporter) refresh(ctx context.Context) {
	// The outbox part of every group's freshness: events committed and
	// not published yet.
	outbox, outboxKnown := time.Duration(0), false
	if e.outboxAge != nil {
		rctx, cancel := context.WithTimeout(ctx, max(e.interval, measureTimeout))
		age, err := e.outboxAge(rctx)
		cancel()
		switch {
		case err == nil:
			outbox, outboxKnown = age, true
			e.storeUp.Set(1)
		case ctx.Err() == nil:
			e.storeUp.Set(0)
			e.log.Debug("reading the outbox's oldest row failed", "err", err)
		}
	}
	for _, g := range e.groups {
		// At least measureTimeout: a short refresh interval must not
		// make every measurement time out on a busy broker.
		rctx, cancel := context.WithTimeout(ctx, max(e.interval, measureTimeout))
		rep, err := Measure(rctx, e.client, g)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				e.log.Debug("measuring lag failed", "group", g, "err", err)
			}
			// The broker is away: what the outbox holds is still known,
			// and grows while the relay cannot publish.
			if outboxKnown {
				e.unapplied.WithLabelValues(g).Set(outbox.Seconds())
			}
			continue
		}
		e.history.Record(rep)
		e.unapplied.WithLabelValues(g).Set(Unapplied(rep, outbox).Seconds())
		e.records.DeletePartialMatch(prometheus.Labels{"group": g})
		e.seconds.DeletePartialMatch(prometheus.Labels{"group": g})
		for _, p := range rep.Partitions {
			part := strconv.Itoa(int(p.Partition))
			e.records.WithLabelValues(g, p.Topic, part).Set(float64(max(p.Lag, 0)))
			e.seconds.WithLabelValues(g, p.Topic, part).Set(p.LagSeconds)
		}
	}
}

// Unapplied is a group's freshness from its lag report and the age of the
// store's oldest unpublished commit: the older of that and the oldest
// unread record's persistedAt (by the report's clock), 0 when nothing
// waits.
func Unapplied(rep Report, outbox time.Duration) time.Duration {
	oldest := outbox
	for _, p := range rep.Partitions {
		if p.Lag > 0 && !p.OldestPersistedAt.IsZero() {
			oldest = max(oldest, rep.At.Sub(p.OldestPersistedAt))
		}
	}
	return max(oldest, 0)
}
