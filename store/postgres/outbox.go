package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runstream/runstream/store"
)

// Outbox is the transactional outbox (table outbox, partitioned into
// outbox_0 and outbox_1 by migration 0011) and its dead-letter table,
// outbox_dead_letters. Appends write the outbox in their own transactions
// (append.go); everything else that reads or changes these tables goes
// through Outbox: the relay reads the head of its shards, deletes what the
// broker acknowledged, records refusals and dead-letters, vacuums and
// rotates the parts (outboxrotate.go); the operator routes and `runstream
// relay dlq` list and retry dead letters (deadletters.go). It holds no
// state beyond its pool and is safe for concurrent use.
type Outbox struct {
	pool *pgxpool.Pool
}

// NewOutbox returns the outbox of the schema pool's connections use.
func NewOutbox(pool *pgxpool.Pool) *Outbox { return &Outbox{pool: pool} }

// Outbox returns the outbox of the store's schema.
func (s *Store) Outbox() *Outbox { return NewOutbox(s.pool) }

// OutboxRow is one outbox row joined with its event.
type OutboxRow struct {
	ID int64
	// Attempts is how many times the broker refused the row so far.
	Attempts int
	// CommittedAt is when the row's transaction committed (see readHeadSQL).
	CommittedAt time.Time
	// Redelivered is set on a dead letter moved back by RetryDeadLetters:
	// later events of its run may already be published.
	Redelivered bool
	// TraceParent is the W3C trace context of the append that wrote the
	// row, when it was traced and sampled (migration 0021), else "".
	TraceParent string
	Record      store.RunEventRecord
}

// readHeadSQL takes the head of the owned shards first (LIMIT on the outbox
// alone), then looks each event up by its primary key. Written as a LATERAL
// lookup with a LIMIT, which Postgres cannot pull up into a join, so the
// plan is always a unique-index probe per outbox row and never a hash join
// over the whole event log: a plan chosen while run_events was small (a
// generic plan cached on a never-analyzed table, or stale statistics on a
// young install) did that, and every round of the relay then read the whole
// log (p99 commit-to-consume 270 ms instead of 28 ms in bench relay with a
// 10,000-event log). The run's epoch and number, read from its runs row
// first, are parameters of that probe, so Postgres reads only the run's
// partition of run_events (migration 0014), not every partition's index,
// and finds the event by whichever key that partition has (migration 0022).
//
// skip ($3) names rows already in hand (being deleted, or being published
// while the next round's rows are read ahead): they are passed over in the
// outbox, before the event lookup, and do not count toward the limit.
//
// The time each row reports is its transaction's commit when Postgres
// records commit timestamps (track_commit_timestamp = on; the CASE keeps
// pg_xact_commit_timestamp, which fails when it is off, from running
// then), else the outbox row's creation inside the appending transaction,
// a little before its commit. A row retried after a produce error was
// updated since (xmin is the update's), so it always reports its creation.
// It is the start of runstream_relay_commit_to_ack_seconds.
const readHeadSQL = `WITH blocked AS (
	SELECT DISTINCT run_id FROM outbox
	WHERE next_attempt_at IS NOT NULL AND next_attempt_at > clock_timestamp() AND shard = ANY($1)),
head AS (
	SELECT o.id, o.attempts, o.run_id, o.run_seq, o.redelivered, coalesce(o.trace_parent, '') AS trace_parent,
		coalesce(CASE WHEN o.attempts = 0 AND current_setting('track_commit_timestamp')::bool
			THEN pg_xact_commit_timestamp(o.xmin) END, o.created_at) AS committed_at
	FROM outbox o
	WHERE o.shard = ANY($1) AND o.run_id NOT IN (SELECT run_id FROM blocked)
		AND o.id NOT IN (SELECT unnest($3::bigint[]))
	ORDER BY o.id LIMIT $2)
SELECT h.id, h.attempts, h.committed_at, h.redelivered, h.trace_parent,
	e.run_id, e.run_seq, e.event_id::text, e.event_type, e.idempotency_key, e.tenant_id,
	e.project_id, e.environment_id, e.plan_id, e.plan_version, coalesce(e.step_id, ''),
	e.engine_attempt_id, e.logical_attempt_id, e.emitted_at, e.persisted_at, e.payload::text
FROM head h CROSS JOIN LATERAL (SELECT run_epoch, run_no FROM runs r WHERE r.run_id = h.run_id) r
CROSS JOIN LATERAL (
	SELECT * FROM run_events e
	WHERE e.run_id = h.run_id AND e.run_seq = h.run_seq AND e.run_epoch = r.run_epoch
		AND e.run_no = r.run_no LIMIT 1) e
ORDER BY h.id`

// ReadHead returns up to limit rows at the head of shards, in id order,
// with their events: rows of a run whose retry is not due yet are left out
// (so are the run's later rows, which must wait for it), and so are the
// rows whose ids are in skip.
func (o *Outbox) ReadHead(ctx context.Context, shards []int32, limit int, skip []int64) ([]OutboxRow, error) {
	if skip == nil {
		skip = []int64{}
	}
	rows, err := o.pool.Query(ctx, readHeadSQL, shards, limit, skip)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (OutboxRow, error) {
		var (
			r         OutboxRow
			eng, log  int32
			persisted time.Time
			payload   *string
		)
		err := row.Scan(&r.ID, &r.Attempts, &r.CommittedAt, &r.Redelivered, &r.TraceParent,
			&r.Record.RunID, &r.Record.RunSeq, &r.Record.EventID, &r.Record.EventType, &r.Record.IdempotencyKey, &r.Record.TenantID,
			&r.Record.ProjectID, &r.Record.EnvironmentID, &r.Record.PlanID, &r.Record.PlanVersion, &r.Record.StepID,
			&eng, &log, &r.Record.EmittedAt, &persisted, &payload)
		r.Record.EngineAttemptID, r.Record.LogicalAttemptID = int64(eng), int64(log)
		r.Record.PersistedAt = store.FormatPersistedAt(persisted)
		if payload != nil {
			r.Record.Payload = []byte(*payload)
		}
		return r, err
	})
}

// DeletePublished deletes rows the broker acknowledged in one round trip:
// one pipelined batch is one transaction, in which set_config(..., true)
// turns off waiting for the WAL flush. A delete lost in a crash only means
// those records are published again (at least once allows it).
func (o *Outbox) DeletePublished(ctx context.Context, ids []int64) error {
	b := &pgx.Batch{}
	b.Queue(`SELECT set_config('synchronous_commit', 'off', true)`)
	b.Queue(`DELETE FROM outbox WHERE id = ANY($1)`, ids)
	if err := o.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("deleting %d acknowledged outbox rows (they will be published again): %w", len(ids), err)
	}
	return nil
}

// Refusal is a refused publish of an outbox row, for [Outbox.Refuse].
type Refusal struct {
	// ID is the row's.
	ID int64
	// Attempts counts the row's refusals, this one included.
	Attempts int
	// Err is the broker's answer, kept as the row's last_error.
	Err string
	// MaxAttempts and RetryWindow: the row is dead-lettered once it was
	// refused at least MaxAttempts times and its first refusal is more
	// than RetryWindow old.
	MaxAttempts int
	RetryWindow time.Duration
	// RetryIn is when to try again, from now, when the row is not
	// dead-lettered.
	RetryIn time.Duration
}

// RefusalResult is what [Outbox.Refuse] did.
type RefusalResult struct {
	// Gone: the row was no longer in the outbox (another relay took it
	// and published it); nothing was recorded.
	Gone bool
	// DeadLettered: the row moved to outbox_dead_letters. Otherwise its
	// retry is due RetryIn from now.
	DeadLettered bool
	// RefusedFor is the time since the row's first refusal.
	RefusedFor time.Duration
}

// Refuse records a refused publish: a retry RetryIn from now, or, once
// the row was refused at least MaxAttempts times and its first refusal is
// more than RetryWindow old, a move to the dead-letter table. The first
// refusal's time is kept in the row (first_failed_at, set here on the
// first refusal) and compared on the database's clock, so neither a relay
// restart nor another relay taking the shard starts the window again, and
// relays on hosts with skewed clocks agree.
func (o *Outbox) Refuse(ctx context.Context, r Refusal) (RefusalResult, error) {
	var res RefusalResult
	err := pgx.BeginFunc(ctx, o.pool, func(tx pgx.Tx) error {
		var us int64
		err := tx.QueryRow(ctx, `UPDATE outbox SET first_failed_at = coalesce(first_failed_at, clock_timestamp())
			WHERE id = $1
			RETURNING (extract(epoch FROM clock_timestamp() - first_failed_at) * 1e6)::bigint`, r.ID).Scan(&us)
		if errors.Is(err, pgx.ErrNoRows) {
			res.Gone = true
			return nil
		}
		if err != nil {
			return err
		}
		res.RefusedFor = time.Duration(us) * time.Microsecond
		if res.DeadLettered = r.Attempts >= r.MaxAttempts && res.RefusedFor > r.RetryWindow; res.DeadLettered {
			_, err = tx.Exec(ctx, `WITH moved AS (DELETE FROM outbox WHERE id = $1
					RETURNING id, shard, run_id, run_seq, created_at, first_failed_at)
				INSERT INTO outbox_dead_letters (id, shard, run_id, run_seq, created_at, attempts, last_error, first_failed_at)
				SELECT id, shard, run_id, run_seq, created_at, $2, $3, first_failed_at FROM moved
				ON CONFLICT (id) DO UPDATE SET failed_at = clock_timestamp(), attempts = EXCLUDED.attempts,
					last_error = EXCLUDED.last_error, first_failed_at = EXCLUDED.first_failed_at`, r.ID, r.Attempts, r.Err)
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE outbox SET attempts = $2, last_error = $3,
			next_attempt_at = clock_timestamp() + $4 * interval '1 microsecond' WHERE id = $1`,
			r.ID, r.Attempts, r.Err, r.RetryIn.Microseconds())
		return err
	})
	switch {
	case err != nil && res.DeadLettered:
		return RefusalResult{}, fmt.Errorf("dead-lettering outbox row %d: %w", r.ID, err)
	case err != nil:
		return RefusalResult{}, fmt.Errorf("recording the refusal of outbox row %d: %w", r.ID, err)
	}
	return res, nil
}

// OutboxStats is the outbox's state at one moment, for the relay's gauges.
type OutboxStats struct {
	// Rows waiting in the outbox (all shards), and the age of the oldest.
	Rows      int64
	OldestAge time.Duration
	// DeadLetters is the rows in the dead-letter table.
	DeadLetters int64
	// Bytes is the outbox's size on disk: both parts, with their indexes.
	Bytes int64
}

// Stats reads the outbox's row count, oldest row, dead letters and size.
func (o *Outbox) Stats(ctx context.Context) (OutboxStats, error) {
	var st OutboxStats
	var age float64
	err := o.pool.QueryRow(ctx, `SELECT count(*),
			coalesce(extract(epoch FROM clock_timestamp() - min(created_at)), 0)::float8,
			(SELECT count(*) FROM outbox_dead_letters),
			(SELECT coalesce(sum(pg_total_relation_size(relid)), 0) FROM pg_partition_tree('outbox'))::bigint
			FROM outbox`).Scan(&st.Rows, &age, &st.DeadLetters, &st.Bytes)
	st.OldestAge = time.Duration(age * float64(time.Second))
	return st, err
}

// MayVacuum reports whether the session's role may vacuum the outbox: as
// (a member of) its owner or of the database's owner, or a superuser.
func (o *Outbox) MayVacuum(ctx context.Context) (bool, error) {
	var may bool
	err := o.pool.QueryRow(ctx, `SELECT pg_has_role(current_user, c.relowner, 'MEMBER')
	OR pg_has_role(current_user, d.datdba, 'MEMBER')
	OR (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)
	FROM pg_class c, pg_database d
	WHERE c.oid = 'outbox'::regclass AND d.datname = current_database()`).Scan(&may)
	return may, err
}

// Vacuum runs VACUUM on the outbox (both parts), which removes the dead
// rows its deletes leave (see internal/relay/vacuum.go for why the relay
// does not wait for autovacuum).
func (o *Outbox) Vacuum(ctx context.Context) error {
	_, err := o.pool.Exec(ctx, "VACUUM outbox")
	return err
}

// OutboxListener receives the notifications on [OutboxChannel] that
// appends send ([Store.RunOutboxNotifier]). It holds a connection of its
// own, which Close destroys rather than return to the pool: a session
// that LISTENs must not serve anyone else.
type OutboxListener struct {
	conn *pgxpool.Conn
}

// Listen starts listening on [OutboxChannel].
func (o *Outbox) Listen(ctx context.Context) (*OutboxListener, error) {
	conn, err := o.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	l := &OutboxListener{conn: conn}
	if _, err := conn.Exec(ctx, "LISTEN "+OutboxChannel); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// Wait blocks until a notification arrives (nil), the connection fails or
// ctx is done (an error either way; then Close the listener).
func (l *OutboxListener) Wait(ctx context.Context) error {
	_, err := l.conn.Conn().WaitForNotification(ctx)
	return err
}

// Close ends the listener's session.
func (l *OutboxListener) Close() {
	_ = l.conn.Conn().Close(context.Background())
	l.conn.Release()
}

// HeadAge returns how long the oldest row still in the outbox has waited
// (by the database's clock), 0 when the outbox is empty: the oldest commit
// not yet published, read through the index on id. The lag exporter
// reports freshness from it even when no relay runs.
func (o *Outbox) HeadAge(ctx context.Context) (time.Duration, error) {
	var age float64
	err := o.pool.QueryRow(ctx, `SELECT coalesce(extract(epoch FROM clock_timestamp() -
			(SELECT created_at FROM outbox ORDER BY id LIMIT 1)), 0)::float8`).Scan(&age)
	if err != nil {
		return 0, classify(fmt.Errorf("reading the outbox's oldest row: %w", err))
	}
	return time.Duration(max(age, 0) * float64(time.Second)), nil
}
