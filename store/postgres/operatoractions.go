package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// OperatorAction is one row of the audit log of operator actions
// (migration 0020): who did what, to how many, when and why.
type OperatorAction struct {
	ID int64 `json:"id"`
	// At is when the action was recorded (after it took effect).
	At time.Time `json:"at"`
	// Actor is who asked: "operator token <fingerprint>", "tenant <id>"
	// or "development (no tokens)".
	Actor string `json:"actor"`
	// Action names what was done (dead-letter.retry, dead-letters.retry,
	// rebuild.start, run.resync); Target what it was done to.
	Action string `json:"action"`
	Target string `json:"target"`
	// Count is how many things it changed: dead letters moved, runs to
	// rebuild, runs resynced.
	Count     int64  `json:"count"`
	Reason    string `json:"reason"`
	RequestID string `json:"requestId"`
}

// RecordOperatorAction appends a to the audit log; its ID and At are the
// store's.
func (s *Store) RecordOperatorAction(ctx context.Context, a OperatorAction) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO operator_actions (actor, action, target, count, reason, request_id)
		VALUES ($1, $2, $3, $4, $5, $6)`, a.Actor, a.Action, a.Target, a.Count, a.Reason, a.RequestID)
	if err != nil {
		return classify(fmt.Errorf("recording the operator action %s on %s: %w", a.Action, a.Target, err))
	}
	return nil
}

// ListOperatorActions returns at most limit actions, newest first, with
// ids below before (0: from the newest).
func (s *Store) ListOperatorActions(ctx context.Context, before int64, limit int) ([]OperatorAction, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("listing operator actions: limit must be > 0, got %d", limit)
	}
	if before <= 0 {
		before = 1<<63 - 1
	}
	rows, err := s.pool.Query(ctx, `SELECT id, at, actor, action, target, count, reason, request_id
		FROM operator_actions WHERE id < $1 ORDER BY id DESC LIMIT $2`, before, limit)
	if err != nil {
		return nil, classify(fmt.Errorf("listing operator actions: %w", err))
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[OperatorAction])
	if err != nil {
		return nil, classify(fmt.Errorf("listing operator actions: %w", err))
	}
	return out, nil
}
