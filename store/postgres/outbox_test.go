package postgres_test

import (
	"context"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// outboxRow is one outbox row and the part holding it.
type outboxRow struct {
	ID     int64
	RunID  string
	RunSeq int64
	Part   string
}

func outboxRows(ctx context.Context, t *testing.T, pool *pgxpool.Pool) []outboxRow {
	t.Helper()
	rows, err := pool.Query(ctx, `SELECT id, run_id, run_seq, tableoid::regclass::text FROM outbox ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []outboxRow
	for rows.Next() {
		var r outboxRow
		if err := rows.Scan(&r.ID, &r.RunID, &r.RunSeq, &r.Part); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func heapBytes(ctx context.Context, t *testing.T, pool *pgxpool.Pool, part string) int64 {
	t.Helper()
	var n int64
	if err := pool.QueryRow(ctx, `SELECT pg_relation_size($1::regclass)`, part).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func rotate(ctx context.Context, t *testing.T, pool *pgxpool.Pool, opts postgres.RotateOutboxOptions) postgres.OutboxRotation {
	t.Helper()
	r, err := postgres.NewOutbox(pool).Rotate(ctx, opts)
	if err != nil {
		t.Fatalf("Rotate: %v", err)
	}
	return r
}

func wantStep(t *testing.T, got postgres.OutboxRotation, step postgres.OutboxStep, part int) {
	t.Helper()
	if got.Step != step || got.Part != part {
		t.Fatalf("rotation %s of part %d, want %s of part %d", got.Step, got.Part, step, part)
	}
}

// appendEvents appends n events to run.
func appendEvents(ctx context.Context, t *testing.T, s *postgres.Store, run workload.Identity, n int) {
	t.Helper()
	for range n {
		if _, err := s.AppendEvent(ctx, workload.Event(run, store.EventStepStarted, "s"+testenv.RandomID(4), 1, 1, time.Now(), nil)); err != nil {
			t.Fatal(err)
		}
	}
}

// switchAll is the smallest SwitchBytes: switch whenever the other part is
// truncated.
var switchAll = postgres.RotateOutboxOptions{SwitchBytes: 1}

func TestRotateOutbox_SwitchesThenTruncatesTheDrainedPart(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t, postgres.Config{})
	ctx := ctxT(t)
	run := workload.NewIdentity("tenant_a")
	appendEvents(ctx, t, s, run, 3)
	wantStep(t, rotate(ctx, t, pool, postgres.RotateOutboxOptions{}), postgres.OutboxIdle, 0)
	wantStep(t, rotate(ctx, t, pool, switchAll), postgres.OutboxSwitched, 0)
	appendEvents(ctx, t, s, run, 3)
	rows := outboxRows(ctx, t, pool)
	for i, r := range rows {
		part := "outbox_0"
		if i >= 3 {
			part = "outbox_1"
		}
		if r.RunSeq != int64(i+1) || r.Part != part {
			t.Fatalf("outbox rows in id order %+v: want runSeq 1-3 in outbox_0, 4-6 in outbox_1", rows)
		}
	}
	if rows[3].ID != 1<<24 {
		t.Fatalf("first id after the switch %d, want the next block's first, %d", rows[3].ID, 1<<24)
	}
	wantStep(t, rotate(ctx, t, pool, switchAll), postgres.OutboxDraining, 0)
	// The convergence horizon stops at the oldest row of either part.
	horizonAt := func(id int64) {
		t.Helper()
		var created time.Time
		if err := pool.QueryRow(ctx, `SELECT created_at FROM outbox WHERE id = $1`, id).Scan(&created); err != nil {
			t.Fatal(err)
		}
		if h, err := s.ConvergenceHorizon(ctx, 0); err != nil || !h.Equal(created) {
			t.Fatalf("convergence horizon %v, %v; want the creation of outbox row %d, %v", h, err, id, created)
		}
	}
	horizonAt(rows[0].ID)
	// The relay publishes part 0's rows and deletes them.
	if _, err := pool.Exec(ctx, `DELETE FROM outbox WHERE id < $1`, rows[3].ID); err != nil {
		t.Fatal(err)
	}
	horizonAt(rows[3].ID)
	var size int64
	if err := pool.QueryRow(ctx, `SELECT pg_total_relation_size('outbox_0')`).Scan(&size); err != nil {
		t.Fatal(err)
	}
	got := rotate(ctx, t, pool, switchAll)
	wantStep(t, got, postgres.OutboxTruncated, 0)
	if got.Bytes != size || heapBytes(ctx, t, pool, "outbox_0") != 0 {
		t.Fatalf("truncated %d bytes of %d, and outbox_0's table has %d bytes left", got.Bytes, size, heapBytes(ctx, t, pool, "outbox_0"))
	}
	// Part 0 is ready again: appends switch back to it, past every id so far.
	wantStep(t, rotate(ctx, t, pool, switchAll), postgres.OutboxSwitched, 1)
	appendEvents(ctx, t, s, run, 1)
	rows = outboxRows(ctx, t, pool)
	if last := rows[len(rows)-1]; last.RunSeq != 7 || last.Part != "outbox_0" || last.ID != 2<<24 {
		t.Fatalf("row after the second switch %+v, want runSeq 7 in outbox_0 with id %d", last, 2<<24)
	}
	wantStep(t, rotate(ctx, t, pool, switchAll), postgres.OutboxDraining, 1)
}

// retiring returns a store whose outbox_0 no longer takes appends, is
// empty, and is not truncated yet: the next rotation step truncates it.
func retiring(t *testing.T) (*postgres.Store, *pgxpool.Pool, context.Context) {
	t.Helper()
	s, pool := newStore(t, postgres.Config{})
	ctx := ctxT(t)
	appendEvents(ctx, t, s, workload.NewIdentity("tenant_a"), 2)
	wantStep(t, rotate(ctx, t, pool, switchAll), postgres.OutboxSwitched, 0)
	if _, err := pool.Exec(ctx, `DELETE FROM outbox`); err != nil {
		t.Fatal(err)
	}
	if heapBytes(ctx, t, pool, "outbox_0") == 0 {
		t.Fatal("outbox_0 has no pages before its truncation")
	}
	return s, pool, ctx
}

// insertIntoPart0 inserts an outbox row into part 0 with an id of its first
// block, as an append that took its id before the switch and inserts
// after it does.
const insertIntoPart0 = `INSERT INTO outbox (id, shard, run_id, run_seq) VALUES ((1 << 24) - 1, 0, 'straggler', 1)`

// waitBlocked waits until a backend waits for a lock that holder holds.
func waitBlocked(ctx context.Context, t *testing.T, pool *pgxpool.Pool, holder uint32) {
	t.Helper()
	testenv.WaitFor(t, 10*time.Second, "a backend to wait for the rotation's lock", func() bool {
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, int32(holder)).Scan(&n)
		return err == nil && n > 0
	})
}

// TestRotateOutbox_NeverTruncatesARow covers each way a row can reach the
// part being truncated, and a rotation cut off in the middle.
func TestRotateOutbox_NeverTruncatesARow(t *testing.T) {
	t.Parallel()
	t.Run("an append open since before the switch", func(t *testing.T) {
		t.Parallel()
		s, pool := newStore(t, postgres.Config{})
		ctx := ctxT(t)
		appendEvents(ctx, t, s, workload.NewIdentity("tenant_a"), 1)
		late := workload.Event(workload.NewIdentity("tenant_a"), store.EventRunStarted, "", 1, 1, time.Now(), nil)
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		if _, err := tx.Exec(ctx, `SELECT runstream_append($1,$2,$3,$4,$5,$6,$7,$8,$9,NULL,1,1,$10,NULL,$11)`,
			late.RunID, late.TenantID, late.ProjectID, late.EnvironmentID, late.PlanID, late.PlanVersion,
			late.EventID, late.EventType, late.IdempotencyKey, late.EmittedAt, postgres.ShardOf(late.RunID)); err != nil {
			t.Fatal(err)
		}
		wantStep(t, rotate(ctx, t, pool, switchAll), postgres.OutboxSwitched, 0)
		if _, err := pool.Exec(ctx, `DELETE FROM outbox`); err != nil { // the committed row, published
			t.Fatal(err)
		}
		// Its uncommitted row is invisible, but its lock is not.
		wantStep(t, rotate(ctx, t, pool, switchAll), postgres.OutboxBusy, 0)
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		wantStep(t, rotate(ctx, t, pool, switchAll), postgres.OutboxDraining, 0)
		if rows := outboxRows(ctx, t, pool); len(rows) != 1 || rows[0].RunID != late.RunID || rows[0].Part != "outbox_0" {
			t.Fatalf("outbox %+v, want the late append's row in outbox_0", rows)
		}
	})
	// Also with the server's default isolation at REPEATABLE READ: the
	// check under the lock must not read the transaction's first snapshot.
	for _, iso := range []string{"read committed", "repeatable read"} {
		t.Run("a row committed between the check and the lock, "+iso, func(t *testing.T) {
			t.Parallel()
			_, pool, ctx := retiring(t)
			var schema string
			if err := pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
				t.Fatal(err)
			}
			rpool, err := pgxpool.New(ctx, testenv.PostgresURLWithSchema(t, schema)+"&default_transaction_isolation="+url.PathEscape(iso))
			if err != nil {
				t.Fatal(err)
			}
			defer rpool.Close()
			got, err := postgres.RotateOutboxWithHook(ctx, rpool, switchAll, func(stage string, _ uint32) {
				if stage == "checked" {
					if _, err := pool.Exec(ctx, insertIntoPart0); err != nil {
						t.Error(err)
					}
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			wantStep(t, got, postgres.OutboxDraining, 0)
			if rows := outboxRows(ctx, t, pool); len(rows) != 1 || rows[0].RunID != "straggler" {
				t.Fatalf("outbox %+v, want the row committed before the lock", rows)
			}
		})
	}
	// An insert that waits for the lock goes on after the truncation's
	// commit: its row is in the truncated part, and the part is not
	// truncated again until that row is gone.
	t.Run("an insert waiting for the lock", func(t *testing.T) {
		t.Parallel()
		_, pool, ctx := retiring(t)
		inserted := make(chan error, 1)
		got, err := postgres.RotateOutboxWithHook(ctx, pool, switchAll, func(stage string, pid uint32) {
			if stage == "locked" {
				go func() { _, err := pool.Exec(ctx, insertIntoPart0); inserted <- err }()
				waitBlocked(ctx, t, pool, pid)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		wantStep(t, got, postgres.OutboxTruncated, 0)
		if err := <-inserted; err != nil {
			t.Fatal(err)
		}
		if rows := outboxRows(ctx, t, pool); len(rows) != 1 || rows[0].Part != "outbox_0" {
			t.Fatalf("outbox %+v, want the waiting insert's row in outbox_0", rows)
		}
		wantStep(t, rotate(ctx, t, pool, switchAll), postgres.OutboxDraining, 0)
	})
	for _, cut := range []string{"killed", "cancelled"} {
		t.Run(cut+" while holding the lock", func(t *testing.T) {
			t.Parallel()
			_, pool, ctx := retiring(t)
			rctx, cancel := context.WithCancel(ctx)
			defer cancel()
			inserted := make(chan error, 1)
			_, err := postgres.RotateOutboxWithHook(rctx, pool, switchAll, func(stage string, pid uint32) {
				if stage != "locked" {
					return
				}
				go func() { _, err := pool.Exec(ctx, insertIntoPart0); inserted <- err }()
				waitBlocked(ctx, t, pool, pid)
				if cut == "cancelled" {
					cancel()
					return
				}
				if _, err := pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, int32(pid)); err != nil {
					t.Error(err)
				}
				testenv.WaitFor(t, 10*time.Second, "the rotation's backend to end", func() bool {
					var n int
					err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, int32(pid)).Scan(&n)
					return err == nil && n == 0
				})
			})
			if err == nil {
				t.Fatal("a rotation cut off while it held the lock reported no error")
			}
			if err := <-inserted; err != nil {
				t.Fatal(err)
			}
			if rows := outboxRows(ctx, t, pool); len(rows) != 1 || rows[0].RunID != "straggler" {
				t.Fatalf("outbox %+v, want the insert that waited for the lock", rows)
			}
			wantStep(t, rotate(ctx, t, pool, switchAll), postgres.OutboxDraining, 0)
			if _, err := pool.Exec(ctx, `DELETE FROM outbox`); err != nil {
				t.Fatal(err)
			}
			wantStep(t, rotate(ctx, t, pool, switchAll), postgres.OutboxTruncated, 0)
		})
	}
	t.Run("killed while switching", func(t *testing.T) {
		t.Parallel()
		s, pool := newStore(t, postgres.Config{})
		ctx := ctxT(t)
		run := workload.NewIdentity("tenant_a")
		appendEvents(ctx, t, s, run, 1)
		_, err := postgres.RotateOutboxWithHook(ctx, pool, switchAll, func(stage string, pid uint32) {
			if stage == "switching" {
				if _, err := pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, int32(pid)); err != nil {
					t.Error(err)
				}
			}
		})
		if err == nil {
			t.Fatal("a switch whose backend was killed reported no error")
		}
		appendEvents(ctx, t, s, run, 1)
		if rows := outboxRows(ctx, t, pool); rows[1].Part != "outbox_0" {
			t.Fatalf("outbox %+v: the killed switch moved appends", rows)
		}
		wantStep(t, rotate(ctx, t, pool, switchAll), postgres.OutboxSwitched, 0)
	})
	t.Run("one rotation at a time", func(t *testing.T) {
		t.Parallel()
		_, pool, ctx := retiring(t)
		got, err := postgres.RotateOutboxWithHook(ctx, pool, switchAll, func(stage string, _ uint32) {
			if stage == "checked" {
				wantStep(t, rotate(ctx, t, pool, switchAll), postgres.OutboxBusy, 0)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		wantStep(t, got, postgres.OutboxTruncated, 0)
	})
}

// TestRotateOutbox_TruncatesAPartVacuumEmptied: VACUUM may cut a drained
// part's table down to no page while its indexes keep their size (a btree's
// file never shrinks). The first version took a table with no page for a
// truncated part: after a drain, the relay's own VACUUM of the outbox beat
// the truncation, and the part kept its indexes, 10 MB after 60,000 rows,
// for good.
func TestRotateOutbox_TruncatesAPartVacuumEmptied(t *testing.T) {
	t.Parallel()
	_, pool := newStore(t, postgres.Config{})
	ctx := ctxT(t)
	// Rows of a transaction rolled back: dead to every snapshot at once,
	// so VACUUM removes them and cuts the table whatever other sessions
	// of the server see.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO outbox (shard, run_id, run_seq) SELECT 0, 'r', s FROM generate_series(1, 1000) s`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wantStep(t, rotate(ctx, t, pool, switchAll), postgres.OutboxSwitched, 0)
	testenv.WaitFor(t, 10*time.Second, "VACUUM to cut outbox_0's table", func() bool {
		if _, err := pool.Exec(ctx, `VACUUM outbox_0`); err != nil {
			t.Fatal(err)
		}
		return heapBytes(ctx, t, pool, "outbox_0") == 0
	})
	wantStep(t, rotate(ctx, t, pool, switchAll), postgres.OutboxTruncated, 0)
}

// TestRotateOutbox_AppendsDoNotWaitForTheTruncation: while the truncation
// waits for its lock behind a reader of the drained part, appends go on
// (into the other part); past LockTimeout it gives up.
func TestRotateOutbox_AppendsDoNotWaitForTheTruncation(t *testing.T) {
	t.Parallel()
	s, pool, ctx := retiring(t)
	reader, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = reader.Rollback(ctx) }()
	var readerPID int32
	if err := reader.QueryRow(ctx, `SELECT pg_backend_pid() FROM (SELECT count(*) FROM outbox_0) c`).Scan(&readerPID); err != nil {
		t.Fatal(err)
	}
	wantStep(t, rotate(ctx, t, pool, postgres.RotateOutboxOptions{SwitchBytes: 1, LockTimeout: 50 * time.Millisecond}), postgres.OutboxBusy, 0)

	done := make(chan postgres.OutboxRotation, 1)
	go func() {
		r, err := postgres.NewOutbox(pool).Rotate(ctx, postgres.RotateOutboxOptions{SwitchBytes: 1, LockTimeout: time.Minute})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	waitBlocked(ctx, t, pool, uint32(readerPID))
	start := time.Now()
	run := workload.NewIdentity("tenant_a")
	appendEvents(ctx, t, s, run, 5)
	took := time.Since(start)
	select {
	case r := <-done:
		t.Fatalf("the rotation ended (%s) while the reader held the part", r.Step)
	default:
	}
	if err := reader.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wantStep(t, <-done, postgres.OutboxTruncated, 0)
	rows := outboxRows(ctx, t, pool)
	if len(rows) != 5 || rows[0].Part != "outbox_1" {
		t.Fatalf("outbox %+v, want the 5 appends in outbox_1", rows)
	}
	t.Logf("5 appends took %v while the truncation waited for its lock", took)
}

// TestMigrate_OutboxPartsCarryTheOutboxOver: migration 0011 turns an
// existing outbox into the two parts with its rows, ids and retry state,
// and the id sequence goes on from where it was.
func TestMigrate_OutboxPartsCarryTheOutboxOver(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s, pool := storeBefore(ctx, t, "0011")
	runs := []workload.Identity{workload.NewIdentity("tenant_a"), workload.NewIdentity("tenant_a")}
	for _, run := range runs {
		appendEvents(ctx, t, s, run, 3)
	}
	// A row the relay is retrying, and one it published and deleted.
	if _, err := pool.Exec(ctx, `UPDATE outbox SET attempts = 2, last_error = 'INVALID_RECORD',
		first_failed_at = clock_timestamp() - interval '1 minute', next_attempt_at = clock_timestamp() + interval '1 minute'
		WHERE run_id = $1 AND run_seq = 1`, runs[1].RunID); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM outbox WHERE run_id = $1 AND run_seq = 1`, runs[0].RunID); err != nil {
		t.Fatal(err)
	}
	const cols = `id, shard, run_id, run_seq, created_at, attempts, next_attempt_at, last_error, first_failed_at`
	snapshot := func() string {
		t.Helper()
		var s string
		if err := pool.QueryRow(ctx, `SELECT string_agg(row(`+cols+`)::text, E'\n' ORDER BY id) FROM outbox`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	want := snapshot()
	var oldest time.Time
	if err := pool.QueryRow(ctx, `SELECT created_at FROM outbox WHERE id = (SELECT min(id) FROM outbox)`).Scan(&oldest); err != nil {
		t.Fatal(err)
	}

	applied, err := postgres.Migrate(ctx, pool)
	if err != nil || len(applied) == 0 || applied[0] != 11 {
		t.Fatalf("Migrate after 0010: applied %v, %v; want 11 first", applied, err)
	}
	if got := snapshot(); got != want {
		t.Fatalf("outbox after the migration:\n%s\nwant the rows it had:\n%s", got, want)
	}
	if rows := outboxRows(ctx, t, pool); len(rows) != 5 || rows[0].Part != "outbox_0" || rows[4].Part != "outbox_0" {
		t.Fatalf("outbox rows %+v, want 5 in outbox_0", rows)
	}
	// The horizon stops at the oldest row still in the outbox, read from
	// both parts.
	horizon, err := s.ConvergenceHorizon(ctx, 0)
	if err != nil || !horizon.Equal(oldest) {
		t.Fatalf("convergence horizon %v, %v; want the oldest outbox row's creation, %v", horizon, err, oldest)
	}
	var seq string
	if err := pool.QueryRow(ctx, `SELECT pg_get_serial_sequence('outbox', 'id')`).Scan(&seq); err != nil || seq == "" {
		t.Fatalf("outbox.id's sequence: %q, %v", seq, err)
	}
	for _, part := range []string{"outbox_0", "outbox_1"} {
		var opts []string
		if err := pool.QueryRow(ctx, `SELECT coalesce(reloptions, '{}') FROM pg_class WHERE oid = $1::regclass`, part).Scan(&opts); err != nil {
			t.Fatal(err)
		}
		for _, o := range []string{"autovacuum_vacuum_scale_factor=0", "autovacuum_vacuum_threshold=2000", "autovacuum_vacuum_cost_delay=0"} {
			if !slices.Contains(opts, o) {
				t.Fatalf("%s options %v: migration 0003's %s is missing", part, opts, o)
			}
		}
	}
	// Appends on the pool's connections, whose plans named the old table,
	// go on with ids after the old ones.
	appendEvents(ctx, t, s, runs[0], 1)
	rows := outboxRows(ctx, t, pool)
	if last := rows[len(rows)-1]; last.RunID != runs[0].RunID || last.RunSeq != 4 || last.ID <= rows[len(rows)-2].ID {
		t.Fatalf("outbox after an append %+v: want runSeq 4 last, with a higher id", rows)
	}
	if may, err := postgres.NewOutbox(pool).MayRotate(ctx); err != nil || !may {
		t.Fatalf("MayRotate as the schema's owner: %v, %v", may, err)
	}
	if _, err := postgres.NewOutbox(pool).Rotate(ctx, postgres.RotateOutboxOptions{}); err != nil {
		t.Fatal(err)
	}
}
