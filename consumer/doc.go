// Package consumer is the library for programs that consume runstream's
// run-event topic (analytics ETL, audit exporters, webhooks). Delivery on
// the topic is at least once (ExecutionSemantics v1 section 4); the library
// makes correct consumption the easy path:
//
//   - Order: a handler sees each run's events in runSeq order. Partitions
//     (and so runs) are processed in parallel, each by a goroutine of its
//     own that never waits for the others; offsets are committed only
//     after the handler returned nil for everything before them.
//   - Idempotency by (runId, runSeq): a [Checkpoints] store remembers the
//     last runSeq handled per run and group. With [pgcheckpoint.Store] the
//     handler's own writes and the checkpoints commit in one Postgres
//     transaction (an effectively-once sink): redelivered and duplicated
//     records never reach the handler twice. [MemoryCheckpoints] is for
//     tests. A duplicate is recognised on its key and runSeq header,
//     without decoding its value (see [Config.DecodeDuplicates]).
//   - Gaps: a record whose runSeq jumps past the checkpoint is never
//     skipped silently. The [Config.OnGap] callback supplies the missing
//     events (by default they are fetched through [Config.Fetcher]: a
//     store.Store, or [HTTPFetcher] for the API), which are delivered first.
//   - Forward compatibility: unknown event types and unknown fields are
//     delivered as they are, with the raw record value kept in [Event].Raw.
//   - Poison: a record that cannot be decoded, or whose handler fails
//     [Config.MaxAttempts] times with backoff, goes to the dead-letter
//     topic "<topic>.dlq" with headers saying why and where from, its run's
//     checkpoint moves past it, and the partition moves on; or, with
//     [Config.StopOnPoison], Run returns an error. Never an endless loop,
//     never a silent drop.
//
// Lag of the consumer's group shows in `runstream lag --group <group>`.
//
// The exported API uses only the standard library, franz-go and the store
// package's contract types; metrics go through [Hooks], so using the
// library does not force Prometheus on a program.
//
// Metrics registered on [Config.Registerer] when it is set (with the
// constant label group), besides convergence's, which package
// internal/converge documents:
//
//	runstream_consumer_offset_resets_total  partitions restarted past records no longer in the topic
package consumer
