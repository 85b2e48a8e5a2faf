package steadybench

import (
	"context"
	"log/slog"
	mrand "math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
)

// appendFunc appends one event: postgres.Store's AppendEvent.
type appendFunc func(ctx context.Context, w store.RunEventWrite) (store.AppendResult, error)

// appender interleaves complete runs (workload.Run) into one stream of
// appends: it keeps a fixed number of runs open, each in a slot, and each
// append takes the slot that waited longest, appends that run's next
// event and puts the slot back. A run's events are therefore appended in
// order (a slot is held by one append at a time), one every slots/rate
// seconds, and a run that ended is replaced by a new one in its slot, so
// about len(slots) runs are open at any time.
type appender struct {
	tenant string
	add    appendFunc
	log    *slog.Logger
	start  time.Time
	slots  []slot
	// free holds the indices of the slots not being appended to, oldest
	// first: FIFO, so the slots take turns.
	free chan int

	calls, persisted, duplicates, failed atomic.Int64
	open, started, finished              atomic.Int64
	// firstTerminal is the time from start to the first run's terminal
	// event (ns), 0 until one ended; lifetimes the sum of the ended runs'
	// first-to-last append times (ns).
	firstTerminal, lifetimes atomic.Int64

	mu    sync.Mutex
	ended []endedRun // guarded by mu

	// acks, when set, records every acknowledged event (bench steady
	// --retention checks an export against it).
	acks *ledger
}

// slot is one open run: its events and the next to append.
type slot struct {
	rng     *mrand.Rand
	events  []store.RunEventWrite
	next    int
	firstAt time.Time // when its first event was appended
	// stamped: events[next] has its emittedAt, so a retry of it sends
	// the same event again.
	stamped bool
}

// endedRun is a run whose terminal event was appended at at.
type endedRun struct {
	runID string
	at    time.Time
}

func newAppender(tenant string, slots int, add appendFunc, log *slog.Logger, start time.Time) *appender {
	a := &appender{tenant: tenant, add: add, log: log, start: start,
		slots: make([]slot, slots), free: make(chan int, slots)}
	seed := mrand.Uint64()
	for i := range a.slots {
		a.slots[i].rng = mrand.New(mrand.NewPCG(seed, uint64(i)))
		a.free <- i
	}
	return a
}

// appendNext appends the next event of the slot that waited longest. A
// failed append is counted and left for the slot's next turn (the same
// event, so a retry that did land is answered as a duplicate); a run's
// later events never overtake it.
func (a *appender) appendNext(ctx context.Context) {
	var i int
	select {
	case i = <-a.free:
	case <-ctx.Done():
		return
	}
	defer func() { a.free <- i }()
	s := &a.slots[i]
	if s.next == len(s.events) {
		s.events, s.next = workload.Run(s.rng, a.tenant, workload.Options{}), 0
	}
	// The generator's clock runs ahead of ours: stamp the real emission
	// time, as the demo's driver does, once: a retry after a failed
	// append sends the same event (which may have landed).
	if !s.stamped {
		s.events[s.next].EmittedAt = time.Now().UTC().Format(time.RFC3339Nano)
		s.stamped = true
	}
	w := s.events[s.next]
	a.calls.Add(1)
	res, err := a.add(ctx, w)
	now := time.Now()
	if err != nil {
		a.failed.Add(1)
		if ctx.Err() == nil {
			a.log.Warn("append failed; the run's next turn retries it", "runId", w.RunID, "err", err)
		}
		return
	}
	if res.Persisted {
		a.persisted.Add(1)
	} else {
		a.duplicates.Add(1)
	}
	if a.acks != nil {
		a.acks.ack(w, res)
	}
	s.stamped = false
	if s.next == 0 {
		s.firstAt = now
		a.open.Add(1)
		a.started.Add(1)
	}
	s.next++
	if s.next < len(s.events) {
		return
	}
	a.open.Add(-1)
	a.finished.Add(1)
	a.lifetimes.Add(int64(now.Sub(s.firstAt)))
	a.firstTerminal.CompareAndSwap(0, int64(max(now.Sub(a.start), 1)))
	a.mu.Lock()
	a.ended = append(a.ended, endedRun{runID: w.RunID, at: now})
	a.mu.Unlock()
}

// endedRuns returns the runs that ended so far, in the order they did.
func (a *appender) endedRuns() []endedRun {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]endedRun(nil), a.ended...)
}

// openRunIDs returns the runIds of the runs open now. Call it only once
// no append runs (the slots are the appends' then).
func (a *appender) openRunIDs() []string {
	var ids []string
	for i := range a.slots {
		if s := &a.slots[i]; s.next > 0 && s.next < len(s.events) {
			ids = append(ids, s.events[0].RunID)
		}
	}
	return ids
}

// meanLifetime is the mean time from an ended run's first append to its
// last, 0 before one ended.
func (a *appender) meanLifetime() time.Duration {
	n := a.finished.Load()
	if n == 0 {
		return 0
	}
	return time.Duration(a.lifetimes.Load() / n)
}

// firstTerminalAt is the time from start to the first terminal event, and
// whether a run has ended yet.
func (a *appender) firstTerminalAt() (time.Duration, bool) {
	ns := a.firstTerminal.Load()
	return time.Duration(ns), ns > 0
}
