package retry

import (
	"context"
	"testing"
	"time"
)

func TestBackoff_GrowsWithinBounds(t *testing.T) {
	base, maxD := 100*time.Millisecond, 2*time.Second
	for attempt := 1; attempt <= 12; attempt++ {
		want := min(base<<(attempt-1), maxD)
		for range 200 {
			if d := Backoff(base, maxD, attempt); d < want/2 || d > want {
				t.Fatalf("Backoff(attempt %d) = %v, want within [%v, %v]", attempt, d, want/2, want)
			}
			if d := FullJitter(base, maxD, attempt); d < base/2 || d > want {
				t.Fatalf("FullJitter(attempt %d) = %v, want within [%v, %v]", attempt, d, base/2, want)
			}
		}
	}
}

func TestSleep(t *testing.T) {
	if !Sleep(context.Background(), time.Millisecond) {
		t.Fatal("Sleep with a live context reported it ended early")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if Sleep(ctx, time.Minute) || time.Since(start) > time.Second {
		t.Fatal("Sleep did not end with its context")
	}
}
