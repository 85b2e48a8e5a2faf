// Package client is the Go producer client of runstream: what a workflow
// engine calls to append run events to the API (ExecutionSemantics v1
// section 5; docs/ARCHITECTURE.md, "Producers: the Go client").
//
// [New] takes a [Config]: the API's URL and token, and the write-latency
// budget. [Client.Run] returns a [Run], the handle engines use: its methods
// (Started, Step(id).Started, Completed, Failed, Skipped, Paused, Resumed,
// Completed, Failed, Cancelled) append the run's events with typed
// payloads ([RunStarted], [StepCompleted], [Failure], ...), filling in the
// correlation fields, eventId, emittedAt, the idempotency key and the
// attempt counters (a step's logical attempts counted from its retries).
// [Client.Append] and [Client.AppendBatch] take whole events ([Event]) for
// engines that track everything themselves, and fill in an empty eventId,
// emittedAt and idempotency key. Both refuse an event type outside the
// contract's twelve ([KnownEventTypes]) with an [*UnknownEventTypeError]
// that suggests the nearest ("did you mean StepStarted?") unless
// Config.AllowEventTypes lists it, validate the event exactly as the API
// does (a bad event gets the API's own [*Error] and is never sent), and
// post it, retrying 429, 503 and transport errors with exponential backoff
// and full jitter or the API's Retry-After, all within WriteLatencyBudget
// (3 s). Callers need no other package of this module: the store's types
// are aliased here ([Event], [AppendResult], [ArtifactRef], [Error]).
//
// Past the budget an event fails open or fails: a type in FailOpen
// (StepStarted) is written to a durable spool directory and fsynced before
// Append returns with [Result].Spooled; a type in NeverFailOpen
// (StepCompleted, StepFailed), or in neither list, returns an error
// wrapping [ErrBudgetExceeded] so the engine fails the step.
//
// The spool is delivered later in the order of the Appends, per run: a
// background drainer sends it as soon as the API answers again,
// [Client.Drain] flushes it on demand, and an Append for a run that still
// has spooled events delivers those first (or, failing that within its
// budget, spools behind them or fails). A spool left by a process that
// died is delivered by the next Client on the same directory; events
// delivered twice are answered as duplicates (idempotent), never stored
// twice. The spool's format and its failure modes (a torn last record is
// cut with a warning; anything else damaged, the last complete record
// included, is [ErrSpoolCorrupt] and left untouched; [ErrSpoolFull] past
// MaxSpoolBytes, and from New for a spool that already holds more) are
// described in spool.go.
//
// The spool is delivered with the Client's token, so it must be a
// directory no other local user can write: New creates SpoolDir 0700 when
// it is absent, and refuses with [ErrSpoolUnsafe] one that is a symbolic
// link, is owned by another user or is writable by its group or by others,
// before reading anything in it. Every file in it is opened without
// following symbolic links (O_NOFOLLOW, within an os.Root of the
// directory) and must be a regular file of this user's with one link, not
// writable by others; a planted LOCK or segment link, a hard link or
// another user's file is [ErrSpoolUnsafe] naming it, and nothing is read or
// written through it.
//
// Errors: the API's refusals are [*Error] (store.Error), so errors.Is(err,
// [ErrSchemaValidation]) and the like work as on the server; the client's
// own conditions are the other Err* sentinels.
//
// The package needs Go 1.26.0 or later, the release this module's
// dependencies need (its go.mod says go 1.26.0; the toolchain line, which
// importers ignore, names the release the repository itself builds with).
package client
