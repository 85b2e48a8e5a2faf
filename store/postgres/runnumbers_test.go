package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// runNumber returns the run's number and its partition's name.
func runNumber(ctx context.Context, t *testing.T, pool *pgxpool.Pool, runID string) (no int64, partition string) {
	t.Helper()
	if err := pool.QueryRow(ctx, `SELECT r.run_no, p.name FROM runs r
		JOIN run_event_partitions p ON p.epoch = r.run_epoch WHERE r.run_id = $1`, runID).Scan(&no, &partition); err != nil {
		t.Fatalf("the runs row of %s: %v", runID, err)
	}
	return no, partition
}

// findsByNumber reports whether the plan lines scan partition only by one
// of its indexes with the run's number in the index condition (the
// primary key or the duplicates index: which one is the planner's choice
// on a table this small).
func findsByNumber(lines []string, partition string) bool {
	found := false
	for i, l := range lines {
		if !strings.Contains(l, " on "+partition+" ") {
			continue
		}
		if !strings.Contains(l, "Index Scan using "+partition+"_") {
			return false
		}
		for _, next := range lines[i+1:] {
			if strings.Contains(next, "->") {
				break
			}
			if strings.Contains(next, "Index Cond: (run_no = ") || strings.Contains(next, "Index Cond: ((run_no = ") {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return found
}

// TestRunNumbers_NewPartitionsKeyByRunNumber: since migration 0022 a run
// gets a number at its first append, later runs larger ones; its events
// carry it; a new partition's primary key and duplicates index lead with
// it and it refuses the number 0; and every read of one run's events finds
// them by that key.
func TestRunNumbers_NewPartitionsKeyByRunNumber(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t, postgres.Config{})
	ctx := ctxT(t)
	a, b := workload.NewIdentity("tenant_numbers"), workload.NewIdentity("tenant_numbers")
	appendStepsRun(ctx, t, s, a, 1, time.Now()) // 3 events
	appendStepsRun(ctx, t, s, b, 1, time.Now())
	noA, part := runNumber(ctx, t, pool, a.RunID)
	noB, _ := runNumber(ctx, t, pool, b.RunID)
	if noA <= 0 || noB <= noA {
		t.Fatalf("run numbers %d then %d: want positive and growing in the order runs began", noA, noB)
	}
	var carried int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM run_events WHERE run_id = $1 AND run_no = $2`, a.RunID, noA).Scan(&carried); err != nil || carried != 3 {
		t.Fatalf("events of %s carrying its number %d: %d, %v; want 3", a.RunID, noA, carried, err)
	}

	var pkey, idem string
	if err := pool.QueryRow(ctx, `SELECT
		(SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i WHERE i.indrelid = $1::regclass AND i.indisprimary),
		(SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND indexname = $2)`,
		part, part+"_idem").Scan(&pkey, &idem); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(pkey, "(run_no, run_seq)") || !strings.Contains(idem, "(run_no, runstream_idempotency_digest(run_id, idempotency_key))") {
		t.Fatalf("partition %s: primary key %q, duplicates index %q; want both led by run_no", part, pkey, idem)
	}
	// A row numbered 0 (what the function before 0022 wrote) is refused,
	// so two runs can never share the number 0 in a new partition.
	_, err := pool.Exec(ctx, `INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
		tenant_id, project_id, environment_id, plan_id, plan_version, engine_attempt_id, logical_attempt_id,
		emitted_at, persisted_at, run_epoch)
		SELECT 'unnumbered', 1, gen_random_uuid(), 'RunStarted', 'k', 't', 'p', 'e', 'pl', '1', 1, 1, 'x', now(), run_epoch
		FROM runs WHERE run_id = $1`, a.RunID)
	if pgErr, ok := err.(*pgconn.PgError); !ok || pgErr.Code != "23514" || pgErr.ConstraintName != part+"_numbered" {
		t.Fatalf("an event numbered 0 in partition %s: %v; want a violation of its check %s_numbered", part, err, part)
	}

	// Each read of one run's events finds them in the partition by an
	// index on the run's number, so it reads the run's own entries, not
	// the partition.
	for name, q := range postgres.RunEventReads(a.RunID) {
		rows, err := pool.Query(ctx, "EXPLAIN (ANALYZE, COSTS OFF) "+q[0].(string), q[1].([]any)...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !findsByNumber(lines, part) {
			t.Fatalf("%s reads %s other than by an index on the run's number:\n%s", name, part, strings.Join(lines, "\n"))
		}
	}
	// And what they return is the run's.
	evs, err := s.FetchEvents(ctx, a.RunID, store.FetchOptions{})
	if err != nil || len(evs) != 3 || evs[2].RunSeq != 3 || evs[0].RunID != a.RunID {
		t.Fatalf("FetchEvents(%s): %d events, %v; want its 3", a.RunID, len(evs), err)
	}
	snap, err := s.ProjectSnapshot(ctx, b.RunID)
	if err != nil || snap.LastEventSeq != 3 {
		t.Fatalf("ProjectSnapshot(%s): lastEventSeq %d, %v; want 3", b.RunID, snap.LastEventSeq, err)
	}
}

// TestRunNumbers_UpgradeKeepsFilledPartitions: after migration 0022 a
// store in use keeps the keys of every partition it has, those made ahead
// included (binaries of the previous version find events by run id alone
// until a partition made after the migration takes new runs, a
// partition's width later); a run that began before it keeps the number
// 0, its duplicates are still found, its next event follows, and reads
// return its events; a run begun after it in the same partition gets a
// number; and the partitions made after it have the new keys.
func TestRunNumbers_UpgradeKeepsFilledPartitions(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	before, pool := storeBefore(ctx, t, "0022")
	old := workload.NewIdentity("tenant_upgrade22")
	first := workload.Event(old, store.EventRunStarted, "", 1, 1, time.Now(), nil)
	if res, err := before.AppendEvent(ctx, first); err != nil || !res.Persisted {
		t.Fatalf("append before the migration: %+v, %v", res, err)
	}
	if _, err := postgres.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	s, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if again, err := s.AppendEvent(ctx, first); err != nil || !again.Idempotent || again.RunSeq != 1 {
		t.Fatalf("the event again after the migration: %+v, %v; want a duplicate of runSeq 1", again, err)
	}
	if res, err := s.AppendEvent(ctx, workload.Event(old, store.EventStepStarted, "s", 1, 1, time.Now(), nil)); err != nil || !res.Persisted || res.RunSeq != 2 {
		t.Fatalf("the old run's next event: %+v, %v; want runSeq 2", res, err)
	}
	noOld, filled := runNumber(ctx, t, pool, old.RunID)
	if noOld != 0 {
		t.Fatalf("a run from before the migration has number %d, want 0", noOld)
	}
	young := workload.NewIdentity("tenant_upgrade22")
	appendStepsRun(ctx, t, s, young, 1, time.Now()) // 3 events
	noYoung, part := runNumber(ctx, t, pool, young.RunID)
	if noYoung <= 0 || part != filled {
		t.Fatalf("a run begun after the migration: number %d in %s; want a number, in the filled partition %s", noYoung, part, filled)
	}
	for _, run := range []struct {
		id     string
		events int
	}{{old.RunID, 2}, {young.RunID, 3}} {
		evs, err := s.FetchEvents(ctx, run.id, store.FetchOptions{})
		if err != nil || len(evs) != run.events {
			t.Fatalf("FetchEvents(%s): %d events, %v; want %d", run.id, len(evs), err, run.events)
		}
		snap, err := s.ProjectSnapshot(ctx, run.id)
		if err != nil || snap.LastEventSeq != int64(run.events) {
			t.Fatalf("ProjectSnapshot(%s): lastEventSeq %d, %v; want %d", run.id, snap.LastEventSeq, err, run.events)
		}
	}
	kept := partitionKeys(ctx, t, pool)
	if len(kept) < 2 {
		t.Fatalf("primary keys of the partitions: %v; want today's and one ahead", kept)
	}
	for name, def := range kept {
		if strings.HasSuffix(def, "(run_no, run_seq)") {
			t.Fatalf("partition %s of a store in use (filled: %v) was rebuilt by the migration: primary key %q", name, name == filled, def)
		}
	}
	if _, err := pool.Exec(ctx, `SELECT runstream_ensure_partitions(interval '1 day', interval '3 days')`); err != nil {
		t.Fatal(err)
	}
	made := 0
	for name, def := range partitionKeys(ctx, t, pool) {
		if _, old := kept[name]; old {
			continue
		}
		made++
		if !strings.HasSuffix(def, "(run_no, run_seq)") {
			t.Fatalf("partition %s made after the migration: primary key %q, want (run_no, run_seq)", name, def)
		}
	}
	if made == 0 {
		t.Fatal("runstream_ensure_partitions with 3 days ahead made no partition")
	}
}

// partitionKeys returns the primary key definition of each partition after
// the legacy one.
func partitionKeys(ctx context.Context, t *testing.T, pool *pgxpool.Pool) map[string]string {
	t.Helper()
	rows, err := pool.Query(ctx, `SELECT p.name, pg_get_indexdef(i.indexrelid) FROM run_event_partitions p
		JOIN pg_index i ON i.indrelid = p.name::regclass AND i.indisprimary
		WHERE p.epoch > '-infinity' AND p.dropped_at IS NULL`)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Name, Def string }])
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range keys {
		out[k.Name] = k.Def
	}
	return out
}

// TestRunNumbers_UpgradeLetsAppendersNumberRuns: runstream_append runs
// with its caller's privileges and takes a number for each new run, so
// migration 0022 lets every role that may insert runs use the sequence
// (here PUBLIC: the test's role may not create others).
func TestRunNumbers_UpgradeLetsAppendersNumberRuns(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	_, pool := storeBefore(ctx, t, "0022")
	if _, err := pool.Exec(ctx, `GRANT INSERT ON runs TO PUBLIC`); err != nil {
		t.Fatal(err)
	}
	if _, err := postgres.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	var granted bool
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_class c, aclexplode(c.relacl) a
		WHERE c.oid = 'runs_run_no'::regclass AND a.grantee = 0 AND a.privilege_type = 'USAGE')`).Scan(&granted); err != nil {
		t.Fatal(err)
	}
	if !granted {
		t.Fatal("PUBLIC may insert runs but not take a run number after migration 0022: its appends of new runs would fail")
	}
}
