package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Report is the outcome of one [RunAppend]. Its JSON form is the
// machine-readable report (`runstream bench append --json`).
type Report struct {
	// Target is "in-process" or the URL of the API measured.
	Target string `json:"target"`
	// Clients, Batch and Runs are the effective settings.
	Clients int `json:"clients"`
	Batch   int `json:"batch"`
	Runs    int `json:"runs"`
	// PoolMaxConns is the in-process API's Postgres pool size (0 with an
	// external API).
	PoolMaxConns int32 `json:"poolMaxConns,omitempty"`
	// Window is the measured time: from the common start until the last
	// request issued before the deadline completed.
	Window time.Duration `json:"-"`
	// Requests counts every request of the window, failed ones included.
	Requests int64 `json:"requests"`
	// Events counts events acknowledged as appended in the window.
	Events int64 `json:"events"`
	// Errors counts failures by HTTP status ("503"), "transport" for a
	// request that got no answer, and "item" for a batch item answered with
	// an error inside a 200.
	Errors map[string]int64 `json:"errors"`
	// Duplicates counts events answered idempotent: true. The generator never
	// repeats a key, so anything but 0 is a bug.
	Duplicates int64 `json:"duplicates"`
	// Latency is per request, over the requests of the window.
	Latency Latency `json:"latencyMs"`
	// WarmupEvents were appended during the warmup, before the window.
	WarmupEvents int64 `json:"warmupEvents"`
	// Stored is the rows in run_events at the end, with the in-process API
	// only: WarmupEvents + Events when every request got its answer.
	Stored int64 `json:"storedEvents,omitempty"`
	// GeneratedInWindow counts requests whose events had to be generated
	// inside the window because the pre-generated pool ran out; their
	// generation cost is then part of the measurement.
	GeneratedInWindow int64 `json:"generatedInWindow"`
	// CPU is the CPU used during the window.
	CPU CPU `json:"cpu"`
	// Baseline is set when a pgbench baseline ran.
	Baseline *Baseline `json:"baseline,omitempty"`
}

// EventsPerSec is the appended events per second of the window.
func (r *Report) EventsPerSec() float64 { return perSec(r.Events, r.Window) }

// RequestsPerSec is the requests per second of the window.
func (r *Report) RequestsPerSec() float64 { return perSec(r.Requests, r.Window) }

// ErrorCount is the total of Errors.
func (r *Report) ErrorCount() int64 {
	var n int64
	for _, v := range r.Errors {
		n += v
	}
	return n
}

// MarshalJSON adds the derived rates and the window in seconds.
func (r *Report) MarshalJSON() ([]byte, error) {
	type plain Report // without methods, so no recursion
	return json.Marshal(struct {
		*plain
		WindowSeconds  float64 `json:"windowSeconds"`
		EventsPerSec   float64 `json:"eventsPerSec"`
		RequestsPerSec float64 `json:"requestsPerSec"`
	}{(*plain)(r), round(r.Window.Seconds(), 3), round(r.EventsPerSec(), 1), round(r.RequestsPerSec(), 1)})
}

// Latency is a latency distribution's summary.
type Latency struct {
	P50, P95, P99, Max time.Duration
}

// MarshalJSON writes milliseconds, the unit people read latencies in.
func (l Latency) MarshalJSON() ([]byte, error) {
	ms := func(d time.Duration) float64 { return round(float64(d)/float64(time.Millisecond), 3) }
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

// Baseline is pgbench's result on the same three SQL statements, and our
// rate as a fraction of it.
type Baseline struct {
	// Script is the pgbench script run (bench/append_single.sql or
	// bench/append_batch100.sql).
	Script string `json:"script"`
	// Clients and Threads are pgbench's -c and -j.
	Clients int `json:"clients"`
	Threads int `json:"threads"`
	// Duration is pgbench's -T.
	Duration time.Duration `json:"-"`
	// TPS is pgbench's "tps = " (transactions/s without connection time).
	TPS float64 `json:"tps"`
	// EventsPerTx is the events one script transaction appends.
	EventsPerTx int `json:"eventsPerTx"`
	// Failed is pgbench's "number of failed transactions".
	Failed int64 `json:"failed"`
	// CPU is the CPU used while pgbench ran (Process is pgbench's own).
	CPU CPU `json:"cpu"`
	// Ratio is our events/s divided by pgbench's events/s.
	Ratio float64 `json:"ratio"`
	// Target is the ratio the issue asks for: 0.60 single, 0.70 batched.
	Target float64 `json:"target"`
}

// EventsPerSec is pgbench's rate in events.
func (b *Baseline) EventsPerSec() float64 { return b.TPS * float64(b.EventsPerTx) }

// Met reports whether the ratio reaches the target.
func (b *Baseline) Met() bool { return b.Ratio >= b.Target }

// MarshalJSON adds the derived fields.
func (b *Baseline) MarshalJSON() ([]byte, error) {
	type plain Baseline
	return json.Marshal(struct {
		*plain
		DurationSeconds float64 `json:"durationSeconds"`
		EventsPerSec    float64 `json:"eventsPerSec"`
		Met             bool    `json:"met"`
	}{(*plain)(b), b.Duration.Seconds(), round(b.EventsPerSec(), 1), b.Met()})
}

// Ratio is ours/theirs, or 0 when theirs is not positive (no baseline rate
// to compare with).
func Ratio(ours, theirs float64) float64 {
	if theirs <= 0 {
		return 0
	}
	return ours / theirs
}

// TargetRatio is the fraction of pgbench's rate the issue asks for: 60% for
// single events, 70% for batches.
func TargetRatio(batch int) float64 {
	if batch <= 1 {
		return 0.60
	}
	return 0.70
}

// CPU is CPU use over a period, in cores (1.0 = one core busy throughout).
// Zero when /proc is not available (not Linux).
type CPU struct {
	// Process is this process's CPU (for a baseline: pgbench's).
	Process float64 `json:"processCores"`
	// Machine is every process's CPU, Postgres included.
	Machine float64 `json:"machineCores"`
}

// WriteText writes the human-readable report.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	mode := "POST /v1/events"
	if r.Batch > 1 {
		mode = fmt.Sprintf("POST /v1/events:batch (%d events per request)", r.Batch)
	}
	fmt.Fprintf(&b, "runstream bench append: %s, %d clients, %d runs, %s window, against %s",
		mode, r.Clients, r.Runs, r.Window.Round(time.Millisecond), r.Target)
	if r.PoolMaxConns > 0 {
		fmt.Fprintf(&b, " (Postgres pool %d conns)", r.PoolMaxConns)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "  events     %10d  %10.0f events/s\n", r.Events, r.EventsPerSec())
	fmt.Fprintf(&b, "  requests   %10d  %10.0f requests/s\n", r.Requests, r.RequestsPerSec())
	fmt.Fprintf(&b, "  latency    p50 %s  p95 %s  p99 %s  max %s (per request)\n",
		fmtMs(r.Latency.P50), fmtMs(r.Latency.P95), fmtMs(r.Latency.P99), fmtMs(r.Latency.Max))
	fmt.Fprintf(&b, "  errors     %s\n", fmtErrors(r.Errors))
	if r.Duplicates > 0 {
		fmt.Fprintf(&b, "  duplicates %d (answered idempotent; the generator never repeats a key: a bug)\n", r.Duplicates)
	}
	if r.CPU.Machine > 0 {
		fmt.Fprintf(&b, "  cpu        runstream process %.2f cores, machine %.2f cores\n", r.CPU.Process, r.CPU.Machine)
	}
	if r.GeneratedInWindow > 0 {
		fmt.Fprintf(&b, "  note       %d requests were generated inside the window (the pre-generated pool ran out); the rate includes their generation\n", r.GeneratedInWindow)
	}
	if bl := r.Baseline; bl != nil {
		fmt.Fprintf(&b, "  pgbench    %10.0f events/s  (%s, -c %d -j %d -T %s, %.1f tps, %d failed",
			bl.EventsPerSec(), bl.Script, bl.Clients, bl.Threads, bl.Duration, bl.TPS, bl.Failed)
		if bl.CPU.Machine > 0 {
			fmt.Fprintf(&b, "; pgbench process %.2f cores, machine %.2f cores", bl.CPU.Process, bl.CPU.Machine)
		}
		b.WriteString(")\n")
		verdict := "MET"
		if !bl.Met() {
			verdict = "BELOW TARGET"
		}
		fmt.Fprintf(&b, "  ratio      %.1f%% of pgbench (target %.0f%%): %s\n", 100*bl.Ratio, 100*bl.Target, verdict)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func fmtMs(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64) + "ms"
}

func fmtErrors(errs map[string]int64) string {
	if len(errs) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(errs))
	for k := range errs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, errs[k])
	}
	return strings.Join(parts, ", ")
}

func perSec(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// cpuSample is a reading of the CPU counters in /proc, in clock ticks.
type cpuSample struct {
	at      time.Time
	process int64 // this process: utime + stime
	machine int64 // all CPUs: busy (total minus idle and iowait)
	ok      bool
}

// userHZ is the unit of /proc's CPU counters (USER_HZ), 100 on every Linux
// architecture runstream targets.
const userHZ = 100

// sampleCPU reads /proc/self/stat and /proc/stat; ok is false when either
// is unavailable.
func sampleCPU() cpuSample {
	s := cpuSample{at: time.Now()}
	self, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return s
	}
	// The command name (field 2) may hold spaces; fields after its closing
	// parenthesis start at field 3, so utime (14) and stime (15) are at 11, 12.
	rest := string(self)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return s
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return s
	}
	s.process = ut + st
	busy, ok := machineBusy()
	if !ok {
		return s
	}
	s.machine = busy
	s.ok = true
	return s
}

// machineBusy reads the busy ticks of all CPUs from /proc/stat.
func machineBusy() (int64, bool) {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(stat), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, false
	}
	var total int64
	// user nice system idle iowait irq softirq steal (guest is inside user).
	for i := 1; i < len(f) && i <= 8; i++ {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, false
		}
		total += v
	}
	idle, _ := strconv.ParseInt(f[4], 10, 64)
	iowait, _ := strconv.ParseInt(f[5], 10, 64)
	return total - idle - iowait, true
}

// cpuSince returns the CPU used from start to end in cores. process may be
// overridden (pgbench's CPU comes from its ProcessState).
func cpuSince(start, end cpuSample) CPU {
	wall := end.at.Sub(start.at).Seconds()
	if !start.ok || !end.ok || wall <= 0 {
		return CPU{}
	}
	cores := func(ticks int64) float64 { return round(float64(ticks)/userHZ/wall, 2) }
	return CPU{Process: cores(end.process - start.process), Machine: cores(end.machine - start.machine)}
}

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

// phaseReporter calls report every second with done() of total and the
// rate since the last call, until stop is called; stop waits for it and
// may be called more than once. A nil report reports nothing.
func phaseReporter(report func(PhaseProgress), phase string, total int64, done func() int64) (stop func()) {
	if report == nil {
		return func() {}
	}
	start := time.Now()
	last, lastAt := done(), start
	halt := everyInterval(time.Second, func() {
		now, n := time.Now(), done()
		report(PhaseProgress{Phase: phase, Elapsed: now.Sub(start), Done: n, Total: total,
			Rate: float64(n-last) / now.Sub(lastAt).Seconds()})
		last, lastAt = n, now
	})
	var once sync.Once
	return func() { once.Do(halt) }
}
