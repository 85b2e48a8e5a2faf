package relay

import (
	"context"
	"log/slog"
	"time"

	"github.com/runstream/runstream/store/postgres"
)

// The outbox is two parts used in turn (migration 0011,
// store/postgres/outbox.go): appends go to one, and once it holds
// OutboxSwitchBytes on disk and the other is empty and truncated, appends
// switch to the other; the part they left drains (the relay reads both
// parts in id order) and is then truncated, which returns its files to the
// filesystem. DELETE and VACUUM alone kept a backlog's high-water mark
// for good (49.8 MB for 0 rows after 300,000,
// TestRelay_OutboxDiskAfterABacklog). Any relay may take a step, one at a
// time per schema; each looks every rotateEvery, in the background.
const (
	rotateEvery = time.Second
	// rotateTimeout bounds one step (a read of each part's head at most,
	// and the truncation's lock, which gives up after
	// postgres.DefaultOutboxLockTimeout).
	rotateTimeout = 30 * time.Second
)

// rotator takes the outbox's rotation steps in the background, at most one
// every interval. Truncating the parts and moving the id sequence needs
// privileges the relay's role may not have (postgres.Outbox.MayRotate); the first
// step checks, and without them the rotator turns itself off and the
// outbox keeps its size after a backlog, as before migration 0011.
type rotator struct {
	background
	outbox  *postgres.Outbox
	metrics *metrics
	opts    postgres.RotateOutboxOptions
}

func newRotator(outbox *postgres.Outbox, log *slog.Logger, m *metrics, opts postgres.RotateOutboxOptions) *rotator {
	return &rotator{outbox: outbox, metrics: m, opts: opts, background: background{log: log, interval: rotateEvery, timeout: rotateTimeout,
		refused: "the relay's role may not truncate the outbox's parts or move its id sequence; the outbox keeps its size on disk after a backlog",
		may:     outbox.MayRotate}}
}

// maybe starts a step when one is due. The relay calls it after every
// round, in a backlog too: a backlog is what fills a part.
func (rt *rotator) maybe(ctx context.Context) {
	rt.start(ctx, func() func(context.Context) { return rt.step })
}

// step takes one rotation step: a switch, a truncation, or nothing due.
func (rt *rotator) step(ctx context.Context) {
	res, err := rt.outbox.Rotate(ctx, rt.opts)
	if err != nil {
		if ctx.Err() == nil {
			rt.log.Warn("rotating the outbox's parts failed; trying again", "err", err)
		}
		return
	}
	switch res.Step {
	case postgres.OutboxSwitched:
		rt.metrics.rotations.WithLabelValues("switch").Inc()
		rt.log.Debug("outbox appends switched to the other part", "from", res.Part)
	case postgres.OutboxTruncated:
		rt.metrics.rotations.WithLabelValues("truncate").Inc()
		rt.log.Debug("truncated the drained outbox part", "part", res.Part, "bytes", res.Bytes)
	}
}
