// Package testpg holds test helpers that write the Append Authority's schema
// the way the store does, for tests that need what the store's API does
// not offer (an append in a transaction the test holds open).
package testpg

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// AppendInTx appends w through runstream_append inside tx, as a batch or a
// shared append does, and returns its persistedAt. The caller decides when
// tx commits: the audit reads' tests hold it open to commit an event
// persisted before others already committed (the outbox trap).
func AppendInTx(ctx context.Context, t testing.TB, tx pgx.Tx, w store.RunEventWrite) time.Time {
	t.Helper()
	var (
		status  int16
		at      time.Time
		step    any
		payload any
	)
	if w.StepID != "" {
		step = w.StepID
	}
	if len(w.Payload) > 0 {
		payload = string(w.Payload)
	}
	err := tx.QueryRow(ctx, `SELECT o_status, o_persisted_at FROM runstream_append($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14::json, $15)`,
		w.RunID, w.TenantID, w.ProjectID, w.EnvironmentID, w.PlanID, w.PlanVersion, w.EventID, w.EventType,
		w.IdempotencyKey, step, int32(w.EngineAttemptID), int32(w.LogicalAttemptID), w.EmittedAt, payload,
		postgres.ShardOf(w.RunID)).Scan(&status, &at)
	if err != nil || status != 0 {
		t.Fatalf("appending event %s in a held transaction: status %d, %v", w.EventID, status, err)
	}
	return at
}
