// Package etl is runstream's analytics sink (`runstream etl`): it consumes
// the run-event topic through the consumer library and keeps two Postgres
// tables ready for SQL, in a schema of their own (default
// runstream_etl, created with embedded migrations on start):
//
//   - runs: one row per run: identity, status, started/completed times and
//     duration, steps, failed steps, step attempts, last runSeq applied.
//   - step_attempts: one row per (run, step, logical attempt): status,
//     times, duration, error code and message, failure category, artifacts
//     count.
//
// docs/ETL.md describes the columns and has example queries.
//
// # Partitions and retention
//
// Both tables are partitioned by month (migration 0003): run_month, the
// UTC month of the persistedAt of the run's first event, is on every row
// of the run, so a run's rows live in one month's partitions. The ETL
// creates the partitions (the current and next month ahead, others on
// demand: partitioner) and, with Config.Retention, drops a month whole
// once all its runs started longer ago and have ended (retention.go). A run
// of a dropped month is never written again, and convergence leaves out
// the runs that ended longer than the retention ago (convergeHeads).
//
// # Effectively once
//
// Delivery on the topic is at least once. A run's consumer checkpoint is
// its runs row's last_event_seq (the last runSeq consumed, unknown types
// included, as the snapshot's lastEventSeq), written in the transaction
// that writes the row (consumer/pgcheckpoint, WithOwnRows; runs of an
// earlier month than the current one write the checkpoint table too, see
// ownCheckpoints); runs without a row (only unknown types so far) keep
// theirs in
// runstream_consumer_checkpoints in the same schema, which also holds the
// checkpoints earlier versions wrote for every run (the greater of the two
// counts). So a redelivered or duplicated record never reaches the sink
// twice, and a crash at any point leaves rows and checkpoints agreeing.
// Gaps are filled from the store (through the HTTP API or Postgres) before
// the run goes on. Unknown (future) event types move last_event_seq and
// updated_at only, and never fail.
//
// # Agreement with the snapshots
//
// A run's rows are read back into a snapshot and the new events are folded
// in with reduce, the reducer that builds the snapshots the API
// serves: statuses, attempts and durations agree with them by
// construction.
//
// # Throughput
//
// The consumer runs one checkpoint transaction per partition batch. The
// sink folds each event into its run's snapshot as it arrives (from no
// rows for a new run, or from the snapshot it committed last, which it
// caches), so a batch holds a snapshot per run rather than its events.
// When the batch is done (just before the checkpoints are written), it
// reads back, with one pipelined round trip, the runs it could not fold
// that way (the events of those wait), and writes the rows: the rows the runs' previous
// state does not have by COPY in the binary format, encoded straight from
// the new snapshots as Postgres reads them (two more round trips, one per
// table; an INSERT of unnested arrays when there are only a few), the
// others by an UPDATE of unnested arrays sent with the checkpoints. So a
// partition batch costs two to four round trips, whatever its size.
//
// # Metrics
//
//   - runstream_etl_events_total{result}: applied, gap_filled,
//     unknown_type, duplicate, handler_error (one per failed attempt),
//     dead_lettered.
//   - runstream_etl_gaps_total: gaps filled from the store.
//   - runstream_etl_flush_seconds: time to read back and write one
//     partition batch's rows.
//   - runstream_etl_retired_events_total: events of runs the retention
//     dropped, not written.
//   - runstream_etl_partitions_dropped_total: table partitions the
//     retention dropped.
package etl
