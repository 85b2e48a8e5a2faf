package harness

import (
	"sync"
	"time"
)

// PhaseProgress is a running total of one phase of the relay, project and
// etl benchmarks, reported about once a second.
type PhaseProgress struct {
	// Phase names what is being done: "fill", "drain", "catch-up",
	// "verify", "baseline", "latency", ...
	Phase string
	// Elapsed is the phase's time so far.
	Elapsed time.Duration
	// Done of Total: the phase's unit of work (records produced, offsets
	// committed, rows inserted, events appended, ...).
	Done, Total int64
	// Rate is Done's growth per second over the last interval.
	Rate float64
}

// PhaseReporter calls report every second with done() of total and the
// rate since the last call, until stop is called; stop waits for it and
// may be called more than once. A nil report reports nothing.
func PhaseReporter(report func(PhaseProgress), phase string, total int64, done func() int64) (stop func()) {
	if report == nil {
		return func() {}
	}
	start := time.Now()
	last, lastAt := done(), start
	halt := Every(time.Second, func() {
		now, n := time.Now(), done()
		report(PhaseProgress{Phase: phase, Elapsed: now.Sub(start), Done: n, Total: total,
			Rate: float64(n-last) / now.Sub(lastAt).Seconds()})
		last, lastAt = n, now
	})
	var once sync.Once
	return func() { once.Do(halt) }
}

// EverySecond calls report(snapshot()) every second until stop is called;
// stop waits for the goroutine. A nil report does nothing.
func EverySecond[P any](report func(P), snapshot func() P) (stop func()) {
	if report == nil {
		return func() {}
	}
	return Every(time.Second, func() { report(snapshot()) })
}

// Every calls fn every interval until stop is called; stop waits for the
// goroutine. A nil fn does nothing.
func Every(interval time.Duration, fn func()) (stop func()) {
	if fn == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fn()
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}
