package appendbench

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/bench/harness"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/store/postgres"
)

// checkReport asserts what every clean run must satisfy.
func checkReport(t *testing.T, rep *Report, batch int) {
	t.Helper()
	if n := rep.ErrorCount(); n != 0 {
		t.Errorf("errors = %v, want none", rep.Errors)
	}
	if rep.Duplicates != 0 {
		t.Errorf("duplicates = %d, want 0 (the generator never repeats a key)", rep.Duplicates)
	}
	if rep.Events == 0 || rep.Requests == 0 {
		t.Fatalf("events = %d, requests = %d; want some of each", rep.Events, rep.Requests)
	}
	if rep.Events != rep.Requests*int64(batch) {
		t.Errorf("events = %d, want requests*batch = %d*%d", rep.Events, rep.Requests, batch)
	}
	if rep.Stored != rep.WarmupEvents+rep.Events {
		t.Errorf("rows in run_events = %d, want warmup + window events = %d + %d", rep.Stored, rep.WarmupEvents, rep.Events)
	}
	if rep.Window < time.Second {
		t.Errorf("window = %v, want at least the 1s duration", rep.Window)
	}
	if got, want := rep.EventsPerSec(), float64(rep.Events)/rep.Window.Seconds(); got != want {
		t.Errorf("events/s = %v, want events/window = %v", got, want)
	}
	l := rep.Latency
	if !(0 < l.P50 && l.P50 <= l.P95 && l.P95 <= l.P99 && l.P99 <= l.Max && l.Max <= rep.Window) {
		t.Errorf("latency %+v: want 0 < p50 <= p95 <= p99 <= max <= window %v", l, rep.Window)
	}
}

func TestBenchAppend_InProcess(t *testing.T) {
	pgURL := testenv.PostgresURL(t)
	tests := []struct {
		name  string
		batch int
		token string
	}{
		{"single events", 1, ""},
		{"batches", 10, ""},
		{"with authentication", 1, "bench-token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			rep, err := Run(ctx, Config{PostgresURL: pgURL, Clients: 2, Batch: tt.batch, Token: tt.token,
				Duration: time.Second, Warmup: 200 * time.Millisecond, Runs: 50})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			checkReport(t, rep, tt.batch)
			if rep.Target != "in-process" || rep.Clients != 2 || rep.Batch != tt.batch || rep.Runs != 50 {
				t.Errorf("report settings = %q, %d clients, batch %d, %d runs; want in-process, 2, %d, 50",
					rep.Target, rep.Clients, rep.Batch, rep.Runs, tt.batch)
			}
		})
	}
}

// TestBenchAppend_StoreSchema: a second run into the first's kept schema
// appends on top of what is there, counts only its own events, and says
// how much WAL they wrote; an unknown schema is refused by name.
func TestBenchAppend_StoreSchema(t *testing.T) {
	pgURL := testenv.PostgresURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := Config{PostgresURL: pgURL, Clients: 2, Duration: time.Second, Warmup: 200 * time.Millisecond, Runs: 50, KeepSchema: true}
	first, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Cleanup(func() {
		if pool, err := postgres.Connect(context.Background(), pgURL); err == nil {
			_, _ = pool.Exec(context.Background(), "DROP SCHEMA "+first.StoreSchema+" CASCADE")
			pool.Close()
		}
	})
	// The first run made its run ids as the clients do (UUID v7), the
	// second at random (v4). Clients pick among the 50 runs at random, so
	// a loaded machine may not reach every run in a second: the runs are
	// counted after each.
	pool, err := postgres.Connect(ctx, harness.WithSearchPath(pgURL, first.StoreSchema))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	versions := func() (v7, v4, other int) {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE substr(run_id, 15, 1) = '7'),
			count(*) FILTER (WHERE substr(run_id, 15, 1) = '4'), count(*) FILTER (WHERE substr(run_id, 15, 1) NOT IN ('4', '7'))
		FROM runs`).Scan(&v7, &v4, &other); err != nil {
			t.Fatal(err)
		}
		return v7, v4, other
	}
	v7, v4, other := versions()
	if first.RunIDs != RunIDsOrdered || v7 < 1 || v7 > 50 || v4 != 0 || other != 0 {
		t.Errorf("run ids %s: %d runs with UUID v7 ids, %d v4, %d other; want 1 to 50 v7 and no other", first.RunIDs, v7, v4, other)
	}
	cfg.KeepSchema, cfg.StoreSchema, cfg.RunIDs = false, first.StoreSchema, RunIDsRandom
	second, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run into schema %s: %v", first.StoreSchema, err)
	}
	checkReport(t, second, 1)
	if v7After, v4, other := versions(); second.RunIDs != RunIDsRandom || v7After != v7 || v4 < 1 || v4 > 50 || other != 0 {
		t.Errorf("run ids %s then %s: %d runs with UUID v7 ids (%d before), %d v4, %d other; want the v7 runs unchanged and 1 to 50 v4", first.RunIDs, second.RunIDs, v7After, v7, v4, other)
	}
	if second.StoreSchema != first.StoreSchema || second.StoredBefore != first.Stored {
		t.Errorf("second run: schema %s with %d events before, want %s with the first run's %d", second.StoreSchema, second.StoredBefore, first.StoreSchema, first.Stored)
	}
	if second.WALBytesPerEvent < 500 {
		t.Errorf("WAL per event = %v bytes, want at least an event's row and index entries (500)", second.WALBytesPerEvent)
	}
	cfg.StoreSchema = "bench_no_such_schema"
	if _, err := Run(ctx, cfg); err == nil || !strings.Contains(err.Error(), `schema "bench_no_such_schema" does not exist`) {
		t.Errorf("an unknown --store-schema: %v, want an error naming it", err)
	}
}

func TestBenchAppend_Baseline(t *testing.T) {
	pgURL := testenv.PostgresURL(t)
	if _, err := harness.FindPgbench(""); errors.Is(err, harness.ErrNoPgbench) {
		testenv.Missing(t, "pgbench (Debian package postgresql-contrib)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{PostgresURL: pgURL, Clients: 2, Duration: time.Second,
		Warmup: 200 * time.Millisecond, Runs: 50, Baseline: true})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	checkReport(t, rep, 1)
	bl := rep.Baseline
	if bl == nil {
		t.Fatal("no baseline in the report")
	}
	if bl.TPS <= 0 || bl.Failed != 0 || bl.EventsPerTx != 1 || bl.Clients != 2 {
		t.Errorf("baseline = %+v; want tps > 0, 0 failed, 1 event per tx, 2 clients", bl)
	}
	if want := harness.Round(rep.EventsPerSec()/bl.EventsPerSec(), 4); bl.Ratio != want || bl.Target != 0.60 {
		t.Errorf("ratio = %v target %v; want %v, 0.60", bl.Ratio, bl.Target, want)
	}
}

func TestBenchAppend_UnreachableAPI(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Port 1 on loopback: nothing listens there.
	_, err := Run(ctx, Config{URL: "http://127.0.0.1:1", Duration: time.Second})
	if err == nil {
		t.Fatal("Run against a closed port: got no error")
	}
}

// TestBenchAppend_GoClient: --client go measures raw and the Go client in
// alternated rounds against the same API, and the report's top lines are
// raw's median round.
func TestBenchAppend_GoClient(t *testing.T) {
	pgURL := testenv.PostgresURL(t)
	for _, batch := range []int{1, 5} {
		t.Run("batch "+strconv.Itoa(batch), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			rep, err := Run(ctx, Config{PostgresURL: pgURL, Clients: 2, Batch: batch, Duration: 500 * time.Millisecond,
				Warmup: 100 * time.Millisecond, Runs: 50, Client: ClientGo, Rounds: 2})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			c := rep.Comparison
			if c == nil || c.Rounds != 2 || len(c.Arms) != 2 || c.Arms[0].Client != ClientRaw || c.Arms[1].Client != ClientGo {
				t.Fatalf("comparison = %+v; want raw and go, 2 rounds", c)
			}
			for _, a := range c.Arms {
				if len(a.RoundsEventsPerSec) != 2 || a.MedianEventsPerSec <= 0 || len(a.Errors) != 0 {
					t.Errorf("arm %s = %+v; want 2 rounds, a rate, no errors", a.Client, a)
				}
			}
			// The report's medians are rounded, its ratio is of the exact
			// medians: equal within a rounding's difference.
			if want := c.Arms[1].MedianEventsPerSec / c.Arms[0].MedianEventsPerSec; math.Abs(c.Arms[1].Ratio-want) > 0.01*want || c.Arms[1].Target != 0.90 {
				t.Errorf("go's ratio %v target %v; want about %v, 0.90", c.Arms[1].Ratio, c.Arms[1].Target, want)
			}
			if rep.Client != ClientRaw || rep.Duplicates != 0 || rep.ErrorCount() != 0 {
				t.Errorf("top report: client %q, %d duplicates, errors %v; want raw's clean round", rep.Client, rep.Duplicates, rep.Errors)
			}
			var text strings.Builder
			if err := rep.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text.String(), "of raw (target 90%)") {
				t.Errorf("the text report does not give the ratio:\n%s", text.String())
			}
		})
	}
}
