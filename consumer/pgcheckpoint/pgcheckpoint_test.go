package pgcheckpoint_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runstream/runstream/consumer"
	"github.com/runstream/runstream/consumer/pgcheckpoint"
	"github.com/runstream/runstream/internal/testenv"
)

// newStore is a checkpoint store in a fresh schema.
func newStore(t *testing.T) (*pgxpool.Pool, *pgcheckpoint.Store) {
	t.Helper()
	pool, _ := testenv.Postgres(t, 4)
	s, err := pgcheckpoint.New(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	return pool, s
}

// TestBatch_CommitsWithTheCheckpointsOrNotAtAll: statements queued in
// Batch are sent with the checkpoints' writes at the end of Transact; a
// failing one rolls the checkpoints back, and so does a failing fn.
func TestBatch_CommitsWithTheCheckpointsOrNotAtAll(t *testing.T) {
	t.Parallel()
	pool, s := newStore(t)
	ctx := context.Background()
	if _, err := pgcheckpoint.New(ctx, pool); err != nil { // idempotent
		t.Fatal(err)
	}
	var opts []string
	if err := pool.QueryRow(ctx, `SELECT reloptions FROM pg_class WHERE oid = 'runstream_consumer_checkpoints'::regclass`).Scan(&opts); err != nil {
		t.Fatal(err)
	}
	if len(opts) != 1 || opts[0] != "fillfactor=70" {
		t.Errorf("checkpoint table options %v, want [fillfactor=70]", opts)
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE rows (n int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	step := func(n int, fnErr error) error {
		return s.Transact(ctx, "g", func(ctx context.Context, tx consumer.CheckpointTx) error {
			cps, err := tx.Get(ctx, []string{"r", "r"})
			if err != nil {
				return err
			}
			if pgcheckpoint.Batch(ctx) == nil || pgcheckpoint.Tx(ctx) == nil {
				return errors.New("no batch or transaction in Transact")
			}
			pgcheckpoint.Batch(ctx).Queue(`INSERT INTO rows VALUES ($1)`, n)
			tx.Set("r", cps["r"]+1)
			return fnErr
		})
	}
	check := func(wantRows int, wantSeq int64) {
		t.Helper()
		var rows int
		var seq int64
		if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM rows),
			coalesce((SELECT run_seq FROM runstream_consumer_checkpoints WHERE group_id = 'g' AND run_id = 'r'), 0)`).Scan(&rows, &seq); err != nil {
			t.Fatal(err)
		}
		if rows != wantRows || seq != wantSeq {
			t.Fatalf("%d rows and checkpoint %d, want %d and %d", rows, seq, wantRows, wantSeq)
		}
	}
	if err := step(1, nil); err != nil {
		t.Fatal(err)
	}
	check(1, 1)
	if err := step(1, nil); err == nil { // duplicate key in the batch
		t.Fatal("a failing queued statement did not fail Transact")
	}
	check(1, 1)
	if err := step(2, errors.New("handler")); err == nil {
		t.Fatal("fn's error was lost")
	}
	check(1, 1)
	if err := step(2, nil); err != nil {
		t.Fatal(err)
	}
	check(2, 2)
	if pgcheckpoint.Batch(ctx) != nil || pgcheckpoint.Tx(ctx) != nil {
		t.Fatal("a batch or transaction outside Transact")
	}
}

// TestTransact_InsertsUpdatesAndUpserts: a run Get found without a row is
// inserted, one with a row updated (never moving back), and one set
// without a Get upserted, whether or not it has a row; all in one
// transaction.
func TestTransact_InsertsUpdatesAndUpserts(t *testing.T) {
	t.Parallel()
	_, s := newStore(t)
	ctx := context.Background()
	set := func(get []string, seqs map[string]int64) {
		t.Helper()
		err := s.Transact(ctx, "g", func(ctx context.Context, tx consumer.CheckpointTx) error {
			if len(get) > 0 {
				if _, err := tx.Get(ctx, get); err != nil {
					return err
				}
			}
			for id, seq := range seqs {
				tx.Set(id, seq)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	read := func() map[string]int64 {
		t.Helper()
		out := map[string]int64{}
		err := s.Transact(ctx, "g", func(ctx context.Context, tx consumer.CheckpointTx) error {
			cps, err := tx.Get(ctx, []string{"new", "old", "blind-new", "blind-old"})
			out = cps
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	set([]string{"old", "blind-old"}, map[string]int64{"old": 5, "blind-old": 5})
	set([]string{"new", "old"}, map[string]int64{"new": 1, "old": 4, "blind-new": 2, "blind-old": 7})
	got := read()
	want := map[string]int64{"new": 1, "old": 5, "blind-new": 2, "blind-old": 7}
	for id, seq := range want {
		if got[id] != seq {
			t.Errorf("checkpoint of %s = %d, want %d (all: %v)", id, got[id], seq, got)
		}
	}
}
