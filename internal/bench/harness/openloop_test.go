package harness

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// TestOpenLoop: every job runs once with its due time, start + i/rate,
// before runs ahead of each job in order, and its error stops the
// offering after the jobs already offered are done.
func TestOpenLoop(t *testing.T) {
	var mu sync.Mutex
	due := map[int]time.Time{}
	var offered []int
	start, err := OpenLoop(context.Background(), 20, 1000, 3, func(i int, d time.Time) {
		mu.Lock()
		defer mu.Unlock()
		due[i] = d
	}, func(i int) error { offered = append(offered, i); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(due) != 20 || len(offered) != 20 {
		t.Fatalf("%d jobs ran, %d offered; want 20 each", len(due), len(offered))
	}
	for i := range 20 {
		if want := start.Add(time.Duration(i) * time.Millisecond); !due[i].Equal(want) || offered[i] != i {
			t.Errorf("job %d: due %v, offered %d-th; want %v, in order", i, due[i].Sub(start), offered[i], want.Sub(start))
		}
	}

	stop := errors.New("stop")
	ran := 0
	_, err = OpenLoop(context.Background(), 20, 1000, 1, func(int, time.Time) { ran++ }, func(i int) error {
		if i == 5 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || ran != 5 {
		t.Errorf("before failing at job 5: err %v, %d jobs ran; want stop, 5", err, ran)
	}
}

// TestWindow: a window without a profile measures, and Stop is safe to
// repeat and on a window that never started.
func TestWindow(t *testing.T) {
	w, err := StartWindow(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cpu := w.Stop(); cpu.Process < 0 || cpu.Machine < 0 {
		t.Errorf("CPU %+v, want no negative share", cpu)
	}
	if cpu := w.Stop(); cpu != (CPU{}) {
		t.Errorf("a second Stop = %+v, want zero", cpu)
	}
	var never *Window
	if cpu := never.Stop(); cpu != (CPU{}) {
		t.Errorf("Stop on nil = %+v, want zero", cpu)
	}
}
