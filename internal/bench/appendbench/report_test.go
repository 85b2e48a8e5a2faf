package appendbench

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	benchsql "github.com/runstream/runstream/bench"
	"github.com/runstream/runstream/internal/bench/harness"
)

func TestBenchRatio(t *testing.T) {
	tests := []struct {
		name         string
		ours, theirs float64
		batch        int
		want, target float64
		wantMet      bool
		wantVerdict  string
	}{
		{"single above target", 2000, 3000, 1, 2.0 / 3, 0.60, true, "MET"},
		{"single exactly at target", 600, 1000, 1, 0.60, 0.60, true, "MET"},
		{"single below target", 500, 1000, 1, 0.50, 0.60, false, "BELOW TARGET"},
		{"batch below target", 6900, 10000, 100, 0.69, 0.70, false, "BELOW TARGET"},
		{"batch faster than pgbench", 16000, 3200, 100, 5, 0.70, true, "MET"},
		{"no baseline rate", 1000, 0, 1, 0, 0.60, false, "BELOW TARGET"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := harness.Ratio(tt.ours, tt.theirs)
			if math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("Ratio(%v, %v) = %v, want %v", tt.ours, tt.theirs, got, tt.want)
			}
			if tgt := TargetRatio(tt.batch); tgt != tt.target {
				t.Errorf("TargetRatio(%d) = %v, want %v", tt.batch, tgt, tt.target)
			}
			bl := &Baseline{Ratio: got, Target: TargetRatio(tt.batch)}
			if bl.Met() != tt.wantMet {
				t.Errorf("Met() = %v, want %v", bl.Met(), tt.wantMet)
			}
			rep := &Report{Batch: tt.batch, Window: time.Second, Baseline: bl}
			var b bytes.Buffer
			if err := rep.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), ": "+tt.wantVerdict+"\n") {
				t.Errorf("text report lacks %q:\n%s", tt.wantVerdict, b.String())
			}
		})
	}
}

func TestBenchReport_RatesAndJSON(t *testing.T) {
	rep := &Report{Target: "in-process", Clients: 16, Batch: 100, Runs: 10000,
		Window: 2 * time.Second, Requests: 30, Events: 3000,
		Errors:  map[string]int64{},
		Latency: harness.Latency{P50: 1500 * time.Microsecond, P95: 3 * time.Millisecond, P99: 4 * time.Millisecond, Max: 9 * time.Millisecond},
		Baseline: &Baseline{Script: "bench/append_batch100.sql", Clients: 16, Threads: 2,
			Duration: 2 * time.Second, TPS: 10, EventsPerTx: 100, Ratio: 1.5, Target: 0.7}}
	if got := rep.EventsPerSec(); got != 1500 {
		t.Errorf("EventsPerSec = %v, want 1500", got)
	}
	if got := rep.RequestsPerSec(); got != 15 {
		t.Errorf("RequestsPerSec = %v, want 15", got)
	}
	if got := rep.Baseline.EventsPerSec(); got != 1000 {
		t.Errorf("Baseline.EventsPerSec = %v, want 1000", got)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"eventsPerSec": 1500.0, "requestsPerSec": 15.0, "windowSeconds": 2.0,
		"events": 3000.0, "requests": 30.0, "batch": 100.0,
		"latencyMs": map[string]any{"p50": 1.5, "p95": 3.0, "p99": 4.0, "max": 9.0},
	}
	for k, v := range want {
		if diff := cmp.Diff(v, got[k]); diff != "" {
			t.Errorf("JSON %q (-want +got):\n%s", k, diff)
		}
	}
	bl, _ := got["baseline"].(map[string]any)
	for k, v := range map[string]any{"eventsPerSec": 1000.0, "ratio": 1.5, "target": 0.7, "met": true, "durationSeconds": 2.0} {
		if diff := cmp.Diff(v, bl[k]); diff != "" {
			t.Errorf("JSON baseline %q (-want +got):\n%s", k, diff)
		}
	}
}

func TestBenchConfig_Validate(t *testing.T) {
	pg := "postgres://u@h/db"
	tests := []struct {
		name    string
		cfg     Config
		wantErr string // "" means valid
	}{
		{"defaults in-process", Config{PostgresURL: pg}, ""},
		{"external API", Config{URL: "http://127.0.0.1:8080"}, ""},
		{"baseline batch 100", Config{PostgresURL: pg, Batch: 100, Baseline: true}, ""},
		{"no database", Config{}, "--postgres-url"},
		{"baseline needs database", Config{URL: "http://h:1", Baseline: true}, "pgbench baseline"},
		{"baseline batch 10", Config{PostgresURL: pg, Batch: 10, Baseline: true}, "--batch 1 or --batch 100"},
		{"batch too big", Config{PostgresURL: pg, Batch: 1001}, "--batch"},
		{"negative clients", Config{PostgresURL: pg, Clients: -1}, "--clients"},
		{"bad url", Config{URL: "127.0.0.1:8080"}, "--url"},
		{"random run ids", Config{PostgresURL: pg, RunIDs: RunIDsRandom}, ""},
		{"unknown run ids", Config{PostgresURL: pg, RunIDs: "v5"}, "--run-ids"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Validate() = %v, want an error mentioning %q", err, tt.wantErr)
			}
		})
	}
}

// TestBenchScripts checks that the batch script is the single script's
// three statements for 100 events, in one transaction.
func TestBenchScripts(t *testing.T) {
	single, err := benchsql.Script(benchsql.AppendSingle)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := benchsql.Script(benchsql.AppendBatch100)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		text []byte
		n    int
	}{{single, 1}, {batch, 100}} {
		s := string(tc.text)
		for _, stmt := range []string{"INSERT INTO runs", `\gset`, "INSERT INTO run_events", "INSERT INTO outbox"} {
			if got := strings.Count(s, stmt); got != tc.n {
				t.Errorf("%d-event script: %q appears %d times, want %d", tc.n, stmt, got, tc.n)
			}
		}
		if strings.Count(s, "BEGIN;") != 1 || strings.Count(s, "COMMIT;") != 1 {
			t.Errorf("%d-event script: want exactly one BEGIN; and one COMMIT;", tc.n)
		}
	}
}
