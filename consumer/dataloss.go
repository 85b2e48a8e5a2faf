package consumer

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/kgroup"
)

// skipReport is the consumer's side of partitions that restarted past
// records no longer in the topic: the watch, and the counter
// runstream_consumer_offset_resets_total{group} on Config.Registerer,
// registered on the first poll. Only the poll loop uses it.
type skipReport struct {
	w      kgroup.SkipWatch
	resets prometheus.Counter // nil: no Registerer
	ready  bool
}

// watchFetches reports a poll's fetch errors, and says once per partition,
// at WARN, when consumption went on past records no longer in the topic:
// the group's committed offset deleted by retention while the group was
// stopped or too far behind, or records the broker lost. franz-go has
// already restarted such a partition at the earliest record left; what it
// skipped never reaches the handler through the topic. A run with a later
// event still in the topic gets the skipped events at its gap, through
// the gap filler, like any gap; one whose last events were skipped has
// nothing left to reveal it, and only convergence (Config.Heads) hands it
// what it missed: the skipped records were unread when its last pass set
// the cursor, so every run they touched is in a window still to be checked.
// Each such partition also goes to Hooks.OffsetReset and the counter.
func (c *Consumer) watchFetches(ctx context.Context, cl *kgo.Client, fs kgo.Fetches) {
	r := &c.skips
	if !r.ready {
		r.ready = true
		r.resets = c.registerResets()
	}
	for _, s := range r.w.Check(ctx, cl, c.cfg.Group, fs) {
		if r.resets != nil {
			r.resets.Inc()
		}
		if c.cfg.Hooks.OffsetReset != nil {
			c.cfg.Hooks.OffsetReset(s.Topic, s.Partition, s.From, s.ResumedAt)
		}
		c.log.Warn(s.Describe()+"; "+c.repairs(), "topic", s.Topic, "partition", s.Partition,
			"committedOffset", s.From, "restartedAt", s.ResumedAt, "skippedRecords", s.Skipped())
	}
	fs.EachError(func(t string, p int32, err error) {
		if kgroup.IsDataLoss(err) {
			return // a skip, said above
		}
		c.log.Warn("fetch error", "topic", t, "partition", p, "err", err)
	})
}

// repairs says what hands the handler the skipped events, as configured.
func (c *Consumer) repairs() string {
	if c.cfg.Heads != nil && !c.cfg.DisableConvergence {
		return "runs with later events get the skipped ones at their gap, from the store, and convergence delivers the others"
	}
	return "runs with later events get the skipped ones at their gap, from the store; convergence is off (no Config.Heads, or Config.DisableConvergence), " +
		"so runs whose last events were skipped miss them"
}

// registerResets registers the counter of skips on Config.Registerer; two
// consumers of one group on one registry share it. A registry that refuses
// it costs the metric, not the consumer.
func (c *Consumer) registerResets() prometheus.Counter {
	if c.cfg.Registerer == nil {
		return nil
	}
	cnt := prometheus.NewCounter(prometheus.CounterOpts{Name: "runstream_consumer_offset_resets_total",
		Help: "Partitions whose consumption restarted past records no longer in the topic (the group's committed offset " +
			"deleted by retention, or records the broker lost); convergence hands the handler what their runs missed.",
		ConstLabels: prometheus.Labels{"group": c.cfg.Group}})
	if err := c.cfg.Registerer.Register(cnt); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(prometheus.Counter); ok {
				return existing
			}
		}
		c.log.Warn("registering runstream_consumer_offset_resets_total failed; offset resets are logged, not counted", "err", err)
		return nil
	}
	return cnt
}
