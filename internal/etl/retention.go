package etl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/runstream/runstream/consumer"
	"github.com/runstream/runstream/store"
)

// MinRetention is the shortest Config.Retention: a month, counted as the
// longest one (31 days). The partitions hold a month of runs each, so a
// shorter retention could not be kept to; and with at least 31 days the
// months it closes are always before the previous one, which the sink
// and the checkpoint read treat as hot (hotFrom).
const MinRetention = 31 * 24 * time.Hour

// DefaultPartitionInterval is Config.PartitionInterval when it is 0.
const DefaultPartitionInterval = time.Hour

// retention creates the partitions ahead and drops those past the
// retention. A month is dropped in two steps:
//
//  1. Closed: etl_retention.kept_from moves past it (under the retention
//     lock, which the sink holds shared while it writes a new run of an
//     older month). From then on no run goes into it: the sink takes a run
//     of a closed month that has no rows for one the retention dropped, and
//     writes nothing (a late event must not bring back half a run).
//  2. Dropped, once none of its runs is open (an open run may still get
//     rows; its status can only end terminal, and a terminal one never
//     opens again, so what was terminal stays so): its runs' rows in the
//     checkpoint table are deleted, then both partitions are detached and
//     dropped in one transaction.
type retention struct {
	pool    *pgxpool.Pool
	parts   *partitions
	keep    time.Duration // 0: keep every run
	log     *slog.Logger
	dropped prometheus.Counter

	// held holds, per closed month whose partition still has open runs,
	// those runs as last seen: the next check looks only at them (no run
	// enters a closed month). No entry: scan the partition.
	held map[time.Time][]string
}

func newRetention(pool *pgxpool.Pool, parts *partitions, keep time.Duration, log *slog.Logger, dropped prometheus.Counter) *retention {
	return &retention{pool: pool, parts: parts, keep: keep, log: log, dropped: dropped, held: map[time.Time][]string{}}
}

// run checks at once, then every interval, until ctx is done. The first
// check may take a while (it scans each month past the retention for runs
// that have not ended), so it runs beside the consumer, not before it.
func (r *retention) run(ctx context.Context, interval time.Duration, now func() time.Time) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := r.check(ctx, now()); err != nil && ctx.Err() == nil {
			r.log.Warn("partition maintenance failed; retrying at the next check", "err", err, "in", interval.String())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ahead creates the partitions of the current and the next month.
func (r *retention) ahead(ctx context.Context, now time.Time) error {
	this := monthOf(now)
	return r.parts.ensure(ctx, []time.Time{this, this.AddDate(0, 1, 0)})
}

// check creates the partitions of the current and the next month, then,
// with a retention, closes the months past it and drops the partitions of
// those whose runs have all ended.
func (r *retention) check(ctx context.Context, now time.Time) error {
	if err := r.ahead(ctx, now); err != nil {
		return err
	}
	if r.keep == 0 {
		return nil
	}
	// Every run of a month before kept started at least keep ago.
	kept := monthOf(now.Add(-r.keep))
	if err := r.close(ctx, kept); err != nil {
		return err
	}
	months := r.parts.months()
	slices.SortFunc(months, func(a, b time.Time) int { return a.Compare(b) })
	var errs []error
	for _, m := range months {
		if !m.Before(kept) {
			break
		}
		if err := r.drop(ctx, m); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// close moves kept_from to kept, unless it is there or later.
func (r *retention) close(ctx context.Context, kept time.Time) error {
	var moved bool
	err := pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(`+retentionLock+`)`); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE etl_retention SET kept_from = $1::date, updated_at = now()
			WHERE kept_from IS NULL OR kept_from < $1::date`, kept)
		moved = tag.RowsAffected() > 0
		return err
	})
	if err != nil {
		return fmt.Errorf("closing the months before %s: %w", kept.Format("2006-01"), err)
	}
	if moved {
		r.log.Info("retention: runs of the months before this one are not written any more; their partitions go once none of their runs is open",
			"keptFrom", kept.Format("2006-01"), "retention", r.keep.String())
	}
	return nil
}

// terminalStatuses are the run statuses that never change again.
var terminalStatuses = []string{store.RunCompleted, store.RunFailed, store.RunCancelled}

// openRunsCap bounds the open runs a partition's scan remembers; with more,
// the next check scans again.
const openRunsCap = 1000

// openRuns returns the runs of month m's partition that are not terminal.
func (r *retention) openRuns(ctx context.Context, m time.Time) ([]string, error) {
	name := pgx.Identifier{partitionName("runs", m)}.Sanitize()
	var rows pgx.Rows
	var err error
	if ids, ok := r.held[m]; ok {
		rows, err = r.pool.Query(ctx, `SELECT run_id FROM `+name+` WHERE run_id = ANY($1) AND status <> ALL($2)`,
			ids, terminalStatuses)
	} else {
		rows, err = r.pool.Query(ctx, `SELECT run_id FROM `+name+` WHERE status <> ALL($1) LIMIT $2`,
			terminalStatuses, openRunsCap)
	}
	if err != nil {
		return nil, fmt.Errorf("looking for open runs in %s: %w", name, err)
	}
	open, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("looking for open runs in %s: %w", name, err)
	}
	if len(open) < openRunsCap {
		r.held[m] = open
	} else {
		delete(r.held, m)
	}
	return open, nil
}

// drop drops month m's partitions if none of their runs is open.
func (r *retention) drop(ctx context.Context, m time.Time) error {
	runsPart, attemptsPart := partitionName("runs", m), partitionName("step_attempts", m)
	_, seen := r.held[m]
	open, err := r.openRuns(ctx, m)
	if err != nil {
		return err
	}
	if len(open) > 0 {
		if !seen {
			r.log.Info("partition past the retention kept: it holds runs that have not ended",
				"partition", runsPart, "openRuns", len(open), "runId", open[0])
		}
		return nil
	}
	var runRows, attemptRows int64
	if err := r.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM `+pgx.Identifier{runsPart}.Sanitize()+`),
		(SELECT count(*) FROM `+pgx.Identifier{attemptsPart}.Sanitize()+`)`).Scan(&runRows, &attemptRows); err != nil {
		return fmt.Errorf("counting the rows of %s: %w", runsPart, err)
	}
	// The checkpoint table's rows of these runs (of runs whose first
	// events were of unknown types, of runs older than the hot months,
	// and those earlier versions wrote for every run) go with them: nothing
	// of a dropped run stays behind. A late event of one finds no
	// checkpoint, is given the run's earlier events from the store, and
	// the sink recognises the run's month as closed.
	if _, err := r.pool.Exec(ctx, `DELETE FROM runstream_consumer_checkpoints c
		USING `+pgx.Identifier{runsPart}.Sanitize()+` r WHERE c.run_id = r.run_id`); err != nil {
		return fmt.Errorf("deleting the checkpoints of the runs in %s: %w", runsPart, err)
	}
	done := false
	err = pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		// Two processes' checks: one drops, the other finds nothing to do.
		var mine bool
		if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(hashtextextended('runstream_etl_drop|' || current_schema(), 0))`).Scan(&mine); err != nil || !mine {
			return err
		}
		var attached bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_inherits WHERE inhrelid = to_regclass($1))`, runsPart).Scan(&attached); err != nil || !attached {
			return err
		}
		// DETACH takes the tables' ACCESS EXCLUSIVE lock; behind a long
		// query it would hold up every query after it, the sink's too. Give
		// up instead, and try again at the next check.
		for _, q := range []string{
			`SET LOCAL lock_timeout = '2s'`,
			`ALTER TABLE runs DETACH PARTITION ` + pgx.Identifier{runsPart}.Sanitize(),
			`ALTER TABLE step_attempts DETACH PARTITION ` + pgx.Identifier{attemptsPart}.Sanitize(),
			`DROP TABLE ` + pgx.Identifier{runsPart}.Sanitize() + `, ` + pgx.Identifier{attemptsPart}.Sanitize(),
		} {
			if _, err := tx.Exec(ctx, q); err != nil {
				return err
			}
		}
		done = true
		return nil
	})
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == pgerrcode.LockNotAvailable {
		r.log.Warn("dropping a partition past the retention waited too long for the tables' lock (a long query on them?); retrying at the next check",
			"partition", runsPart)
		return nil
	}
	if err != nil {
		return fmt.Errorf("dropping %s and %s: %w", runsPart, attemptsPart, err)
	}
	if done {
		delete(r.held, m)
		r.log.Info("dropped a partition past the retention", "partition", runsPart, "rows", runRows)
		r.log.Info("dropped a partition past the retention", "partition", attemptsPart, "rows", attemptRows)
		r.dropped.Add(2)
	}
	return r.parts.load(ctx)
}

// convergeHeads are the store's run heads as the ETL's convergence sees
// them. Two kinds of run are taken out before the consumer library
// compares heads with checkpoints:
//
//   - with a retention, the runs that ended at least that long ago
//     (store.RunHead.ExpiredAt): their months are, or will be, dropped, and
//     a full pass (no cursor: first start, or the checkpoints lost) would
//     otherwise fetch every such run from the store to find the sink will
//     not write it;
//   - the runs whose rows hold the head's runSeq already: the checkpoint
//     read looks in the hot months only (ownCheckpoints), so an older
//     run's checkpoint may read short of its row, and the run would be
//     taken for one behind.
type convergeHeads struct {
	inner consumer.RunHeads
	pool  *pgxpool.Pool
	keep  time.Duration
	now   func() time.Time
}

func (h *convergeHeads) ConvergenceHorizon(ctx context.Context, grace time.Duration) (time.Time, error) {
	return h.inner.ConvergenceHorizon(ctx, grace)
}

func (h *convergeHeads) ChangedRuns(ctx context.Context, from, to time.Time) ([]store.RunHead, error) {
	heads, err := h.inner.ChangedRuns(ctx, from, to)
	if err != nil {
		return nil, err
	}
	return h.filter(ctx, heads)
}

// SummarizeNewEvents passes the converger's summary of the store's new
// events through to the store, when it has one.
func (h *convergeHeads) SummarizeNewEvents(ctx context.Context) (int, error) {
	if s, ok := h.inner.(interface {
		SummarizeNewEvents(context.Context) (int, error)
	}); ok {
		return s.SummarizeNewEvents(ctx)
	}
	return 0, nil
}

// RunsBefore returns the next page that keeps at least one run: the
// converger takes an empty page for the end of a full pass.
func (h *convergeHeads) RunsBefore(ctx context.Context, after string, before time.Time, limit int) ([]store.RunHead, error) {
	for {
		page, err := h.inner.RunsBefore(ctx, after, before, limit)
		if err != nil || len(page) == 0 {
			return page, err
		}
		kept, err := h.filter(ctx, page)
		if err != nil || len(kept) > 0 {
			return kept, err
		}
		after = page[len(page)-1].RunID
	}
}

func (h *convergeHeads) filter(ctx context.Context, heads []store.RunHead) ([]store.RunHead, error) {
	now := h.now()
	kept := heads[:0:0]
	ids := make([]string, 0, len(heads))
	for _, hd := range heads {
		if !hd.ExpiredAt(now, h.keep) {
			kept = append(kept, hd)
			ids = append(ids, clean(hd.RunID))
		}
	}
	if len(kept) == 0 {
		return kept, nil
	}
	rows, err := h.pool.Query(ctx, `SELECT run_id, last_event_seq FROM runs WHERE run_id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("reading the rows' runSeq for convergence: %w", err)
	}
	seqs := map[string]int64{}
	var id string
	var seq int64
	_, err = pgx.ForEachRow(rows, []any{&id, &seq}, func() error {
		seqs[id] = seq
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the rows' runSeq for convergence: %w", err)
	}
	out := kept[:0]
	for _, hd := range kept {
		if seq, ok := seqs[clean(hd.RunID)]; !ok || seq < hd.LastSeq {
			out = append(out, hd)
		}
	}
	return out, nil
}
