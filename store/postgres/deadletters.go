package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// DeadLetter is an event the relay gave up publishing: a row of
// outbox_dead_letters with its event's type, id and tenant.
type DeadLetter struct {
	ID        int64     `json:"id"`
	RunID     string    `json:"runId"`
	RunSeq    int64     `json:"runSeq"`
	EventType string    `json:"eventType"`
	EventID   string    `json:"eventId"`
	TenantID  string    `json:"tenantId"`
	CreatedAt time.Time `json:"createdAt"`
	FailedAt  time.Time `json:"failedAt"`
	Attempts  int       `json:"attempts"`
	LastError string    `json:"lastError"`
	// FirstFailedAt is the record's first refusal, the start of its retry
	// window; nil for dead letters made before migration 0004.
	FirstFailedAt *time.Time `json:"firstFailedAt,omitempty"`
}

// deadLetterColumns are what scanDeadLetter reads, from
// outbox_dead_letters d joined with the event's run_events e, in the
// run's partition (its runs row's run_epoch) by its number (run_no).
const deadLetterColumns = `d.id, d.run_id, d.run_seq, e.event_type, e.event_id::text, e.tenant_id,
	d.created_at, d.failed_at, d.attempts, coalesce(d.last_error, ''), d.first_failed_at
	FROM outbox_dead_letters d JOIN runs r ON r.run_id = d.run_id
	JOIN run_events e ON e.run_id = d.run_id AND e.run_seq = d.run_seq AND e.run_epoch = r.run_epoch
		AND e.run_no = r.run_no`

func scanDeadLetter(row pgx.CollectableRow) (DeadLetter, error) {
	var d DeadLetter
	err := row.Scan(&d.ID, &d.RunID, &d.RunSeq, &d.EventType, &d.EventID, &d.TenantID,
		&d.CreatedAt, &d.FailedAt, &d.Attempts, &d.LastError, &d.FirstFailedAt)
	return d, err
}

// listDeadLettersQuery and listDeadLettersAfterQuery are two statements
// each, not one with "run_id = $1 unless $1 is empty": a prepared statement's
// generic plan for that cannot use the index on (run_id, id) of migration
// 0008, so filtering by run would read the whole table.
func listDeadLettersQuery(runID string, limit int) (string, []any) {
	if runID == "" {
		return `SELECT ` + deadLetterColumns + ` ORDER BY d.failed_at, d.id LIMIT $1`, []any{limit}
	}
	return `SELECT ` + deadLetterColumns + ` WHERE d.run_id = $1 ORDER BY d.failed_at, d.id LIMIT $2`, []any{runID, limit}
}

func listDeadLettersAfterQuery(runID string, afterID int64, limit int) (string, []any) {
	if runID == "" {
		return `SELECT ` + deadLetterColumns + ` WHERE d.id > $1 ORDER BY d.id LIMIT $2`, []any{afterID, limit}
	}
	return `SELECT ` + deadLetterColumns + ` WHERE d.run_id = $1 AND d.id > $2 ORDER BY d.id LIMIT $3`, []any{runID, afterID, limit}
}

// ListDeadLetters returns up to limit dead letters, oldest failure first,
// optionally of one run.
func (o *Outbox) ListDeadLetters(ctx context.Context, runID string, limit int) ([]DeadLetter, error) {
	sql, args := listDeadLettersQuery(runID, limit)
	rows, err := o.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("listing dead letters: %w", err)
	}
	return pgx.CollectRows(rows, scanDeadLetter)
}

// ListDeadLettersAfter returns up to limit dead letters with an id above
// afterID, in id order (the order their events entered the outbox),
// optionally of one run: the pages of a listing that keeps its place
// while letters are retried or added (the primary key walks it).
func (o *Outbox) ListDeadLettersAfter(ctx context.Context, runID string, afterID int64, limit int) ([]DeadLetter, error) {
	sql, args := listDeadLettersAfterQuery(runID, afterID, limit)
	rows, err := o.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("listing dead letters after id %d: %w", afterID, err)
	}
	return pgx.CollectRows(rows, scanDeadLetter)
}

// GetDeadLetter returns dead letter id; ok is false when there is none
// (never dead-lettered, or already retried).
func (o *Outbox) GetDeadLetter(ctx context.Context, id int64) (d DeadLetter, ok bool, err error) {
	rows, err := o.pool.Query(ctx, `SELECT `+deadLetterColumns+` WHERE d.id = $1`, id)
	if err != nil {
		return d, false, fmt.Errorf("reading dead letter %d: %w", id, err)
	}
	ds, err := pgx.CollectRows(rows, scanDeadLetter)
	if err != nil {
		return d, false, fmt.Errorf("reading dead letter %d: %w", id, err)
	}
	if len(ds) == 0 {
		return d, false, nil
	}
	return ds[0], true, nil
}

// RetryDeadLetters moves dead letters back into the outbox (with fresh
// attempts and a fresh retry window) so the relay publishes them again:
// the ones with the given ids, or all of them when all is set. The rows
// are marked redelivered (migration 0018): the relay publishes them with
// the record header that tells consumers later events of the run may have
// come before. Consumers that already resynced past an event drop the
// replay as a duplicate (runSeq at or below their watermark). It returns
// how many rows moved. A letter whose event the store no longer holds (in its
// run's partition, as the listing joins it) is not moved: its outbox row
// would never drain, since the relay has nothing to publish.
func (o *Outbox) RetryDeadLetters(ctx context.Context, ids []int64, all bool) (int64, error) {
	if !all && len(ids) == 0 {
		return 0, fmt.Errorf("name dead letters to retry with --id, or use --all")
	}
	return o.RetrySelected(ctx, DeadLetterSelection{IDs: ids, All: all})
}

// DeadLetterSelection names dead letters: by id, all of them, those of
// one error code (DeadLetterErrorCode) or those of one run. The fields
// add up (a letter any of them names is selected).
type DeadLetterSelection struct {
	IDs       []int64
	All       bool
	ErrorCode string
	RunID     string
}

// deadLetterErrorCode is a letter's error code in SQL: the first
// UPPER_SNAKE word of at least 4 characters in its last error (the
// broker's code, as franz-go's errors start with it:
// "MESSAGE_TOO_LARGE: ..."), else OTHER.
const deadLetterErrorCode = `coalesce(substring(d.last_error from '[A-Z][A-Z0-9_]{3,}'), 'OTHER')`

// RetrySelected is RetryDeadLetters for any selection.
func (o *Outbox) RetrySelected(ctx context.Context, sel DeadLetterSelection) (int64, error) {
	var moved int64
	err := pgx.BeginFunc(ctx, o.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `WITH gone AS (
				DELETE FROM outbox_dead_letters d
				WHERE ($2 OR d.id = ANY($1) OR ($3 <> '' AND `+deadLetterErrorCode+` = $3) OR ($4 <> '' AND d.run_id = $4))
					AND EXISTS (SELECT 1 FROM runs r JOIN run_events e
						ON e.run_id = r.run_id AND e.run_epoch = r.run_epoch AND e.run_no = r.run_no
						WHERE r.run_id = d.run_id AND e.run_seq = d.run_seq)
				RETURNING d.shard, d.run_id, d.run_seq)
			INSERT INTO outbox (shard, run_id, run_seq, redelivered)
			SELECT shard, run_id, run_seq, true FROM gone ORDER BY run_id, run_seq`, sel.IDs, sel.All, sel.ErrorCode, sel.RunID)
		moved = tag.RowsAffected()
		if err == nil && moved > 0 {
			_, err = tx.Exec(ctx, `SELECT pg_notify('runstream_outbox', '')`)
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("moving dead letters back to the outbox: %w", err)
	}
	return moved, nil
}

// DeadLetterGroup is a count of dead letters sharing a key: an error code
// or a run.
type DeadLetterGroup struct {
	Key         string    `json:"key"`
	Count       int64     `json:"count"`
	FirstFailed time.Time `json:"firstFailedAt"`
	LastFailed  time.Time `json:"lastFailedAt"`
	// Example is one letter's last error (by error code) or the run's
	// tenant (by run).
	Example string `json:"example"`
}

// MaxDeadLetterGroups bounds DeadLetterGroups's answer.
const MaxDeadLetterGroups = 100

// DeadLetterGroups counts the dead letters by error code (by "error") or
// by run (by "run"), the largest groups first, at most
// MaxDeadLetterGroups; truncated says more groups exist.
func (o *Outbox) DeadLetterGroups(ctx context.Context, by string) (groups []DeadLetterGroup, truncated bool, err error) {
	var key, example string
	switch by {
	case "error":
		key, example = deadLetterErrorCode, `coalesce(min(d.last_error), '')`
	case "run":
		key, example = `d.run_id`, `coalesce(min(r.tenant_id), '')`
	default:
		return nil, false, fmt.Errorf("dead letters are grouped by error or by run, not %q", by)
	}
	rows, err := o.pool.Query(ctx, `SELECT `+key+` AS k, count(*), min(d.failed_at), max(d.failed_at), `+example+`
		FROM outbox_dead_letters d LEFT JOIN runs r ON r.run_id = d.run_id
		GROUP BY k ORDER BY count(*) DESC, k LIMIT $1`, MaxDeadLetterGroups+1)
	if err != nil {
		return nil, false, fmt.Errorf("grouping dead letters by %s: %w", by, err)
	}
	groups, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (DeadLetterGroup, error) {
		var g DeadLetterGroup
		err := row.Scan(&g.Key, &g.Count, &g.FirstFailed, &g.LastFailed, &g.Example)
		return g, err
	})
	if err != nil {
		return nil, false, fmt.Errorf("grouping dead letters by %s: %w", by, err)
	}
	if len(groups) > MaxDeadLetterGroups {
		return groups[:MaxDeadLetterGroups], true, nil
	}
	return groups, false, nil
}
