package harness

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// seq returns 1ms..n ms.
func seq(n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = ms(i + 1)
	}
	return out
}

func TestBenchPercentile(t *testing.T) {
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one value", []time.Duration{ms(7)}, 99, ms(7)},
		{"median of 100", seq(100), 50, ms(50)},
		{"p95 of 100", seq(100), 95, ms(95)},
		{"p99 of 100", seq(100), 99, ms(99)},
		{"max of 100", seq(100), 100, ms(100)},
		// Nearest rank: ceil(0.5*10) = 5th value; ceil(0.95*10) = 10th.
		{"median of 10", seq(10), 50, ms(5)},
		{"p95 of 10 is the max", seq(10), 95, ms(10)},
		{"p99 of 1000", seq(1000), 99, ms(990)},
		{"tiny p is the min", seq(10), 0.001, ms(1)},
		{"p over 100 is the max", seq(10), 150, ms(10)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("Percentile(%d values, %v) = %v, want %v", len(tt.sorted), tt.p, got, tt.want)
			}
		})
	}
}

func TestBenchSummarize_SortsAndPicks(t *testing.T) {
	lat := seq(200)
	// Reverse so Summarize has to sort.
	slices.Reverse(lat)
	got := Summarize(lat)
	want := Latency{P50: ms(100), P95: ms(190), P99: ms(198), Max: ms(200)}
	if got != want {
		t.Errorf("Summarize = %+v, want %+v", got, want)
	}
}

// TestBenchMedian: the median round is picked by key (the lower one of an
// even count), every round is returned in the order it ran, and a failed
// round stops the rounds and says which it was.
func TestBenchMedian(t *testing.T) {
	keys := []float64{0.9, 0.4, 0.6, 0.5}
	var ran []int
	measure := func(i int) (float64, error) { ran = append(ran, i); return keys[i], nil }
	id := func(v float64) float64 { return v }
	for _, tt := range []struct {
		n    int
		want float64
	}{{1, 0.9}, {3, 0.6}, {4, 0.5}} {
		ran = nil
		got, all, err := Median(tt.n, measure, id)
		if err != nil || got != tt.want || !slices.Equal(all, keys[:tt.n]) || len(ran) != tt.n {
			t.Errorf("Median of %v = %v, %v, %v; want %v, every round in order", keys[:tt.n], got, all, err, tt.want)
		}
	}
	boom := errors.New("boom")
	_, all, err := Median(3, func(i int) (float64, error) {
		if i == 1 {
			return 0, boom
		}
		return 1, nil
	}, id)
	if !errors.Is(err, boom) || err.Error() != "round 2 of 3: boom" || all != nil {
		t.Errorf("a failed round: %v, %v; want round 2 of 3: boom", all, err)
	}
}

func TestBenchWithSearchPath(t *testing.T) {
	if got, want := WithSearchPath("postgres://u@h/db?sslmode=disable", "s1"), "postgres://u@h/db?search_path=s1&sslmode=disable"; got != want {
		t.Errorf("URL form = %q, want %q", got, want)
	}
	if got, want := WithSearchPath("host=h dbname=db", "s1"), "host=h dbname=db search_path=s1"; got != want {
		t.Errorf("keyword form = %q, want %q", got, want)
	}
}
