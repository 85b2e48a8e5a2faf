package harness

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Latency is a latency distribution's summary.
type Latency struct {
	P50, P95, P99, Max time.Duration
}

// MarshalJSON writes milliseconds, the unit people read latencies in.
func (l Latency) MarshalJSON() ([]byte, error) {
	ms := func(d time.Duration) float64 { return Round(float64(d)/float64(time.Millisecond), 3) }
	return json.Marshal(map[string]float64{"p50": ms(l.P50), "p95": ms(l.P95), "p99": ms(l.P99), "max": ms(l.Max)})
}

// Summarize sorts lat in place and returns its percentiles.
func Summarize(lat []time.Duration) Latency {
	slices.Sort(lat)
	return Latency{
		P50: Percentile(lat, 50),
		P95: Percentile(lat, 95),
		P99: Percentile(lat, 99),
		Max: Percentile(lat, 100),
	}
}

// Percentile returns the nearest-rank p-th percentile (0 < p <= 100) of
// sorted, which must be in ascending order: the smallest value that at least
// p percent of the values are less than or equal to. It is exact, not an
// estimate (we keep every sample). Empty input gives 0.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// Ratio is ours/theirs, or 0 when theirs is not positive (no baseline rate
// to compare with).
func Ratio(ours, theirs float64) float64 {
	if theirs <= 0 {
		return 0
	}
	return ours / theirs
}

// Div is a/b, or 0 when b is 0 (a mean over nothing).
func Div(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// PerSec is n per second of d, or 0 for an empty d.
func PerSec(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// Round rounds v to digits decimal digits, for the JSON reports.
func Round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// FormatMs formats d in milliseconds with two decimals: "1.25ms".
func FormatMs(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64) + "ms"
}

// FormatLatency formats l's percentiles, and its max when withMax (a
// histogram's estimate has none).
func FormatLatency(l Latency, withMax bool) string {
	s := fmt.Sprintf("p50 %s  p95 %s  p99 %s", FormatMs(l.P50), FormatMs(l.P95), FormatMs(l.P99))
	if withMax {
		s += "  max " + FormatMs(l.Max)
	}
	return s
}

// Verdict is a target's verdict in a text report.
func Verdict(met bool) string {
	if met {
		return "MET"
	}
	return "BELOW TARGET"
}

// Median measures n rounds, measure(i) being round i (from 0), and
// returns the result of the round whose key (a ratio to the baseline) is
// the median, the lower one for an even n, and every result in the order
// the rounds ran. One round's figure moves with what else the machine
// does, so a figure is the median of at least three (bench/README.md,
// "What each one measures, and its target"). It stops at the
// first round that fails.
func Median[R any](n int, measure func(i int) (R, error), key func(R) float64) (median R, all []R, err error) {
	for i := range n {
		r, err := measure(i)
		if err != nil {
			return median, nil, fmt.Errorf("round %d of %d: %w", i+1, n, err)
		}
		all = append(all, r)
	}
	if len(all) == 0 {
		return median, nil, nil
	}
	sorted := slices.Clone(all)
	slices.SortStableFunc(sorted, func(a, b R) int { return cmp.Compare(key(a), key(b)) })
	return sorted[(len(sorted)-1)/2], all, nil
}

// LoadAverage1 is /proc/loadavg's 1-minute average, 0 where there is no
// /proc: the machine's load a report gives beside its figures.
func LoadAverage1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
