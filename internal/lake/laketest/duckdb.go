package laketest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runstream/runstream/reduce"
	"github.com/runstream/runstream/store"
)

// DuckDBReady reports whether DuckDB's Node API is installed where
// DuckDB needs it (scripts/test-duckdb.sh installs it), under the module
// root.
func DuckDBReady(root string) bool {
	_, err := os.Stat(filepath.Join(root, "internal", "interop", "duckdb", "node_modules", "@duckdb", "node-api"))
	return err == nil
}

// DuckDB has DuckDB (internal/interop/duckdb/lake.mjs, through its Node
// API: no runstream code) run docs/LAKE.md's queries, as the doc writes
// them, on the lake in dir, and compares each answer with the same
// computation over the store (pool, whose search_path is the store's
// schema, and runs, every run's stored events): Postgres SQL on
// run_events for events and failures, the reducer's projection for
// durations, the store's count for exactly once. root is the module's
// root; logf gets lake.mjs's output.
func DuckDB(ctx context.Context, root, dir string, pool *pgxpool.Pool, runs [][]store.RunEventRecord, logf func(string, ...any)) error {
	want := map[string]any{"run-durations-by-plan": durations(runs)}
	var err error
	if want["exactly-once"], err = exactlyOnceAnswer(ctx, pool); err != nil {
		return err
	}
	if want["events-per-tenant-per-day"], err = perTenantDay(ctx, pool); err != nil {
		return err
	}
	if want["failure-rate-by-step-and-error"], err = failureRates(ctx, pool); err != nil {
		return err
	}
	body, err := json.MarshalIndent(want, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "expected-lake.json"), body, 0o644); err != nil {
		return err
	}
	defer os.Remove(filepath.Join(dir, "expected-lake.json"))
	cmd := exec.CommandContext(ctx, "node", "lake.mjs", dir, filepath.Join(root, "docs", "LAKE.md"))
	cmd.Dir = filepath.Join(root, "internal", "interop", "duckdb")
	out, err := cmd.CombinedOutput()
	logf("lake.mjs:\n%s", out)
	if err != nil {
		return fmt.Errorf("DuckDB's answers to docs/LAKE.md's queries differ from the store's (lake.mjs: %w)", err)
	}
	return nil
}

// Each answer is shaped as DuckDB's Node API returns rows as JSON:
// BIGINT as decimal text, DOUBLE as a number, DATE as YYYY-MM-DD.

func exactlyOnceAnswer(ctx context.Context, pool *pgxpool.Pool) ([]map[string]any, error) {
	var n int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM run_events`).Scan(&n); err != nil {
		return nil, err
	}
	return []map[string]any{{"events": itoa(n), "distinct_events": itoa(n), "duplicated": "0"}}, nil
}

func perTenantDay(ctx context.Context, pool *pgxpool.Pool) ([]map[string]any, error) {
	rows, err := pool.Query(ctx, `
		SELECT tenant_id, to_char(persisted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD'), count(*), count(DISTINCT run_id)
		FROM run_events GROUP BY 1, 2 ORDER BY tenant_id COLLATE "C", 2`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []map[string]any{}
	for rows.Next() {
		var tenant, date string
		var events, runs int64
		if err := rows.Scan(&tenant, &date, &events, &runs); err != nil {
			return nil, err
		}
		out = append(out, map[string]any{"tenant": tenant, "date": date, "events": itoa(events), "runs": itoa(runs)})
	}
	return out, rows.Err()
}

func failureRates(ctx context.Context, pool *pgxpool.Pool) ([]map[string]any, error) {
	rows, err := pool.Query(ctx, `
		WITH ends AS (
			SELECT step_id, event_type, payload->>'errorCode' AS error_code FROM run_events
			WHERE event_type IN ('StepCompleted', 'StepFailed'))
		SELECT e.step_id, e.error_code, count(*), f.attempts
		FROM ends e JOIN (SELECT step_id, count(*) AS attempts FROM ends GROUP BY step_id) f USING (step_id)
		WHERE e.event_type = 'StepFailed'
		GROUP BY e.step_id, e.error_code, f.attempts
		ORDER BY e.step_id COLLATE "C", e.error_code COLLATE "C"`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []map[string]any{}
	for rows.Next() {
		var step string
		var code *string
		var failures, attempts int64
		if err := rows.Scan(&step, &code, &failures, &attempts); err != nil {
			return nil, err
		}
		out = append(out, map[string]any{"step_id": step, "error_code": code, "failures": itoa(failures),
			"attempts": itoa(attempts), "failure_rate": math.Round(float64(failures)/float64(attempts)*1e4) / 1e4})
	}
	return out, rows.Err()
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
	out := []map[string]any{}
	for _, k := range keys {
		a := groups[k]
		out = append(out, map[string]any{"plan_id": k.plan, "status": k.status, "runs": itoa(a.n), "min_ms": itoa(a.min),
			"avg_ms": math.Round(float64(a.sum) / float64(a.n)), "max_ms": itoa(a.max)})
	}
	return out
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
