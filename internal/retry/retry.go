// Package retry is the waiting between attempts that every component does
// the same way: exponential backoff with jitter, and a sleep that ends
// early when its context does.
package retry

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff returns the wait before the given attempt (1 for the first
// retry): base doubled for each attempt after the first, at most maxD,
// then jittered uniformly into [d/2, d] so that many callers failing at
// once do not retry in step.
func Backoff(base, maxD time.Duration, attempt int) time.Duration {
	d := grow(base, maxD, attempt)
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

// FullJitter is Backoff with the jitter spread from base/2 rather than
// d/2: uniform in [base/2, d]. Late attempts may then come much sooner
// than d, which suits a caller that retries many items independently (the
// relay's refused records) more than one that waits for a whole service.
func FullJitter(base, maxD time.Duration, attempt int) time.Duration {
	d := grow(base, maxD, attempt)
	lo := base / 2
	if d <= lo {
		return d
	}
	return lo + time.Duration(rand.Int64N(int64(d-lo)))
}

func grow(base, maxD time.Duration, attempt int) time.Duration {
	d := base
	for i := 1; i < attempt && d < maxD; i++ {
		d *= 2
	}
	return min(d, maxD)
}

// Sleep waits d or until ctx ends; it reports whether d passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
