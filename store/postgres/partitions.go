package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/runstream/runstream/store"
)

// Partition is one partition of run_events as runstream's catalog
// (run_event_partitions, migration 0014) records it. Every event of a run
// is in the one partition whose Epoch the run carries (runs.run_epoch):
// whole runs leave the store together when retention drops a partition,
// which it does in steps recorded here (retired, detached, archived,
// dropped) so that an interrupted pass resumes where it stopped.
type Partition struct {
	// Name is the partition's table.
	Name string
	// Legacy marks run_events_legacy, the table that held every event
	// before partitioning, and the later events of runs it holds; its
	// epoch is -infinity and Epoch is zero.
	Legacy bool
	// Epoch and Until bound the partition: its runs began at or after
	// Epoch (in the newest partition that had begun) and before Until.
	Epoch, Until time.Time
	CreatedAt    time.Time
	// RetiredAt: appends to its runs are refused (RUN_ARCHIVED) and no
	// new run is routed to it. ArchivedAt: every tenant's events are in
	// the archive, verified. DroppedAt: the table is gone; its runs rows
	// stay as tombstones. Nil until the step is done.
	RetiredAt, ArchivedAt, DroppedAt *time.Time
	// Attached: the table is a partition of run_events (false once
	// retention detached it); DetachPending: a DETACH CONCURRENTLY was
	// interrupted and needs FINALIZE.
	Attached, DetachPending bool
	// Bytes is the table's size on disk (heap, indexes and TOAST); 0 once
	// dropped.
	Bytes int64
}

// epochArg is the value that names p's epoch in a query: -infinity for
// the legacy partition.
func (p Partition) epochArg() pgtype.Timestamptz {
	if p.Legacy {
		return pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	}
	return pgtype.Timestamptz{Time: p.Epoch, Valid: true}
}

// EnsurePartitions makes sure partitions of width exist from now until at
// least now+ahead (runstream_ensure_partitions, migration 0014) and
// returns how many it created. Appends never wait for it: a new run takes
// the newest partition that has begun, so a store whose partitions were
// not kept ahead keeps taking runs into its newest one.
func (s *Store) EnsurePartitions(ctx context.Context, width, ahead time.Duration) (int, error) {
	if width < time.Minute {
		return 0, fmt.Errorf("a run_events partition must span at least 1m, got %v", width)
	}
	if ahead < 0 {
		return 0, fmt.Errorf("partitions are made ahead by 0 or more, got %v", ahead)
	}
	var made int
	if err := s.pool.QueryRow(ctx, `SELECT runstream_ensure_partitions($1, $2)`, width, ahead).Scan(&made); err != nil {
		return 0, classify(fmt.Errorf("creating run_events partitions %v wide, %v ahead: %w", width, ahead, err))
	}
	return made, nil
}

const partitionsSQL = `SELECT p.name, p.epoch = '-infinity', p.epoch, p.until, p.created_at,
	p.retired_at, p.archived_at, p.dropped_at,
	i.inhrelid IS NOT NULL, coalesce(i.inhdetachpending, false),
	coalesce(pg_total_relation_size(c.oid), 0)
FROM run_event_partitions p
LEFT JOIN pg_class c ON c.relname = p.name AND c.relnamespace = current_schema()::regnamespace
LEFT JOIN pg_inherits i ON i.inhrelid = c.oid AND i.inhparent = 'run_events'::regclass`

func scanPartition(row pgx.CollectableRow) (Partition, error) {
	var (
		p     Partition
		epoch pgtype.Timestamptz
	)
	err := row.Scan(&p.Name, &p.Legacy, &epoch, &p.Until, &p.CreatedAt, &p.RetiredAt, &p.ArchivedAt, &p.DroppedAt,
		&p.Attached, &p.DetachPending, &p.Bytes)
	if epoch.InfinityModifier == pgtype.Finite {
		p.Epoch = epoch.Time
	}
	return p, err
}

// Partitions lists run_events' partitions, oldest first, with their sizes
// and retention state.
func (s *Store) Partitions(ctx context.Context) ([]Partition, error) {
	rows, err := s.pool.Query(ctx, partitionsSQL+` ORDER BY p.epoch`)
	if err != nil {
		return nil, classify(fmt.Errorf("listing run_events partitions: %w", err))
	}
	parts, err := pgx.CollectRows(rows, scanPartition)
	if err != nil {
		return nil, classify(fmt.Errorf("listing run_events partitions: %w", err))
	}
	return parts, nil
}

// PartitionRuns counts p's runs and those still open (no terminal event),
// and gives the latest end among them: what holds a partition back from
// retention. It reads every runs row of the partition.
func (s *Store) PartitionRuns(ctx context.Context, p Partition) (runs, open int64, lastEnd *time.Time, err error) {
	err = s.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE terminal_at IS NULL), max(terminal_at)
		FROM runs WHERE run_epoch = $1`, p.epochArg()).Scan(&runs, &open, &lastEnd)
	if err != nil {
		return 0, 0, nil, classify(fmt.Errorf("counting the runs of partition %s: %w", p.Name, err))
	}
	return runs, open, lastEnd, nil
}

// Hold is why a partition cannot be retired yet; empty when it can.
type Hold string

// What can hold a partition back from retention.
const (
	HoldNone        Hold = ""
	HoldRouting     Hold = "new runs go to it, or will"
	HoldOpenRuns    Hold = "runs still open"
	HoldRecentEnds  Hold = "runs ended within the retention"
	HoldOutbox      Hold = "events not yet relayed to Kafka"
	HoldDeadLetters Hold = "dead letters of its runs (retry or discard them)"
)

// RetirementHold says whether p may be retired at now with every run
// ended before cutoff, and if not, the first reason found: new runs go to
// the partition (it is the newest that has begun) or will (it has not
// begun), a run is open or ended at or after cutoff, or one of its runs
// has an event waiting in the outbox or a dead letter.
//
// grace widens "new runs go to it": a partition is held until a later one
// began at least grace ago, so that an append which chose it just before
// (its transaction not yet committed, so its run not yet visible) has
// long ended.
func (s *Store) RetirementHold(ctx context.Context, p Partition, cutoff time.Time, grace time.Duration) (Hold, error) {
	var routing, open, recent, outbox, dead bool
	// Held unless a later partition began at least grace ago: with none
	// begun that long ago (and not retired), every partition is held.
	err := s.pool.QueryRow(ctx, `SELECT
		$1 >= coalesce((SELECT max(epoch) FROM run_event_partitions
			WHERE epoch <= clock_timestamp() - $3::interval AND retired_at IS NULL), '-infinity'),
		EXISTS (SELECT 1 FROM runs WHERE run_epoch = $1 AND terminal_at IS NULL),
		EXISTS (SELECT 1 FROM runs WHERE run_epoch = $1 AND terminal_at >= $2),
		EXISTS (SELECT 1 FROM outbox o JOIN runs r ON r.run_id = o.run_id WHERE r.run_epoch = $1),
		EXISTS (SELECT 1 FROM outbox_dead_letters d JOIN runs r ON r.run_id = d.run_id WHERE r.run_epoch = $1)`,
		p.epochArg(), cutoff, grace).Scan(&routing, &open, &recent, &outbox, &dead)
	if err != nil {
		return HoldNone, classify(fmt.Errorf("checking whether partition %s can be retired: %w", p.Name, err))
	}
	switch {
	case routing && !p.Legacy:
		return HoldRouting, nil
	case open:
		return HoldOpenRuns, nil
	case recent:
		return HoldRecentEnds, nil
	case outbox:
		return HoldOutbox, nil
	case dead:
		return HoldDeadLetters, nil
	}
	return HoldNone, nil
}

// UnretirePartition takes back the retirement of p, still attached: a run
// appeared in it after all (an append that chose it before it was retired
// committed late), so it must keep taking that run's events.
func (s *Store) UnretirePartition(ctx context.Context, p Partition) error {
	if _, err := s.pool.Exec(ctx, `UPDATE run_event_partitions SET retired_at = NULL
		WHERE epoch = $1 AND archived_at IS NULL`, p.epochArg()); err != nil {
		return classify(fmt.Errorf("taking back the retirement of partition %s: %w", p.Name, err))
	}
	return nil
}

// RetirePartition marks p retired: from its commit on, appends to its runs
// are refused (RUN_ARCHIVED) and no new run is routed to it. An append
// that read the catalog before may still insert: WaitForWriters
// afterwards waits those out.
func (s *Store) RetirePartition(ctx context.Context, p Partition) error {
	tag, err := s.pool.Exec(ctx, `UPDATE run_event_partitions SET retired_at = clock_timestamp()
		WHERE epoch = $1 AND retired_at IS NULL`, p.epochArg())
	if err != nil {
		return classify(fmt.Errorf("retiring partition %s: %w", p.Name, err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("retiring partition %s: it is not in the catalog or already retired", p.Name)
	}
	return nil
}

// WaitForWriters waits until every transaction that wrote to p has ended:
// after a RetirePartition, an append that read the catalog just before
// may still insert into p; once this returns, none can. It takes p's
// SHARE lock, which waits for the ROW EXCLUSIVE every writer holds until
// its end, and gives it back at once; it waits for nothing else (a long
// transaction elsewhere does not hold it up), and at most lockWait.
func (s *Store) WaitForWriters(ctx context.Context, p Partition, lockWait time.Duration) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, fmt.Sprintf(`SET LOCAL lock_timeout = %d`, lockWait.Milliseconds())); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `LOCK TABLE `+pgx.Identifier{p.Name}.Sanitize()+` IN SHARE MODE`)
		return err
	})
	if err != nil {
		return classify(fmt.Errorf("waiting for the appends still writing to partition %s (at most %v): %w", p.Name, lockWait, err))
	}
	return nil
}

// DetachPartition detaches a retired p from run_events with DETACH
// PARTITION CONCURRENTLY, which appends do not wait for, or finishes a
// detach that was interrupted (FINALIZE). Once detached its rows can no
// longer change. A detached p is left as it is.
func (s *Store) DetachPartition(ctx context.Context, p Partition) error {
	if p.RetiredAt == nil {
		return fmt.Errorf("detaching partition %s: it is not retired (appends could still reach it)", p.Name)
	}
	var stmt string
	switch {
	case p.DetachPending:
		stmt = `ALTER TABLE run_events DETACH PARTITION ` + pgx.Identifier{p.Name}.Sanitize() + ` FINALIZE`
	case p.Attached:
		stmt = `ALTER TABLE run_events DETACH PARTITION ` + pgx.Identifier{p.Name}.Sanitize() + ` CONCURRENTLY`
	default:
		return nil
	}
	if _, err := s.pool.Exec(ctx, stmt); err != nil {
		return classify(fmt.Errorf("detaching partition %s: %w", p.Name, err))
	}
	return nil
}

// ErrNotDetached is returned by the partition reads and DropPartition for
// a partition still attached to run_events: only a detached table's rows
// can no longer change.
var ErrNotDetached = errors.New("the partition is still attached to run_events (retire and detach it first)")

// TenantEvents is one tenant's share of a detached partition, counted in
// the table: what its archive file must hold.
type TenantEvents struct {
	TenantID                       string
	Events                         int64
	MinPersistedAt, MaxPersistedAt time.Time
}

// PartitionTenants counts each tenant's events in detached p, by tenant.
func (s *Store) PartitionTenants(ctx context.Context, p Partition) ([]TenantEvents, error) {
	if p.Attached || p.DetachPending {
		return nil, fmt.Errorf("counting the tenants of partition %s: %w", p.Name, ErrNotDetached)
	}
	rows, err := s.pool.Query(ctx, `SELECT tenant_id, count(*), min(persisted_at), max(persisted_at) FROM `+
		pgx.Identifier{p.Name}.Sanitize()+` GROUP BY tenant_id ORDER BY tenant_id`)
	if err != nil {
		return nil, classify(fmt.Errorf("counting the tenants of partition %s: %w", p.Name, err))
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (TenantEvents, error) {
		var t TenantEvents
		err := row.Scan(&t.TenantID, &t.Events, &t.MinPersistedAt, &t.MaxPersistedAt)
		return t, err
	})
	if err != nil {
		return nil, classify(fmt.Errorf("counting the tenants of partition %s: %w", p.Name, err))
	}
	return out, nil
}

// ScanPartition calls fn with each of tenant's events in detached p, in
// the audit order (persistedAt, then runId byte by byte, then runSeq):
// the order its archive file is written in, and the order the checksum is
// taken in. The rows stream; fn's error stops the scan.
func (s *Store) ScanPartition(ctx context.Context, p Partition, tenant string, fn func(store.RunEventRecord) error) error {
	if p.Attached || p.DetachPending {
		return fmt.Errorf("reading partition %s: %w", p.Name, ErrNotDetached)
	}
	rows, err := s.pool.Query(ctx, `SELECT run_id, run_seq, event_id::text, event_type, idempotency_key, tenant_id,
		project_id, environment_id, plan_id, plan_version, coalesce(step_id, ''),
		engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload::text
		FROM `+pgx.Identifier{p.Name}.Sanitize()+` WHERE tenant_id = $1
		ORDER BY persisted_at, run_id COLLATE "C", run_seq`, tenant)
	if err != nil {
		return classify(fmt.Errorf("reading tenant %s's events of partition %s: %w", tenant, p.Name, err))
	}
	defer rows.Close()
	for rows.Next() {
		rec, err := scanRecord(rows)
		if err != nil {
			return classify(fmt.Errorf("reading tenant %s's events of partition %s: %w", tenant, p.Name, err))
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return classify(fmt.Errorf("reading tenant %s's events of partition %s: %w", tenant, p.Name, err))
	}
	return nil
}

// ArchiveFile is one manifest row (run_event_archives): a tenant's events
// of a partition in one archive file, verified after it was written.
type ArchiveFile struct {
	TenantID string
	// Location is the file's URL in the archive; NoArchive when the
	// operator removed the events with no archive (--archive-url none).
	Location                       string
	Events, Bytes                  int64
	Checksum                       string
	MinPersistedAt, MaxPersistedAt time.Time
}

// NoArchive is the manifest's location of a tenant's events that
// retention removed with no archive, as the operator asked
// (--archive-url none): they are gone, and audit reads say so.
const NoArchive = "none"

// RecordArchive writes (or replaces) the manifest row of f in p. Write it
// only for a file read back and matched against the table.
func (s *Store) RecordArchive(ctx context.Context, p Partition, f ArchiveFile) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO run_event_archives AS a (epoch, tenant_id, location, events, bytes, checksum,
			min_persisted_at, max_persisted_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (epoch, tenant_id) DO UPDATE SET location = EXCLUDED.location, events = EXCLUDED.events,
			bytes = EXCLUDED.bytes, checksum = EXCLUDED.checksum, min_persisted_at = EXCLUDED.min_persisted_at,
			max_persisted_at = EXCLUDED.max_persisted_at, verified_at = clock_timestamp()`,
		p.epochArg(), f.TenantID, f.Location, f.Events, f.Bytes, f.Checksum, f.MinPersistedAt, f.MaxPersistedAt)
	if err != nil {
		return classify(fmt.Errorf("recording the archive of tenant %s's events of partition %s: %w", f.TenantID, p.Name, err))
	}
	return nil
}

// ForgetArchive removes tenant's manifest row of p, whose file no longer
// holds what the row says, and takes back p's archived mark: the
// partition is not dropped, and the next pass writes the file again from
// the detached table, which still holds the events.
func (s *Store) ForgetArchive(ctx context.Context, p Partition, tenant string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM run_event_archives WHERE epoch = $1 AND tenant_id = $2`, p.epochArg(), tenant); err != nil {
			return classify(fmt.Errorf("removing tenant %s's manifest row of partition %s: %w", tenant, p.Name, err))
		}
		if _, err := tx.Exec(ctx, `UPDATE run_event_partitions SET archived_at = NULL WHERE epoch = $1 AND dropped_at IS NULL`, p.epochArg()); err != nil {
			return classify(fmt.Errorf("taking back partition %s's archived mark: %w", p.Name, err))
		}
		return nil
	})
}

// Archives lists p's manifest rows, by tenant.
func (s *Store) Archives(ctx context.Context, p Partition) ([]ArchiveFile, error) {
	rows, err := s.pool.Query(ctx, `SELECT tenant_id, location, events, bytes, checksum, min_persisted_at, max_persisted_at
		FROM run_event_archives WHERE epoch = $1 ORDER BY tenant_id`, p.epochArg())
	if err != nil {
		return nil, classify(fmt.Errorf("reading the archive manifest of partition %s: %w", p.Name, err))
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ArchiveFile, error) {
		var f ArchiveFile
		err := row.Scan(&f.TenantID, &f.Location, &f.Events, &f.Bytes, &f.Checksum, &f.MinPersistedAt, &f.MaxPersistedAt)
		return f, err
	})
	if err != nil {
		return nil, classify(fmt.Errorf("reading the archive manifest of partition %s: %w", p.Name, err))
	}
	return out, nil
}

// MarkArchived records that every tenant's events of detached p are in the
// archive, verified, when the manifest has a row for each tenant of the
// table with its count; otherwise it changes nothing and says what
// differs.
func (s *Store) MarkArchived(ctx context.Context, p Partition) error {
	tenants, err := s.PartitionTenants(ctx, p)
	if err != nil {
		return err
	}
	files, err := s.Archives(ctx, p)
	if err != nil {
		return err
	}
	byTenant := make(map[string]ArchiveFile, len(files))
	for _, f := range files {
		byTenant[f.TenantID] = f
	}
	for _, t := range tenants {
		f, ok := byTenant[t.TenantID]
		if !ok {
			return fmt.Errorf("partition %s: the manifest has no file for tenant %s (%d events in the table); nothing marked", p.Name, t.TenantID, t.Events)
		}
		if f.Events != t.Events {
			return fmt.Errorf("partition %s: the manifest's file for tenant %s holds %d events, the table %d; nothing marked", p.Name, t.TenantID, f.Events, t.Events)
		}
	}
	if _, err := s.pool.Exec(ctx, `UPDATE run_event_partitions SET archived_at = clock_timestamp()
		WHERE epoch = $1 AND archived_at IS NULL`, p.epochArg()); err != nil {
		return classify(fmt.Errorf("marking partition %s archived: %w", p.Name, err))
	}
	return nil
}

// DropPartition drops detached, archived p's table and records it. Its
// runs rows stay: an append to one of them is RUN_ARCHIVED.
func (s *Store) DropPartition(ctx context.Context, p Partition) error {
	if p.Attached || p.DetachPending {
		return fmt.Errorf("dropping partition %s: %w", p.Name, ErrNotDetached)
	}
	if p.ArchivedAt == nil {
		return fmt.Errorf("dropping partition %s: it is not archived and verified; nothing dropped", p.Name)
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DROP TABLE IF EXISTS `+pgx.Identifier{p.Name}.Sanitize()); err != nil {
			return classify(fmt.Errorf("dropping partition %s: %w", p.Name, err))
		}
		// The checkpoints of its runs go with their events: the store
		// stays flat, and none is ever taken for a later run's.
		if _, err := tx.Exec(ctx, `DELETE FROM run_snapshots c USING runs r
			WHERE c.run_id = r.run_id AND r.run_epoch = $1`, p.epochArg()); err != nil {
			return classify(fmt.Errorf("deleting the checkpoints of partition %s's runs: %w", p.Name, err))
		}
		if _, err := tx.Exec(ctx, `UPDATE run_event_partitions SET dropped_at = clock_timestamp()
			WHERE epoch = $1 AND dropped_at IS NULL`, p.epochArg()); err != nil {
			return classify(fmt.Errorf("recording partition %s dropped: %w", p.Name, err))
		}
		return nil
	})
}

// PruneTombstones deletes the runs rows of every partition dropped before
// droppedBefore, batch rows per statement (each its own short
// transaction, by the run_epoch index), and returns how many it deleted.
// Those runs have no event left in the store: each row only answered a
// late append RUN_ARCHIVED and told reads where the events went. An
// append racing the DELETE waits for the row's lock and then sees either
// the tombstone (409) or no run (a new one at runSeq 1).
func (s *Store) PruneTombstones(ctx context.Context, droppedBefore time.Time, batch int) (int64, error) {
	if batch < 1 {
		return 0, fmt.Errorf("pruning tombstones: a batch of %d rows; want at least 1", batch)
	}
	var total int64
	for {
		// A checkpoint left of a tombstone's run (by a version that did not
		// delete them with the partition) goes with it, or a new run
		// taking the id would start from it.
		var n int64
		err := s.pool.QueryRow(ctx, `WITH gone AS (
			DELETE FROM runs WHERE run_id IN (
				SELECT r.run_id FROM runs r
				 WHERE r.run_epoch IN (SELECT epoch FROM run_event_partitions WHERE dropped_at < $1)
				 LIMIT $2)
			RETURNING run_id),
		checkpoints AS (DELETE FROM run_snapshots WHERE run_id IN (SELECT run_id FROM gone))
		SELECT count(*) FROM gone`, droppedBefore, batch).Scan(&n)
		if err != nil {
			return total, classify(fmt.Errorf("deleting the tombstones of partitions dropped before %s: %w", droppedBefore.Format(time.RFC3339), err))
		}
		total += n
		if n < int64(batch) {
			return total, nil
		}
	}
}

// OutboxHolds reports whether an event of one of p's runs still waits in
// the outbox: after a retirement, an append that read the catalog before
// may have added one, and the relay must publish it before the partition
// is detached (it reads the event from the partition).
func (s *Store) OutboxHolds(ctx context.Context, p Partition) (bool, error) {
	var waiting bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM outbox o JOIN runs r ON r.run_id = o.run_id WHERE r.run_epoch = $1)`,
		p.epochArg()).Scan(&waiting); err != nil {
		return false, classify(fmt.Errorf("looking for outbox rows of partition %s: %w", p.Name, err))
	}
	return waiting, nil
}

// TryRetentionLock takes the schema's retention lock (a session advisory
// lock on a connection of its own) unless another process holds it: one
// retention pass at a time. release gives it back; ok is false when
// another holds it.
func (s *Store) TryRetentionLock(ctx context.Context) (release func(), ok bool, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, false, classify(fmt.Errorf("taking the retention lock: %w", err))
	}
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtextextended('runstream_retention|' || current_schema(), 0))`).Scan(&ok); err != nil {
		conn.Release()
		return nil, false, classify(fmt.Errorf("taking the retention lock: %w", err))
	}
	if !ok {
		conn.Release()
		return nil, false, nil
	}
	return func() {
		// A connection that cannot say unlock is closed: the server then
		// releases the lock with the session.
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, `SELECT pg_advisory_unlock(hashtextextended('runstream_retention|' || current_schema(), 0))`); err != nil {
			_ = conn.Conn().Close(uctx)
		}
		conn.Release()
	}, true, nil
}

// ArchivedRange is a part of a tenant's events that is no longer in
// run_events because retention took its partition out: what an audit
// read over that time must say instead of answering with nothing.
type ArchivedRange struct {
	Partition string
	// State is "archiving" while the partition is detached and its files
	// are being written, then "archived".
	State string
	// From and To bound the events' persistedAt (both included). From
	// RunArchive they are zero while archiving.
	From, To time.Time
	// Location is the archive file's URL; empty while archiving.
	Location string
	// Events counts them; 0 while archiving (not counted).
	Events int64
}

// ArchivedRanges returns the parts of tenant's events persisted in [from,
// to) (to zero: no end) that retention took out of run_events: the
// manifest's files of the tenant in partitions no longer attached, and
// the tenant's events in each partition detached but not yet archived
// (State "archiving": they are in neither place an audit read looks),
// in persistedAt order.
func (s *Store) ArchivedRanges(ctx context.Context, tenant string, from, to time.Time) ([]ArchivedRange, error) {
	for attempt := 0; ; attempt++ {
		out, err := s.archivedRanges(ctx, tenant, from, to)
		var pgErr *pgconn.PgError
		if attempt == 0 && errors.As(err, &pgErr) && pgErr.Code == pgerrcode.UndefinedTable {
			// A partition being archived was dropped between the two
			// reads: it is in the manifest now.
			continue
		}
		return out, err
	}
}

func (s *Store) archivedRanges(ctx context.Context, tenant string, from, to time.Time) ([]ArchivedRange, error) {
	var end any
	if !to.IsZero() {
		end = to
	}
	fail := func(err error) error {
		return classify(fmt.Errorf("reading the archived ranges of tenant %s: %w", tenant, err))
	}
	rows, err := s.pool.Query(ctx, `SELECT p.name, 'archived', a.min_persisted_at, a.max_persisted_at, a.location, a.events
		FROM run_event_archives a JOIN run_event_partitions p ON p.epoch = a.epoch
		WHERE a.tenant_id = $1 AND p.archived_at IS NOT NULL
			AND a.max_persisted_at >= $2 AND ($3::timestamptz IS NULL OR a.min_persisted_at < $3)
		UNION ALL
		SELECT p.name, 'archiving', NULL, NULL, '', 0
		FROM run_event_partitions p
		WHERE p.retired_at IS NOT NULL AND p.archived_at IS NULL
			AND NOT EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhparent = 'run_events'::regclass
				AND i.inhrelid = to_regclass(quote_ident(p.name)) AND NOT i.inhdetachpending)`, tenant, from, end)
	if err != nil {
		return nil, fail(err)
	}
	all, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ArchivedRange, error) {
		var (
			a        ArchivedRange
			min, max *time.Time
		)
		err := row.Scan(&a.Partition, &a.State, &min, &max, &a.Location, &a.Events)
		if min != nil {
			a.From, a.To = *min, *max
		}
		return a, err
	})
	if err != nil {
		return nil, fail(err)
	}
	out := all[:0]
	for _, a := range all {
		if a.State == "archiving" {
			// The detached table still holds them: the tenant's part of it
			// (its tenant index answers), if any falls in the window.
			var min, max *time.Time
			// Events stays 0: counting a large tenant's part at every
			// audit page would cost more than the minutes this state lasts.
			if err := s.pool.QueryRow(ctx, `SELECT min(persisted_at), max(persisted_at) FROM `+pgx.Identifier{a.Partition}.Sanitize()+
				` WHERE tenant_id = $1 AND persisted_at >= $2 AND ($3::timestamptz IS NULL OR persisted_at < $3)`,
				tenant, from, end).Scan(&min, &max); err != nil {
				return nil, fail(err)
			}
			if min == nil {
				continue
			}
			a.From, a.To = *min, *max
		}
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b ArchivedRange) int {
		if c := a.From.Compare(b.From); c != 0 {
			return c
		}
		return strings.Compare(a.Partition, b.Partition)
	})
	return out, nil
}

// RunArchive says where run runID's events went once retention retired
// its partition: nil while the partition holds them (or the run is
// unknown). Location is its tenant's file, once verified.
func (s *Store) RunArchive(ctx context.Context, runID string) (*ArchivedRange, error) {
	var (
		a        ArchivedRange
		archived bool
		min, max *time.Time
		location *string
		events   *int64
	)
	err := s.pool.QueryRow(ctx, `SELECT p.name, p.archived_at IS NOT NULL, a.min_persisted_at, a.max_persisted_at, a.location, a.events
		FROM runs r JOIN run_event_partitions p ON p.epoch = r.run_epoch
		LEFT JOIN run_event_archives a ON a.epoch = p.epoch AND a.tenant_id = r.tenant_id
		WHERE r.run_id = $1 AND p.retired_at IS NOT NULL`, runID).Scan(&a.Partition, &archived, &min, &max, &location, &events)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, classify(fmt.Errorf("looking up the archive of run %q: %w", runID, err))
	}
	a.State = "archiving"
	if archived && location != nil {
		a.State, a.Location, a.Events, a.From, a.To = "archived", *location, *events, *min, *max
	}
	return &a, nil
}

// RetentionPass is what the retention process's last pass recorded.
type RetentionPass struct {
	Retention, PartitionWidth time.Duration
	// ArchiveURL is the archive's location without credentials.
	ArchiveURL string
	At         time.Time
	// Error is how the pass failed; empty when it succeeded.
	Error string
	// Dropped names the partitions the pass dropped.
	Dropped []string
}

// RecordRetentionPass stores p as the last pass.
func (s *Store) RecordRetentionPass(ctx context.Context, p RetentionPass) error {
	var errText *string
	if p.Error != "" {
		errText = &p.Error
	}
	if p.Dropped == nil {
		p.Dropped = []string{}
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO retention_state AS r (id, retention_seconds, partition_seconds, archive_url, pass_at, pass_error, dropped)
		VALUES (1, $1, $2, $3, clock_timestamp(), $4, $5)
		ON CONFLICT (id) DO UPDATE SET retention_seconds = EXCLUDED.retention_seconds,
			partition_seconds = EXCLUDED.partition_seconds, archive_url = EXCLUDED.archive_url,
			pass_at = EXCLUDED.pass_at, pass_error = EXCLUDED.pass_error, dropped = EXCLUDED.dropped`,
		int64(p.Retention.Seconds()), int64(p.PartitionWidth.Seconds()), p.ArchiveURL, errText, p.Dropped)
	if err != nil {
		return classify(fmt.Errorf("recording the retention pass: %w", err))
	}
	return nil
}

// LastRetentionPass returns the last pass recorded, or nil when no
// retention process ever ran on this store.
func (s *Store) LastRetentionPass(ctx context.Context) (*RetentionPass, error) {
	var (
		p           RetentionPass
		keep, width int64
		errText     *string
	)
	err := s.pool.QueryRow(ctx, `SELECT retention_seconds, partition_seconds, archive_url, pass_at, pass_error, dropped
		FROM retention_state WHERE id = 1`).Scan(&keep, &width, &p.ArchiveURL, &p.At, &errText, &p.Dropped)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, classify(fmt.Errorf("reading the last retention pass: %w", err))
	}
	p.Retention, p.PartitionWidth = time.Duration(keep)*time.Second, time.Duration(width)*time.Second
	if errText != nil {
		p.Error = *errText
	}
	return &p, nil
}
