package relaybench

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/bench/harness"
	"github.com/runstream/runstream/internal/testenv"
)

// checkOrdered asserts 0 < p50 <= p95 <= p99 (<= max when withMax).
func checkOrdered(t *testing.T, name string, l harness.Latency, withMax bool) {
	t.Helper()
	ok := 0 < l.P50 && l.P50 <= l.P95 && l.P95 <= l.P99
	if withMax {
		ok = ok && l.P99 <= l.Max
	}
	if !ok {
		t.Errorf("%s = %+v: want 0 < p50 <= p95 <= p99 <= max", name, l)
	}
}

func TestBenchRelay_BothPhases(t *testing.T) {
	pgURL := testenv.PostgresURL(t)
	// Seconds on a quiet machine; the budget is for one at load 20.
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	var phases []string
	rep, err := Run(ctx, Config{PostgresURL: pgURL, Events: 20000, Runs: 300,
		Rate: 200, Duration: time.Second, Appenders: 4, Relays: 2, Settle: 1500 * time.Millisecond,
		fillChunk: 3000, // 7 chunks, filled in parallel
		Progress:  func(p harness.PhaseProgress) { phases = append(phases, p.Phase) }})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}

	d := rep.Drain
	if d == nil {
		t.Fatal("no drain in the report")
	}
	if d.Events != 20000 || d.Runs != 300 {
		t.Errorf("drain of %d events over %d runs, want 20000 over 300", d.Events, d.Runs)
	}
	if d.Missing != 0 || d.OutOfOrder != 0 || d.Foreign != 0 || d.DeadLetters != 0 {
		t.Errorf("drain: %d missing, %d out of order, %d foreign, %d dead letters; want none",
			d.Missing, d.OutOfOrder, d.Foreign, d.DeadLetters)
	}
	if d.Records != d.Events+d.Duplicates {
		t.Errorf("records on the topic = %d, want events + duplicates = %d + %d", d.Records, d.Events, d.Duplicates)
	}
	if d.Window <= 0 || d.EventsPerSec() != float64(d.Events)/d.Window.Seconds() {
		t.Errorf("drain window %v, %v events/s: want > 0 and events/window", d.Window, d.EventsPerSec())
	}
	if d.PayloadBytes < 250 || d.PayloadBytes > 350 {
		t.Errorf("payload = %v bytes, want about 300", d.PayloadBytes)
	}
	// gzip by default: the produce hook saw every record, fewer bytes out
	// than in.
	if rep.Compression != "gzip" || d.ProducedRecords < d.Events || d.WireBytes <= 0 || d.WireBytes >= d.RecordBytes {
		t.Errorf("compression %q: %d records produced, %d bytes after and %d before compression; want gzip, >= %d records, fewer bytes after",
			rep.Compression, d.ProducedRecords, d.WireBytes, d.RecordBytes, d.Events)
	}
	if rep.Relays != 2 || !strings.HasPrefix(rep.Schema, "bench_") {
		t.Errorf("report says %d relays, schema %q; want 2, bench_<random>", rep.Relays, rep.Schema)
	}
	if d.Rounds < 1 || d.Waves < d.Rounds || d.PublishTime <= 0 || d.PublishTime > 2*d.Window {
		t.Errorf("relay: %d rounds, %d waves, %v publishing in a %v window; want consistent", d.Rounds, d.Waves, d.PublishTime, d.Window)
	}

	l := rep.Latency
	if l == nil {
		t.Fatal("no latency in the report")
	}
	if st := l.Settle; st == nil || st.Duration != 1500*time.Millisecond || !slices.Contains(phases, "settle") {
		t.Errorf("settle = %+v (phases %v); want 1.5s between the drain and the latency phase, with progress", st, phases)
	}
	if l.Offered != 200 || l.Appended != l.Offered || l.Errors != 0 {
		t.Errorf("latency: %d offered, %d appended, %d errors; want 200, 200, 0", l.Offered, l.Appended, l.Errors)
	}
	if l.Received != l.Appended || l.Foreign != 0 || l.BadValues != 0 {
		t.Errorf("latency: %d received of %d appended, %d foreign, %d bad values; want all, 0, 0",
			l.Received, l.Appended, l.Foreign, l.BadValues)
	}
	if l.Window < 900*time.Millisecond {
		t.Errorf("latency window = %v, want about the 1s duration", l.Window)
	}
	checkOrdered(t, "commit-to-consume", l.CommitToConsume, true)
	checkOrdered(t, "due-to-appended", l.DueToAppended, true)
	checkOrdered(t, "relay commit-to-ack", l.RelayCommitToAck, false)
	// Per event the record's timestamp comes before its consumption, so
	// every percentile does too.
	if c, p := l.CommitToConsume, l.CommitToProduce; p.P50 > c.P50 || p.P99 > c.P99 || p.Max > c.Max {
		t.Errorf("commit-to-record-timestamp %+v exceeds commit-to-consume %+v", p, c)
	}
	if l.RelayObservations < l.Appended {
		t.Errorf("relay histogram observed %d acks, want >= %d appended", l.RelayObservations, l.Appended)
	}
	if l.TimestampType != "CreateTime" && l.TimestampType != "LogAppendTime" {
		t.Errorf("timestamp type = %q", l.TimestampType)
	}

	// The relay's histogram has a bucket bound at the target, so the share
	// of events within it is exact.
	if !l.RelayWithinExact || l.RelayWithinTarget < 0 || l.RelayWithinTarget > 1 || l.RelayObservations < int64(l.Received) {
		t.Errorf("relay share within the target = %v (exact %v) over %d observations for %d records",
			l.RelayWithinTarget, l.RelayWithinExact, l.RelayObservations, l.Received)
	}

	// The text and JSON reports carry the numbers and verdicts.
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"drain: 20000 events over 300 runs", "target >= 50000", "commit-to-ack p99 < 20.00ms at 2000 events/s", "relay within 20.00ms", "settle     1.5s idle after the drain"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Drain struct {
			EventsPerSec float64 `json:"eventsPerSec"`
			Met          *bool   `json:"met"`
		} `json:"drain"`
		Latency struct {
			CommitToConsume struct {
				P99 *float64 `json:"p99"`
			} `json:"commitToConsumeMs"`
			Met    *bool `json:"met"`
			Settle struct {
				Seconds float64 `json:"seconds"`
			} `json:"settle"`
		} `json:"latency"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("decoding the JSON report: %v\n%s", err, b)
	}
	if got.Drain.EventsPerSec <= 0 || got.Drain.Met == nil || got.Latency.Met == nil || got.Latency.CommitToConsume.P99 == nil ||
		got.Latency.Settle.Seconds != 1.5 {
		t.Errorf("JSON report lacks the rates or verdicts: %s", b)
	}
	for _, p := range phases {
		if p != "fill" && p != "drain" && p != "verify" && p != "settle" && p != "latency" {
			t.Errorf("progress reported phase %q", p)
		}
	}
}

func TestBenchRelay_LatencyOnly(t *testing.T) {
	pgURL := testenv.PostgresURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Events is the history filled into run_events (no outbox rows).
	rep, err := Run(ctx, Config{PostgresURL: pgURL, DisableDrain: true, Events: 2000, Runs: 20,
		Rate: 100, Duration: 500 * time.Millisecond, Appenders: 2})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if rep.Drain != nil {
		t.Errorf("drain ran with DisableDrain: %+v", rep.Drain)
	}
	if rep.Latency != nil && rep.Latency.Settle != nil {
		t.Errorf("settled without a drain: %+v", rep.Latency.Settle)
	}
	if l := rep.Latency; l == nil || l.Offered != 50 || l.Received != l.Appended || l.Appended != 50 {
		t.Errorf("latency = %+v; want 50 offered, appended and received", l)
	}
}

func TestBenchRelay_Validate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string // substring of the error; empty means valid
	}{
		{"defaults", Config{PostgresURL: "postgres://x"}, ""},
		{"no database", Config{}, "--postgres-url"},
		{"no phase", Config{PostgresURL: "postgres://x", DisableDrain: true, DisableLatency: true}, "nothing to measure"},
		{"negative rate", Config{PostgresURL: "postgres://x", Rate: -1}, "--rate"},
		{"empty broker", Config{PostgresURL: "postgres://x", Brokers: []string{" "}}, "--brokers"},
		{"unknown codec", Config{PostgresURL: "postgres://x", Compression: "brotli"}, "--compression: unknown compression"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate() = %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
}

func TestBenchRelay_HistogramQuantile(t *testing.T) {
	// 100 observations: 50 in (0, 1ms], 40 in (1ms, 2ms], 10 in (2ms, 4ms].
	h := histogram{upper: []float64{0.001, 0.002, 0.004}, cum: []uint64{50, 90, 100}, count: 100}
	tests := []struct {
		q    float64
		want time.Duration
	}{
		{0.5, time.Millisecond},
		{0.7, 1500 * time.Microsecond},
		{0.95, 3 * time.Millisecond},
		{1, 4 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := h.quantile(tt.q).Round(time.Microsecond); got != tt.want {
			t.Errorf("quantile(%v) = %v, want %v", tt.q, got, tt.want)
		}
	}
	before := histogram{upper: h.upper, cum: []uint64{50, 50, 50}, count: 50}
	if got := h.since(before).quantile(0.5).Round(time.Microsecond); got != 1625*time.Microsecond {
		t.Errorf("since(before).quantile(0.5) = %v, want 1.625ms (rank 25 of the 40 new in (1ms, 2ms])", got)
	}
	if got := (histogram{}).quantile(0.99); got != 0 {
		t.Errorf("empty quantile = %v, want 0", got)
	}
}
