package relay

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// background runs one of the relay's upkeep jobs on the outbox (its
// VACUUM, the rotation of its parts) outside the publishing loop: at most
// one run at a time and one every interval, each bounded by timeout. Both
// need privileges the relay's role may not have: the first run asks may,
// and a role without them turns the job off for good with one INFO line
// (refused) instead of failing at every try.
type background struct {
	log      *slog.Logger
	interval time.Duration
	timeout  time.Duration
	may      func(ctx context.Context) (bool, error)
	refused  string

	running atomic.Bool
	off     atomic.Bool
	mu      sync.Mutex
	last    time.Time
	// checked says whether may was asked (by the first run's goroutine).
	checked bool
	wg      sync.WaitGroup
}

// idle reports whether a run could start now without taking the lock:
// the job is on and none is running.
func (b *background) idle() bool { return !b.off.Load() && !b.running.Load() }

// start runs job in the background when a run is due, after may on the
// first run. begin, called under the lock once the run is decided, returns
// the job (so what the run covers is taken exactly when it starts).
func (b *background) start(ctx context.Context, begin func() func(ctx context.Context)) {
	if !b.idle() {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if time.Since(b.last) < b.interval || !b.running.CompareAndSwap(false, true) {
		return
	}
	b.last = time.Now()
	job := begin()
	check := !b.checked
	b.checked = true
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer b.running.Store(false)
		jctx, cancel := context.WithTimeout(ctx, b.timeout)
		defer cancel()
		if check {
			may, err := b.may(jctx)
			if err != nil {
				b.mu.Lock()
				b.checked = false // look again next time
				b.mu.Unlock()
				return
			}
			if !may {
				b.off.Store(true)
				b.log.Info(b.refused)
				return
			}
		}
		job(jctx)
	}()
}

// wait waits for a run in flight.
func (b *background) wait() { b.wg.Wait() }
