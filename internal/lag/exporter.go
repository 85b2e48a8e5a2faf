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
}

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
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{e.records, e.seconds} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return e, nil
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
			continue
		}
		e.records.DeletePartialMatch(prometheus.Labels{"group": g})
		e.seconds.DeletePartialMatch(prometheus.Labels{"group": g})
		for _, p := range rep.Partitions {
			part := strconv.Itoa(int(p.Partition))
			e.records.WithLabelValues(g, p.Topic, part).Set(float64(max(p.Lag, 0)))
			e.seconds.WithLabelValues(g, p.Topic, part).Set(p.LagSeconds)
		}
	}
}
