package postgres

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

// RotateOutboxWithHook is [Outbox.Rotate] calling hook, with the backend's
// pid, at the stages of the call: "checked" (the part appends left was
// found empty and held by no writer, before its lock is requested),
// "locked" (the lock granted, before the second check) and "switching"
// (before the id sequence moves).
func RotateOutboxWithHook(ctx context.Context, pool *pgxpool.Pool, opts RotateOutboxOptions, hook func(stage string, pid uint32)) (OutboxRotation, error) {
	opts.hook = hook
	return NewOutbox(pool).Rotate(ctx, opts)
}

// DeadLetterQueries are the statements of ListDeadLetters and
// ListDeadLettersAfter for one run, with their arguments.
func DeadLetterQueries(runID string, afterID int64, limit int) [][2]any {
	a, aa := listDeadLettersQuery(runID, limit)
	b, ba := listDeadLettersAfterQuery(runID, afterID, limit)
	return [][2]any{{a, aa}, {b, ba}}
}

// RunEventReads are the statements that read one run's events from its
// partition (FetchEvents, ProjectSnapshotOf, ProjectSnapshots, and the
// relay's read of the outbox's head with every shard), with their
// arguments for runID.
func RunEventReads(runID string) map[string][2]any {
	return map[string][2]any{
		"fetch":       {fetchSQL, []any{runID, int64(0), DefaultFetchLimit}},
		"project":     {projectSQL, []any{runID, "", MaxFetchLimit}},
		"projectMany": {projectManySQL, []any{[]string{runID}, MaxFetchLimit}},
		"relayHead":   {readHeadSQL, []any{allShards(), 100, []int64{}}},
	}
}

func allShards() []int32 {
	s := make([]int32, NumShards)
	for i := range s {
		s[i] = int32(i)
	}
	return s
}

// AuditSQL is the statement of one audit page (ReadAudit), with its
// parameters: tenant, after (persistedAt, runId, runSeq), before, limit.
const AuditSQL = auditSQL
