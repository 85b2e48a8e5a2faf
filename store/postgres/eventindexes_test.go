package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// partitionIndexes returns, per attached run_events partition other than
// run_events_legacy, the definitions of its _idem and _tenant indexes.
func partitionIndexes(ctx context.Context, t *testing.T, pool *pgxpool.Pool) map[string][2]string {
	t.Helper()
	rows, err := pool.Query(ctx, `SELECT p.name,
		(SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND indexname = p.name || '_idem'),
		(SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND indexname = p.name || '_tenant')
		FROM run_event_partitions p WHERE p.epoch > '-infinity' AND p.dropped_at IS NULL`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][2]string{}
	for rows.Next() {
		var name, idem, tenant string
		if err := rows.Scan(&name, &idem, &tenant); err != nil {
			t.Fatal(err)
		}
		out[name] = [2]string{idem, tenant}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// isDigestForm: the duplicates index of migration 0019, beside the audit
// index of 0019 or 0024.
func isDigestForm(defs [2]string) bool {
	return strings.Contains(defs[0], "runstream_idempotency_digest(run_id, idempotency_key)") &&
		(strings.HasSuffix(defs[1], "(tenant_id, persisted_at)") || isTenantHashForm(defs))
}

// tenantHashKey ends the definition of migration 0024's audit index, as
// pg_indexes prints it.
const tenantHashKey = "(hashtextextended(tenant_id, (0)::bigint), persisted_at)"

// isTenantHashForm: the audit index of migration 0024.
func isTenantHashForm(defs [2]string) bool {
	return strings.HasSuffix(defs[1], tenantHashKey)
}

// TestEventIndexes_NewPartitionsIndexTheDigest: since migration 0019 a
// partition indexes duplicates by a 16-byte digest of (run id, key), and
// since 0024 audit reads by (hash of tenant_id, persisted_at); duplicates
// are found through the digest, and a key differing from another in one
// byte is not one.
func TestEventIndexes_NewPartitionsIndexTheDigest(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t, postgres.Config{})
	ctx := ctxT(t)
	parts := partitionIndexes(ctx, t, pool)
	if len(parts) == 0 {
		t.Fatal("a fresh store has no run_events partition ahead")
	}
	for name, defs := range parts {
		if !isDigestForm(defs) || !isTenantHashForm(defs) {
			t.Fatalf("partition %s of a fresh store: indexes %q, want the digest and (hash of tenant_id, persisted_at)", name, defs)
		}
	}
	// Made by runstream_ensure_partitions after the migration: the same.
	if _, err := pool.Exec(ctx, `SELECT runstream_ensure_partitions(interval '1 day', interval '3 days')`); err != nil {
		t.Fatal(err)
	}
	after := partitionIndexes(ctx, t, pool)
	if len(after) <= len(parts) {
		t.Fatalf("runstream_ensure_partitions with 3 days ahead made no partition (%d before, %d after)", len(parts), len(after))
	}
	for name, defs := range after {
		if !isDigestForm(defs) || !isTenantHashForm(defs) {
			t.Fatalf("partition %s made by runstream_ensure_partitions: indexes %q, want the digest and tenant hash form", name, defs)
		}
	}

	// runstream_append itself, with keys of any form (the API only
	// accepts the contract's derived keys; the store's function must not
	// depend on that).
	id := workload.NewIdentity("tenant_digest")
	ev := workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil)
	ev.IdempotencyKey = "key-a"
	if st, seq := rawAppend(ctx, t, pool, ev); st != 0 || seq != 1 {
		t.Fatalf("first append: status %d runSeq %d, want inserted at 1", st, seq)
	}
	if st, seq := rawAppend(ctx, t, pool, ev); st != 1 || seq != 1 {
		t.Fatalf("the same event again: status %d runSeq %d, want a duplicate of 1", st, seq)
	}
	near := ev
	near.EventID = uuid.NewString()
	near.IdempotencyKey = "key-b"
	if st, seq := rawAppend(ctx, t, pool, near); st != 0 || seq != 2 {
		t.Fatalf("a key one byte apart: status %d runSeq %d, want inserted at 2", st, seq)
	}
	// The run id is in the digest without ambiguity: run "<p>ab" with
	// key "c" and run "<p>a" with key "bc" are different events.
	prefix := "digest-" + fmt.Sprint(time.Now().UnixNano()) + "-"
	for _, c := range []struct{ run, key string }{{"ab", "c"}, {"a", "bc"}} {
		w := ev
		w.RunID, w.EventID, w.IdempotencyKey = prefix+c.run, uuid.NewString(), c.key
		if st, seq := rawAppend(ctx, t, pool, w); st != 0 || seq != 1 {
			t.Fatalf("run %q key %q: status %d runSeq %d, want inserted at 1", w.RunID, c.key, st, seq)
		}
	}
	// And through the store, with a derived key.
	w := workload.Event(workload.NewIdentity("tenant_digest"), store.EventRunStarted, "", 1, 1, time.Now(), nil)
	first, err := s.AppendEvent(ctx, w)
	if err != nil || !first.Persisted {
		t.Fatalf("AppendEvent: %+v, %v", first, err)
	}
	if again, err := s.AppendEvent(ctx, w); err != nil || !again.Idempotent || again.RunSeq != first.RunSeq {
		t.Fatalf("AppendEvent again: %+v, %v; want a duplicate of runSeq %d", again, err, first.RunSeq)
	}
}

// rawAppend calls runstream_append for ev as the store does, with no
// validation, and returns its status and runSeq.
func rawAppend(ctx context.Context, t *testing.T, pool *pgxpool.Pool, ev store.RunEventWrite) (status int16, seq int64) {
	t.Helper()
	if err := pool.QueryRow(ctx, `SELECT o_status, o_run_seq FROM runstream_append($1,$2,$3,$4,$5,$6,$7,$8,$9,NULL,1,1,$10,NULL,0)`,
		ev.RunID, ev.TenantID, ev.ProjectID, ev.EnvironmentID, ev.PlanID, ev.PlanVersion, ev.EventID,
		ev.EventType, ev.IdempotencyKey, ev.EmittedAt).Scan(&status, &seq); err != nil {
		t.Fatal(err)
	}
	return status, seq
}

// TestEventIndexes_UpgradeKeepsFilledPartitions: migration 0019 rebuilds
// the indexes of partitions that hold no event and leaves those with
// events as they are; the duplicate probe finds an event through either
// form.
func TestEventIndexes_UpgradeKeepsFilledPartitions(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s, pool := storeBefore(ctx, t, "0019")
	id := workload.NewIdentity("tenant_upgrade")
	ev := workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil)
	first, err := s.AppendEvent(ctx, ev)
	if err != nil || !first.Persisted {
		t.Fatalf("append before the migration: %+v, %v", first, err)
	}
	var filled string
	if err := pool.QueryRow(ctx, `SELECT p.name FROM runs r JOIN run_event_partitions p ON p.epoch = r.run_epoch WHERE r.run_id = $1`, id.RunID).Scan(&filled); err != nil {
		t.Fatal(err)
	}
	if _, err := postgres.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	parts := partitionIndexes(ctx, t, pool)
	if len(parts) < 2 {
		t.Fatalf("want today's partition and one ahead, got %v", parts)
	}
	for name, defs := range parts {
		if name == filled {
			if isDigestForm(defs) || !strings.Contains(defs[0], "(run_id, idempotency_key)") {
				t.Fatalf("partition %s holds events and was rebuilt: %q", name, defs)
			}
			continue
		}
		if !isDigestForm(defs) {
			t.Fatalf("empty partition %s kept its old indexes: %q", name, defs)
		}
	}
	s2, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	again, err := s2.AppendEvent(ctx, ev)
	if err != nil || !again.Idempotent || again.RunSeq != first.RunSeq {
		t.Fatalf("the event again after the migration: %+v, %v; want a duplicate of runSeq %d", again, err, first.RunSeq)
	}
	next := workload.Event(id, store.EventStepStarted, "s", 1, 1, time.Now(), nil)
	res, err := s2.AppendEvent(ctx, next)
	if err != nil || !res.Persisted || res.RunSeq != first.RunSeq+1 {
		t.Fatalf("a new event of the run after the migration: %+v, %v", res, err)
	}
}
