// Package pgcheckpoint keeps consumer checkpoints in PostgreSQL, in the
// same transaction as the handler's own writes: an effectively-once sink.
// A handler gets the transaction with [Tx] and must write through it.
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
	pool *pgxpool.Pool
}

var _ consumer.Checkpoints = (*Store)(nil)

// New creates the checkpoint table when absent.
func New(ctx context.Context, pool *pgxpool.Pool) (*Store, error) {
	_, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS runstream_consumer_checkpoints (
		group_id   text        NOT NULL,
		run_id     text        NOT NULL,
		run_seq    bigint      NOT NULL,
		updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
		PRIMARY KEY (group_id, run_id))`)
	if err != nil {
		return nil, fmt.Errorf("creating runstream_consumer_checkpoints: %w", err)
	}
	return &Store{pool: pool}, nil
}

type ctxKey int

const txKey ctxKey = 0

// Tx returns the transaction of the current Transact, for the handler's
// writes; nil outside one.
func Tx(ctx context.Context) pgx.Tx {
	tx, _ := ctx.Value(txKey).(pgx.Tx)
	return tx
}

type pgTx struct {
	tx    pgx.Tx
	group string
	sets  map[string]int64
}

func (t *pgTx) Get(ctx context.Context, ids []string) (map[string]int64, error) {
	out := make(map[string]int64, len(ids))
	// Serialise on each (group, run) with transaction-scoped advisory
	// locks, taken in one order so two transactions cannot deadlock. A row
	// lock alone would not cover a run's first checkpoint (no row yet): two
	// members racing during a rebalance could both handle it.
	if _, err := t.tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1 || '|' || id, 0))
		FROM (SELECT DISTINCT unnest($2::text[]) AS id ORDER BY 1) ids`, t.group, ids); err != nil {
		return nil, fmt.Errorf("locking checkpoints: %w", err)
	}
	rows, err := t.tx.Query(ctx, `SELECT run_id, run_seq FROM runstream_consumer_checkpoints
		WHERE group_id = $1 AND run_id = ANY($2)`, t.group, ids)
	if err != nil {
		return nil, fmt.Errorf("reading checkpoints: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var seq int64
		if err := rows.Scan(&id, &seq); err != nil {
			return nil, err
		}
		out[id] = seq
	}
	return out, rows.Err()
}

func (t *pgTx) Set(id string, seq int64) {
	if seq > t.sets[id] {
		t.sets[id] = seq
	}
}

// Transact runs fn in a transaction; the handler's writes (through Tx) and
// the checkpoints commit together or not at all.
func (s *Store) Transact(ctx context.Context, group string, fn func(context.Context, consumer.CheckpointTx) error) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		t := &pgTx{tx: tx, group: group, sets: map[string]int64{}}
		if err := fn(context.WithValue(ctx, txKey, tx), t); err != nil {
			return err
		}
		if len(t.sets) == 0 {
			return nil
		}
		ids := make([]string, 0, len(t.sets))
		seqs := make([]int64, 0, len(t.sets))
		for id, seq := range t.sets {
			ids = append(ids, id)
			seqs = append(seqs, seq)
		}
		_, err := tx.Exec(ctx, `INSERT INTO runstream_consumer_checkpoints AS c (group_id, run_id, run_seq)
			SELECT $1, u.run_id, u.run_seq FROM unnest($2::text[], $3::bigint[]) AS u(run_id, run_seq)
			ON CONFLICT (group_id, run_id) DO UPDATE
			SET run_seq = GREATEST(c.run_seq, EXCLUDED.run_seq), updated_at = clock_timestamp()`, group, ids, seqs)
		if err != nil {
			return fmt.Errorf("writing checkpoints: %w", err)
		}
		return nil
	})
}
