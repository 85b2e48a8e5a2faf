package duckdb_test

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/runstream/runstream/internal/archive"
	"github.com/runstream/runstream/internal/lake"
	"github.com/runstream/runstream/internal/lake/laketest"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/testenv/testkafka"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/reduce"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// TestLake_DuckDB: the lake sink writes a lake from the topic (runs of
// three tenants, with retries and failures, some records twice); then
// DuckDB runs docs/LAKE.md's queries on its files (lake.mjs) and each
// answer must equal the same computation over the store: Postgres SQL on
// run_events for events and failures, the reducer's projection of each
// run's stored events for durations, and no event twice. It runs under
// scripts/test-duckdb.sh, which installs DuckDB's Node API and sets
// RUNSTREAM_TEST_DUCKDB_LAKE=1.
func TestLake_DuckDB(t *testing.T) {
	if os.Getenv("RUNSTREAM_TEST_DUCKDB_LAKE") == "" {
		t.Skip("run by scripts/test-duckdb.sh (DuckDB's Node API; RUNSTREAM_TEST_DUCKDB_LAKE=1)")
	}
	ctx := context.Background()
	pool, _ := testenv.Postgres(t, 10)
	if _, err := postgres.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	st, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	const topic = "lake-duckdb"
	k := testkafka.Start(t, kfake.SeedTopics(3, topic))
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 43))
	var runs [][]store.RunEventRecord
	var topicRecs []store.RunEventRecord
	for i := range 45 {
		id := workload.NewIdentity([]string{"acme", "beta corp", "gamma"}[i%3])
		id.PlanID = []string{"plan_daily_etl", "plan_hourly_sync"}[i%2]
		evs := workload.RunFor(rng, id, workload.Options{StepFailureRate: 0.3, MaxAttempts: 2})
		for _, r := range st.AppendBatch(ctx, evs) {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
		recs, err := st.FetchEvents(ctx, evs[0].RunID, store.FetchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, recs)
		topicRecs = append(topicRecs, recs...)
		if rng.IntN(3) == 0 {
			topicRecs = append(topicRecs, recs[rng.IntN(len(recs))]) // published twice, later
		}
	}
	k.Publish(t, topic, topicRecs)

	url := testenv.PostgresURL(t)
	schema := "lake_duckdb_" + testenv.RandomID(6)
	state, err := lake.Connect(ctx, url, schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		state.Close()
		if admin, err := pgxpool.New(context.Background(), url); err == nil {
			_, _ = admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
			admin.Close()
		}
	})
	dir := t.TempDir()
	storage, err := archive.NewDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lake.New(lake.Config{Brokers: k.Brokers, Topic: topic, Group: "lake-duckdb", Fetcher: st,
		RotateRecords: 100, FlushIdle: 300 * time.Millisecond, DisableCurrent: true, SpoolDir: t.TempDir()}, storage, state)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- l.Run(runCtx) }()
	testenv.WaitUntil(t, 60*time.Second, func() error { return laketest.ExactlyOnce(ctx, storage, runs) })
	if ok, err := l.PublishCurrent(ctx); !ok || err != nil {
		t.Fatalf("PublishCurrent = %v, %v", ok, err)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	want := map[string]any{
		"exactly-once":                   exactlyOnceAnswer(t, pool),
		"events-per-tenant-per-day":      perTenantDay(t, pool),
		"failure-rate-by-step-and-error": failureRates(t, pool),
		"run-durations-by-plan":          durations(runs),
	}
	body, err := json.MarshalIndent(want, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "expected-lake.json"), body, 0o644); err != nil {
		t.Fatal(err)
	}
	root := testenv.ModuleRoot(t)
	cmd := exec.Command("node", "lake.mjs", dir, filepath.Join(root, "docs", "LAKE.md"))
	cmd.Dir = filepath.Join(root, "internal", "interop", "duckdb")
	out, err := cmd.CombinedOutput()
	t.Logf("lake.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("DuckDB's answers differ from the store's: %v", err)
	}
}

// Each answer is shaped as DuckDB's Node API returns rows as JSON:
// BIGINT as decimal text, DOUBLE as a number, DATE as YYYY-MM-DD.

func exactlyOnceAnswer(t *testing.T, pool *pgxpool.Pool) []map[string]any {
	var n int64
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM run_events`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return []map[string]any{{"events": itoa(n), "distinct_events": itoa(n), "duplicated": "0"}}
}

func perTenantDay(t *testing.T, pool *pgxpool.Pool) []map[string]any {
	rows, err := pool.Query(context.Background(), `
		SELECT tenant_id, to_char(persisted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD'), count(*), count(DISTINCT run_id)
		FROM run_events GROUP BY 1, 2 ORDER BY tenant_id COLLATE "C", 2`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []map[string]any
	for rows.Next() {
		var tenant, date string
		var events, runs int64
		if err := rows.Scan(&tenant, &date, &events, &runs); err != nil {
			t.Fatal(err)
		}
		out = append(out, map[string]any{"tenant": tenant, "date": date, "events": itoa(events), "runs": itoa(runs)})
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func failureRates(t *testing.T, pool *pgxpool.Pool) []map[string]any {
	rows, err := pool.Query(context.Background(), `
		WITH ends AS (
			SELECT step_id, event_type, payload->>'errorCode' AS error_code FROM run_events
			WHERE event_type IN ('StepCompleted', 'StepFailed'))
		SELECT e.step_id, e.error_code, count(*), f.attempts
		FROM ends e JOIN (SELECT step_id, count(*) AS attempts FROM ends GROUP BY step_id) f USING (step_id)
		WHERE e.event_type = 'StepFailed'
		GROUP BY e.step_id, e.error_code, f.attempts
		ORDER BY e.step_id COLLATE "C", e.error_code COLLATE "C"`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []map[string]any
	for rows.Next() {
		var step string
		var code *string
		var failures, attempts int64
		if err := rows.Scan(&step, &code, &failures, &attempts); err != nil {
			t.Fatal(err)
		}
		out = append(out, map[string]any{"step_id": step, "error_code": code, "failures": itoa(failures),
			"attempts": itoa(attempts), "failure_rate": math.Round(float64(failures)/float64(attempts)*1e4) / 1e4})
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// durations groups the reducer's projection of each run by plan and
// status: the runs with a duration, and its least, mean and greatest.
func durations(runs [][]store.RunEventRecord) []map[string]any {
	type key struct{ plan, status string }
	type agg struct{ n, min, max, sum int64 }
	groups := map[key]*agg{}
	for _, recs := range runs {
		s, _ := reduce.Project(store.RunSnapshot{}, recs)
		if s.TotalDurationMs == nil {
			continue
		}
		d := *s.TotalDurationMs
		k := key{s.PlanID, s.Status}
		a := groups[k]
		if a == nil {
			a = &agg{min: d, max: d}
			groups[k] = a
		}
		a.n++
		a.sum += d
		a.min, a.max = min(a.min, d), max(a.max, d)
	}
	keys := make([]key, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].plan != keys[j].plan {
			return keys[i].plan < keys[j].plan
		}
		return keys[i].status < keys[j].status
	})
	var out []map[string]any
	for _, k := range keys {
		a := groups[k]
		out = append(out, map[string]any{"plan_id": k.plan, "status": k.status, "runs": itoa(a.n), "min_ms": itoa(a.min),
			"avg_ms": math.Round(float64(a.sum) / float64(a.n)), "max_ms": itoa(a.max)})
	}
	return out
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
