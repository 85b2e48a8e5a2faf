package steadybench

import (
	"fmt"
	"math"
	"time"
)

// FlatTolerance is how far (percent of the mean) a measure may move in
// the steady window for the verdict "flat".
const FlatTolerance = 10.0

// MaxWindow is the longest steady window: the last 10 minutes. A run
// shorter than three times it is judged on its last third.
const MaxWindow = 10 * time.Minute

// minWindowSamples is the fewest samples a verdict is given on.
const minWindowSamples = 3

// Verdict is one measure (used_memory, or the store's size) over the
// steady window: from the steady start, the last MaxWindow of the run
// (its last third when shorter).
type Verdict struct {
	// Of names the measure: "used_memory" or "Postgres size".
	Of string `json:"of"`
	// Decided is false when the window holds fewer than three samples
	// (the run was too short for its TTL); Why then says so.
	Decided bool   `json:"decided"`
	Why     string `json:"why,omitempty"`
	// From and To bound the window (elapsed time), Samples are in it.
	From    time.Duration `json:"fromNs"`
	To      time.Duration `json:"toNs"`
	Samples int           `json:"samples"`
	// Mean, Min and Max of the measure in the window, bytes.
	Mean float64 `json:"mean"`
	Min  int64   `json:"min"`
	Max  int64   `json:"max"`
	// MaxDeviation is the largest |value - Mean| in the window, in
	// percent of Mean.
	MaxDeviation float64 `json:"maxDeviationPct"`
	// TrendPerHour is the store's growth: the least-squares slope of its
	// mean over each partition cycle since the first drop, projected over
	// an hour, in percent of that mean (judgePostgres).
	TrendPerHour float64 `json:"trendPerHourPct"`
	// ByTrend: Flat judges TrendPerHour, not MaxDeviation (the store's
	// size, which saws by a partition's size as each one fills and
	// leaves: how high the teeth are says the partition's width, whether
	// they climb says whether the store grows).
	ByTrend bool `json:"byTrend,omitempty"`
	// Flat is MaxDeviation (TrendPerHour when ByTrend) within
	// FlatTolerance.
	Flat bool `json:"flat"`
	// CataloguedMin and CataloguedMax are the runs catalogued in the
	// window.
	CataloguedMin int64 `json:"cataloguedMin"`
	CataloguedMax int64 `json:"cataloguedMax"`
}

// Names of the measures judged.
const (
	ofUsedMemory = "used_memory"
	ofPostgres   = "Postgres size"
)

// judge gives the verdict on used_memory over samples (in time order) for
// a run whose steady state starts at steadyFrom (the first TTL plus the
// warm-up; negative when no run ended, so none expired).
func judge(samples []Sample, steadyFrom time.Duration) Verdict {
	return judgeOf(samples, steadyFrom, ofUsedMemory, func(s Sample) int64 { return s.UsedMemory },
		"no run ended, so none expired: raise --duration or --rate, or lower --concurrent-runs")
}

// judgePostgres gives the verdict on the store's size (Sample.PgBytes)
// given when each partition holding runs was dropped (elapsed, in order;
// none: no verdict). The size saws by one partition as each fills and
// leaves, so how high the teeth are says the partition's width, and
// whether they climb says whether the store grows: it is judged by the
// trend of its mean over each partition's cycle (from one drop to the
// next) since the first drop, flat when that trend, projected over an
// hour, is within FlatTolerance of the mean.
func judgePostgres(samples []Sample, drops []time.Duration) Verdict {
	first := time.Duration(-1)
	if len(drops) > 0 {
		first = drops[0]
	}
	value := func(s Sample) int64 { return s.PgBytes }
	v := judgeOf(samples, first, ofPostgres, value,
		"no partition left the store during the run: raise --duration, or lower --retention or --partition-interval")
	v.ByTrend = true
	if !v.Decided {
		return v
	}
	var mids, means []float64
	for i := 0; i+1 < len(drops); i++ {
		var sum, n float64
		for _, s := range samples {
			if s.Elapsed >= drops[i] && s.Elapsed < drops[i+1] {
				sum += float64(value(s))
				n++
			}
		}
		if n > 0 {
			mids = append(mids, ((drops[i] + drops[i+1]) / 2).Hours())
			means = append(means, sum/n)
		}
	}
	if len(means) < minCycles {
		v.Decided, v.Flat = false, false
		v.Why = fmt.Sprintf("%d partition cycles after the first drop, fewer than %d: raise --duration or lower --partition-interval", len(means), minCycles)
		return v
	}
	v.TrendPerHour = slopePct(mids, means)
	v.Flat = math.Abs(v.TrendPerHour) <= FlatTolerance
	return v
}

// minCycles is the fewest partition cycles the store's trend is judged on.
const minCycles = 3

// slopePct is the least-squares slope of ys over xs (hours), in percent
// of ys' mean per hour.
func slopePct(xs, ys []float64) float64 {
	var n, sx, sy, sxx, sxy float64
	for i := range xs {
		n++
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	den := n*sxx - sx*sx
	if n < 2 || den == 0 || sy == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / den / (sy / n) * 100
}

// judgeOf is value over the window of samples that starts at steadyFrom
// at the earliest; notStarted is Why when steadyFrom is negative.
func judgeOf(samples []Sample, steadyFrom time.Duration, of string, value func(Sample) int64, notStarted string) Verdict {
	if len(samples) == 0 {
		return Verdict{Of: of, Why: "no samples"}
	}
	if steadyFrom < 0 {
		return Verdict{Of: of, Why: notStarted}
	}
	end := samples[len(samples)-1].Elapsed
	from := end - min(MaxWindow, end/3)
	v := Verdict{Of: of, From: max(from, steadyFrom), To: end}
	var sum float64
	for _, s := range samples {
		if s.Elapsed < v.From {
			continue
		}
		x := value(s)
		if v.Samples == 0 {
			v.Min, v.Max = x, x
			v.CataloguedMin, v.CataloguedMax = s.Catalogued, s.Catalogued
		}
		v.Samples++
		sum += float64(x)
		v.Min, v.Max = min(v.Min, x), max(v.Max, x)
		v.CataloguedMin, v.CataloguedMax = min(v.CataloguedMin, s.Catalogued), max(v.CataloguedMax, s.Catalogued)
	}
	if v.Samples < minWindowSamples {
		v.Why = fmt.Sprintf("%d samples after the steady start (%v), fewer than %d: raise --duration",
			v.Samples, steadyFrom.Round(time.Second), minWindowSamples)
		return v
	}
	v.Mean = sum / float64(v.Samples)
	if v.Mean > 0 {
		dev := math.Max(float64(v.Max)-v.Mean, v.Mean-float64(v.Min))
		v.MaxDeviation = dev / v.Mean * 100
	}
	v.Decided = true
	v.Flat = v.MaxDeviation <= FlatTolerance
	return v
}

// Line is the verdict as one line of text.
func (v Verdict) Line() string {
	if !v.Decided {
		return "verdict on " + v.Of + ": none (" + v.Why + ")"
	}
	word := "FLAT"
	if !v.Flat {
		word = "NOT FLAT"
	}
	if v.ByTrend {
		return fmt.Sprintf("verdict: %s: %s from %v to %v (%d samples) mean %.2f MB, min %.2f, max %.2f (a partition's teeth), trend %+.1f%% of the mean an hour (flat: within +-%.0f%%)",
			word, v.Of, v.From.Round(time.Second), v.To.Round(time.Second), v.Samples, v.Mean/1e6, mb(v.Min), mb(v.Max),
			v.TrendPerHour, FlatTolerance)
	}
	return fmt.Sprintf("verdict: %s: %s from %v to %v (%d samples) mean %.2f MB, min %.2f, max %.2f, max deviation %.1f%% (flat: within +-%.0f%%)",
		word, v.Of, v.From.Round(time.Second), v.To.Round(time.Second), v.Samples, v.Mean/1e6, mb(v.Min), mb(v.Max),
		v.MaxDeviation, FlatTolerance)
}

// bytesPerRun is used_memory's growth over the empty server divided by
// the runs catalogued, 0 without runs.
func bytesPerRun(s Sample, empty int64) float64 {
	if s.Catalogued <= 0 {
		return 0
	}
	return float64(s.UsedMemory-empty) / float64(s.Catalogued)
}
