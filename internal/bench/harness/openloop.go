package harness

import (
	"context"
	"sync"
	"time"

	"github.com/runstream/runstream/internal/retry"
)

// RateTolerance is the share of the offered rate a latency phase's appends
// must achieve for its latency target to count as met at that rate.
const RateTolerance = 0.95

// OpenLoop offers jobs 0..n-1 at rate per second to workers goroutines,
// which run do(i, due) for each. It is an open loop: job i is due at
// start + i/rate whether or not earlier jobs are done, so a slow system
// shows as latency from the due time instead of as a lower offered rate.
// before, when not nil, runs in the offering loop just before job i is
// offered (a warmup's end starting the window); its error stops the
// offering. OpenLoop returns start once every offered job is done; the
// end of ctx stops the offering.
func OpenLoop(ctx context.Context, n, rate, workers int, do func(i int, due time.Time), before func(i int) error) (start time.Time, err error) {
	start = time.Now()
	dueAt := func(i int) time.Time { return start.Add(time.Duration(i) * time.Second / time.Duration(rate)) }
	jobs := make(chan int, n)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				do(i, dueAt(i))
			}
		}()
	}
	defer func() { close(jobs); wg.Wait() }()
	for i := 0; i < n && ctx.Err() == nil; {
		now := time.Now()
		for ; i < n && !dueAt(i).After(now); i++ {
			if before != nil {
				if err := before(i); err != nil {
					return start, err
				}
			}
			jobs <- i
		}
		if i < n {
			retry.Sleep(ctx, time.Until(dueAt(i)))
		}
	}
	return start, nil
}
