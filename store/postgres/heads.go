package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runstream/runstream/store"
)

// What convergence (package converge) reads from the store: which runs
// changed, where each stands, and up to when the store's answer is final.
// See docs/ARCHITECTURE.md, "Convergence".

// MaxHorizonHold bounds how far an open writing transaction holds back
// ConvergenceHorizon: one left open longer (an operator's forgotten psql
// session) no longer stops convergence, at the price of a run it appends
// to being checked only by the next full pass.
const MaxHorizonHold = 10 * time.Minute

// ConvergenceHorizon returns the time before which every committed event's
// persistedAt is final and delivered as far as the relay goes: the
// earliest of
//
//   - now - grace;
//   - the start of the oldest transaction still open that has written to
//     runs or run_events (openWritersSQL: nothing can still commit an
//     event persisted before that start); pg_stat_activity
//     shows when other roles' transactions started only to members of
//     pg_read_all_stats, and such a transaction counts as starting now,
//     which grace covers for appends (one statement each). An open
//     transaction holds the horizon back by MaxHorizonHold at most;
//   - the creation of the oldest outbox row: an event still on its way to
//     the bus (waiting, or retried by the relay) is not behind by a fault
//     yet.
//
// It reads the database's clock, never this process's.
func (s *Store) ConvergenceHorizon(ctx context.Context, grace time.Duration) (time.Time, error) {
	var h time.Time
	err := s.pool.QueryRow(ctx, `SELECT least(
			clock_timestamp() - $1 * interval '1 microsecond',
			greatest(clock_timestamp() - $2 * interval '1 microsecond', coalesce(
				(SELECT min(coalesce(w.xact_start, clock_timestamp())) FROM (`+openWritersSQL+`) w),
				clock_timestamp())),
			(SELECT created_at FROM outbox ORDER BY id LIMIT 1))`,
		grace.Microseconds(), MaxHorizonHold.Microseconds()).Scan(&h)
	if err != nil {
		return time.Time{}, classify(fmt.Errorf("reading the convergence horizon: %w", err))
	}
	return h, nil
}

// ChangedRuns returns the runs whose last event was persisted in [from,
// to), in no particular order. A run with a later event is not among them:
// the window holding its last event will report it.
func (s *Store) ChangedRuns(ctx context.Context, from, to time.Time) ([]store.RunHead, error) {
	rows, err := s.pool.Query(ctx, `SELECT e.run_id, r.tenant_id, r.last_seq, e.persisted_at, r.terminal_at
		FROM run_events e JOIN runs r ON r.run_id = e.run_id AND r.last_seq = e.run_seq AND r.run_epoch = e.run_epoch
			AND r.run_no = e.run_no
		WHERE e.persisted_at >= $1 AND e.persisted_at < $2`, from, to)
	if err != nil {
		return nil, classify(fmt.Errorf("listing the runs changed in [%s, %s): %w", from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano), err))
	}
	heads, err := pgx.CollectRows(rows, scanHead)
	if err != nil {
		return nil, classify(fmt.Errorf("listing the runs changed in [%s, %s): %w", from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano), err))
	}
	return heads, nil
}

// RunsBefore returns up to limit runs with runId > after, in runId order,
// whose last event was persisted before the given time: a full pass walks
// every run with it.
func (s *Store) RunsBefore(ctx context.Context, after string, before time.Time, limit int) ([]store.RunHead, error) {
	rows, err := s.pool.Query(ctx, `SELECT r.run_id, r.tenant_id, r.last_seq, e.persisted_at, r.terminal_at
		FROM runs r JOIN run_events e ON e.run_id = r.run_id AND e.run_seq = r.last_seq AND e.run_epoch = r.run_epoch
			AND e.run_no = r.run_no
		WHERE r.run_id > $1 AND e.persisted_at < $2 ORDER BY r.run_id LIMIT $3`, after, before, limit)
	if err != nil {
		return nil, classify(fmt.Errorf("listing runs after %q: %w", after, err))
	}
	heads, err := pgx.CollectRows(rows, scanHead)
	if err != nil {
		return nil, classify(fmt.Errorf("listing runs after %q: %w", after, err))
	}
	return heads, nil
}

func scanHead(row pgx.CollectableRow) (store.RunHead, error) {
	var h store.RunHead
	var terminal *time.Time
	err := row.Scan(&h.RunID, &h.TenantID, &h.LastSeq, &h.LastPersistedAt, &terminal)
	if terminal != nil {
		h.TerminalAt = *terminal
	}
	return h, err
}

// SummarizeNewEvents summarizes the persisted_at BRIN ranges appends
// filled since their last summarization, in every partition still taking
// appends, and returns how many ranges it summarized. ChangedRuns reads
// every page of an unsummarized range, and the ranges are left to
// autovacuum's work items (autosummarize), which Postgres drops when
// appends outrun them: the window query then reads the whole unsummarized
// tail of the table. Called before each convergence window, the tail is a
// few seconds of appends. Each index's summary takes the partition's SHARE
// UPDATE EXCLUSIVE lock for at most 50 ms of waiting: a partition being
// vacuumed (which summarizes too) or detached is skipped, and autovacuum is
// never cancelled for it (that takes deadlock_timeout's wait).
func (s *Store) SummarizeNewEvents(ctx context.Context) (int, error) {
	rows, err := s.pool.Query(ctx, `SELECT i.indexrelid::regclass::text
		FROM run_event_partitions p
		JOIN pg_index i ON i.indrelid = to_regclass(quote_ident(p.name))
		JOIN pg_class c ON c.oid = i.indexrelid
		JOIN pg_am a ON a.oid = c.relam AND a.amname = 'brin'
		WHERE p.retired_at IS NULL AND p.dropped_at IS NULL`)
	if err != nil {
		return 0, classify(fmt.Errorf("listing the partitions' BRIN indexes: %w", err))
	}
	indexes, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, classify(fmt.Errorf("listing the partitions' BRIN indexes: %w", err))
	}
	total := 0
	for _, idx := range indexes {
		var n int
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '50ms'"); err != nil {
				return err
			}
			return tx.QueryRow(ctx, "SELECT brin_summarize_new_values($1::regclass)", idx).Scan(&n)
		})
		var pgErr *pgconn.PgError
		switch {
		case errors.As(err, &pgErr) && pgErr.Code == pgerrcode.LockNotAvailable:
			continue // vacuumed or detached right now
		case err != nil:
			return total, classify(fmt.Errorf("summarizing %s: %w", idx, err))
		}
		total += n
	}
	return total, nil
}
