package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/runstream/runstream/reduce"
	"github.com/runstream/runstream/store"
)

// GetSnapshot returns the latest checkpointed snapshot of a run from
// run_snapshots, or an error matching store.ErrNotFound.
func (s *Store) GetSnapshot(ctx context.Context, runID string) (store.RunSnapshot, error) {
	var raw []byte
	err := s.pool.QueryRow(ctx, `SELECT snapshot::text FROM run_snapshots WHERE run_id = $1`, runID).Scan(&raw)
	if err != nil {
		return store.RunSnapshot{}, classify(fmt.Errorf("reading the snapshot of run %q: %w", runID, err))
	}
	var snap store.RunSnapshot
	if err := json.Unmarshal(raw, &snap); err != nil {
		return store.RunSnapshot{}, fmt.Errorf("decoding the stored snapshot of run %q: %w", runID, err)
	}
	return snap, nil
}

// ProjectSnapshot returns the run's current state: the checkpointed
// snapshot (FROM_SNAPSHOT) or nothing (FULL), reduced with every event after
// it by the one reducer. When it reduced at least Config.SnapshotEvery events
// past the checkpoint it stores a new checkpoint, guarded so an older one
// never replaces a newer one. A run with no events is store.ErrNotFound.
func (s *Store) ProjectSnapshot(ctx context.Context, runID string) (store.RunSnapshot, error) {
	return s.ProjectSnapshotOf(ctx, runID, "")
}

// projectSQL reads in one statement (one round trip, one MVCC snapshot)
// what a projection needs. Its first row (kind 0) is the run's head: its
// tenant, terminal_at, and its checkpoint's seq and JSON (” without
// one). The rows after it (kind 1) are the first $3 events after the
// checkpoint, fetched only when $2 is empty or the run's tenant: the
// tenant check costs no second statement, and another tenant's run reads
// no events. The events are read from the run's one partition (its
// run_epoch, migration 0014): compared with a scalar subquery, which
// Postgres evaluates before the scan and prunes the other partitions by
// (a join on it would read every partition's index); the run's number
// (run_no, migration 0022) is compared too, so a partition keyed by it
// finds the events by its primary key. Both kinds share the leading
// columns (seq, tenant, a time, a JSON text); the event columns follow, empty on the head row. No column
// but the time is NULL, so every value scans into a plain Go value. The
// events carry what the reducer reads, not their eventId or idempotency
// key: a projection never shows them, and leaving them out spares
// Postgres their text and the API two strings a row. The head also
// carries the run's last runSeq (in the engine attempt's column), and a
// checkpoint past it is not the run's (a tombstone pruned, the id taken
// again): a projection that ends short of it found the run's events
// gone, retention having taken its partition out of the store.
const projectSQL = `WITH head AS (
	SELECT r.tenant_id, r.terminal_at, r.run_epoch, r.run_no, r.last_seq, c.last_event_seq, c.snapshot
	FROM runs r LEFT JOIN run_snapshots c ON c.run_id = r.run_id AND c.last_event_seq <= r.last_seq
	WHERE r.run_id = $1)
SELECT 0 AS kind, coalesce(last_event_seq, 0) AS seq, tenant_id, terminal_at AS at,
	coalesce(snapshot::text, '') AS body, '', '', '', '', '', '', last_seq, 0, ''
FROM head
UNION ALL
(SELECT 1, e.run_seq, e.tenant_id, e.persisted_at, coalesce(e.payload::text, ''),
	e.event_type, e.project_id, e.environment_id, e.plan_id,
	e.plan_version, coalesce(e.step_id, ''), e.engine_attempt_id, e.logical_attempt_id, e.emitted_at
FROM run_events e
WHERE e.run_id = $1 AND e.run_epoch = (SELECT run_epoch FROM head)
	AND e.run_no = (SELECT run_no FROM head)
	AND e.run_seq > (SELECT coalesce(last_event_seq, 0) FROM head)
	AND EXISTS (SELECT 1 FROM head WHERE $2 = '' OR tenant_id = $2)
ORDER BY e.run_seq LIMIT $3)
ORDER BY kind, seq`

// ProjectSnapshotOf is ProjectSnapshot for a reader limited to tenant
// ("" reads any run): another tenant's run is store.ErrNotFound, exactly
// as an unknown one, and costs no event read. The head, the checkpoint
// and the first MaxFetchLimit events come in one round trip.
func (s *Store) ProjectSnapshotOf(ctx context.Context, runID, tenant string) (store.RunSnapshot, error) {
	return s.ProjectSnapshotFor(ctx, runID, tenant, nil)
}

// A projection is large when its checkpoint's JSON has at least
// LargeCheckpointBytes or it reduces at least LargeProjectionEvents
// events: then its decoding and reducing take milliseconds of one
// processor, where a small run's take microseconds.
const (
	LargeCheckpointBytes  = 16 << 10
	LargeProjectionEvents = 256
)

// A LargeHook is called, at most once, when a projection turns out large,
// after its rows are read and before it decodes and reduces them: a caller
// can run large projections apart from small ones (the API lets only a
// few run at once while other tenants read, so their small reads do not
// wait behind them for a processor). Its error ends the projection.
type LargeHook func(ctx context.Context) error

// ProjectSnapshotFor is ProjectSnapshotOf calling onLarge (nil: none)
// when the projection is large.
func (s *Store) ProjectSnapshotFor(ctx context.Context, runID, tenant string, onLarge LargeHook) (store.RunSnapshot, error) {
	rows, err := s.pool.Query(ctx, projectSQL, runID, tenant, MaxFetchLimit)
	if err != nil {
		return store.RunSnapshot{}, classify(fmt.Errorf("reading run %q for its snapshot: %w", runID, err))
	}
	var (
		snap       store.RunSnapshot
		owner      string
		terminalAt pgtype.Timestamptz
		headSeen   bool
		checkpoint string // its JSON, "" without one
		lastSeq    int64  // the run's last runSeq (runs.last_seq)
		events     = make([]store.RunEventRecord, 0, 32)
		persisted  = make([]pgtype.Timestamptz, 0, 32)
	)
	for rows.Next() {
		var (
			kind int32
			at   pgtype.Timestamptz
			body string
			r    store.RunEventRecord
			eng  int64
			log  int32
		)
		if err := rows.Scan(&kind, &r.RunSeq, &r.TenantID, &at, &body, &r.EventType,
			&r.ProjectID, &r.EnvironmentID, &r.PlanID, &r.PlanVersion, &r.StepID,
			&eng, &log, &r.EmittedAt); err != nil {
			rows.Close()
			return store.RunSnapshot{}, classify(fmt.Errorf("reading run %q for its snapshot: %w", runID, err))
		}
		if kind == 0 {
			headSeen, owner, terminalAt, checkpoint, lastSeq = true, r.TenantID, at, body, eng
			continue
		}
		r.RunID, r.EngineAttemptID, r.LogicalAttemptID = runID, eng, int64(log)
		if body != "" {
			r.Payload = []byte(body)
		}
		events = append(events, r)
		persisted = append(persisted, at)
	}
	// The reducer reads persistedAt for the run's updatedAt (its last
	// event's) and terminalAt (its terminal event's) only: the others are
	// not formatted.
	for i := range events {
		if ev := &events[i]; persisted[i].Valid && (i == len(events)-1 || terminalEvent(ev.EventType)) {
			ev.PersistedAt = store.FormatPersistedAt(persisted[i].Time)
		}
	}
	if err := rows.Err(); err != nil {
		return store.RunSnapshot{}, classify(fmt.Errorf("reading run %q for its snapshot: %w", runID, err))
	}
	if !headSeen || (tenant != "" && owner != tenant) {
		return store.RunSnapshot{}, runNotFound(runID)
	}
	if onLarge != nil && (len(checkpoint) >= LargeCheckpointBytes || len(events) >= LargeProjectionEvents) {
		if err := onLarge(ctx); err != nil {
			return store.RunSnapshot{}, err
		}
	}
	if checkpoint != "" {
		if err := json.Unmarshal([]byte(checkpoint), &snap); err != nil {
			return store.RunSnapshot{}, fmt.Errorf("decoding the stored snapshot of run %q: %w", runID, err)
		}
	}
	from := snap.LastEventSeq
	for len(events) > 0 {
		snap, _ = reduce.Project(snap, events)
		if len(events) < MaxFetchLimit {
			break
		}
		if events, err = s.FetchEvents(ctx, runID, store.FetchOptions{AfterSeq: snap.LastEventSeq, Limit: MaxFetchLimit}); err != nil {
			return store.RunSnapshot{}, err
		}
	}
	if snap.LastEventSeq < lastSeq {
		return store.RunSnapshot{}, runArchived(runID, snap.LastEventSeq, lastSeq)
	}
	if snap.LastEventSeq == 0 {
		return store.RunSnapshot{}, runNotFound(runID)
	}
	snap.Stale = false
	if snap.TerminalAt == "" && store.IsTerminalRunStatus(snap.Status) && terminalAt.Valid {
		// A checkpoint written before snapshots carried terminalAt froze
		// the run without it: the runs row has it (migration 0010).
		snap.TerminalAt = store.FormatPersistedAt(terminalAt.Time)
	}
	if !s.cfg.DisableSnapshotCheckpoints && snap.LastEventSeq-from >= int64(s.cfg.SnapshotEvery) {
		if err := s.checkpoint(ctx, snap); err != nil {
			// The checkpoint is a cache: failing to write it does not fail
			// the read.
			s.log.Warn("checkpointing snapshot failed", "runId", runID, "err", err)
		}
	}
	return snap, nil
}

// runNotFound is ProjectSnapshotFor's answer for a run the store does not
// have (or the reader may not see), built only then: a read that finds its
// run pays for no message.
func runNotFound(runID string) error {
	return &store.Error{Code: store.CodeNotFound, Message: fmt.Sprintf("run %q has no events", runID)}
}

// runArchived is ProjectSnapshotFor's answer for a run whose events
// after runSeq have left the store: retention detached or dropped its
// partition. What is left (a checkpoint, or nothing) is not the run's
// state, so the answer is not found, saying where the events went.
func runArchived(runID string, have, last int64) error {
	return &store.Error{Code: store.CodeNotFound, Message: fmt.Sprintf(
		"run %q has no events in the store after runSeq %d of %d: retention moved them to the archive (GET /v1/runs/{runId}/events names its files)",
		runID, have, last)}
}

// terminalEvent reports whether an event of type t ends its run (the
// types migration 0010's terminal_at follows).
func terminalEvent(t string) bool {
	return t == store.EventRunCompleted || t == store.EventRunFailed || t == store.EventRunCancelled
}

func (s *Store) checkpoint(ctx context.Context, snap store.RunSnapshot) error {
	raw, err := json.Marshal(snap)
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO run_snapshots AS r (run_id, last_event_seq, snapshot)
		VALUES ($1, $2, $3::jsonb)
		ON CONFLICT (run_id) DO UPDATE SET last_event_seq = EXCLUDED.last_event_seq,
			snapshot = EXCLUDED.snapshot, updated_at = clock_timestamp()
		WHERE r.last_event_seq < EXCLUDED.last_event_seq`, snap.RunID, snap.LastEventSeq, string(raw))
	if err != nil {
		return classify(fmt.Errorf("checkpointing the snapshot of run %q: %w", snap.RunID, err))
	}
	s.metrics.checkpoints.Inc()
	return nil
}

// projectManySQL is projectSQL for many runs in one statement: a head row
// (kind 0) per run the store has, then that run's first $2 events after
// its checkpoint (kind 1), ordered by run, kind and seq. Each run's events
// are read from its one partition: the lateral scan is parameterized by
// the head's run_epoch and run_no, and Postgres prunes the other
// partitions at run time for each head. As in projectSQL, the head
// carries the run's last runSeq, and a run whose projection ends short of
// it is left out: its events left the store.
const projectManySQL = `WITH head AS (
	SELECT r.run_id, r.tenant_id, r.terminal_at, r.run_epoch, r.run_no, r.last_seq,
		coalesce(c.last_event_seq, 0) AS from_seq, c.snapshot
	FROM runs r LEFT JOIN run_snapshots c ON c.run_id = r.run_id AND c.last_event_seq <= r.last_seq
	WHERE r.run_id = ANY($1::text[]))
SELECT h.run_id, 0 AS kind, h.from_seq AS seq, h.tenant_id, h.terminal_at AS at,
	coalesce(h.snapshot::text, '') AS body, '', '', '', '', '', '', '', '', h.last_seq, 0, ''
FROM head h
UNION ALL
SELECT h.run_id, 1, e.run_seq, e.tenant_id, e.persisted_at, coalesce(e.payload::text, ''),
	e.event_id::text, e.event_type, e.idempotency_key, e.project_id, e.environment_id, e.plan_id,
	e.plan_version, coalesce(e.step_id, ''), e.engine_attempt_id, e.logical_attempt_id, e.emitted_at
FROM head h CROSS JOIN LATERAL (
	SELECT * FROM run_events e
	WHERE e.run_id = h.run_id AND e.run_epoch = h.run_epoch AND e.run_no = h.run_no
		AND e.run_seq > h.from_seq
	ORDER BY e.run_seq LIMIT $2) e
ORDER BY 1, 2, 3`

// MaxProjectRuns bounds the runs of one ProjectSnapshots call.
const MaxProjectRuns = 1000

// ProjectSnapshots is ProjectSnapshot for many runs (at most
// MaxProjectRuns) in one round trip: the heads, checkpoints and first
// events of every run come in one statement, so a consumer resyncing many
// runs at once (a projector catching up a backlog for runs its Redis
// lacks) pays one query, not one per run. A run with more than
// MaxFetchLimit events after its checkpoint reads the rest with
// FetchEvents. Runs the store does not have are absent from the map.
// Checkpoints are written as ProjectSnapshot writes them.
func (s *Store) ProjectSnapshots(ctx context.Context, runIDs []string) (map[string]store.RunSnapshot, error) {
	if len(runIDs) > MaxProjectRuns {
		return nil, fmt.Errorf("projecting %d runs at once: at most %d per call", len(runIDs), MaxProjectRuns)
	}
	out := make(map[string]store.RunSnapshot, len(runIDs))
	if len(runIDs) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, projectManySQL, runIDs, MaxFetchLimit)
	if err != nil {
		return nil, classify(fmt.Errorf("reading %d runs for their snapshots: %w", len(runIDs), err))
	}
	type pending struct {
		snap       store.RunSnapshot
		from       int64
		lastSeq    int64
		terminalAt pgtype.Timestamptz
		events     []store.RunEventRecord
	}
	var order []*pending
	var cur *pending
	for rows.Next() {
		var (
			runID string
			kind  int32
			at    pgtype.Timestamptz
			body  string
			r     store.RunEventRecord
			eng   int64
			log   int32
		)
		if err := rows.Scan(&runID, &kind, &r.RunSeq, &r.TenantID, &at, &body, &r.EventID, &r.EventType, &r.IdempotencyKey,
			&r.ProjectID, &r.EnvironmentID, &r.PlanID, &r.PlanVersion, &r.StepID,
			&eng, &log, &r.EmittedAt); err != nil {
			rows.Close()
			return nil, classify(fmt.Errorf("reading %d runs for their snapshots: %w", len(runIDs), err))
		}
		if kind == 0 {
			cur = &pending{from: r.RunSeq, lastSeq: eng, terminalAt: at, events: make([]store.RunEventRecord, 0, 16)}
			if body != "" {
				if err := json.Unmarshal([]byte(body), &cur.snap); err != nil {
					rows.Close()
					return nil, fmt.Errorf("decoding the stored snapshot of run %q: %w", runID, err)
				}
			}
			cur.snap.RunID = runID
			order = append(order, cur)
			continue
		}
		r.RunID, r.EngineAttemptID, r.LogicalAttemptID = runID, eng, int64(log)
		if at.Valid {
			r.PersistedAt = store.FormatPersistedAt(at.Time)
		}
		if body != "" {
			r.Payload = []byte(body)
		}
		cur.events = append(cur.events, r)
	}
	if err := rows.Err(); err != nil {
		return nil, classify(fmt.Errorf("reading %d runs for their snapshots: %w", len(runIDs), err))
	}
	for _, p := range order {
		runID := p.snap.RunID
		snap, events := p.snap, p.events
		if snap.LastEventSeq == 0 {
			snap = store.RunSnapshot{}
		}
		for len(events) > 0 {
			snap, _ = reduce.Project(snap, events)
			if len(events) < MaxFetchLimit {
				break
			}
			if events, err = s.FetchEvents(ctx, runID, store.FetchOptions{AfterSeq: snap.LastEventSeq, Limit: MaxFetchLimit}); err != nil {
				return nil, err
			}
		}
		if snap.LastEventSeq == 0 || snap.LastEventSeq < p.lastSeq {
			continue
		}
		snap.Stale = false
		if snap.TerminalAt == "" && store.IsTerminalRunStatus(snap.Status) && p.terminalAt.Valid {
			snap.TerminalAt = store.FormatPersistedAt(p.terminalAt.Time)
		}
		if !s.cfg.DisableSnapshotCheckpoints && snap.LastEventSeq-p.from >= int64(s.cfg.SnapshotEvery) {
			if err := s.checkpoint(ctx, snap); err != nil {
				s.log.Warn("checkpointing snapshot failed", "runId", runID, "err", err)
			}
		}
		out[runID] = snap
	}
	return out, nil
}
