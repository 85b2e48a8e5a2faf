package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/testenv/testpg"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// auditEvent builds the n-th event of run id: an unknown PascalCase type
// (stored, forward compatibility), distinct keys by logical attempt.
func auditEvent(id workload.Identity, n int) store.RunEventWrite {
	return workload.Event(id, "AuditProbe", "", int64(n), 1, time.Now(), map[string]any{"n": n})
}

func positionOf(t *testing.T, r store.RunEventRecord) store.AuditPosition {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, r.PersistedAt)
	if err != nil {
		t.Fatal(err)
	}
	return store.AuditPosition{PersistedAt: at, RunID: r.RunID, RunSeq: r.RunSeq}
}

// auditReader pages through one window and keeps what it read.
type auditReader struct {
	t     *testing.T
	s     *postgres.Store
	w     store.AuditWindow
	after store.AuditPosition
	done  bool
	got   []store.RunEventRecord
}

func (r *auditReader) page(ctx context.Context, limit int) postgres.AuditPage {
	r.t.Helper()
	p, err := r.s.ReadAudit(ctx, postgres.AuditQuery{AuditWindow: r.w, After: r.after, Limit: limit})
	if err != nil {
		r.t.Fatalf("ReadAudit after %+v: %v", r.after, err)
	}
	for _, e := range p.Events {
		pos := positionOf(r.t, e)
		if pos.Compare(r.after) <= 0 {
			r.t.Fatalf("event %s at %+v is not after the cursor %+v", e.EventID, pos, r.after)
		}
		if !pos.PersistedAt.Before(p.Horizon.At) {
			r.t.Fatalf("event %s persisted at %s is not before the page's horizon %s", e.EventID, e.PersistedAt, p.Horizon.At)
		}
		r.after = pos
	}
	r.got = append(r.got, p.Events...)
	if p.Next == nil {
		r.done = true
		return p
	}
	if p.Next.Compare(r.after) < 0 {
		r.t.Fatalf("next cursor %+v goes back before %+v", *p.Next, r.after)
	}
	r.after = *p.Next
	return p
}

// TestReadAudit_HeldTransactionIsNotPassed is the classic outbox trap: an
// append takes its persistedAt inside its transaction, so a transaction
// held open commits an event persisted before events already committed
// and read. A reader that paged past those events would never return the
// late one. The horizon stops every page at the held transaction's start
// until it ends, then the next pages hold it, and nothing is skipped or
// repeated.
func TestReadAudit_HeldTransactionIsNotPassed(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t, postgres.Config{AuditGrace: time.Millisecond})
	ctx := ctxT(t)
	tenant := "tenant_" + testenv.RandomID(6)
	w := store.AuditWindow{TenantID: tenant, From: store.AuditTime(time.Now().Add(-time.Minute))}
	runs := []workload.Identity{workload.NewIdentity(tenant), workload.NewIdentity(tenant)}
	for i := 1; i <= 3; i++ {
		if _, err := s.AppendEvent(ctx, auditEvent(runs[0], i)); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	var pid int32
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	held := auditEvent(runs[1], 1)
	heldAt := testpg.AppendInTx(ctx, t, tx, held)
	for i := 4; i <= 8; i++ {
		res, err := s.AppendEvent(ctx, auditEvent(runs[0], i))
		if err != nil {
			t.Fatal(err)
		}
		if at, _ := time.Parse(time.RFC3339Nano, res.PersistedAt); !at.After(heldAt) {
			t.Fatalf("event %d committed after the held one is persisted at %s, not after %s", i, res.PersistedAt, heldAt)
		}
	}
	// Wait past the grace so that only the held transaction holds the
	// horizon back.
	testenv.WaitFor(t, 10*time.Second, "the horizon to reach the held transaction", func() bool {
		h, err := s.AuditHorizon(ctx)
		return err == nil && h.Holder != nil && h.Holder.PID == pid
	})
	r := &auditReader{t: t, s: s, w: w}
	for range 5 { // limit 2: pages [1 2] [3] [] []: the fourth page would hold 4..8 and end after heldAt
		p := r.page(ctx, 2)
		if p.Horizon.Holder == nil || p.Horizon.Holder.PID != pid {
			t.Fatalf("horizon %+v is not held by the open transaction (pid %d)", p.Horizon, pid)
		}
		if p.Horizon.At.After(heldAt) {
			t.Fatalf("horizon %s passed the held event's persistedAt %s", p.Horizon.At, heldAt)
		}
	}
	// Convergence reads the same open writers (with its cap, far away).
	if ch, err := s.ConvergenceHorizon(ctx, time.Millisecond); err != nil || ch.After(heldAt) {
		t.Fatalf("ConvergenceHorizon = %s, %v; want at most the held event's persistedAt %s", ch, err, heldAt)
	}
	if len(r.got) != 3 {
		t.Fatalf("while held: read %d events, want the 3 before the held transaction", len(r.got))
	}
	if !r.after.PersistedAt.Before(heldAt) || r.done {
		t.Fatalf("the cursor %+v (done %v) passed the held event at %s", r.after, r.done, heldAt)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "every event read after the commit", func() bool {
		r.page(ctx, 2)
		return len(r.got) >= 9
	})
	r.page(ctx, 2)
	var seqs []string
	name := map[string]string{runs[0].RunID: "run0", runs[1].RunID: "run1"}
	for _, e := range r.got {
		seqs = append(seqs, fmt.Sprintf("%s/%d", name[e.RunID], e.LogicalAttemptID))
	}
	want := []string{"run0/1", "run0/2", "run0/3", "run1/1", "run0/4", "run0/5", "run0/6", "run0/7", "run0/8"}
	if !slices.Equal(seqs, want) {
		t.Fatalf("read %v, want %v: each event once, the late commit in its persistedAt place", seqs, want)
	}
	if r.got[3].EventID != held.EventID {
		t.Fatalf("fourth event is %s, want the held one %s", r.got[3].EventID, held.EventID)
	}
}

// TestReadAudit_PagingProperty interleaves at random appends (single and
// batched, two tenants), transactions held open and committed later, and
// page reads of random limits. Every event of the read tenant comes back
// exactly once, in (persistedAt, runId, runSeq) order, and no other
// tenant's. AUDIT_SEED=<n> replays a run.
func TestReadAudit_PagingProperty(t *testing.T) {
	t.Parallel()
	seed := rand.Uint64()
	if v := os.Getenv("AUDIT_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("AUDIT_SEED=%q: %v", v, err)
		}
	}
	t.Logf("seed %d (replay: AUDIT_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	s, pool := newStore(t, postgres.Config{AuditGrace: time.Millisecond})
	ctx := ctxT(t)
	tenants := []string{"tenant_" + testenv.RandomID(6), "tenant_" + testenv.RandomID(6)}
	var runs []workload.Identity
	next := map[string]int{}
	for i := range 6 {
		runs = append(runs, workload.NewIdentity(tenants[i%2]))
	}
	event := func() store.RunEventWrite {
		id := runs[rng.IntN(len(runs))]
		next[id.RunID]++
		return auditEvent(id, next[id.RunID])
	}
	want := map[string]store.AuditPosition{} // tenant 0's events by eventId, filled after commit
	var written []store.RunEventWrite
	var held []pgx.Tx
	r := &auditReader{t: t, s: s, w: store.AuditWindow{TenantID: tenants[0], From: store.AuditTime(time.Now().Add(-time.Second))}}
	for range 300 {
		switch op := rng.IntN(10); {
		case op < 3:
			ev := event()
			if _, err := s.AppendEvent(ctx, ev); err != nil {
				t.Fatal(err)
			}
			written = append(written, ev)
		case op < 5:
			batch := make([]store.RunEventWrite, 1+rng.IntN(5))
			for i := range batch {
				batch[i] = event()
			}
			for i, res := range s.AppendBatch(ctx, batch) {
				if res.Err != nil {
					t.Fatal(res.Err)
				}
				written = append(written, batch[i])
			}
		case op < 6 && len(held) < 3:
			// A run's counter row is locked by the held transaction, so
			// its events go to a run of its own.
			id := workload.NewIdentity(tenants[rng.IntN(2)])
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
			for i := range 1 + rng.IntN(3) {
				ev := auditEvent(id, i+1)
				testpg.AppendInTx(ctx, t, tx, ev)
				written = append(written, ev)
			}
			held = append(held, tx)
		case op < 7 && len(held) > 0:
			i := rng.IntN(len(held))
			if err := held[i].Commit(ctx); err != nil {
				t.Fatal(err)
			}
			held = slices.Delete(held, i, i+1)
		default:
			r.page(ctx, 1+rng.IntN(7))
		}
	}
	for _, tx := range held {
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, ev := range written {
		if ev.TenantID == tenants[0] {
			want[ev.EventID] = store.AuditPosition{}
		}
	}
	testenv.WaitFor(t, 20*time.Second, "every event of the tenant read", func() bool {
		r.page(ctx, 1+rng.IntN(7))
		return len(r.got) >= len(want)
	})
	seen := map[string]bool{}
	for i, e := range r.got {
		if e.TenantID != tenants[0] {
			t.Fatalf("read event %s of tenant %s in tenant %s's window", e.EventID, e.TenantID, tenants[0])
		}
		if seen[e.EventID] {
			t.Fatalf("event %s read twice", e.EventID)
		}
		seen[e.EventID] = true
		if _, ok := want[e.EventID]; !ok {
			t.Fatalf("read event %s that was never written", e.EventID)
		}
		if i > 0 && positionOf(t, r.got[i-1]).Compare(positionOf(t, e)) >= 0 {
			t.Fatalf("events %d and %d out of (persistedAt, runId, runSeq) order", i-1, i)
		}
	}
	if len(seen) != len(want) {
		t.Fatalf("read %d distinct events, want %d", len(seen), len(want))
	}
	// The read order is the store's order of the same rows.
	rows, err := pool.Query(ctx, `SELECT event_id::text FROM run_events WHERE tenant_id = $1 ORDER BY persisted_at, run_id COLLATE "C", run_seq`, tenants[0])
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for i := range ids {
		if ids[i] != r.got[i].EventID {
			t.Fatalf("event %d: read %s, the table's order has %s", i, r.got[i].EventID, ids[i])
		}
	}
}

// TestReadAudit_ClosedWindowFinishes: a window with an end the horizon has
// passed finishes (no next cursor) once read, and holds only its events:
// persistedAt in [From, To).
func TestReadAudit_ClosedWindowFinishes(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, postgres.Config{AuditGrace: time.Millisecond})
	ctx := ctxT(t)
	tenant := "tenant_" + testenv.RandomID(6)
	id := workload.NewIdentity(tenant)
	var ats []time.Time
	for i := 1; i <= 5; i++ {
		res, err := s.AppendEvent(ctx, auditEvent(id, i))
		if err != nil {
			t.Fatal(err)
		}
		at, _ := time.Parse(time.RFC3339Nano, res.PersistedAt)
		ats = append(ats, at)
	}
	// [second, fourth): the second and the third.
	r := &auditReader{t: t, s: s, w: store.AuditWindow{TenantID: tenant, From: ats[1], To: ats[3]}}
	testenv.WaitFor(t, 10*time.Second, "the window to finish", func() bool {
		r.page(ctx, 1)
		return r.done
	})
	if len(r.got) != 2 || r.got[0].LogicalAttemptID != 2 || r.got[1].LogicalAttemptID != 3 {
		t.Fatalf("window [2nd, 4th) read %d events (%+v), want the 2nd and the 3rd", len(r.got), r.got)
	}
	// Reading a finished window again from its end gives nothing, finished.
	p, err := s.ReadAudit(ctx, postgres.AuditQuery{AuditWindow: r.w, After: r.after, Limit: 10})
	if err != nil || len(p.Events) != 0 || p.Next != nil {
		t.Fatalf("a finished window read again: %d events, next %v, %v", len(p.Events), p.Next, err)
	}
}

// TestReadAudit_UsesTheTenantIndex: a page is one range of a tenant's
// audit index per partition, merged in persistedAt order, not a scan of
// the window's rows of every tenant nor a sort of the window. Partitions
// made since migration 0024 index (hash of tenant_id, persisted_at), older
// ones (tenant_id, persisted_at); the store has one of each here, and the
// statement ReadAudit runs is explained with a custom plan and with the
// generic plan a prepared statement settles on. Neither index holds
// (runId, runSeq), so the rows of one persistedAt are put in that order by
// an Incremental Sort presorted on persisted_at: a sort of the few rows
// that share an instant, never of the page.
func TestReadAudit_UsesTheTenantIndex(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	old, pool := storeBefore(ctx, t, "0024")
	testenv.BackdatePartitions(t, pool) // made by 0022's runstream_index_partition
	// An event before the migration: a store in use keeps its indexes.
	first := workload.Event(workload.NewIdentity("t"), store.EventRunStarted, "", 1, 1, time.Now(), nil)
	if _, err := old.AppendEvent(ctx, first); err != nil {
		t.Fatal(err)
	}
	if _, err := postgres.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	testenv.SupersedeBackdated(t, pool) // made by 0024's
	s, err := postgres.New(pool, postgres.Config{AuditGrace: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	second := workload.Event(workload.NewIdentity("t"), store.EventRunStarted, "", 1, 1, time.Now(), nil)
	if _, err := s.AppendEvent(ctx, second); err != nil {
		t.Fatal(err)
	}
	var forms []string
	if err := pool.QueryRow(ctx, `SELECT array_agg(indexdef ORDER BY indexname) FROM pg_indexes
		WHERE schemaname = current_schema() AND indexname IN ('run_events_backdated_tenant', 'run_events_current_tenant')`).Scan(&forms); err != nil {
		t.Fatal(err)
	}
	if len(forms) != 2 || !strings.HasSuffix(forms[0], "(tenant_id, persisted_at)") ||
		!strings.HasSuffix(forms[1], tenantHashKey) {
		t.Fatalf("audit indexes of the partition before and the one after migration 0024: %q", forms)
	}
	// Both events are read, in order, through both forms, once the
	// horizon (a millisecond's grace after the append) has passed them.
	var page postgres.AuditPage
	testenv.WaitFor(t, 10*time.Second, "the audit horizon to pass both events", func() bool {
		page, err = s.ReadAudit(ctx, postgres.AuditQuery{
			AuditWindow: store.AuditWindow{TenantID: "t", From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Hour)}, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		return len(page.Events) >= 2
	})
	if len(page.Events) != 2 || page.Events[0].RunID != first.RunID || page.Events[1].RunID != second.RunID {
		t.Fatalf("the audit page over both partitions: %+v; want %s then %s", page.Events, first.RunID, second.RunID)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `PREPARE audit_page AS `+postgres.AuditSQL); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		if _, err := conn.Exec(ctx, `SET plan_cache_mode = `+mode); err != nil {
			t.Fatal(err)
		}
		rows, err := conn.Query(ctx, `EXPLAIN EXECUTE audit_page('t', now() - interval '1 hour', '', 0, now(), 10)`)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		plan := mode + ":\n" + strings.Join(lines, "\n")
		// One ordered range per partition, merged in order: every scan
		// reads a partition's _tenant index, and the only sort is
		// incremental over persisted_at (a Merge Append's "Sort Key" is
		// its order, not a sort).
		scanned := map[string]bool{}
		for i, l := range lines {
			node := strings.TrimLeft(strings.TrimSpace(l), "-> ")
			if strings.HasPrefix(node, "Sort ") && strings.Contains(node, "(cost=") {
				t.Fatalf("the audit page sorts:\n%s", plan)
			}
			if strings.HasPrefix(node, "Incremental Sort") {
				if i+2 >= len(lines) || !strings.Contains(lines[i+2], "Presorted Key: run_events.persisted_at") {
					t.Fatalf("the audit page sorts more than the events of one persistedAt:\n%s", plan)
				}
			}
			if strings.Contains(node, "Scan") {
				_, on, ok := strings.Cut(node, " using ")
				idx, _, _ := strings.Cut(on, " on ")
				if !ok || !strings.HasSuffix(idx, "_tenant") && idx != "run_events_tenant_persisted_at" {
					t.Fatalf("the audit page reads a partition without its _tenant index:\n%s", plan)
				}
				scanned[idx] = true
			}
		}
		for _, idx := range []string{"run_events_backdated_tenant", "run_events_current_tenant"} {
			if !scanned[idx] {
				t.Fatalf("the audit page does not read %s:\n%s", idx, plan)
			}
		}
	}
}
