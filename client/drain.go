package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/runstream/runstream/internal/retry"
	"github.com/runstream/runstream/store"
)

// Delivering the spool. Order per run holds because (1) events go to the
// spool in the order their Appends failed, (2) whoever delivers holds the
// Client's sem and sends a run's events oldest first, one request at a
// time per run (a wave holds at most one event per run, so a batch item
// failing while a later one of the same run succeeds cannot happen), and
// (3) an Append for a run with undelivered events delivers them before
// its own, or else spools its own behind them (fail-open) or fails.

const (
	// waveEvents and waveBytes bound one batch of the drainer.
	waveEvents = 100
	waveBytes  = 512 << 10
	// maxWaveItems bounds what one wave reads, skipped records included.
	maxWaveItems = 10 * waveEvents
	// minWaveTimeout is the least time a wave's request is given.
	minWaveTimeout = 2 * time.Second
	// maxDrainWait bounds the drainer's backoff, in DrainIntervals.
	maxDrainWait = 30
)

func (c *Client) acquire(ctx context.Context) error {
	select {
	case c.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for the spool's drainer: %w", ctxError(ctx))
	}
}

// ctxError is why ctx ended: ErrBudgetExceeded for the budget, else the
// caller's cause.
func ctxError(ctx context.Context) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, errBudget) {
		return cause
	}
	return ErrBudgetExceeded
}

func (c *Client) release() { <-c.sem }

// drainRun delivers runID's spooled events, oldest first, within ctx.
func (c *Client) drainRun(ctx context.Context, runID string) error {
	if err := c.acquire(ctx); err != nil {
		return err
	}
	defer c.release()
	if !c.sp.hasPending(runID) {
		return nil
	}
	r := c.sp.readFrom()
	defer r.close()
	skip := c.sp.sentOf(runID)
	for {
		rec, ok, err := r.read()
		if err != nil {
			return c.spoolBroken(err)
		}
		if !ok {
			return nil
		}
		if rec.runID != runID {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		_, out, err := c.send(ctx, c.eventsURL, rec.body)
		switch drainOutcome(out, err) {
		case undelivered:
			return err
		case refused:
			c.rejected(rec, err)
		}
		c.sp.markSent(runID)
		if !c.sp.hasPending(runID) {
			return nil
		}
	}
}

// spoolBroken makes corruption found while reading sticky: no more
// writes to a spool that cannot be delivered past it.
func (c *Client) spoolBroken(err error) error {
	if errors.Is(err, ErrSpoolCorrupt) {
		c.sp.mu.Lock()
		if c.sp.broken == nil {
			c.sp.broken = err
		}
		c.sp.mu.Unlock()
	}
	return err
}

// rejected keeps a spooled event the API refused for good and says so.
func (c *Client) rejected(rec record, cause error) {
	err := c.sp.reject(rec, cause)
	c.log.Error("the API refused a spooled event for good; it is kept in the spool's "+rejectedName,
		"runId", rec.runID, "dir", c.sp.dir, "err", cause, "keepErr", err)
}

// waveItem is a record of a wave: skipped (delivered ahead of the cursor
// already) or sent now with its outcome.
type waveItem struct {
	rec  record
	skip bool
	out  outcome
	err  error
}

// drainWave delivers the next wave: the records from the cursor up to the
// first one whose run is already in the wave (at most waveEvents), in one
// request. It reports whether anything was delivered, and the first
// failure.
func (c *Client) drainWave(ctx context.Context) (bool, error) {
	if err := c.acquire(ctx); err != nil {
		return false, err
	}
	defer c.release()
	r := c.sp.readFrom()
	defer r.close()
	start := r.next
	skipLeft := map[string]int{}
	inWave := map[string]bool{}
	var items []waveItem
	var send []int
	size := 0
	for len(send) < waveEvents && size < waveBytes && len(items) < maxWaveItems {
		rec, ok, err := r.read()
		if err != nil {
			return false, c.spoolBroken(err)
		}
		if !ok {
			break
		}
		left, seen := skipLeft[rec.runID]
		if !seen {
			left = c.sp.sentOf(rec.runID)
		}
		if left > 0 {
			skipLeft[rec.runID] = left - 1
			rec.body = nil // delivered already: only its place counts
			items = append(items, waveItem{rec: rec, skip: true})
			continue
		}
		skipLeft[rec.runID] = 0
		if inWave[rec.runID] {
			break
		}
		inWave[rec.runID] = true
		send = append(send, len(items))
		items = append(items, waveItem{rec: rec})
		size += len(rec.body)
	}
	if len(items) == 0 {
		return false, nil
	}
	c.sendWave(ctx, items, send)
	var (
		done     []consumed
		ahead    []string
		stopped  bool
		firstErr error
		cur      = start
	)
	for _, it := range items {
		if it.out == refused {
			c.rejected(it.rec, it.err)
		}
		ok := it.skip || it.out != undelivered
		if it.out == undelivered && firstErr == nil {
			firstErr = it.err
		}
		switch {
		case !stopped && ok:
			done = append(done, consumed{runID: it.rec.runID, skipped: it.skip})
			cur = it.rec.end
		case ok && !it.skip:
			ahead = append(ahead, it.rec.runID)
			stopped = true
		default:
			stopped = true
		}
	}
	if err := c.sp.advance(cur, done, ahead); err != nil {
		return true, err
	}
	return len(done) > 0 || len(ahead) > 0, firstErr
}

// sendWave sends the wave's records (at most one per run) and sets each
// one's outcome.
func (c *Client) sendWave(ctx context.Context, items []waveItem, send []int) {
	// Bounded, so that the sem is not held forever by a hung request, but
	// not by a budget so short that a batch could never make it.
	ctx, cancel := context.WithTimeoutCause(ctx, max(c.cfg.WriteLatencyBudget, minWaveTimeout), errBudget)
	defer cancel()
	single := func(it *waveItem) {
		_, out, err := c.send(ctx, c.eventsURL, it.rec.body)
		it.out, it.err = drainOutcome(out, err), err
	}
	if len(send) == 1 {
		single(&items[send[0]])
		return
	}
	parts := make([][]byte, len(send))
	for k, i := range send {
		parts[k] = items[i].rec.body
	}
	answer, out, err := c.send(ctx, c.batchURL, batchBody(parts))
	if drainOutcome(out, err) == refused {
		// The request as a whole was refused (a body over the API's
		// limit, a proxy's 400): each event alone decides, so one event
		// too large never takes the others with it.
		for _, i := range send {
			single(&items[i])
		}
		return
	}
	if out == delivered {
		results, derr := decodeBatchAnswer(answer, len(send))
		if derr == nil {
			for k, i := range send {
				if e := results[k].Error; e != nil {
					items[i].err = e.storeError()
					items[i].out = refused
					if e.Code == store.CodeUnavailable || e.Code == store.CodeInternal {
						items[i].out = undelivered // worth another try
					}
				}
			}
			return
		}
		out, err = undelivered, derr
	}
	for _, i := range send {
		items[i].out, items[i].err = drainOutcome(out, err), err
	}
}

// drainOutcome is how delivering a spooled event ended: as send says,
// except that 401 is not the event's fault (a token rotated or expired)
// and is retried later instead of rejecting the event.
func drainOutcome(out outcome, err error) outcome {
	if out == refused && errors.Is(err, &store.Error{Code: store.CodeUnauthenticated}) {
		return undelivered
	}
	return out
}

// drainLoop is the background drainer: while the spool holds undelivered
// events it delivers them wave by wave; after a failure it waits
// DrainInterval, doubling while the API keeps failing.
func (c *Client) drainLoop(ctx context.Context) {
	defer c.wg.Done()
	wait := c.cfg.DrainInterval
	for {
		if c.sp.pending.Load() == 0 {
			select {
			case <-ctx.Done():
				return
			case <-c.kick:
			}
		}
		// An event was just spooled because the API failed: give it time.
		if !retry.Sleep(ctx, wait) {
			return
		}
		for c.sp.pending.Load() > 0 {
			_, err := c.drainWave(ctx)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				if errors.Is(err, ErrSpoolCorrupt) {
					c.log.Error("the spool is corrupt; delivery stopped", "dir", c.sp.dir, "err", err)
					<-ctx.Done()
					return
				}
				c.log.Warn("delivering spooled events failed; retrying", "dir", c.sp.dir, "spooled", c.sp.pending.Load(), "retryIn", wait, "err", err)
				wait = min(2*wait, maxDrainWait*c.cfg.DrainInterval)
				break
			}
			wait = c.cfg.DrainInterval
		}
	}
}

// Drain delivers every spooled event, in order per run, and returns nil
// once the spool is empty, or an error when ctx ends first (saying how
// many are left) or the spool is corrupt. The background drainer does the
// same by itself; Drain is for a caller that wants it done now, such as
// before a shutdown.
func (c *Client) Drain(ctx context.Context) error {
	if c.sp == nil {
		return nil
	}
	if c.closed.Load() {
		return ErrClosed
	}
	for attempt := 1; c.sp.pending.Load() > 0; {
		progress, err := c.drainWave(ctx)
		if err == nil {
			attempt = 1
			continue
		}
		if errors.Is(err, ErrSpoolCorrupt) {
			return fmt.Errorf("draining the spool: %w", err)
		}
		if !progress {
			attempt++
		}
		if ctx.Err() != nil || !retry.Sleep(ctx, c.backoff(attempt)) {
			return fmt.Errorf("draining the spool: %d events still spooled: %w", c.sp.pending.Load(), err)
		}
	}
	return nil
}
