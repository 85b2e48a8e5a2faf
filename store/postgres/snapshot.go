package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

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
	snap, err := s.GetSnapshot(ctx, runID)
	if err != nil && !isNotFound(err) {
		return store.RunSnapshot{}, err
	}
	from := snap.LastEventSeq
	for {
		events, err := s.FetchEvents(ctx, runID, store.FetchOptions{AfterSeq: snap.LastEventSeq, Limit: MaxFetchLimit})
		if err != nil {
			return store.RunSnapshot{}, err
		}
		if len(events) == 0 {
			break
		}
		snap, _ = reduce.Project(snap, events)
		if len(events) < MaxFetchLimit {
			break
		}
	}
	if snap.LastEventSeq == 0 {
		return store.RunSnapshot{}, &store.Error{Code: store.CodeNotFound, Message: fmt.Sprintf("run %q has no events", runID)}
	}
	snap.Stale = false
	if snap.TerminalAt == "" && store.IsTerminalRunStatus(snap.Status) {
		// A checkpoint written before snapshots carried terminalAt froze
		// the run without it: the runs row has it (migration 0010).
		if err := s.fillTerminalAt(ctx, &snap); err != nil {
			return store.RunSnapshot{}, err
		}
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

// fillTerminalAt sets snap.TerminalAt from the run's terminal_at.
func (s *Store) fillTerminalAt(ctx context.Context, snap *store.RunSnapshot) error {
	var at *time.Time
	err := s.pool.QueryRow(ctx, `SELECT terminal_at FROM runs WHERE run_id = $1`, snap.RunID).Scan(&at)
	if err != nil {
		return classify(fmt.Errorf("reading when run %q ended: %w", snap.RunID, err))
	}
	if at != nil {
		snap.TerminalAt = store.FormatPersistedAt(*at)
	}
	return nil
}
