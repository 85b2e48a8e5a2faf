package httpapi

import (
	"context"
	"sync"
	"time"
)

// Watch streams never go on looking live while Redis is away. The hub
// PINGs Redis every healthEvery; after healthFailures failures in a row it
// is degraded and every stream says so (event `state`, data
// {"state":"degraded",...}). Once Redis answers again the hub subscribes
// anew and waits for the confirmation before it says live: notifications
// published while it was away are lost (pub/sub keeps nothing), so each run
// stream then reads its snapshot again and sends it if it moved, and each
// tenant stream gets `reset` (reload the list). A run whose snapshot is
// gone (Redis came back empty, the projectors are rebuilding) is reported
// as {"state":"degraded","reason":"snapshot_missing"} until it is written
// again.

const (
	healthEvery    = time.Second
	healthFailures = 2
	// resubscribeWait bounds how long a recovery waits for the new
	// subscription's confirmation before trying again.
	resubscribeWait = 5 * time.Second
)

// Stream states, the data of `state` events.
var (
	stateLive            = []byte(`{"state":"live"}`)
	stateRedisDown       = []byte(`{"state":"degraded","reason":"redis","message":"the snapshot cache (Redis) is unreachable: the state shown may be out of date; the stream resumes by itself"}`)
	stateSnapshotMissing = []byte(`{"state":"degraded","reason":"snapshot_missing","message":"Redis has no snapshot of this run any more (it restarted empty or failed over): the projectors are rebuilding it; the stream resumes by itself"}`)
)

// hubHealth is the hub's view of its Redis connection.
type hubHealth struct {
	mu         sync.Mutex
	degraded   bool
	changed    chan struct{} // closed and replaced when degraded flips
	subscribed chan struct{} // closed and replaced on each confirmed subscription
	resub      chan struct{} // capacity 1: asks the subscription loop to subscribe again
}

func newHubHealth() hubHealth {
	return hubHealth{changed: make(chan struct{}), subscribed: make(chan struct{}), resub: make(chan struct{}, 1)}
}

// connState says whether Redis is away, and a channel closed at the next
// change.
func (h *hub) connState() (degraded bool, changed <-chan struct{}) {
	h.health.mu.Lock()
	defer h.health.mu.Unlock()
	return h.health.degraded, h.health.changed
}

func (h *hub) setDegraded(v bool) {
	h.health.mu.Lock()
	defer h.health.mu.Unlock()
	if h.health.degraded == v {
		return
	}
	h.health.degraded = v
	close(h.health.changed)
	h.health.changed = make(chan struct{})
}

// markSubscribed records a confirmed subscription.
func (h *hub) markSubscribed() {
	h.health.mu.Lock()
	defer h.health.mu.Unlock()
	close(h.health.subscribed)
	h.health.subscribed = make(chan struct{})
}

func (h *hub) nextSubscription() <-chan struct{} {
	h.health.mu.Lock()
	defer h.health.mu.Unlock()
	return h.health.subscribed
}

// monitor PINGs Redis until the hub closes, flipping the state.
func (h *hub) monitor() {
	t := time.NewTicker(healthEvery)
	defer t.Stop()
	fails := 0
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(h.ctx, healthEvery)
		err := h.rdb.Ping(ctx).Err()
		cancel()
		if h.ctx.Err() != nil {
			return
		}
		degraded, _ := h.connState()
		if err != nil {
			fails++
			if fails >= healthFailures && !degraded {
				h.log.Warn("Redis does not answer: watch streams are told they are degraded", "err", err)
				h.setDegraded(true)
			}
			continue
		}
		fails = 0
		if !degraded {
			continue
		}
		// Back: subscribe anew and wait for the confirmation, so nothing
		// published from now on is missed, then say live (streams re-read).
		next := h.nextSubscription()
		select {
		case h.health.resub <- struct{}{}:
		default:
		}
		wait := time.NewTimer(resubscribeWait)
		select {
		case <-next:
			wait.Stop()
			h.log.Info("Redis answers again and the update channel is subscribed: watch streams resume")
			h.setDegraded(false)
		case <-wait.C:
		case <-h.ctx.Done():
			wait.Stop()
			return
		}
	}
}
