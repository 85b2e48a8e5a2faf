package lake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// DefaultSchema is the Postgres schema of the lake's state when none is
// given.
const DefaultSchema = "runstream_lake"

// CheckSchema reports whether name can be the lake's state schema
// (postgres.CheckSchemaName).
func CheckSchema(name string) error { return postgres.CheckSchemaName(name) }

// Connect opens a pool on url whose connections use schema (empty:
// [DefaultSchema]) as their search_path, creating the schema when absent.
// The lake's state lives there (see [Lake]).
func Connect(ctx context.Context, url, schema string) (*pgxpool.Pool, error) {
	if schema == "" {
		schema = DefaultSchema
	}
	return postgres.ConnectSchema(ctx, url, schema, "the lake's state database", "RUNSTREAM_POSTGRES_URL")
}

// The lake's state, in its schema. What is in the bucket is decided here:
//
//   - lake_partitions: per group and partition, next_offset, the first
//     offset of the window not yet committed: every record before it is
//     in files that were uploaded and read back. It names the next file
//     (its first offset), and it is the lake's own offset: the Kafka
//     commit follows it and may trail it after a crash.
//   - lake_pending: per group and stream (a partition, or convergence),
//     the object keys of a window being uploaded and not yet committed.
//     Written before the first upload; a window committed deletes it. A
//     process that finds one after a crash deletes the objects its redo
//     does not write again, so no uncommitted object is left behind to
//     count twice.
//   - lake_runs: per group and run, the last runSeq in the lake (its
//     checkpoint: a record at or below it is a duplicate), and the run's
//     snapshot as the reducer folds the events written, which the
//     current-state table is made from.
const createState = `
CREATE TABLE IF NOT EXISTS lake_partitions (
	group_id    text        NOT NULL,
	topic       text        NOT NULL,
	partition   integer     NOT NULL,
	next_offset bigint      NOT NULL,
	updated_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
	PRIMARY KEY (group_id, topic, partition));
CREATE TABLE IF NOT EXISTS lake_pending (
	group_id   text        NOT NULL,
	stream     text        NOT NULL,
	keys       text[]      NOT NULL,
	updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
	PRIMARY KEY (group_id, stream));
CREATE TABLE IF NOT EXISTS lake_runs (
	group_id   text        NOT NULL,
	run_id     text        NOT NULL,
	run_seq    bigint      NOT NULL,
	tenant_id  text        NOT NULL,
	snapshot   text,
	updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
	PRIMARY KEY (group_id, run_id)) WITH (fillfactor = 70);
`

// stateDB reads and writes the lake's state.
type stateDB struct {
	pool  *pgxpool.Pool
	group string
}

// The commit lock. A partition's window commits under it in shared mode,
// from the check of its runs' checkpoints to the commit: windows of
// different partitions commit at once. A convergence repair holds it
// exclusively from its read of the checkpoints to its commit. So a
// window never commits events a repair committed meanwhile (the check
// finds the repair's checkpoints, and the window drops what they cover),
// and a repair never writes what a window committed (its read finds the
// window's). It is a session lock on a connection of its own, which every
// statement of the commit uses (so waiting holders cannot starve the pool
// of the connections their commits need), released when the process dies.
const commitLockKey = `hashtextextended('runstream lake commit ' || $1, 0)`

type connCtxKey int

const lockConnKey connCtxKey = 0

// querier is what the state's statements run on: the pool, or the
// connection holding the commit lock.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
}

// db is the connection holding the commit lock when ctx carries one, else
// the pool.
func (s *stateDB) db(ctx context.Context) querier {
	if c, ok := ctx.Value(lockConnKey).(*pgxpool.Conn); ok {
		return c
	}
	return s.pool
}

// lock takes the commit lock (exclusive for a convergence repair, shared
// for a window) and returns a context whose state statements use its
// connection, and the function that releases it. A ctx that holds the lock
// already is returned as is.
func (s *stateDB) lock(ctx context.Context, exclusive bool) (context.Context, func(), error) {
	if _, ok := ctx.Value(lockConnKey).(*pgxpool.Conn); ok {
		return ctx, func() {}, nil
	}
	mode := "_shared"
	if exclusive {
		mode = ""
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("taking the lake's commit lock: %w", err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock`+mode+`(`+commitLockKey+`)`, s.group); err != nil {
		conn.Release()
		return nil, nil, fmt.Errorf("taking the lake's commit lock: %w", err)
	}
	release := func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, `SELECT pg_advisory_unlock`+mode+`(`+commitLockKey+`)`, s.group); err != nil {
			// The session goes, and its lock with it.
			_ = conn.Conn().Close(uctx)
		}
		conn.Release()
	}
	return context.WithValue(ctx, lockConnKey, conn), release, nil
}

// committedPast returns, of the runs whose window checkpoints are given
// (run -> the checkpoint the window started from), those whose committed
// checkpoint is past it: a convergence repair wrote their events after
// the window read them.
func (s *stateDB) committedPast(ctx context.Context, base map[string]int64) (map[string]int64, error) {
	if len(base) == 0 {
		return nil, nil
	}
	ids := make([]string, 0, len(base))
	for id := range base {
		ids = append(ids, id)
	}
	rows, err := s.db(ctx).Query(ctx, `SELECT run_id, run_seq FROM lake_runs WHERE group_id = $1 AND run_id = ANY($2)`, s.group, ids)
	if err != nil {
		return nil, fmt.Errorf("reading the lake's run checkpoints before a commit: %w", err)
	}
	defer rows.Close()
	var out map[string]int64
	for rows.Next() {
		var id string
		var seq int64
		if err := rows.Scan(&id, &seq); err != nil {
			return nil, fmt.Errorf("reading the lake's run checkpoints before a commit: %w", err)
		}
		if seq > base[id] {
			if out == nil {
				out = map[string]int64{}
			}
			out[id] = seq
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the lake's run checkpoints before a commit: %w", err)
	}
	return out, nil
}

func (s *stateDB) migrate(ctx context.Context) error {
	// One session at a time: concurrent CREATE TABLE IF NOT EXISTS can
	// fail on the catalog's unique index.
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("creating the lake's state tables: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtextextended('runstream lake state', 0))`); err != nil {
		return fmt.Errorf("creating the lake's state tables: %w", err)
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtextextended('runstream lake state', 0))`)
	}()
	if _, err := conn.Exec(ctx, createState); err != nil {
		return fmt.Errorf("creating the lake's state tables: %w", err)
	}
	return nil
}

// partitionState is a partition's committed position and pending keys.
type partitionState struct {
	nextOffset int64
	known      bool // a window of the partition was committed before
	pending    []string
}

func (s *stateDB) loadPartition(ctx context.Context, topic string, partition int32) (partitionState, error) {
	var st partitionState
	err := s.db(ctx).QueryRow(ctx, `SELECT next_offset FROM lake_partitions WHERE group_id = $1 AND topic = $2 AND partition = $3`,
		s.group, topic, partition).Scan(&st.nextOffset)
	switch {
	case err == nil:
		st.known = true
	case !errors.Is(err, pgx.ErrNoRows):
		return st, fmt.Errorf("reading the lake's position on %s/%d: %w", topic, partition, err)
	}
	st.pending, err = s.pendingKeys(ctx, partitionStream(topic, partition))
	return st, err
}

func partitionStream(topic string, partition int32) string {
	return fmt.Sprintf("%s/%d", topic, partition)
}

func (s *stateDB) pendingKeys(ctx context.Context, stream string) ([]string, error) {
	var keys []string
	err := s.db(ctx).QueryRow(ctx, `SELECT keys FROM lake_pending WHERE group_id = $1 AND stream = $2`, s.group, stream).Scan(&keys)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("reading the lake's pending uploads of %s: %w", stream, err)
	}
	return keys, nil
}

// setPending records keys as the objects stream is about to upload.
func (s *stateDB) setPending(ctx context.Context, stream string, keys []string) error {
	_, err := s.db(ctx).Exec(ctx, `INSERT INTO lake_pending (group_id, stream, keys) VALUES ($1, $2, $3)
		ON CONFLICT (group_id, stream) DO UPDATE SET keys = EXCLUDED.keys, updated_at = clock_timestamp()`,
		s.group, stream, keys)
	if err != nil {
		return fmt.Errorf("recording the lake's pending uploads of %s: %w", stream, err)
	}
	return nil
}

// clearPending forgets stream's pending keys.
func (s *stateDB) clearPending(ctx context.Context, stream string) error {
	if _, err := s.db(ctx).Exec(ctx, `DELETE FROM lake_pending WHERE group_id = $1 AND stream = $2`, s.group, stream); err != nil {
		return fmt.Errorf("clearing the lake's pending uploads of %s: %w", stream, err)
	}
	return nil
}

// runState is what the lake knows of a run: its checkpoint and the
// snapshot of its events written so far. trimmed: the row has a
// checkpoint but no snapshot (the run ended longer than
// Config.CurrentRetention ago, and trimEnded let its snapshot go), so a
// new event of it must first rebuild the snapshot from the store.
type runState struct {
	seq     int64
	tenant  string
	snap    store.RunSnapshot
	trimmed bool
}

// loadRuns reads the committed state of ids.
func (s *stateDB) loadRuns(ctx context.Context, ids []string) (map[string]runState, error) {
	out := make(map[string]runState, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.db(ctx).Query(ctx, `SELECT run_id, run_seq, tenant_id, snapshot FROM lake_runs WHERE group_id = $1 AND run_id = ANY($2)`, s.group, ids)
	if err != nil {
		return nil, fmt.Errorf("reading the lake's run checkpoints: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var st runState
		var snap *string
		if err := rows.Scan(&id, &st.seq, &st.tenant, &snap); err != nil {
			return nil, fmt.Errorf("reading the lake's run checkpoints: %w", err)
		}
		if snap != nil {
			if err := json.Unmarshal([]byte(*snap), &st.snap); err != nil {
				return nil, fmt.Errorf("reading the lake's snapshot of run %q: %w", id, err)
			}
		} else {
			st.trimmed = st.seq > 0
		}
		out[id] = st
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the lake's run checkpoints: %w", err)
	}
	return out, nil
}

// trimEnded lets go of the snapshots of runs that ended before cutoff
// (their terminalAt, in the store's fixed persistedAt form, compares as
// text) and whose row was
// last written before it, batch rows a statement, and returns how many.
// Each row keeps its checkpoint: it is still the run's duplicate check,
// so a late record of the run is skipped and a dead letter retried later
// adds only what is new. A run trimmed leaves the current-state table.
func (s *stateDB) trimEnded(ctx context.Context, cutoff time.Time, batch int) (int64, error) {
	return inBatches(batch, func() (int64, error) {
		// The snapshot is parsed once per candidate (the lateral's OFFSET 0
		// keeps Postgres from pasting the cast into both tests): a quarter
		// faster a batch than parsing it for each.
		tag, err := s.db(ctx).Exec(ctx, `UPDATE lake_runs SET snapshot = NULL, updated_at = clock_timestamp()
			WHERE group_id = $1 AND run_id IN (
				SELECT run_id FROM lake_runs, LATERAL (SELECT snapshot::jsonb AS j OFFSET 0) parsed
				 WHERE group_id = $1 AND snapshot IS NOT NULL AND updated_at < $2
				   AND parsed.j->>'status' IN ('COMPLETED', 'FAILED', 'CANCELLED')
				   AND parsed.j->>'terminalAt' < $3
				 LIMIT $4)`,
			s.group, cutoff, cutoff.UTC().Format(persistedAtLayout), batch)
		if err != nil {
			return 0, fmt.Errorf("lake: letting go of the snapshots of runs ended before %s: %w", cutoff.UTC().Format(time.RFC3339), err)
		}
		return tag.RowsAffected(), nil
	})
}

// forget deletes the rows of runs with no snapshot that were last written
// before cutoff, batch rows a statement, and returns how many.
func (s *stateDB) forget(ctx context.Context, cutoff time.Time, batch int) (int64, error) {
	return inBatches(batch, func() (int64, error) {
		tag, err := s.db(ctx).Exec(ctx, `DELETE FROM lake_runs
			WHERE group_id = $1 AND run_id IN (
				SELECT run_id FROM lake_runs
				 WHERE group_id = $1 AND snapshot IS NULL AND updated_at < $2
				 LIMIT $3)`, s.group, cutoff, batch)
		if err != nil {
			return 0, fmt.Errorf("lake: forgetting the runs left untouched since %s: %w", cutoff.UTC().Format(time.RFC3339), err)
		}
		return tag.RowsAffected(), nil
	})
}

// inBatches runs step, a statement changing at most batch rows, until one
// changes fewer, and returns the rows changed in all (those before an
// error too).
func inBatches(batch int, step func() (int64, error)) (int64, error) {
	var total int64
	for {
		n, err := step()
		total += n
		if err != nil || n < int64(batch) {
			return total, err
		}
	}
}

// commit is one window's state change, written in one transaction once its
// files are uploaded and verified.
type commit struct {
	stream string
	// topic and partition are set for a partition's window; next is then
	// its next window's first offset.
	topic     string
	partition int32
	next      int64
	isTopic   bool
	runs      map[string]*openRun
}

// commitWindow writes c: the runs' checkpoints and snapshots, the
// partition's next offset, and clears the pending keys.
func (s *stateDB) commitWindow(ctx context.Context, c *commit) error {
	var ids, tenants []string
	var seqs []int64
	var snaps []*string
	for id, r := range c.runs {
		if r.seq <= r.base {
			continue
		}
		ids = append(ids, id)
		seqs = append(seqs, r.seq)
		tenants = append(tenants, r.tenant)
		var snap *string
		if sn := r.proj.Snapshot(); sn.RunID != "" && !r.noSnapshot {
			b, err := json.Marshal(&sn)
			if err != nil {
				return fmt.Errorf("encoding the snapshot of run %q: %w", id, err)
			}
			str := string(b)
			snap = &str
		}
		snaps = append(snaps, snap)
	}
	b := &pgx.Batch{}
	if len(ids) > 0 {
		// GREATEST: a checkpoint never moves back (two members handing
		// over a partition, or convergence racing a partition's owner).
		b.Queue(`INSERT INTO lake_runs (group_id, run_id, run_seq, tenant_id, snapshot)
			SELECT $1, u.id, u.seq, u.tenant, u.snap FROM unnest($2::text[], $3::bigint[], $4::text[], $5::text[]) AS u(id, seq, tenant, snap)
			ON CONFLICT (group_id, run_id) DO UPDATE SET
				run_seq = GREATEST(lake_runs.run_seq, EXCLUDED.run_seq),
				snapshot = CASE WHEN EXCLUDED.run_seq >= lake_runs.run_seq THEN coalesce(EXCLUDED.snapshot, lake_runs.snapshot) ELSE lake_runs.snapshot END,
				tenant_id = EXCLUDED.tenant_id, updated_at = clock_timestamp()`,
			s.group, ids, seqs, tenants, snaps)
	}
	if c.isTopic {
		b.Queue(`INSERT INTO lake_partitions (group_id, topic, partition, next_offset) VALUES ($1, $2, $3, $4)
			ON CONFLICT (group_id, topic, partition) DO UPDATE SET next_offset = EXCLUDED.next_offset, updated_at = clock_timestamp()`,
			s.group, c.topic, c.partition, c.next)
	}
	b.Queue(`DELETE FROM lake_pending WHERE group_id = $1 AND stream = $2`, s.group, c.stream)
	err := pgx.BeginFunc(ctx, s.db(ctx), func(tx pgx.Tx) error {
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return fmt.Errorf("committing the lake's window of %s: %w", c.stream, err)
	}
	return nil
}
