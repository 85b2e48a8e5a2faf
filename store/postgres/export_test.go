package postgres

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

// RotateOutboxWithHook is RotateOutbox calling hook, with the backend's
// pid, at the stages of the call: "checked" (the part appends left was
// found empty and held by no writer, before its lock is requested),
// "locked" (the lock granted, before the second check) and "switching"
// (before the id sequence moves).
func RotateOutboxWithHook(ctx context.Context, pool *pgxpool.Pool, opts RotateOutboxOptions, hook func(stage string, pid uint32)) (OutboxRotation, error) {
	opts.hook = hook
	return RotateOutbox(ctx, pool, opts)
}
