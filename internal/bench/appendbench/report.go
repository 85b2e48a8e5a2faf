package appendbench

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/runstream/runstream/internal/bench/harness"
)

// Report is the outcome of one [Run]. Its JSON form is the
// machine-readable report (`runstream bench append --json`).
type Report struct {
	// Target is "in-process" or the URL of the API measured.
	Target string `json:"target"`
	// Clients, Batch and Runs are the effective settings.
	Clients int `json:"clients"`
	Batch   int `json:"batch"`
	Runs    int `json:"runs"`
	// RunIDs is how the run ids were made (Config.RunIDs).
	RunIDs string `json:"runIds"`
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
	Latency harness.Latency `json:"latencyMs"`
	// WarmupEvents were appended during the warmup, before the window.
	WarmupEvents int64 `json:"warmupEvents"`
	// Stored is the rows in run_events at the end, with the in-process API
	// only: WarmupEvents + Events when every request got its answer.
	Stored int64 `json:"storedEvents,omitempty"`
	// StoredBefore is the events the store held before the bench (0 in a
	// fresh schema; --store-schema's otherwise), StoreSchema the schema.
	StoredBefore int64  `json:"storedBefore,omitempty"`
	StoreSchema  string `json:"storeSchema,omitempty"`
	// WALBytesPerEvent is the server's WAL written from before the warmup
	// to the end, per event stored, with the in-process API.
	WALBytesPerEvent float64 `json:"walBytesPerEvent,omitempty"`
	// GeneratedInWindow counts requests whose events had to be generated
	// inside the window because the pre-generated pool ran out; their
	// generation cost is then part of the measurement.
	GeneratedInWindow int64 `json:"generatedInWindow"`
	// CPU is the CPU used during the window.
	CPU harness.CPU `json:"cpu"`
	// Baseline is set when a pgbench baseline ran.
	Baseline *Baseline `json:"baseline,omitempty"`
	// Client is the producer client of the round this report describes,
	// with a comparison (empty otherwise: raw).
	Client string `json:"client,omitempty"`
	// Comparison is set when producer clients were compared (--client
	// other than raw); the report's other fields are then raw's median
	// round.
	Comparison *Comparison `json:"comparison,omitempty"`
}

// Comparison is producer clients measured against the same API with the
// same workload, in alternated rounds, the median of three judged
// (bench/README.md, "What each one measures, and its target").
type Comparison struct {
	// Rounds is the rounds of each arm.
	Rounds int `json:"rounds"`
	// Arms are the clients, raw (the baseline) first.
	Arms []Arm `json:"arms"`
	// LoadAverage is /proc/loadavg's 1, 5 and 15 minute averages at the end.
	LoadAverage string `json:"loadAverage,omitempty"`
}

// Arm is one producer client's rounds.
type Arm struct {
	// Client is "raw" (pre-encoded bodies over net/http), "go" (package
	// client) or "ts" (the TypeScript client under Node.js).
	Client string `json:"client"`
	// RoundsEventsPerSec is each round's rate, in the order run (the arms
	// take turns going first in a round).
	RoundsEventsPerSec []float64 `json:"roundsEventsPerSec"`
	// MedianEventsPerSec is the median round's rate.
	MedianEventsPerSec float64 `json:"medianEventsPerSec"`
	// Latency and CPU are the median round's.
	Latency harness.Latency `json:"latencyMs"`
	CPU     harness.CPU     `json:"cpu"`
	// Errors sums the rounds' failures (for a client: the API's codes,
	// "spooled" for a fail-open event, "go client" for its own errors).
	Errors map[string]int64 `json:"errors"`
	// Ratio is the median rate over raw's median rate (not for raw).
	Ratio float64 `json:"ratioToRaw,omitempty"`
	// Target is the ratio asked for (not for raw).
	Target float64 `json:"target,omitempty"`
}

// Met reports whether the arm reaches its target (raw always does).
func (a Arm) Met() bool { return a.Target == 0 || a.Ratio >= a.Target }

// EventsPerSec is the appended events per second of the window.
func (r *Report) EventsPerSec() float64 { return harness.PerSec(r.Events, r.Window) }

// RequestsPerSec is the requests per second of the window.
func (r *Report) RequestsPerSec() float64 { return harness.PerSec(r.Requests, r.Window) }

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
	}{(*plain)(r), harness.Round(r.Window.Seconds(), 3), harness.Round(r.EventsPerSec(), 1), harness.Round(r.RequestsPerSec(), 1)})
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
	CPU harness.CPU `json:"cpu"`
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
	}{(*plain)(b), b.Duration.Seconds(), harness.Round(b.EventsPerSec(), 1), b.Met()})
}

// TargetRatio is the fraction of pgbench's rate the issue asks for: 60% for
// single events, 70% for batches.
func TargetRatio(batch int) float64 {
	if batch <= 1 {
		return 0.60
	}
	return 0.70
}

// WriteText writes the human-readable report.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	mode := "POST /v1/events"
	if r.Batch > 1 {
		mode = fmt.Sprintf("POST /v1/events:batch (%d events per request)", r.Batch)
	}
	fmt.Fprintf(&b, "runstream bench append: %s, %d clients, %d runs (%s ids), %s window, against %s",
		mode, r.Clients, r.Runs, r.RunIDs, r.Window.Round(time.Millisecond), r.Target)
	if r.PoolMaxConns > 0 {
		fmt.Fprintf(&b, " (Postgres pool %d conns)", r.PoolMaxConns)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "  events     %10d  %10.0f events/s\n", r.Events, r.EventsPerSec())
	fmt.Fprintf(&b, "  requests   %10d  %10.0f requests/s\n", r.Requests, r.RequestsPerSec())
	fmt.Fprintf(&b, "  latency    p50 %s  p95 %s  p99 %s  max %s (per request)\n",
		harness.FormatMs(r.Latency.P50), harness.FormatMs(r.Latency.P95), harness.FormatMs(r.Latency.P99), harness.FormatMs(r.Latency.Max))
	fmt.Fprintf(&b, "  errors     %s\n", fmtErrors(r.Errors))
	if r.StoreSchema != "" {
		fmt.Fprintf(&b, "  store      schema %s: %d events before, %d stored (warmup included), %.0f bytes of WAL per event (the server's)\n",
			r.StoreSchema, r.StoredBefore, r.Stored, r.WALBytesPerEvent)
	}
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
		fmt.Fprintf(&b, "  ratio      %.1f%% of pgbench (target %.0f%%): %s\n", 100*bl.Ratio, 100*bl.Target, harness.Verdict(bl.Met()))
	}
	if c := r.Comparison; c != nil {
		fmt.Fprintf(&b, "  clients    %d alternated rounds each, same API and workload (the lines above: raw's median round); load average %s\n", c.Rounds, c.LoadAverage)
		for _, a := range c.Arms {
			rounds := make([]string, len(a.RoundsEventsPerSec))
			for i, v := range a.RoundsEventsPerSec {
				rounds[i] = fmt.Sprintf("%.0f", v)
			}
			fmt.Fprintf(&b, "    %-4s %8.0f events/s median (rounds %s), p50 %s p99 %s, errors %s",
				a.Client, a.MedianEventsPerSec, strings.Join(rounds, ", "), harness.FormatMs(a.Latency.P50), harness.FormatMs(a.Latency.P99), fmtErrors(a.Errors))
			if a.Target > 0 {
				fmt.Fprintf(&b, "; %.1f%% of raw (target %.0f%%): %s", 100*a.Ratio, 100*a.Target, harness.Verdict(a.Met()))
			} else if a.Ratio > 0 {
				fmt.Fprintf(&b, "; %.1f%% of raw (reported, no target; Node.js in its own process)", 100*a.Ratio)
			}
			b.WriteString("\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
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
