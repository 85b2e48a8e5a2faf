package etlbench

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
	"github.com/runstream/runstream/store"
)

func TestBenchETL_ConsistentWithBaseline(t *testing.T) {
	pgURL := testenv.PostgresURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	phases := map[string]bool{}
	rep, err := Run(ctx, Config{PostgresURL: pgURL, Partitions: 4, Events: 6000, ActiveRuns: 200, Batch: 2000,
		InsertBatch: 500, Rounds: 3, Progress: func(p harness.PhaseProgress) { phases[p.Phase] = true }})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !rep.Consistent() {
		t.Fatalf("not consistent: %+v", rep)
	}
	if rep.Committed != 6000 || rep.Applied+rep.UnknownType != 6000 || rep.Verified != rep.Runs || rep.Runs < 200 {
		t.Errorf("%d committed, %d applied + %d unknown, %d of %d runs verified; want 6000, 6000, all", rep.Committed,
			rep.Applied, rep.UnknownType, rep.Verified, rep.Runs)
	}
	if rep.RunRows > int64(rep.Runs) || rep.RunRows < int64(rep.Runs)*9/10 || rep.AttemptRows < rep.RunRows {
		t.Errorf("%d runs rows and %d step_attempts rows for %d runs", rep.RunRows, rep.AttemptRows, rep.Runs)
	}
	if rep.Flushes < 1 || rep.FlushTime <= 0 || rep.Window <= 0 {
		t.Errorf("%d flushes taking %v in a %v window", rep.Flushes, rep.FlushTime, rep.Window)
	}
	bl := rep.Baseline
	if bl == nil || bl.Rows != rep.RunRows+rep.AttemptRows || bl.BatchRows != 500 || bl.Conns < 1 || bl.Window <= 0 || bl.Events != 6000 {
		t.Fatalf("baseline = %+v; want the sink's %d rows in 500-row INSERTs", bl, rep.RunRows+rep.AttemptRows)
	}
	if want := rep.EventsPerSec() / bl.EventsPerSec(); rep.Ratio != want || rep.Target != TargetRatio {
		t.Errorf("ratio = %v (target %v), want %v (target %v)", rep.Ratio, rep.Target, want, TargetRatio)
	}
	// Three rounds: the report is the median one's, and each is summed up.
	if len(rep.Rounds) != 3 {
		t.Fatalf("%d rounds summed up, want 3", len(rep.Rounds))
	}
	var ratios []float64
	for i, r := range rep.Rounds {
		if !r.Consistent || r.EventsPerSec <= 0 || r.BaselineEventsPerSec <= 0 || r.Ratio <= 0 {
			t.Errorf("harness.Round %d = %+v", i+1, r)
		}
		ratios = append(ratios, r.Ratio)
	}
	slices.Sort(ratios)
	if rep.Ratio != ratios[1] {
		t.Errorf("report's ratio %v, want the median of %v", rep.Ratio, ratios)
	}
	if rep.RecordBytes < 300 || rep.RecordBytes > 1500 {
		t.Errorf("record value = %v bytes, want a realistic 300..1500", rep.RecordBytes)
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"records/s", "baseline", "ratio", "agree with reduce", "rounds     3"} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("text report lacks %q:\n%s", s, text.String())
		}
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"eventsPerSec", "windowSeconds", "ratio", "consistent", "met", "baseline", "rounds"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON report lacks %q: %s", k, b)
		}
	}
}

func TestETLGenerate_RunsAreContiguousAndInterleaved(t *testing.T) {
	runs, order := Generate(42, 3000, 50)
	if len(order) != 3000 {
		t.Fatalf("%d records, want 3000", len(order))
	}
	n := 0
	for _, r := range runs {
		for i, rec := range r {
			if rec.RunSeq != int64(i+1) || rec.RunID != r[0].RunID {
				t.Fatalf("run %s: record %d has runSeq %d", r[0].RunID, i, rec.RunSeq)
			}
		}
		n += len(r)
	}
	if n != len(order) || len(runs) <= 50 {
		t.Fatalf("%d records in %d runs, order holds %d; want every record in a run, more runs than in flight", n, len(runs), len(order))
	}
	// In flight at once: the first 50 records belong to many runs.
	seen := map[string]bool{}
	for _, rec := range order[:50] {
		seen[rec.RunID] = true
	}
	if len(seen) < 20 {
		t.Errorf("the first 50 records belong to %d runs; want the runs interleaved", len(seen))
	}
	last := ""
	for _, rec := range order {
		if rec.PersistedAt <= last {
			t.Fatalf("persistedAt %s after %s: not in topic order", rec.PersistedAt, last)
		}
		last = rec.PersistedAt
		if !store.IsKnownEvent(rec.EventType) && rec.EventType != "RunCostReported" {
			t.Fatalf("unexpected event type %q", rec.EventType)
		}
	}
}

// TestETLVerify_FindsWrongAndMissingRows: the bench's check is what makes
// its numbers worth anything, so it must catch a row that disagrees with
// the reducer and a run without a row.
func TestETLVerify_FindsWrongAndMissingRows(t *testing.T) {
	pool, _ := testenv.Postgres(t, 2)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE runs (run_id text PRIMARY KEY, status text, steps int, failed_steps int, attempts_total int);
		CREATE TABLE step_attempts (run_id text)`); err != nil {
		t.Fatal(err)
	}
	runs, _ := Generate(3, 300, 20)
	want := expect(runs)
	if len(want) < 10 {
		t.Fatalf("only %d runs expected from %d generated", len(want), len(runs))
	}
	i := 0
	var wrong, missing string
	for id, w := range want {
		switch i++; i {
		case 1:
			missing = id
			continue
		case 2:
			wrong = id
			w.failed++
		}
		if _, err := pool.Exec(ctx, `INSERT INTO runs VALUES ($1, $2, $3, $4, $5)`, id, w.status, w.steps, w.failed, w.attempts); err != nil {
			t.Fatal(err)
		}
	}
	rep := &Report{}
	if err := verify(ctx, pool, want, rep); err != nil {
		t.Fatal(err)
	}
	if rep.Verified != len(want)-2 || rep.Wrong != 1 || rep.Missing != 1 || rep.RunRows != int64(len(want)-1) {
		t.Fatalf("%d verified, %d wrong, %d missing, %d rows; want %d, 1, 1, %d (wrong %s, missing %s)",
			rep.Verified, rep.Wrong, rep.Missing, rep.RunRows, len(want)-2, len(want)-1, wrong, missing)
	}
	if !strings.Contains(rep.FirstProblem, wrong) && !strings.Contains(rep.FirstProblem, missing) {
		t.Fatalf("first problem %q names neither %s nor %s", rep.FirstProblem, wrong, missing)
	}
}
