package postgres_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// partitionOf returns the partition table holding each event of run id, in
// runSeq order.
func partitionOf(ctx context.Context, t *testing.T, pool *pgxpool.Pool, runID string) []string {
	t.Helper()
	rows, err := pool.Query(ctx, `SELECT tableoid::regclass::text FROM run_events WHERE run_id = $1 ORDER BY run_seq`, runID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// partitionNamed returns partition name as s's catalog has it now.
func partitionNamed(ctx context.Context, t *testing.T, s *postgres.Store, name string) postgres.Partition {
	t.Helper()
	parts, err := s.Partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("partition %s is not in the catalog", name)
	return postgres.Partition{}
}

// appendRun appends a started and a completed event of a new run of
// tenant_a and returns its identity.
func appendRun(ctx context.Context, t *testing.T, s *postgres.Store) workload.Identity {
	t.Helper()
	id := workload.NewIdentity("tenant_a")
	for _, ev := range []store.RunEventWrite{
		workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil),
		workload.Event(id, store.EventRunCompleted, "", 1, 1, time.Now(), nil),
	} {
		if _, err := s.AppendEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	return id
}

// TestPartitions_WholeRunsInOnePartition: a migrated store has the legacy
// partition and partitions from today on; a run's events all land in the
// newest partition that had begun at its first append, later partitions
// take later runs only, and every read returns them as before.
func TestPartitions_WholeRunsInOnePartition(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t, postgres.Config{})
	ctx := ctxT(t)
	parts, err := s.Partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) < 3 || !parts[0].Legacy || parts[0].Name != "run_events_legacy" {
		t.Fatalf("partitions of a fresh store: %+v, want the legacy one, today's and tomorrow's", parts)
	}
	now := time.Now()
	today := parts[len(parts)-2]
	if today.Epoch.After(now) || !today.Until.After(now) || today.Until.Sub(today.Epoch) != 24*time.Hour {
		t.Fatalf("partition %s is [%v, %v), want one day holding now (%v)", today.Name, today.Epoch, today.Until, now)
	}

	before := appendRun(ctx, t, s)
	if got := partitionOf(ctx, t, pool, before.RunID); len(got) != 2 || got[0] != today.Name || got[1] != today.Name {
		t.Fatalf("run's events in %v, want both in %s", got, today.Name)
	}
	// Minute-wide partitions from now on: the next run takes the newest
	// that has begun; the earlier run's later events stay with it.
	made, err := s.EnsurePartitions(ctx, time.Minute, 3*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if made != 0 {
		// Today's partition ends tomorrow: nothing new begins before then.
		t.Fatalf("EnsurePartitions after today's and tomorrow's: made %d, want 0 (they cover the next 3 minutes)", made)
	}
	if _, err := pool.Exec(ctx, `SELECT runstream_ensure_partitions('1 minute', '0')`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EnsurePartitions(ctx, 0, 0); err == nil || !strings.Contains(err.Error(), "at least 1m") {
		t.Fatalf("EnsurePartitions 0 wide: %v, want an error naming the 1m minimum", err)
	}
	if _, err := pool.Exec(ctx, `SELECT runstream_ensure_partitions('10 seconds', '0')`); err == nil || !strings.Contains(err.Error(), "at least 1 minute") {
		t.Fatalf("runstream_ensure_partitions 10 seconds wide: %v, want refused", err)
	}
	after := appendRun(ctx, t, s)
	if got := partitionOf(ctx, t, pool, after.RunID); len(got) != 2 || got[0] != today.Name {
		t.Fatalf("a run begun today: events in %v, want %s", got, today.Name)
	}
	if _, err := s.AppendEvent(ctx, workload.Event(before, "StepHeartbeatRecorded", "s", 1, 1, time.Now(), nil)); err != nil {
		t.Fatal(err)
	}
	if got := partitionOf(ctx, t, pool, before.RunID); len(got) != 3 || got[2] != today.Name {
		t.Fatalf("a run's later event in %v, want with its first ones in %s", got, today.Name)
	}
	evs, err := s.FetchEvents(ctx, before.RunID, store.FetchOptions{Limit: 10})
	if err != nil || len(evs) != 3 || evs[2].RunSeq != 3 {
		t.Fatalf("FetchEvents: %d events, %v; want 3", len(evs), err)
	}
	snap, err := s.ProjectSnapshotOf(ctx, before.RunID, "tenant_a")
	if err != nil || snap.LastEventSeq != 3 || snap.Status != store.RunCompleted {
		t.Fatalf("projection: seq %d status %s, %v; want 3 COMPLETED", snap.LastEventSeq, snap.Status, err)
	}
	dup := workload.Event(before, store.EventRunStarted, "", 1, 1, time.Now(), nil)
	if res, err := s.AppendEvent(ctx, dup); err != nil || !res.Idempotent || res.RunSeq != 1 {
		t.Fatalf("the first event again: %+v, %v; want idempotent at runSeq 1", res, err)
	}
}

// TestPartitions_RowsStayImmutable: every partition refuses UPDATE, DELETE
// and TRUNCATE, through the partitioned table and directly.
func TestPartitions_RowsStayImmutable(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t, postgres.Config{})
	ctx := ctxT(t)
	id := appendRun(ctx, t, s)
	part := partitionOf(ctx, t, pool, id.RunID)[0]
	// A row of a run from before partitioning (epoch -infinity), as an
	// upgraded store holds them.
	if _, err := pool.Exec(ctx, `INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
			tenant_id, project_id, environment_id, plan_id, plan_version, engine_attempt_id, logical_attempt_id,
			emitted_at, persisted_at)
		VALUES ('legacy-run', 1, gen_random_uuid(), 'RunStarted', 'k', 'tenant_a', 'p', 'e', 'pl', '1', 1, 1, 'x', now())`); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ table, run string }{
		{"run_events", id.RunID}, {part, id.RunID}, {"run_events", "legacy-run"}, {"run_events_legacy", "legacy-run"},
	} {
		for _, stmt := range []string{
			`UPDATE ` + tc.table + ` SET event_type = 'X' WHERE run_id = $1`,
			`DELETE FROM ` + tc.table + ` WHERE run_id = $1`,
		} {
			if _, err := pool.Exec(ctx, stmt, tc.run); err == nil || !strings.Contains(err.Error(), "immutable") {
				t.Fatalf("%s of run %s: %v, want refused as immutable", stmt, tc.run, err)
			}
		}
	}
	for _, table := range []string{"run_events", part, "run_events_legacy"} {
		if _, err := pool.Exec(ctx, `TRUNCATE `+table); err == nil || !strings.Contains(err.Error(), "immutable") {
			t.Fatalf("TRUNCATE %s: %v, want refused as immutable", table, err)
		}
	}
	if n := len(partitionOf(ctx, t, pool, id.RunID)); n != 2 {
		t.Fatalf("%d events left, want the 2 appended", n)
	}
	if got := partitionOf(ctx, t, pool, "legacy-run"); len(got) != 1 || got[0] != "run_events_legacy" {
		t.Fatalf("the legacy row is in %v, want run_events_legacy", got)
	}
}

// TestPartitions_ReadsTouchOnlyTheRunsPartition: appends, their duplicate
// probe, fetches and projections of a run read its own partition's
// indexes, never another's: the cost of a read does not grow with the
// number of partitions.
func TestPartitions_ReadsTouchOnlyTheRunsPartition(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t, postgres.Config{})
	ctx := ctxT(t)
	id := appendRun(ctx, t, s)
	home := partitionOf(ctx, t, pool, id.RunID)[0]
	scans := func() map[string]int64 {
		t.Helper()
		if _, err := pool.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
			t.Fatal(err)
		}
		rows, err := pool.Query(ctx, `SELECT relname, coalesce(idx_scan, 0) + coalesce(seq_scan, 0)
			FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname LIKE 'run\_events\_%'`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]int64{}
		for rows.Next() {
			var name string
			var n int64
			if err := rows.Scan(&name, &n); err != nil {
				t.Fatal(err)
			}
			out[name] = n
		}
		return out
	}
	// Statistics are flushed per backend: use one connection. The
	// backends the reset closes (the migration's, appendRun's) flush theirs
	// as they exit, which can be after the first count on a busy machine
	// (the migration reads run_events_legacy): count until it holds still.
	pool.Reset()
	was := scans()
	for settle := time.Now().Add(10 * time.Second); time.Now().Before(settle); {
		time.Sleep(200 * time.Millisecond)
		again := scans()
		if maps.Equal(again, was) {
			break
		}
		was = again
	}
	for range 5 {
		if _, err := s.AppendEvent(ctx, workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.FetchEvents(ctx, id.RunID, store.FetchOptions{Limit: 10}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ProjectSnapshotOf(ctx, id.RunID, ""); err != nil {
			t.Fatal(err)
		}
	}
	var now map[string]int64
	deadline := time.Now().Add(10 * time.Second)
	for {
		now = scans()
		if now[home] >= was[home]+15 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if now[home] < was[home]+15 {
		t.Fatalf("the run's partition %s was read %d times, want at least the 15 reads", home, now[home]-was[home])
	}
	for name, n := range now {
		if name != home && n != was[name] {
			t.Fatalf("partition %s was read %d times by reads of a run in %s", name, n-was[name], home)
		}
	}
}

// TestPartitions_RetireDetachArchiveDrop: the steps retention takes, in
// the store. A partition is held while new runs go to it, a run is open,
// or an event of its runs waits in the outbox; once retired, appends to
// its runs are RUN_ARCHIVED; it is read only once detached, dropped only
// once the manifest covers every tenant's count, and its runs rows stay as
// tombstones.
func TestPartitions_RetireDetachArchiveDrop(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t, postgres.Config{})
	ctx := ctxT(t)
	testenv.BackdatePartitions(t, pool)
	ended := appendRun(ctx, t, s)
	open := workload.NewIdentity("tenant_b")
	if _, err := s.AppendEvent(ctx, workload.Event(open, store.EventRunStarted, "", 1, 1, time.Now(), nil)); err != nil {
		t.Fatal(err)
	}
	name := partitionOf(ctx, t, pool, ended.RunID)[0]
	part := func() postgres.Partition { return partitionNamed(ctx, t, s, name) }
	hold := func(want postgres.Hold) {
		t.Helper()
		got, err := s.RetirementHold(ctx, part(), time.Now().Add(time.Hour), 0)
		if err != nil || got != want {
			t.Fatalf("RetirementHold of %s: %q, %v; want %q", name, got, err, want)
		}
	}
	hold(postgres.HoldRouting) // the newest partition that has begun
	if _, err := s.EnsurePartitions(ctx, time.Minute, 0); err != nil {
		t.Fatal(err)
	}
	hold(postgres.HoldOpenRuns)
	if _, err := s.AppendEvent(ctx, workload.Event(open, store.EventRunFailed, "", 1, 1, time.Now(), nil)); err != nil {
		t.Fatal(err)
	}
	if got, err := s.RetirementHold(ctx, part(), time.Now().Add(-time.Hour), 0); err != nil || got != postgres.HoldRecentEnds {
		t.Fatalf("RetirementHold with runs ended after the cutoff: %q, %v", got, err)
	}
	hold(postgres.HoldOutbox) // no relay ran
	if _, err := pool.Exec(ctx, `DELETE FROM outbox`); err != nil {
		t.Fatal(err)
	}
	hold(postgres.HoldNone)
	if err := s.DetachPartition(ctx, part()); err == nil || !strings.Contains(err.Error(), "not retired") {
		t.Fatalf("detaching before retiring: %v, want refused", err)
	}

	if err := s.RetirePartition(ctx, part()); err != nil {
		t.Fatal(err)
	}
	refused := func(when string) {
		t.Helper()
		for _, ev := range []store.RunEventWrite{
			workload.Event(ended, store.EventRunStarted, "", 1, 1, time.Now(), nil),    // a late duplicate
			workload.Event(ended, "StepHeartbeatRecorded", "s", 1, 1, time.Now(), nil), // a late new event
		} {
			_, err := s.AppendEvent(ctx, ev)
			var se *store.Error
			if !errors.As(err, &se) || se.Code != store.CodeRunArchived || !strings.Contains(se.Message, ended.RunID) {
				t.Fatalf("%s: append %s: %v, want RUN_ARCHIVED naming the run", when, ev.EventType, err)
			}
		}
		other := workload.Event(ended, store.EventRunStarted, "", 1, 1, time.Now(), nil)
		other.TenantID = "tenant_other"
		if _, err := s.AppendEvent(ctx, other); !errors.Is(err, store.ErrForbidden) {
			t.Fatalf("%s: another tenant's append to the run: %v, want the tenant error, not a word of the archive", when, err)
		}
	}
	refused("retired")
	if _, err := s.PartitionTenants(ctx, part()); !errors.Is(err, postgres.ErrNotDetached) {
		t.Fatalf("reading an attached partition: %v, want ErrNotDetached", err)
	}
	if err := s.WaitForWriters(ctx, part(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := s.DetachPartition(ctx, part()); err != nil {
		t.Fatal(err)
	}
	if p := part(); p.Attached || p.DetachPending || p.Bytes == 0 {
		t.Fatalf("after the detach: %+v, want detached and still on disk", p)
	}
	tenants, err := s.PartitionTenants(ctx, part())
	if err != nil || len(tenants) != 2 || tenants[0].TenantID != "tenant_a" || tenants[0].Events != 2 || tenants[1].Events != 2 {
		t.Fatalf("tenants of the detached partition: %+v, %v; want tenant_a and tenant_b with 2 events each", tenants, err)
	}
	var seqs []int64
	if err := s.ScanPartition(ctx, part(), "tenant_a", func(r store.RunEventRecord) error {
		seqs = append(seqs, r.RunSeq)
		return nil
	}); err != nil || len(seqs) != 2 || seqs[0] != 1 || seqs[1] != 2 {
		t.Fatalf("tenant_a's events: seqs %v, %v", seqs, err)
	}
	if err := s.DropPartition(ctx, part()); err == nil || !strings.Contains(err.Error(), "not archived") {
		t.Fatalf("dropping before the archive: %v, want refused", err)
	}
	file := func(tn postgres.TenantEvents, events int64) postgres.ArchiveFile {
		return postgres.ArchiveFile{TenantID: tn.TenantID, Location: "file:///archive/" + tn.TenantID, Events: events,
			Bytes: 100, Checksum: "c", MinPersistedAt: tn.MinPersistedAt, MaxPersistedAt: tn.MaxPersistedAt}
	}
	if err := s.RecordArchive(ctx, part(), file(tenants[0], 2)); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkArchived(ctx, part()); err == nil || !strings.Contains(err.Error(), "no file for tenant tenant_b") {
		t.Fatalf("marking archived with tenant_b missing: %v", err)
	}
	if err := s.RecordArchive(ctx, part(), file(tenants[1], 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkArchived(ctx, part()); err == nil || !strings.Contains(err.Error(), "holds 1 events, the table 2") {
		t.Fatalf("marking archived with a short file: %v", err)
	}
	if err := s.RecordArchive(ctx, part(), file(tenants[1], 2)); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkArchived(ctx, part()); err != nil {
		t.Fatal(err)
	}
	if err := s.DropPartition(ctx, part()); err != nil {
		t.Fatal(err)
	}
	if p := part(); p.DroppedAt == nil || p.ArchivedAt == nil || p.RetiredAt == nil || p.Bytes != 0 {
		t.Fatalf("after the drop: %+v", p)
	}
	refused("dropped")
	var lastSeq int64
	if err := pool.QueryRow(ctx, `SELECT last_seq FROM runs WHERE run_id = $1`, ended.RunID).Scan(&lastSeq); err != nil || lastSeq != 2 {
		t.Fatalf("the tombstone's last_seq %d, %v; want 2 as it ended", lastSeq, err)
	}
	next := appendRun(ctx, t, s)
	if got := partitionOf(ctx, t, pool, next.RunID); len(got) != 2 || got[0] == name {
		t.Fatalf("a new run after the removal: events in %v", got)
	}
}

// TestPartitions_UpgradeKeepsEveryRunWhereItIs: a store from before
// partitioning (migrations up to 0011) upgrades with its events in place:
// its runs stay in run_events_legacy with their later events, a duplicate
// of an old event is still found, new runs go to the new partitions, and
// reads see both.
func TestPartitions_UpgradeKeepsEveryRunWhereItIs(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s, pool := storeBefore(ctx, t, "0012")
	old := appendRun(ctx, t, s)
	applied, err := postgres.Migrate(ctx, pool)
	if err != nil || len(applied) == 0 || applied[0] != 12 {
		t.Fatalf("Migrate after 0011: applied %v, %v; want 12 first", applied, err)
	}
	if got := partitionOf(ctx, t, pool, old.RunID); len(got) != 2 || got[0] != "run_events_legacy" {
		t.Fatalf("an existing run's events in %v after the upgrade, want run_events_legacy", got)
	}
	if res, err := s.AppendEvent(ctx, workload.Event(old, store.EventRunStarted, "", 1, 1, time.Now(), nil)); err != nil || !res.Idempotent || res.RunSeq != 1 {
		t.Fatalf("an existing run's first event again: %+v, %v; want idempotent at runSeq 1", res, err)
	}
	if res, err := s.AppendEvent(ctx, workload.Event(old, "StepHeartbeatRecorded", "s", 1, 1, time.Now(), nil)); err != nil || res.RunSeq != 3 {
		t.Fatalf("an existing run's next event: %+v, %v; want runSeq 3", res, err)
	}
	if got := partitionOf(ctx, t, pool, old.RunID); len(got) != 3 || got[2] != "run_events_legacy" {
		t.Fatalf("an existing run's later event in %v, want run_events_legacy", got)
	}
	fresh := appendRun(ctx, t, s)
	if got := partitionOf(ctx, t, pool, fresh.RunID); len(got) != 2 || got[0] == "run_events_legacy" {
		t.Fatalf("a new run's events in %v, want a new partition", got)
	}
	for _, id := range []workload.Identity{old, fresh} {
		snap, err := s.ProjectSnapshotOf(ctx, id.RunID, "tenant_a")
		if err != nil || snap.Status != store.RunCompleted {
			t.Fatalf("run %s after the upgrade: %+v, %v", id.RunID, snap.Status, err)
		}
	}
}

// TestPartitions_RemovedRunsLeaveNoCheckpoint: a run whose partition
// retention detached has no events left in the store, so a checkpoint of
// it taken before its last events must not be served as its snapshot
// (a read answers not found, naming the archive; a batch projection
// leaves it out); dropping the partition deletes the run's checkpoint,
// and pruning the tombstones deletes any left, so a new run that later
// takes the same id starts from nothing.
func TestPartitions_RemovedRunsLeaveNoCheckpoint(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t, postgres.Config{SnapshotEvery: 64})
	ctx := ctxT(t)
	testenv.BackdatePartitions(t, pool)
	id := workload.NewIdentity("tenant_a")
	t0 := time.Now().Add(-time.Minute)
	appendStepsRun(ctx, t, s, id, 40, t0) // 81 events
	if snap, err := s.ProjectSnapshot(ctx, id.RunID); err != nil || snap.LastEventSeq != 81 {
		t.Fatalf("ProjectSnapshot: seq %d, %v", snap.LastEventSeq, err)
	}
	checkpointSeq := func() (seq int64) {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT coalesce(max(last_event_seq), 0) FROM run_snapshots WHERE run_id = $1`, id.RunID).Scan(&seq); err != nil {
			t.Fatal(err)
		}
		return seq
	}
	if got := checkpointSeq(); got != 81 {
		t.Fatalf("checkpoint at %d, want 81", got)
	}
	if _, err := s.AppendEvent(ctx, workload.Event(id, store.EventRunCompleted, "", 1, 1, time.Now(), nil)); err != nil {
		t.Fatal(err)
	}
	name := partitionOf(ctx, t, pool, id.RunID)[0]
	part := func() postgres.Partition { return partitionNamed(ctx, t, s, name) }
	if _, err := s.EnsurePartitions(ctx, time.Minute, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM outbox`); err != nil {
		t.Fatal(err)
	}
	if err := s.RetirePartition(ctx, part()); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitForWriters(ctx, part(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := s.DetachPartition(ctx, part()); err != nil {
		t.Fatal(err)
	}
	removed := func(when string) {
		t.Helper()
		snap, err := s.ProjectSnapshot(ctx, id.RunID)
		if !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), "archive") {
			t.Fatalf("%s: ProjectSnapshot = seq %d status %q, %v; want not found, naming the archive (the checkpoint at 81 is not the run's state)",
				when, snap.LastEventSeq, snap.Status, err)
		}
		many, err := s.ProjectSnapshots(ctx, []string{id.RunID})
		if err != nil || len(many) != 0 {
			t.Fatalf("%s: ProjectSnapshots = %+v, %v; want the run left out", when, many, err)
		}
	}
	removed("detached")
	tenants, err := s.PartitionTenants(ctx, part())
	if err != nil {
		t.Fatal(err)
	}
	for _, tn := range tenants {
		if err := s.RecordArchive(ctx, part(), postgres.ArchiveFile{TenantID: tn.TenantID, Location: "file:///archive/" + tn.TenantID,
			Events: tn.Events, Bytes: 100, Checksum: "c", MinPersistedAt: tn.MinPersistedAt, MaxPersistedAt: tn.MaxPersistedAt}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.MarkArchived(ctx, part()); err != nil {
		t.Fatal(err)
	}
	if err := s.DropPartition(ctx, part()); err != nil {
		t.Fatal(err)
	}
	if got := checkpointSeq(); got != 0 {
		t.Fatalf("after the drop the run's checkpoint at %d is still stored", got)
	}
	removed("dropped")

	// A checkpoint a version before this one left behind goes with the
	// tombstone.
	if _, err := pool.Exec(ctx, `INSERT INTO run_snapshots (run_id, last_event_seq, snapshot) VALUES ($1, 81, '{"runId": "x", "lastEventSeq": 81}')`, id.RunID); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PruneTombstones(ctx, time.Now().Add(time.Hour), 10); err != nil || n != 1 {
		t.Fatalf("PruneTombstones = %d, %v; want the one run", n, err)
	}
	if got := checkpointSeq(); got != 0 {
		t.Fatalf("after the tombstone went, a checkpoint at %d is still stored", got)
	}
	appendStepsRun(ctx, t, s, id, 40, time.Now()) // the same id, a new run
	if snap, err := s.ProjectSnapshot(ctx, id.RunID); err != nil || snap.LastEventSeq != 81 || snap.Status != "RUNNING" || len(snap.Steps) != 40 {
		t.Fatalf("the new run with the old id: seq %d status %q steps %d, %v", snap.LastEventSeq, snap.Status, len(snap.Steps), err)
	}
}
