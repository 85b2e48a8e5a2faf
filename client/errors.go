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
	// spool drains, or raise MaxSpoolBytes. [New] returns it too for a spool
	// directory that already holds more than MaxSpoolBytes (written with a
	// larger MaxSpoolBytes): nothing of it is read until MaxSpoolBytes is
	// raised to hold it.
	ErrSpoolFull = errors.New("spool full")
	// ErrSpoolCorrupt: a spool file holds a record that fails its checksum
	// or does not parse, wherever it is, the last record included. Only a
	// torn last record (cut short by the end of the file, or zeros where its
	// data never reached the disk: a write a crash interrupted, whose Append
	// never returned) is cut, with a warning. The error names the file and
	// the offset. Nothing is deleted or rewritten: move the directory aside
	// for inspection and start with an empty SpoolDir.
	ErrSpoolCorrupt = errors.New("spool corrupt")
	// ErrSpoolUnsafe: the spool directory, or a file in it, is one another
	// local user could have written or redirected: a symbolic link, owned by
	// another user, writable by its group or by others, a hard link, not a
	// regular file. Nothing in it was read, delivered or written to. The
	// error names the path and the fix (chmod 0700 or chown the directory,
	// remove the file after inspecting it, or choose another SpoolDir).
	ErrSpoolUnsafe = errors.New("spool unsafe")
	// ErrSpoolLocked: another process (or another Client in this one)
	// holds the spool directory. Each Client needs a SpoolDir of its own.
	ErrSpoolLocked = errors.New("spool directory in use")
	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("client closed")
)
