// Package pgcheckpoint keeps consumer checkpoints in PostgreSQL, in the
// same transaction as the handler's own writes: an effectively-once sink.
// A handler gets the transaction with [Tx] and must write through it.
//
// # Checkpoints kept in the sink's own rows
//
// A sink whose rows already say how far each run got (a "last runSeq
// applied" column, say) need not pay for a second write of the same fact:
// open the store [WithOwnRows], giving the query that reads that column,
// and have the handler call [Recorded] for each run whose row it writes.
// A run's checkpoint is then the greater of its own row's and the
// checkpoint table's, and the table is written only for runs no row
// records (a run whose events so far the sink keeps nowhere). Checkpoints
// the table holds from before keep counting, so a sink can start doing
// this at any time.
package pgcheckpoint

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runstream/runstream/consumer"
)

// Store keeps checkpoints in the table runstream_consumer_checkpoints of
// the pool's search_path schema.
type Store struct {
	pool    *pgxpool.Pool
	ownRows string
}

// An Option configures a [Store].
type Option func(*Store)

// WithOwnRows makes the store read checkpoints from the handler's own
// rows as well (see the package documentation). query takes the run IDs
// as $1 (text[]) and returns (run_id text, run_seq bigint) rows: the
// runSeq each run's rows record, for the runs that have rows. Whatever
// the group, the rows count: they say what the sink holds.
func WithOwnRows(query string) Option {
	return func(s *Store) { s.ownRows = query }
}

var _ consumer.Checkpoints = (*Store)(nil)

// checkpointFillfactor leaves room in each page of the checkpoint table:
// a run's checkpoint is rewritten by every transaction that handles its
// events, and with room the new version goes into the same page without
// touching the primary key index (a HOT update: no indexed column
// changes).
const checkpointFillfactor = 70

// New creates the checkpoint table when absent (and gives an existing one
// the fillfactor it is created with now; pages written from then on
// follow it).
func New(ctx context.Context, pool *pgxpool.Pool, opts ...Option) (*Store, error) {
	_, err := pool.Exec(ctx, fmt.Sprintf(`CREATE TABLE IF NOT EXISTS runstream_consumer_checkpoints (
		group_id   text        NOT NULL,
		run_id     text        NOT NULL,
		run_seq    bigint      NOT NULL,
		updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
		PRIMARY KEY (group_id, run_id)) WITH (fillfactor = %d)`, checkpointFillfactor))
	if err != nil {
		return nil, fmt.Errorf("creating runstream_consumer_checkpoints: %w", err)
	}
	var set bool
	if err := pool.QueryRow(ctx, `SELECT coalesce($1 = ANY(reloptions), false) FROM pg_class
		WHERE oid = 'runstream_consumer_checkpoints'::regclass`, fmt.Sprintf("fillfactor=%d", checkpointFillfactor)).Scan(&set); err != nil {
		return nil, fmt.Errorf("reading runstream_consumer_checkpoints' options: %w", err)
	}
	if !set {
		if _, err := pool.Exec(ctx, fmt.Sprintf(`ALTER TABLE runstream_consumer_checkpoints SET (fillfactor = %d)`, checkpointFillfactor)); err != nil {
			return nil, fmt.Errorf("setting runstream_consumer_checkpoints' fillfactor: %w", err)
		}
	}
	st := &Store{pool: pool}
	for _, o := range opts {
		o(st)
	}
	if err := st.createConvergeTable(ctx); err != nil {
		return nil, err
	}
	return st, nil
}

type ctxKey int

const (
	txKey ctxKey = iota
	batchKey
	checkpointTxKey
)

// Tx returns the transaction of the current Transact, for the handler's
// writes; nil outside one.
func Tx(ctx context.Context) pgx.Tx {
	tx, _ := ctx.Value(txKey).(pgx.Tx)
	return tx
}

// Batch returns a batch of statements that the current Transact sends
// when its function returned, in one round trip with the checkpoints'
// upsert, in the same transaction; nil outside one. A handler (or a sink
// that writes a transaction's rows at its end) queues its writes there
// instead of sending them itself, to save a round trip. An error of any
// queued statement fails the transaction, as the checkpoint store's own
// errors do (the consumer retries it without counting it against the
// records).
func Batch(ctx context.Context) *pgx.Batch {
	b, _ := ctx.Value(batchKey).(*pgx.Batch)
	return b
}

// Recorded tells the current Transact that the handler's own rows, written
// in its transaction, record runSeq as runID's checkpoint (see
// [WithOwnRows]): a checkpoint set up to runSeq needs no write of its own.
// Outside a Transact, or in one of a store opened without WithOwnRows
// (which would not read the rows back), it does nothing.
func Recorded(ctx context.Context, runID string, runSeq int64) {
	if t, ok := ctx.Value(checkpointTxKey).(*pgTx); ok && t.ownRows != "" && runSeq > t.recorded[runID] {
		t.recorded[runID] = runSeq
	}
}

type pgTx struct {
	tx      pgx.Tx
	group   string
	ownRows string
	sets    map[string]int64
	// recorded holds the runSeq the handler's own rows record, per run
	// (Recorded).
	recorded map[string]int64
	// read holds, for each run Get read under its lock, whether it had a
	// checkpoint row: Transact then inserts or updates it, and only a run
	// set without being read goes through an upsert.
	read map[string]bool
}

// Serialise on each (group, run) with transaction-scoped advisory locks,
// taken in one order so two transactions cannot deadlock. A row lock alone
// would not cover a run's first checkpoint (no row yet): two members
// racing during a rebalance could both handle it.
const lockCheckpoints = `SELECT pg_advisory_xact_lock(hashtextextended($1 || '|' || id, 0))
	FROM (SELECT DISTINCT unnest($2::text[]) AS id ORDER BY 1) ids`

// The read is a second statement of the same pipeline, not a join with the
// lock: a statement's snapshot is taken when it starts, so one statement
// could not see a checkpoint committed while it waited for a lock. The
// second one starts once the first holds them all.
const readCheckpoints = `SELECT run_id, run_seq FROM runstream_consumer_checkpoints
	WHERE group_id = $1 AND run_id = ANY($2)`

func (t *pgTx) Get(ctx context.Context, ids []string) (map[string]int64, error) {
	out := make(map[string]int64, len(ids))
	for _, id := range ids {
		if _, ok := t.read[id]; !ok {
			t.read[id] = false
		}
	}
	b := &pgx.Batch{}
	b.Queue(lockCheckpoints, t.group, ids)
	b.Queue(readCheckpoints, t.group, ids)
	if t.ownRows != "" {
		b.Queue(t.ownRows, ids)
	}
	br := t.tx.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, fmt.Errorf("locking checkpoints: %w", err)
	}
	if err := readSeqs(br, out, t.read); err != nil {
		return nil, fmt.Errorf("reading checkpoints: %w", err)
	}
	if t.ownRows != "" {
		if err := readSeqs(br, out, nil); err != nil {
			return nil, fmt.Errorf("reading the checkpoints the sink's own rows record: %w", err)
		}
	}
	return out, nil
}

// readSeqs reads the next (run_id, run_seq) result of br into out, keeping
// the greater runSeq, and notes each run it saw in seen when not nil.
func readSeqs(br pgx.BatchResults, out map[string]int64, seen map[string]bool) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var seq int64
		if err := rows.Scan(&id, &seq); err != nil {
			return err
		}
		out[id] = max(out[id], seq)
		if seen != nil {
			seen[id] = true
		}
	}
	return rows.Err()
}

func (t *pgTx) Set(id string, seq int64) {
	if seq > t.sets[id] {
		t.sets[id] = seq
	}
}

// A run's checkpoint row is written with a plain INSERT when Get found none
// and an UPDATE when it found one (the advisory lock, held to the end of
// the transaction, keeps that true): an upsert's speculative insertion
// costs Postgres about twice a plain insert. Runs set without a Get are
// upserted.
const (
	insertCheckpoints = `INSERT INTO runstream_consumer_checkpoints (group_id, run_id, run_seq)
	SELECT $1, u.run_id, u.run_seq FROM unnest($2::text[], $3::bigint[]) AS u(run_id, run_seq)`
	updateCheckpoints = `UPDATE runstream_consumer_checkpoints AS c
	SET run_seq = GREATEST(c.run_seq, u.run_seq), updated_at = clock_timestamp()
	FROM unnest($2::text[], $3::bigint[]) AS u(run_id, run_seq)
	WHERE c.group_id = $1 AND c.run_id = u.run_id`
	upsertCheckpoints = insertCheckpoints + `
	ON CONFLICT (group_id, run_id) DO UPDATE
	SET run_seq = GREATEST(runstream_consumer_checkpoints.run_seq, EXCLUDED.run_seq), updated_at = clock_timestamp()`
)

// queue adds the statements writing t's checkpoints to b.
func (t *pgTx) queue(b *pgx.Batch) {
	sql := [3]string{insertCheckpoints, updateCheckpoints, upsertCheckpoints}
	var ids [3][]string
	var seqs [3][]int64
	for id, seq := range t.sets {
		if seq <= t.recorded[id] {
			continue // the handler's own rows record it
		}
		k := 2
		if had, ok := t.read[id]; ok {
			k = 0
			if had {
				k = 1
			}
		}
		ids[k] = append(ids[k], id)
		seqs[k] = append(seqs[k], seq)
	}
	for k := range sql {
		if len(ids[k]) > 0 {
			b.Queue(sql[k], t.group, ids[k], seqs[k])
		}
	}
}

// Transact runs fn in a transaction; the handler's writes (through Tx and
// Batch) and the checkpoints commit together or not at all.
func (s *Store) Transact(ctx context.Context, group string, fn func(context.Context, consumer.CheckpointTx) error) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		t := &pgTx{tx: tx, group: group, ownRows: s.ownRows, sets: map[string]int64{}, read: map[string]bool{}, recorded: map[string]int64{}}
		b := &pgx.Batch{}
		fctx := context.WithValue(context.WithValue(context.WithValue(ctx, txKey, tx), batchKey, b), checkpointTxKey, t)
		if err := fn(fctx, t); err != nil {
			return err
		}
		queued := b.Len()
		t.queue(b)
		if b.Len() == 0 {
			return nil
		}
		br := tx.SendBatch(ctx, b)
		for i := range b.Len() {
			if _, err := br.Exec(); err != nil {
				br.Close()
				if i >= queued {
					return fmt.Errorf("writing checkpoints: %w", err)
				}
				return fmt.Errorf("writing the handler's batch (statement %d of %d): %w", i+1, queued, err)
			}
		}
		return br.Close()
	})
}
