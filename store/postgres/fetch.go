package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runstream/runstream/store"
)

// DefaultFetchLimit and MaxFetchLimit bound FetchEvents pages.
const (
	DefaultFetchLimit = 100
	MaxFetchLimit     = 1000
)

const fetchSQL = `WITH r AS (SELECT run_epoch, run_no FROM runs WHERE run_id = $1)
SELECT run_id, run_seq, event_id::text, event_type, idempotency_key, tenant_id,
	project_id, environment_id, plan_id, plan_version, coalesce(step_id, ''),
	engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload::text
FROM run_events WHERE run_id = $1 AND run_seq > $2
	AND run_epoch = (SELECT run_epoch FROM r) AND run_no = (SELECT run_no FROM r)
ORDER BY run_seq LIMIT $3`

// FetchEvents returns a run's events with runSeq > opts.AfterSeq in runSeq
// order, at most opts.Limit (default 100, max 1000). An unknown run yields
// an empty slice, not an error.
func (s *Store) FetchEvents(ctx context.Context, runID string, opts store.FetchOptions) ([]store.RunEventRecord, error) {
	limit := opts.Limit
	if limit <= 0 {
		limit = DefaultFetchLimit
	}
	if limit > MaxFetchLimit {
		limit = MaxFetchLimit
	}
	rows, err := s.pool.Query(ctx, fetchSQL, runID, opts.AfterSeq, limit)
	if err != nil {
		return nil, classify(fmt.Errorf("fetching events of run %q after seq %d: %w", runID, opts.AfterSeq, err))
	}
	recs, err := pgx.CollectRows(rows, scanRecord)
	if err != nil {
		return nil, classify(fmt.Errorf("reading events of run %q after seq %d: %w", runID, opts.AfterSeq, err))
	}
	return recs, nil
}

func scanRecord(row pgx.CollectableRow) (store.RunEventRecord, error) {
	var (
		r         store.RunEventRecord
		eng, log  int32
		persisted time.Time
		payload   *string
	)
	err := row.Scan(&r.RunID, &r.RunSeq, &r.EventID, &r.EventType, &r.IdempotencyKey, &r.TenantID,
		&r.ProjectID, &r.EnvironmentID, &r.PlanID, &r.PlanVersion, &r.StepID,
		&eng, &log, &r.EmittedAt, &persisted, &payload)
	if err != nil {
		return r, err
	}
	r.EngineAttemptID, r.LogicalAttemptID = int64(eng), int64(log)
	r.PersistedAt = store.FormatPersistedAt(persisted)
	if payload != nil {
		r.Payload = []byte(*payload)
	}
	return r, nil
}

// RunTenant returns the tenant that owns runID, or an error matching
// store.ErrNotFound when the run has no events.
func (s *Store) RunTenant(ctx context.Context, runID string) (string, error) {
	var tenant string
	err := s.pool.QueryRow(ctx, `SELECT tenant_id FROM runs WHERE run_id = $1`, runID).Scan(&tenant)
	if err != nil {
		return "", classify(fmt.Errorf("looking up run %q: %w", runID, err))
	}
	return tenant, nil
}

// ListRuns returns up to limit run IDs greater than after, in order, for
// walking every run (rebuild --all).
func (s *Store) ListRuns(ctx context.Context, after string, limit int) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT run_id FROM runs WHERE run_id > $1 ORDER BY run_id LIMIT $2`, after, limit)
	if err != nil {
		return nil, classify(fmt.Errorf("listing runs after %q: %w", after, err))
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, classify(fmt.Errorf("listing runs after %q: %w", after, err))
	}
	return ids, nil
}

// RunCount returns the number of the tenant's runs in the store (the
// runs_tenant_id index answers it). The runs list reports it beside the
// runs the Redis catalog holds.
func (s *Store) RunCount(ctx context.Context, tenantID string) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM runs WHERE tenant_id = $1`, tenantID).Scan(&n); err != nil {
		return 0, classify(fmt.Errorf("counting the runs of tenant %q: %w", tenantID, err))
	}
	return n, nil
}

// CountRuns returns the number of runs in the store.
func (s *Store) CountRuns(ctx context.Context) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM runs`).Scan(&n); err != nil {
		return 0, classify(fmt.Errorf("counting runs: %w", err))
	}
	return n, nil
}
