package httpapi

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/runstream/runstream/store/postgres"
)

// Tenants' shares of the process's append and store-read slots: one
// tenant's storm cannot take what the others need. A tenant past its share
// gets 429 (its own doing), the process past its limit 503, both with
// Retry-After. Shares apply to authenticated tenants; an operator and the
// development mode (no tokens, so no tenant to tell apart) are bound by the
// process's limits only.

// shareLimiter counts requests in flight, in all and per tenant, and the
// weight (events, for appends) each tenant holds.
type shareLimiter struct {
	max       int // requests in flight in all (503 past it)
	perTenant int // requests of one tenant (429 past it); >= max: no share
	maxWeight int // weight of one tenant (429 past it); 0: not weighed

	mu    sync.Mutex
	total int
	held  map[string]*held // bounded by the configured tokens' tenants
	// queue holds acquireWithin's waiters, oldest first. A release hands
	// its slot to the oldest waiter it admits, so a slot never goes back
	// to the pool while someone admissible waits: a newcomer cannot take
	// it first (tryAcquire finds the process full), and a waiter is
	// served in its turn, not by winning a race. (Waking every waiter at
	// each release let some lose for a long time: at 5,200 store reads/s
	// over 8 slots the median waited 4.7 ms and the p99 136 ms.)
	queue []*shareWaiter
	// asides holds waitForOthers's callers: batches stepping aside until
	// no other tenant's request is in flight. Bounded by the requests in
	// flight, each waiting at most once at a time.
	asides []*asideWaiter
	// lastAdmitted[0] is the latest admission, lastAdmitted[1] the latest
	// of a tenant other than lastAdmitted[0]'s: together they tell any
	// tenant when another was last admitted.
	lastAdmitted [2]admission
}

type admission struct {
	tenant string
	at     time.Time
}

// asideWaiter is one waitForOthers call; done is closed, under the
// limiter's lock, when no other tenant's request is in flight.
type asideWaiter struct {
	tenant string
	done   chan struct{}
}

type held struct{ requests, weight int }

// shareWaiter is one acquireWithin call waiting in the queue. granted is
// set, under the limiter's lock, when a release handed it a slot; ready
// is closed then.
type shareWaiter struct {
	tenant  string
	w       int
	granted bool
	ready   chan struct{}
}

// refusal says which limit turned a request away.
type refusal int

const (
	admitted       refusal = iota
	tenantRequests         // the tenant's share of requests
	tenantWeight           // the tenant's share of weight (events)
	processFull            // the process's limit
)

func newShareLimiter(max, perTenant, maxWeight int) *shareLimiter {
	return &shareLimiter{max: max, perTenant: perTenant, maxWeight: maxWeight, held: map[string]*held{}}
}

// tryAcquire takes a slot of weight w for tenant ("" has no share), or says
// which limit is full. A tenant holding nothing may take more than its
// weight share (a batch larger than the share goes alone).
func (l *shareLimiter) tryAcquire(tenant string, w int) refusal {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.acquireLocked(tenant, w)
}

func (l *shareLimiter) acquireLocked(tenant string, w int) refusal {
	if why := l.refusalLocked(tenant, w); why != admitted {
		return why
	}
	l.total++
	if tenant != "" {
		h := l.held[tenant]
		if h == nil {
			h = &held{}
			l.held[tenant] = h
		}
		h.requests++
		h.weight += w
		now := time.Now()
		if l.lastAdmitted[0].tenant != tenant {
			l.lastAdmitted[1] = l.lastAdmitted[0]
		}
		l.lastAdmitted[0] = admission{tenant: tenant, at: now}
	}
	return admitted
}

// othersAbout is how recently another tenant must have been admitted for
// a tenant's large work (a batch, a large projection) to step aside for it.
const othersAbout = time.Second

// othersSince says whether a tenant other than tenant was admitted after t.
func (l *shareLimiter) othersSince(tenant string, t time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	last := l.lastAdmitted[0]
	if last.tenant == tenant {
		last = l.lastAdmitted[1]
	}
	return last.tenant != "" && last.at.After(t)
}

// tenantFull says whether tenant holds its whole share already: no
// request of any weight would be admitted.
func (l *shareLimiter) tenantFull(tenant string) refusal {
	if tenant == "" {
		return admitted
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.held[tenant]
	switch {
	case h == nil:
		return admitted
	case l.perTenant < l.max && h.requests >= l.perTenant:
		return tenantRequests
	case l.maxWeight > 0 && h.weight >= l.maxWeight:
		return tenantWeight
	}
	return admitted
}

// acquireWithin is tryAcquire waiting up to d for a slot, in turn: the
// waiters are served oldest first, each by the release that frees a slot
// it may take. It returns the last refusal when none came within d, ctx's
// error when ctx ended first.
func (l *shareLimiter) acquireWithin(ctx context.Context, tenant string, w int, d time.Duration) (refusal, error) {
	l.mu.Lock()
	if why := l.acquireLocked(tenant, w); why == admitted {
		l.mu.Unlock()
		return admitted, nil
	}
	wt := &shareWaiter{tenant: tenant, w: w, ready: make(chan struct{})}
	l.queue = append(l.queue, wt)
	l.mu.Unlock()

	t := time.NewTimer(d)
	defer t.Stop()
	var err error
	select {
	case <-wt.ready:
		return admitted, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-t.C:
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if wt.granted {
		// Handed a slot while giving up.
		if err == nil {
			return admitted, nil
		}
		l.releaseLocked(tenant, w)
		return processFull, err
	}
	if i := slices.Index(l.queue, wt); i >= 0 {
		l.queue = slices.Delete(l.queue, i, i+1)
	}
	if err != nil {
		return l.refusalLocked(tenant, w), err
	}
	// Timed out: a last try, which takes the slot if one is free (never
	// the case while the queue works, but an admitted answer must hold
	// what its caller will release).
	return l.acquireLocked(tenant, w), nil
}

// refusalLocked is the limit that turns tenant's request of weight w away
// now (admitted: none), without taking anything.
func (l *shareLimiter) refusalLocked(tenant string, w int) refusal {
	if h := l.held[tenant]; tenant != "" && h != nil {
		if l.perTenant < l.max && h.requests >= l.perTenant {
			return tenantRequests
		}
		if l.maxWeight > 0 && h.weight+w > l.maxWeight {
			return tenantWeight
		}
	}
	if l.total >= l.max {
		return processFull
	}
	return admitted
}

// release gives back what tryAcquire (or acquireWithin) took, and hands
// the freed room to the oldest waiters it admits.
func (l *shareLimiter) release(tenant string, w int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.releaseLocked(tenant, w)
}

func (l *shareLimiter) releaseLocked(tenant string, w int) {
	l.total--
	if h := l.held[tenant]; tenant != "" && h != nil {
		h.requests--
		h.weight -= w
		if h.requests <= 0 {
			delete(l.held, tenant)
		}
	}
	// A waiter passed over (its tenant at its share) keeps its place.
	kept := l.queue[:0]
	for _, q := range l.queue {
		if l.acquireLocked(q.tenant, q.w) == admitted {
			q.granted = true
			close(q.ready)
			continue
		}
		kept = append(kept, q)
	}
	clear(l.queue[len(kept):])
	l.queue = kept
	if len(l.asides) > 0 {
		l.asides = slices.DeleteFunc(l.asides, func(a *asideWaiter) bool {
			if l.othersLocked(a.tenant) > 0 {
				return false
			}
			close(a.done)
			return true
		})
	}
}

// othersLocked counts the requests in flight of tenants other than tenant.
func (l *shareLimiter) othersLocked(tenant string) int {
	if h := l.held[tenant]; h != nil {
		return l.total - h.requests
	}
	return l.total
}

// waitForOthers waits, at most d, until no request of a tenant other than
// tenant is in flight; it returns how long it waited.
func (l *shareLimiter) waitForOthers(ctx context.Context, tenant string, d time.Duration) time.Duration {
	l.mu.Lock()
	if l.othersLocked(tenant) == 0 {
		l.mu.Unlock()
		return 0
	}
	a := &asideWaiter{tenant: tenant, done: make(chan struct{})}
	l.asides = append(l.asides, a)
	l.mu.Unlock()

	start := time.Now()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-a.done:
		return time.Since(start)
	case <-ctx.Done():
	case <-t.C:
	}
	l.mu.Lock()
	l.asides = slices.DeleteFunc(l.asides, func(x *asideWaiter) bool { return x == a })
	l.mu.Unlock()
	return time.Since(start)
}

// A tenant's batch steps aside for the other tenants' appends. A batch of
// a thousand events keeps a database core busy for tens of milliseconds;
// sent at once, every other tenant's append in that time shares the core
// with it, and on a small machine the quiet tenant's tail latency was four
// to five times its own. So while another tenant is appending (one was
// admitted within othersAbout), a batch goes batchStep events a round
// trip, and before each step waits for the other tenants' appends in
// flight to end: at most batchStepWait a step, and never longer in all
// than the batch has worked, so a batch is at most about twice as slow
// from waiting. With no other tenant about, a batch goes in one round trip
// as before: the steps cost round trips, which a lone tenant need not pay.
const (
	batchStep     = 5
	batchStepWait = 2 * time.Millisecond
)

// batchPacer paces the caller's batch (nil without a tenant: no shares).
func (s *Server) batchPacer(ctx context.Context) postgres.Pacer {
	tenant := shareTenant(ctx)
	if tenant == "" {
		return nil
	}
	start := time.Now()
	var waited time.Duration
	return func(ctx context.Context) int {
		now := time.Now()
		if !s.appends.othersSince(tenant, now.Add(-othersAbout)) {
			return math.MaxInt
		}
		worked := now.Sub(start) - waited
		if budget := min(batchStepWait, worked-waited); budget > 0 {
			waited += s.appends.waitForOthers(ctx, tenant, budget)
		}
		return batchStep
	}
}

// Large projections step aside too. Decoding a large run's checkpoint,
// reducing its events and encoding its snapshot (store.LargeHook) hold a
// processor for milliseconds; a tenant reading large runs with its whole
// share of store reads kept both of a small machine's processors busy, and
// another tenant's small read waited behind them for one (its p99 from
// 0.3 ms to 30 ms). So while another tenant reads from the store (one was
// admitted within othersAbout), large projections take one of
// largeWorkSlots slots first, half the processors, and the other half stays
// free for the small reads. With no other tenant reading, they run as
// many at once as the store-read slots allow.

// largeWorkSlots is how many large projections run at once while tenants
// share the process: half its processors, at least one.
func largeWorkSlots() int { return max(1, runtime.GOMAXPROCS(0)/2) }

// acquireLargeWork is the large-work slot of the caller's large projection
// (see above): release gives it back. It waits for a slot as
// long as ctx allows; the waiters are bounded by the store-read slots.
func (s *Server) acquireLargeWork(ctx context.Context) (release func(), err error) {
	tenant := shareTenant(ctx)
	if tenant == "" || !s.storeReads.othersSince(tenant, time.Now().Add(-othersAbout)) {
		return func() {}, nil
	}
	select {
	case s.largeWork <- struct{}{}:
		return s.largeWork.release, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting to project a large run: %w", ctx.Err())
	}
}

// A large run is usually read again (a console polling it, a tenant's
// readers flooding it), and most of a large projection's work happens
// before the hook can tell it is large: Postgres reading the checkpoint
// out of its storage and formatting it, and the rows crossing to the API.
// So a run found large is remembered (largeRuns), and its next
// projections take the large-work slot before their statement: a
// tenant's large reads then keep at most largeWorkSlots processors busy
// in Postgres and here together, not its whole share of store reads.

// largeRunsKept bounds the runs remembered as large: a run id is at most
// 128 bytes, so the set stays under about 200 KB.
const largeRunsKept = 1024

// largeRuns is a bounded set of the runs whose last store projection was
// large; the oldest added goes first when it is full.
type largeRuns struct {
	mu    sync.Mutex
	ids   map[string]struct{}
	order []string // a ring of the ids, oldest at next
	next  int
}

func (l *largeRuns) has(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.ids[id]
	return ok
}

func (l *largeRuns) add(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.ids[id]; ok {
		return
	}
	if l.ids == nil {
		l.ids = make(map[string]struct{}, largeRunsKept)
	}
	if len(l.order) < largeRunsKept {
		l.order = append(l.order, id)
	} else {
		delete(l.ids, l.order[l.next])
		l.order[l.next] = id
		l.next = (l.next + 1) % largeRunsKept
	}
	l.ids[id] = struct{}{}
}

func (l *largeRuns) remove(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.ids, id) // its ring entry stays until overwritten: deleting it again is harmless
}

// shareTenant is whose share a request counts against: the authenticated
// tenant; "" (no share) for an operator and without tokens.
func shareTenant(ctx context.Context) string { return tenantOf(ctx) }

// acquireAppend takes an in-flight append slot of weight events for the
// caller's tenant, or answers at once: 429 past the tenant's share, 503
// past the process's limit. Taken after the body is read: a slow client
// holds a connection (bounded by --max-connections and --request-timeout),
// never a store slot.
func (s *Server) acquireAppend(ctx context.Context, events int) (release func(), err error) {
	tenant := shareTenant(ctx)
	if why := s.appends.tryAcquire(tenant, events); why != admitted {
		return nil, s.appendRefusal(why, events)
	}
	return func() { s.appends.release(tenant, events) }, nil
}

// checkAppendShare answers 429 when the caller's tenant holds its whole
// share already, whatever the request's events, before its body is read:
// a tenant storming past its share costs neither a read nor a decoding of
// each batch. (Go's server reads up to 256 KiB of an unread body to keep
// the connection, and otherwise closes it after the answer.)
func (s *Server) checkAppendShare(ctx context.Context) error {
	if why := s.appends.tenantFull(shareTenant(ctx)); why != admitted {
		return s.appendRefusal(why, 0)
	}
	return nil
}

func (s *Server) appendRefusal(why refusal, events int) error {
	switch why {
	case tenantRequests:
		s.metrics.rejected.WithLabelValues("tenant_appends").Inc()
		return limitError(http.StatusTooManyRequests, 1,
			"your tenant has %d appends in flight on this API process, its share (--max-inflight-appends-per-tenant); wait for one to finish, or retry after Retry-After",
			s.appends.perTenant)
	case tenantWeight:
		s.metrics.rejected.WithLabelValues("tenant_append_events").Inc()
		more := ""
		if events > 0 {
			more = fmt.Sprintf(" with these %d", events)
		}
		return limitError(http.StatusTooManyRequests, 1,
			"your tenant's events in flight on this API process%s pass its share of %d (--max-inflight-events-per-tenant); send batches one after another, or retry after Retry-After",
			more, s.appends.maxWeight)
	}
	s.metrics.rejected.WithLabelValues("appends").Inc()
	return limitError(http.StatusServiceUnavailable, 1,
		"%d appends are in flight on this API process, its limit (--max-inflight-appends); retry with backoff", s.appends.max)
}

// acquireStoreRead takes one of the --max-consistent-reads slots of
// snapshot reads from the store, waiting up to cfg.storeReadWait for one:
// a burst of readers of runs Redis no longer holds (a hundred links to old
// runs opened at once) queues for a few projections' time instead of
// failing at once, and still never waits unbounded. Past the wait, 429
// when the caller's tenant holds its share (--max-consistent-reads-per-
// tenant), else 503, with Retry-After. Release with releaseStoreRead.
func (s *Server) acquireStoreRead(ctx context.Context, hint string) error {
	tenant := shareTenant(ctx)
	if s.storeReads.tryAcquire(tenant, 0) == admitted {
		return nil
	}
	if s.cfg.storeReadWaiting != nil {
		s.cfg.storeReadWaiting()
	}
	why, err := s.storeReads.acquireWithin(ctx, tenant, 0, s.cfg.storeReadWait)
	if err != nil {
		return fmt.Errorf("waiting for a store read slot: %w", err)
	}
	switch why {
	case admitted:
		return nil
	case tenantRequests:
		s.metrics.rejected.WithLabelValues("tenant_consistent_reads").Inc()
		return limitError(http.StatusTooManyRequests, 1,
			"your tenant has %d snapshot reads from the store running on this API process, its share (--max-consistent-reads-per-tenant), and none ended within %v; retry %s",
			s.storeReads.perTenant, s.cfg.storeReadWait, hint)
	}
	s.metrics.rejected.WithLabelValues("consistent_reads").Inc()
	return limitError(http.StatusServiceUnavailable, 1,
		"%d snapshot reads from the store are running on this API process, its limit (--max-consistent-reads), and none ended within %v; retry %s",
		s.storeReads.max, s.cfg.storeReadWait, hint)
}

// releaseStoreRead gives back acquireStoreRead's slot.
func (s *Server) releaseStoreRead(ctx context.Context) { s.storeReads.release(shareTenant(ctx), 0) }
