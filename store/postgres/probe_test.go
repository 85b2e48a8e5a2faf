package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// TestAppend_DuplicateProbeNeverReadsTheTenantIndex: runstream_append's
// duplicate probe, planned generically (as PL/pgSQL caches it per
// connection) on a fresh, unanalysed table, reads the unique index on
// (run_id, idempotency_key), never a (tenant_id, persisted_at) index:
// through that index every append read its tenant's whole range
// (migration 0009).
// New events, a duplicate and another tenant's claim on a run all answer
// as before.
func TestAppend_DuplicateProbeNeverReadsTheTenantIndex(t *testing.T) {
	ctx := context.Background()
	_, pool := newStore(t, postgres.Config{})
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	appendOne := func(ev store.RunEventWrite) (status int16, seq *int64) {
		t.Helper()
		if err := conn.QueryRow(ctx, `SELECT o_status, o_run_seq FROM runstream_append($1,$2,$3,$4,$5,$6,$7,$8,$9,NULL,1,1,$10,NULL,0)`,
			ev.RunID, ev.TenantID, ev.ProjectID, ev.EnvironmentID, ev.PlanID, ev.PlanVersion, ev.EventID,
			ev.EventType, ev.IdempotencyKey, ev.EmittedAt).Scan(&status, &seq); err != nil {
			t.Fatal(err)
		}
		return status, seq
	}
	id := workload.NewIdentity("tenant_probe")
	var first store.RunEventWrite
	for i := range 20 {
		ev := workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil)
		ev.IdempotencyKey = fmt.Sprintf("k-%d", i)
		if i == 0 {
			first = ev
		}
		if st, seq := appendOne(ev); st != 0 || seq == nil || *seq != int64(i+1) {
			t.Fatalf("append %d: status %d seq %v, want inserted at %d", i, st, seq, i+1)
		}
	}
	if st, seq := appendOne(first); st != 1 || seq == nil || *seq != 1 {
		t.Fatalf("the first event again: status %d seq %v, want a duplicate of runSeq 1", st, seq)
	}
	other := first
	other.TenantID = "tenant_other"
	if st, _ := appendOne(other); st != 2 {
		t.Fatalf("the same run and key from another tenant: status %d, want 2 (another tenant's run)", st)
	}

	// The session's index reads, flushed to the statistics views.
	if _, err := conn.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
		t.Fatal(err)
	}
	testenv.WaitUntil(t, 10*time.Second, func() error {
		var tenantScans, keyScans int64
		if err := conn.QueryRow(ctx, `SELECT
			coalesce(sum(idx_scan) FILTER (WHERE indexrelname = 'run_events_tenant_persisted_at' OR indexrelname LIKE 'run\_events\_%\_tenant'), 0),
			coalesce(sum(idx_scan) FILTER (WHERE indexrelname = 'run_events_idempotency_key' OR indexrelname LIKE 'run\_events\_%\_idem'), 0)
			FROM pg_stat_user_indexes WHERE schemaname = current_schema()`).Scan(&tenantScans, &keyScans); err != nil {
			t.Fatal(err)
		}
		if tenantScans != 0 {
			t.Fatalf("the appends read a (tenant_id, persisted_at) index %d times: the duplicate probe's plan scans the tenant's range", tenantScans)
		}
		// The run's first append has no runs row, so nothing to probe
		// (migration 0014); the other 19, the duplicate and nothing for
		// the other tenant's claim.
		if keyScans < 20 {
			return fmt.Errorf("the (run_id, idempotency_key) indexes were read %d times, want at least the 20 probes", keyScans)
		}
		return nil
	})
}

// TestAppend_KeepsGenericPlans: runstream_append runs with
// plan_cache_mode = force_generic_plan (migration 0017). Without it the
// plan cache costs the generic plan of the duplicate probe over every
// partition of run_events, always prefers a custom plan, and replans the
// function's statements on every call (appends 20-40% slower). A later
// CREATE OR REPLACE of the function drops the setting unless it says it
// again: this test is what notices.
func TestAppend_KeepsGenericPlans(t *testing.T) {
	ctx := context.Background()
	_, pool := newStore(t, postgres.Config{})
	var config []string
	if err := pool.QueryRow(ctx, `SELECT coalesce(proconfig, '{}') FROM pg_proc
		WHERE proname = 'runstream_append' AND pronamespace = current_schema()::regnamespace`).Scan(&config); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(config, "plan_cache_mode=force_generic_plan") {
		t.Fatalf("runstream_append's settings are %q, want plan_cache_mode=force_generic_plan", config)
	}
}
