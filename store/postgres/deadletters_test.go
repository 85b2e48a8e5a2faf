package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/runstream/runstream/store/postgres"
)

// TestDeadLetters_RunFilterUsesItsIndex: listing one run's dead letters
// (GET /v1/dead-letters?runId=, relay dlq list --run) reads index
// outbox_dead_letters_run_id, not the whole table, with the statement and
// arguments the listing sends. It fails without migration 0008, or with a
// single statement whose "run_id = $1 unless $1 is empty" a generic plan cannot
// narrow.
func TestDeadLetters_RunFilterUsesItsIndex(t *testing.T) {
	_, pool := newStore(t, postgres.Config{})
	ctx := context.Background()
	// 20,000 dead letters of 2,000 runs; run_77's events for the join.
	if _, err := pool.Exec(ctx, `
		INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key, tenant_id, project_id,
			environment_id, plan_id, plan_version, engine_attempt_id, logical_attempt_id, emitted_at, persisted_at)
		SELECT 'run_77', s, gen_random_uuid(), 'StepCompleted', 'k' || s, 'tenant_a', 'p', 'e', 'plan', '1', 1, 1,
			'2026-11-25T00:00:00Z', now()
		FROM generate_series(1, 10) s`); err != nil {
		t.Fatalf("run_77's events: %v", err)
	}
	// And its runs row, which names the partition its events are in.
	if _, err := pool.Exec(ctx, `INSERT INTO runs (run_id, tenant_id, last_seq) VALUES ('run_77', 'tenant_a', 10)`); err != nil {
		t.Fatalf("run_77's runs row: %v", err)
	}
	if _, err := pool.Exec(ctx, `
		INSERT INTO outbox_dead_letters (id, shard, run_id, run_seq, created_at, attempts, last_error)
		SELECT r * 10 + s, 0, 'run_' || r, s, now(), 3, 'refused'
		FROM generate_series(1, 2000) r, generate_series(1, 10) s`); err != nil {
		t.Fatalf("dead letters: %v", err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE outbox_dead_letters`); err != nil {
		t.Fatal(err)
	}
	// Force the generic plan pgx's prepared statements get after five
	// executions, the one a `$1 = ''` test cannot narrow.
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(ctx, `RESET plan_cache_mode`)
	for i, q := range postgres.DeadLetterQueries("run_77", 0, 100) {
		sql, args := q[0].(string), q[1].([]any)
		name := fmt.Sprintf("dlq_plan_%d", i)
		if _, err := conn.Conn().Prepare(ctx, name, sql); err != nil {
			t.Fatalf("prepare %s: %v", sql, err)
		}
		placeholders := make([]string, len(args))
		for j, a := range args {
			placeholders[j] = fmt.Sprintf("%v", a)
			if s, ok := a.(string); ok {
				placeholders[j] = "'" + s + "'"
			}
		}
		var plan strings.Builder
		rows, err := conn.Query(ctx, "EXPLAIN EXECUTE "+name+"("+strings.Join(placeholders, ", ")+")")
		if err != nil {
			t.Fatalf("explain %s: %v", sql, err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan.WriteString(line + "\n")
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(plan.String(), "outbox_dead_letters_run_id") || strings.Contains(plan.String(), "Seq Scan on outbox_dead_letters") {
			t.Fatalf("listing one run's dead letters does not read index outbox_dead_letters_run_id:\n%s\n%s", sql, plan.String())
		}
	}
	// And the statements answer: the run's ten letters, in order.
	dls, err := postgres.NewOutbox(pool).ListDeadLettersAfter(ctx, "run_77", 773, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(dls) != 7 || dls[0].ID != 774 || dls[6].ID != 780 {
		t.Fatalf("run_77 after id 773: %d letters %+v, want ids 774..780", len(dls), dls)
	}
}
