package steadybench

import (
	"math"
	"strings"
	"testing"
	"time"
)

// series is samples every 10 s, used_memory mem(i) and catalogued runs(i)
// for sample i.
func series(n int, mem func(i int) int64) []Sample {
	s := make([]Sample, n)
	for i := range s {
		s[i] = Sample{Elapsed: time.Duration(i) * 10 * time.Second, UsedMemory: mem(i), Catalogued: int64(1000 + i)}
	}
	return s
}

func TestJudge_Window(t *testing.T) {
	// 30 minutes, 181 samples: the window is the last 10 minutes (61
	// samples, 1200 s to 1800 s) whatever came before it.
	samples := series(181, func(i int) int64 {
		if i < 120 {
			return int64(1000 + 100*i) // the ramp before the steady state
		}
		return []int64{95, 100, 105}[i%3] * 1000
	})
	v := judge(samples, 3*time.Minute)
	if !v.Decided || v.From != 20*time.Minute || v.To != 30*time.Minute || v.Samples != 61 {
		t.Fatalf("window %v..%v, %d samples, decided %v; want 20m0s..30m0s, 61, true (%s)", v.From, v.To, v.Samples, v.Decided, v.Why)
	}
	// 61 samples of 95k, 100k, 105k in turn, starting at i=120 (i%3 == 0:
	// 95k): 21 of 95k, 20 of 100k, 20 of 105k.
	wantMean := (21*95000.0 + 20*100000 + 20*105000) / 61
	if math.Abs(v.Mean-wantMean) > 1e-6 || v.Min != 95000 || v.Max != 105000 {
		t.Fatalf("mean %v min %d max %d; want %v 95000 105000", v.Mean, v.Min, v.Max, wantMean)
	}
	wantDev := (105000 - wantMean) / wantMean * 100 // the mean is below 100,000
	if math.Abs(v.MaxDeviation-wantDev) > 1e-9 || !v.Flat {
		t.Fatalf("max deviation %v%%, flat %v; want %v%%, true", v.MaxDeviation, v.Flat, wantDev)
	}
	if v.CataloguedMin != 1120 || v.CataloguedMax != 1180 {
		t.Fatalf("catalogued %d..%d; want 1120..1180", v.CataloguedMin, v.CataloguedMax)
	}
	if line := v.Line(); !strings.Contains(line, "FLAT") || strings.Contains(line, "NOT FLAT") {
		t.Fatalf("line %q", line)
	}
}

func TestJudge_ShortRunAndSteadyStart(t *testing.T) {
	// 6 minutes (37 samples): the last third, 240 s to 360 s...
	samples := series(37, func(int) int64 { return 100 })
	if v := judge(samples, time.Minute); v.From != 4*time.Minute || v.Samples != 13 {
		t.Fatalf("short run: from %v, %d samples; want 4m0s, 13", v.From, v.Samples)
	}
	// ...unless the steady state starts later.
	if v := judge(samples, 5*time.Minute); v.From != 5*time.Minute || v.Samples != 7 || !v.Decided {
		t.Fatalf("late steady state: from %v, %d samples, decided %v; want 5m0s, 7, true", v.From, v.Samples, v.Decided)
	}
	// Too late for three samples: no verdict.
	if v := judge(samples, 345*time.Second); v.Decided || v.Samples != 2 || !strings.Contains(v.Line(), "raise --duration") {
		t.Fatalf("too short: decided %v, %d samples, %q", v.Decided, v.Samples, v.Line())
	}
	// No run ended: no verdict.
	if v := judge(samples, -1); v.Decided || !strings.Contains(v.Why, "no run ended") {
		t.Fatalf("no run ended: decided %v, %q", v.Decided, v.Why)
	}
	if v := judge(nil, 0); v.Decided {
		t.Fatal("no samples: decided")
	}
}

func TestJudge_NotFlat(t *testing.T) {
	// Growth by 1% a sample over the window: not flat.
	samples := series(181, func(i int) int64 { return int64(100000 * (1 + 0.01*float64(i))) })
	v := judge(samples, 0)
	if !v.Decided || v.Flat || v.MaxDeviation < 10 {
		t.Fatalf("decided %v flat %v max deviation %.1f%%; want a verdict of not flat above 10%%", v.Decided, v.Flat, v.MaxDeviation)
	}
	if !strings.Contains(v.Line(), "NOT FLAT") {
		t.Fatalf("line %q", v.Line())
	}
	// Exactly 10%: flat (the tolerance is inclusive).
	edge := series(10, func(i int) int64 { return []int64{90, 110}[i%2] })
	if v := judge(edge, 0); !v.Decided || v.Samples != 4 || math.Abs(v.MaxDeviation-10) > 1e-9 || !v.Flat {
		t.Fatalf("+-10%%: decided %v, %d samples, deviation %v, flat %v", v.Decided, v.Samples, v.MaxDeviation, v.Flat)
	}
}

func TestBytesPerRun(t *testing.T) {
	if got := bytesPerRun(Sample{UsedMemory: 1_000_000 + 5_630_000, Catalogued: 1000}, 1_000_000); got != 5630 {
		t.Fatalf("bytes per run %v; want 5630", got)
	}
	if got := bytesPerRun(Sample{UsedMemory: 5, Catalogued: 0}, 1); got != 0 {
		t.Fatalf("no runs: %v; want 0", got)
	}
}

func TestParseMemory(t *testing.T) {
	info := "# Memory\r\nused_memory:1234567\r\nused_memory_human:1.18M\r\nused_memory_rss:7654321\r\nused_memory_peak:2000000\r\n"
	m, err := parseMemory(info)
	if err != nil || m.used != 1234567 || m.rss != 7654321 {
		t.Fatalf("parseMemory = %+v, %v; want used 1234567 rss 7654321", m, err)
	}
	if _, err := parseMemory("# Memory\r\n"); err == nil {
		t.Fatal("parseMemory of nothing: no error")
	}
}

func TestJudgePostgres(t *testing.T) {
	// 30 minutes: the store grows to 700 MB until its first partition
	// leaves at 13 minutes, then saws between 600 and 700 MB as a
	// partition fills for 2 minutes (12 samples) and leaves.
	samples := make([]Sample, 181)
	for i := range samples {
		pg := int64(i) * 700_000_000 / 78
		if i >= 78 {
			pg = 600_000_000 + int64((i-78)%12)*100_000_000/11
		}
		samples[i] = Sample{Elapsed: time.Duration(i) * 10 * time.Second, PgBytes: pg, UsedMemory: 1}
	}
	// A partition dropped at 13 minutes and every 2 minutes after.
	var drops []time.Duration
	for d := 13 * time.Minute; d < 30*time.Minute; d += 2 * time.Minute {
		drops = append(drops, d)
	}
	v := judgePostgres(samples, drops)
	if !v.Decided || v.Of != ofPostgres || v.From != 20*time.Minute || v.Samples != 61 || v.Min != 600_000_000 || v.Max != 700_000_000 {
		t.Fatalf("verdict %+v; want the last 10 minutes, 61 samples, 600 to 700 MB", v)
	}
	if dev := math.Max(700e6-v.Mean, v.Mean-600e6) / v.Mean * 100; math.Abs(v.MaxDeviation-dev) > 1e-9 || !v.Flat || math.Abs(v.TrendPerHour) > 5 {
		t.Fatalf("max deviation %v%%, trend %v%%/h, flat %v; want %v%%, about 0, flat", v.MaxDeviation, v.TrendPerHour, v.Flat, dev)
	}
	// Teeth twice as high (a partition as large as what stays): still
	// flat, judged by the trend.
	tall := make([]Sample, len(samples))
	for i, s := range samples {
		tall[i] = s
		if i >= 78 {
			tall[i].PgBytes = 400_000_000 + int64((i-78)%12)*400_000_000/11
		}
	}
	if v := judgePostgres(tall, drops); !v.Flat || v.MaxDeviation <= FlatTolerance {
		t.Fatalf("tall teeth: %+v; want flat by its trend with a max deviation past %v%%", v, FlatTolerance)
	}
	// The same teeth on a floor that climbs 72 MB an hour (tombstones a
	// store keeps for ever): not flat.
	drift := make([]Sample, len(samples))
	for i, s := range samples {
		drift[i] = s
		drift[i].PgBytes += int64(s.Elapsed.Hours() * 72e6)
	}
	if v := judgePostgres(drift, drops); v.Flat || v.TrendPerHour < 10 || !strings.Contains(v.Line(), "NOT FLAT") {
		t.Fatalf("a climbing floor: %+v; want not flat, a trend over 10%%/h", v)
	}
	if line := v.Line(); !strings.Contains(line, "FLAT: Postgres size from 20m0s") {
		t.Fatalf("line %q", line)
	}
	// Too few cycles to judge a trend: no verdict, saying why.
	if v := judgePostgres(samples, drops[:2]); v.Decided || !strings.Contains(v.Line(), "partition cycles") {
		t.Fatalf("two drops: %q", v.Line())
	}
	// The first drop late in the run: the window starts there.
	if v := judgePostgres(samples, []time.Duration{25 * time.Minute, 27 * time.Minute, 29 * time.Minute, 31 * time.Minute}); v.From != 25*time.Minute || v.Samples != 31 {
		t.Fatalf("late first drop: from %v, %d samples; want 25m0s, 31", v.From, v.Samples)
	}
	// Still growing in the window: not flat.
	grow := make([]Sample, 181)
	for i := range grow {
		grow[i] = Sample{Elapsed: time.Duration(i) * 10 * time.Second, PgBytes: int64(i) * 1_000_000}
	}
	if v := judgePostgres(grow, drops); !v.Decided || v.Flat || !strings.Contains(v.Line(), "NOT FLAT: Postgres size") {
		t.Fatalf("growing store: %+v", v)
	}
	// No partition left: no verdict, and it says what to change.
	if v := judgePostgres(samples, nil); v.Decided || !strings.Contains(v.Line(), "no partition left the store") {
		t.Fatalf("no drop: %q", v.Line())
	}
}
