package projector

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/converge"
	"github.com/runstream/runstream/internal/kgroup"
)

// watchFetches reports a poll's fetch errors, and says once per partition,
// at WARN, when consumption went on past records no longer in the topic
// (kgroup.SkipWatch): the group's committed offset deleted by retention
// while the group was stopped or too far behind, or records the broker
// lost. franz-go has already restarted such a partition at the earliest
// record left (ConsumeResetOffset at the start); what it skipped is never
// read, so the runs whose events were in it are behind in Redis. A run
// with a later event still in the topic resyncs at its gap like any other;
// one whose last events were skipped has nothing left to reveal it, and
// only convergence, which compares every run that changed since its cursor
// with the store, repairs it. That needs no help here: the skipped records
// were unread when the last pass set the cursor, and the cursor stays
// before what the group has not read (converge.Config.Unread), so every
// run they touched is in a window still to be checked.
func (p *Projector) watchFetches(ctx context.Context, cl *kgo.Client, fs kgo.Fetches) {
	for _, s := range p.skips.Check(ctx, cl, p.cfg.Group, fs) {
		p.m.offsetResets.Inc()
		p.log.Warn(s.Describe()+"; "+p.repairs(), "group", p.cfg.Group, "topic", s.Topic, "partition", s.Partition,
			"committedOffset", s.From, "restartedAt", s.ResumedAt, "skippedRecords", s.Skipped())
	}
	fs.EachError(func(t string, part int32, err error) {
		if kgroup.IsDataLoss(err) {
			return // a skip, said above
		}
		p.log.Warn("fetch error", "topic", t, "partition", part, "err", err)
	})
}

// repairs says what brings the runs of skipped records back to the store's
// state, as configured.
func (p *Projector) repairs() string {
	if _, ok := p.src.(converge.Heads); ok && !p.cfg.DisableConvergence {
		return "runs with later events resync at their gap, and convergence repairs the others from the store"
	}
	return "runs with later events resync at their gap; convergence is off, so runs whose last events were skipped " +
		"stay behind until 'runstream rebuild'"
}
