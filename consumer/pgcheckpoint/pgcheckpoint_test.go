package pgcheckpoint_test

import (
	"context"
	"errors"
	"maps"
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

// TestOwnRows_RecordedRunsSkipTheTable: with WithOwnRows, a run whose
// checkpoint the handler's rows record (Recorded) gets no checkpoint row; a
// run set past what its row records, or with no row, does; Get returns
// the greater of row and table, so checkpoints the table held from before
// keep counting. A store without WithOwnRows ignores Recorded.
func TestOwnRows_RecordedRunsSkipTheTable(t *testing.T) {
	t.Parallel()
	pool, plain := newStore(t)
	ctx := context.Background()
	s, err := pgcheckpoint.New(ctx, pool, pgcheckpoint.WithOwnRows(`SELECT run_id, seq FROM progress WHERE run_id = ANY($1)`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE progress (run_id text PRIMARY KEY, seq bigint NOT NULL);
		INSERT INTO progress VALUES ('legacy', 3), ('behind', 2);
		INSERT INTO runstream_consumer_checkpoints (group_id, run_id, run_seq) VALUES ('g', 'legacy', 7)`); err != nil {
		t.Fatal(err)
	}
	// write stores each run's seq in its progress row and, when recorded
	// is set, says so.
	write := func(s *pgcheckpoint.Store, sets map[string]int64, recorded bool) map[string]int64 {
		t.Helper()
		var before map[string]int64
		err := s.Transact(ctx, "g", func(ctx context.Context, tx consumer.CheckpointTx) error {
			ids := []string{"legacy", "behind", "fresh", "rowless"}
			cps, err := tx.Get(ctx, ids)
			before = cps
			if err != nil {
				return err
			}
			for id, seq := range sets {
				if id != "rowless" {
					pgcheckpoint.Batch(ctx).Queue(`INSERT INTO progress VALUES ($1, $2)
						ON CONFLICT (run_id) DO UPDATE SET seq = EXCLUDED.seq`, id, seq)
					if recorded {
						pgcheckpoint.Recorded(ctx, id, seq)
					}
				}
				tx.Set(id, seq)
			}
			if recorded {
				pgcheckpoint.Recorded(ctx, "behind", 4) // the row says less than the set below
				tx.Set("behind", 5)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return before
	}
	table := func() map[string]int64 {
		t.Helper()
		out := map[string]int64{}
		rows, err := pool.Query(ctx, `SELECT run_id, run_seq FROM runstream_consumer_checkpoints WHERE group_id = 'g'`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id string
			var seq int64
			if err := rows.Scan(&id, &seq); err != nil {
				t.Fatal(err)
			}
			out[id] = seq
		}
		return out
	}
	got := write(s, map[string]int64{"fresh": 2, "rowless": 1}, true)
	if want := map[string]int64{"legacy": 7, "behind": 2}; !maps.Equal(got, want) {
		t.Fatalf("first Get %v, want %v (the greater of row and table)", got, want)
	}
	if got, want := table(), map[string]int64{"legacy": 7, "rowless": 1, "behind": 5}; !maps.Equal(got, want) {
		t.Fatalf("checkpoint table %v, want %v: only the runs no row records", got, want)
	}
	got = write(s, map[string]int64{"legacy": 9}, true)
	if want := map[string]int64{"legacy": 7, "behind": 5, "fresh": 2, "rowless": 1}; !maps.Equal(got, want) {
		t.Fatalf("second Get %v, want %v", got, want)
	}
	if got, want := table()["legacy"], int64(7); got != want {
		t.Fatalf("legacy's table checkpoint moved to %d though its row records 9; want it left at %d", got, want)
	}
	// The plain store does not read the rows, so it must write the table.
	write(plain, map[string]int64{"fresh": 3}, true)
	if got := table()["fresh"]; got != 3 {
		t.Fatalf("a store without WithOwnRows left fresh's checkpoint at %d after Recorded; want 3 in the table", got)
	}
	got = write(s, nil, false)
	if want := map[string]int64{"legacy": 9, "behind": 5, "fresh": 3, "rowless": 1}; !maps.Equal(got, want) {
		t.Fatalf("last Get %v, want %v", got, want)
	}
}
