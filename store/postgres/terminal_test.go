package postgres_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// The runs row records when its run ended (migration 0010): the persistedAt
// of its first terminal event, the same instant the reducer stamps as the
// snapshot's terminalAt, and the heads convergence reads carry it.
func TestTerminalAt_FirstTerminalEventInRunsAndHeads(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t, postgres.Config{SnapshotEvery: 1000})
	ctx := ctxT(t)
	t0 := time.Date(2026, 2, 16, 10, 0, 0, 0, time.UTC)
	open := workload.NewIdentity("tenant_a")
	ended := workload.NewIdentity("tenant_a")
	for _, ev := range []store.RunEventWrite{
		workload.Event(open, store.EventRunStarted, "", 1, 1, t0, nil),
		workload.Event(ended, store.EventRunStarted, "", 1, 1, t0, nil),
		workload.Event(ended, store.EventRunFailed, "", 1, 1, t0, nil),
		workload.Event(ended, store.EventRunCancelled, "", 1, 1, t0, nil), // frozen: changes nothing
		workload.Event(ended, "StepHeartbeatRecorded", "s", 1, 1, t0, nil),
	} {
		if _, err := s.AppendEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := s.FetchEvents(ctx, ended.RunID, store.FetchOptions{Limit: 10})
	if err != nil || len(evs) != 4 {
		t.Fatalf("events of the ended run: %d, %v", len(evs), err)
	}
	failedAt := evs[1].PersistedAt

	heads, err := s.RunsBefore(ctx, "", time.Now().Add(time.Hour), 10)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]store.RunHead{}
	for _, h := range heads {
		got[h.RunID] = h
	}
	if h := got[open.RunID]; !h.TerminalAt.IsZero() {
		t.Fatalf("open run's head has TerminalAt %v, want zero", h.TerminalAt)
	}
	if h := got[ended.RunID]; store.FormatPersistedAt(h.TerminalAt) != failedAt {
		t.Fatalf("ended run's head TerminalAt %v, want the RunFailed's persistedAt %s", h.TerminalAt, failedAt)
	}
	snap, err := s.ProjectSnapshot(ctx, ended.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if snap.TerminalAt != failedAt || snap.Status != store.RunFailed {
		t.Fatalf("projection: status %s terminalAt %q, want FAILED at %s", snap.Status, snap.TerminalAt, failedAt)
	}
	h := got[ended.RunID]
	if h.ExpiredAt(h.TerminalAt.Add(time.Hour-time.Microsecond), time.Hour) || !h.ExpiredAt(h.TerminalAt.Add(time.Hour), time.Hour) {
		t.Fatal("ExpiredAt: a run expires exactly ttl after its terminal event")
	}
	if h.ExpiredAt(h.TerminalAt.Add(1000*time.Hour), 0) {
		t.Fatal("ExpiredAt with ttl 0 must keep every run")
	}
	if oh := got[open.RunID]; oh.ExpiredAt(time.Now().Add(1000*time.Hour), time.Hour) {
		t.Fatal("an open run never expires")
	}

	// A checkpoint from before snapshots carried terminalAt: the projection
	// still has it, from the runs row.
	legacy := snap
	legacy.TerminalAt = ""
	if _, err := pool.Exec(ctx, `INSERT INTO run_snapshots (run_id, last_event_seq, snapshot)
		VALUES ($1, $2, jsonb_build_object('runId', $1::text, 'tenantId', 'tenant_a', 'status', 'FAILED', 'lastEventSeq', $2::bigint, 'steps', '[]'::jsonb, 'artifacts', '[]'::jsonb, 'updatedAt', $3::text))`,
		ended.RunID, legacy.LastEventSeq, legacy.UpdatedAt); err != nil {
		t.Fatal(err)
	}
	snap2, err := s.ProjectSnapshot(ctx, ended.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if snap2.TerminalAt != failedAt {
		t.Fatalf("projection over a legacy checkpoint: terminalAt %q, want %s", snap2.TerminalAt, failedAt)
	}
}

// An existing deployment's runs get their terminal_at from their events
// when migration 0010 applies.
func TestTerminalAt_MigrationFillsExistingRuns(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s, pool := storeBefore(ctx, t, "0010")
	t0 := time.Date(2026, 2, 16, 10, 0, 0, 0, time.UTC)
	open, ended := workload.NewIdentity("tenant_a"), workload.NewIdentity("tenant_a")
	for _, ev := range []store.RunEventWrite{
		workload.Event(open, store.EventRunStarted, "", 1, 1, t0, nil),
		workload.Event(ended, store.EventRunStarted, "", 1, 1, t0, nil),
		workload.Event(ended, store.EventRunCompleted, "", 1, 1, t0, nil),
		workload.Event(ended, store.EventRunFailed, "", 1, 1, t0, nil),
	} {
		if _, err := s.AppendEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	applied, err := postgres.Migrate(ctx, pool)
	if err != nil || len(applied) == 0 || applied[0] != 10 {
		t.Fatalf("Migrate after 0009: applied %v, %v; want 10 first", applied, err)
	}
	evs, err := s.FetchEvents(ctx, ended.RunID, store.FetchOptions{Limit: 10})
	if err != nil || len(evs) != 3 {
		t.Fatalf("events: %d, %v", len(evs), err)
	}
	var openAt, endedAt *time.Time
	if err := pool.QueryRow(ctx, `SELECT (SELECT terminal_at FROM runs WHERE run_id = $1), (SELECT terminal_at FROM runs WHERE run_id = $2)`,
		open.RunID, ended.RunID).Scan(&openAt, &endedAt); err != nil {
		t.Fatal(err)
	}
	if openAt != nil {
		t.Fatalf("open run's terminal_at = %v, want NULL", openAt)
	}
	if endedAt == nil || store.FormatPersistedAt(*endedAt) != evs[1].PersistedAt {
		t.Fatalf("ended run's terminal_at = %v, want the RunCompleted's persistedAt %s (not the later RunFailed's)", endedAt, evs[1].PersistedAt)
	}
}

// storeBefore is a store in a fresh schema migrated up to, and not
// including, the migration whose file name starts with version: what an
// existing deployment has when that migration is about to apply.
func storeBefore(ctx context.Context, t *testing.T, version string) (*postgres.Store, *pgxpool.Pool) {
	t.Helper()
	pool, _ := testenv.Postgres(t, 8)
	before := fstest.MapFS{}
	entries, err := os.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() >= version {
			continue
		}
		b, err := os.ReadFile(filepath.Join("migrations", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		before["migrations/"+e.Name()] = &fstest.MapFile{Data: b}
	}
	if _, err := postgres.MigrateFS(ctx, pool, before, "migrations", "schema_migrations"); err != nil {
		t.Fatal(err)
	}
	s, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return s, pool
}
