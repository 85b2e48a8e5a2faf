package client

import "errors"

// Sentinels for errors.Is. The API's own refusals come back as
// *store.Error, so callers test them with the store's sentinels
// (errors.Is(err, store.ErrSchemaValidation), store.ErrUnavailable, ...),
// exactly as the server code does.
var (
	// ErrBudgetExceeded: the write-latency budget (Config.WriteLatencyBudget)
	// ran out before the API accepted the event, and the event's type may not
	// fail open (NeverFailOpen, or in neither list). The engine should fail
	// the step (ExecutionSemantics v1 section 5). The error also wraps the
	// last answer, so errors.Is(err, store.ErrUnavailable) tells a refusing
	// API from an unreachable one. It means "not known to be stored": a
	// request given up at the budget may still commit in the API, even
	// after a later event of the run.
	ErrBudgetExceeded = errors.New("write-latency budget exceeded")
	// ErrNotDelivered: the API could not be reached or refused for now
	// (503, 429, a transport error) and the event's type may not fail open,
	// although the budget was not used up (for example a TLS error, which no
	// retry repairs).
	ErrNotDelivered = errors.New("event not delivered")
	// ErrSpoolFull: a fail-open event could not be spooled because the spool
	// holds Config.MaxSpoolBytes already. The event was not spooled (the
	// Append fails); nothing spooled before was lost. Restore the API so the
	// spool drains, or raise MaxSpoolBytes.
	ErrSpoolFull = errors.New("spool full")
	// ErrSpoolCorrupt: a spool file holds a record that fails its checksum
	// or does not parse, before its last record (a torn last record, a write
	// a crash interrupted, is cut with a warning instead). The error names
	// the file and the offset. Nothing is deleted or rewritten: move the
	// directory aside for inspection and start with an empty SpoolDir.
	ErrSpoolCorrupt = errors.New("spool corrupt")
	// ErrSpoolLocked: another process (or another Client in this one)
	// holds the spool directory. Each Client needs a SpoolDir of its own.
	ErrSpoolLocked = errors.New("spool directory in use")
	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("client closed")
)
