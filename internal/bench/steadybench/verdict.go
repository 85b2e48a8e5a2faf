package steadybench

import (
	"fmt"
	"math"
	"time"
)

// FlatTolerance is how far (percent of the mean) used_memory may move in
// the steady window for the verdict "flat".
const FlatTolerance = 10.0

// MaxWindow is the longest steady window: the last 10 minutes. A run
// shorter than three times it is judged on its last third.
const MaxWindow = 10 * time.Minute

// minWindowSamples is the fewest samples a verdict is given on.
const minWindowSamples = 3

// Verdict is used_memory over the steady window: from the first TTL plus
// the warm-up, the last MaxWindow of the run (its last third when
// shorter).
type Verdict struct {
	// Decided is false when the window holds fewer than three samples
	// (the run was too short for its TTL); Why then says so.
	Decided bool   `json:"decided"`
	Why     string `json:"why,omitempty"`
	// From and To bound the window (elapsed time), Samples are in it.
	From    time.Duration `json:"fromNs"`
	To      time.Duration `json:"toNs"`
	Samples int           `json:"samples"`
	// Mean, Min and Max of used_memory in the window, bytes.
	Mean float64 `json:"mean"`
	Min  int64   `json:"min"`
	Max  int64   `json:"max"`
	// MaxDeviation is the largest |used_memory - Mean| in the window, in
	// percent of Mean.
	MaxDeviation float64 `json:"maxDeviationPct"`
	// Flat is MaxDeviation within FlatTolerance.
	Flat bool `json:"flat"`
	// CataloguedMin and CataloguedMax are the runs catalogued in the
	// window.
	CataloguedMin int64 `json:"cataloguedMin"`
	CataloguedMax int64 `json:"cataloguedMax"`
}

// judge gives the verdict on samples (in time order) for a run whose
// steady state starts at steadyFrom (the first TTL plus the warm-up;
// negative when no run ended, so none expired).
func judge(samples []Sample, steadyFrom time.Duration) Verdict {
	if len(samples) == 0 {
		return Verdict{Why: "no samples"}
	}
	if steadyFrom < 0 {
		return Verdict{Why: "no run ended, so none expired: raise --duration or --rate, or lower --concurrent-runs"}
	}
	end := samples[len(samples)-1].Elapsed
	from := end - min(MaxWindow, end/3)
	v := Verdict{From: max(from, steadyFrom), To: end}
	var sum float64
	for _, s := range samples {
		if s.Elapsed < v.From {
			continue
		}
		if v.Samples == 0 {
			v.Min, v.Max = s.UsedMemory, s.UsedMemory
			v.CataloguedMin, v.CataloguedMax = s.Catalogued, s.Catalogued
		}
		v.Samples++
		sum += float64(s.UsedMemory)
		v.Min, v.Max = min(v.Min, s.UsedMemory), max(v.Max, s.UsedMemory)
		v.CataloguedMin, v.CataloguedMax = min(v.CataloguedMin, s.Catalogued), max(v.CataloguedMax, s.Catalogued)
	}
	if v.Samples < minWindowSamples {
		v.Why = fmt.Sprintf("%d samples after the first TTL and the warm-up (%v), fewer than %d: raise --duration",
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
		return "verdict: none (" + v.Why + ")"
	}
	word := "FLAT"
	if !v.Flat {
		word = "NOT FLAT"
	}
	return fmt.Sprintf("verdict: %s: used_memory from %v to %v (%d samples) mean %.2f MB, min %.2f, max %.2f, max deviation %.1f%% (flat: within +-%.0f%%)",
		word, v.From.Round(time.Second), v.To.Round(time.Second), v.Samples, v.Mean/1e6, mb(v.Min), mb(v.Max),
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
