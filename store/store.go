package store

import (
	"context"
	"time"
)

// FetchOptions bound a [Store.FetchEvents] call.
type FetchOptions struct {
	// AfterSeq returns only events with runSeq > AfterSeq (0: from the start).
	AfterSeq int64
	// Limit caps the number of events (0: the implementation's default).
	Limit int
}

// Store is the Append Authority contract (IRunStateStore v2 section 2).
// Implementations are safe for concurrent use.
type Store interface {
	// AppendEvent validates and persists w, assigning runSeq and
	// persistedAt. A duplicate (runId, idempotencyKey) returns the existing
	// metadata with Idempotent set and no new row.
	AppendEvent(ctx context.Context, w RunEventWrite) (AppendResult, error)
	// FetchEvents returns a run's events in runSeq order.
	FetchEvents(ctx context.Context, runID string, opts FetchOptions) ([]RunEventRecord, error)
	// GetSnapshot returns the latest stored snapshot of a run, or an error
	// matching ErrNotFound when there is none.
	GetSnapshot(ctx context.Context, runID string) (RunSnapshot, error)
	// ProjectSnapshot reduces the stored snapshot plus the events after it
	// (FULL when there is no snapshot) into the run's current state. It
	// answers ErrNotFound for a run with no events.
	ProjectSnapshot(ctx context.Context, runID string) (RunSnapshot, error)
}

// RunHead is where a run stands in the store: its last runSeq and when that
// event was persisted. Convergence (package converge) compares consumers'
// watermarks with it.
type RunHead struct {
	RunID    string
	TenantID string
	// LastSeq is the run's last runSeq (runs.last_seq).
	LastSeq int64
	// LastPersistedAt is the persistedAt of the event at LastSeq.
	LastPersistedAt time.Time
	// TerminalAt is the persistedAt of the event that made the run
	// terminal (runs.terminal_at); zero while the run is open.
	TerminalAt time.Time
}

// ExpiredAt reports whether a run with this head is past a snapshot
// retention of ttl at now: terminal, and its terminal event at least ttl
// old. ttl 0 keeps every run.
func (h *RunHead) ExpiredAt(now time.Time, ttl time.Duration) bool {
	return ttl > 0 && !h.TerminalAt.IsZero() && !now.Before(h.TerminalAt.Add(ttl))
}
