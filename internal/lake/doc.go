// Package lake is runstream's lake sink (`runstream lake`): it consumes the
// run-event topic through the consumer library, in a group of its own, and
// writes it as Parquet files to a directory or an S3-compatible bucket, in
// the retention archive's schema and layout (package archive), so that one
// query spans both. docs/LAKE.md describes the files and has DuckDB
// queries.
//
// # Files and exactly once
//
// The lake follows the Kafka Connect S3 sink. A partition's records are
// gathered into a window from one offset on; the window holds one file per
// tenant and persistedAt date (tenant=<t>/date=<d>/...), every file named
// after the topic, the partition and the window's first offset
// (<topic>.<partition>.<offset, 20 digits>.parquet). A window closes
// before the record whose offset is --rotate-records past its first, or
// whose persistedAt is --rotate-interval past its first record's: both
// read only the records, never the wall clock, so after any restart the
// same records close it and a redo writes the same objects. Its files are
// uploaded, read back (rows and checksum), and only then is the window
// committed: the runs' checkpoints and the partition's next offset in the
// lake's state (Postgres, see state.go), then the Kafka offset.
//
// Each (runId, runSeq) is written once: the consumer library skips a
// record at or below its run's checkpoint and fills a gap from the store
// first, and a window's checkpoints commit with it. A crash between an
// upload and the commit leaves objects the redo overwrites; what the redo
// does not write again (a window closed by --flush-idle, or a convergence
// repair) is listed in lake_pending before the first upload, and deleted
// by the redo before it uploads. A quiet partition's window is closed
// after --flush-idle of wall clock, so its last records reach the lake.
//
// Convergence (consumer.Config.Heads) brings runs behind the store (a
// dead-lettered tail) up to it: their missing events go to files of their
// own, <topic>.converge.<micros>.parquet, committed before the pass goes
// on. A repair and a partition's open window never both write an event:
// windows commit under the group's commit lock held shared, after reading
// their runs' committed checkpoints (what a repair committed meanwhile
// leaves their files), repairs read and commit under it exclusively
// (stateDB.lock).
//
// # Current state
//
// Each window's commit also stores every run's snapshot, folded with the
// reducer the projector uses. Every --current-interval one process of the
// group writes them as a new generation of the current-state table (one
// row per run) and then swaps current/manifest.json to it (current.go).
// Before each, the snapshots of runs that ended more than
// --current-retention ago are let go: such a run leaves the table, and
// its row keeps only its checkpoint, which still skips its late
// duplicates. A later record of it first folds its snapshot again from
// the store (as the checkpoints are read, so a store that fails is
// retried and never dead-letters the record), so it never comes back as
// a snapshot of its late events alone; if the store no longer has them,
// what is new is written and no snapshot kept. With --checkpoint-retention
// the rows left with no snapshot are deleted once untouched that long.
//
// # Faults
//
// A storage or state database that refuses a window makes the lake retry
// it with backoff, logging alert=LAKE_UPLOAD_FAILING: the partition
// waits, its lag grows, nothing after the window is committed, nothing is
// lost. A storage that cannot be written at start stops Run with the
// storage's own diagnosis.
//
// # Metrics
//
//   - runstream_lake_events_written_total{source="topic|store"}
//   - runstream_lake_events_skipped_total{reason="duplicate|dead_lettered"}
//   - runstream_lake_gaps_total
//   - runstream_lake_files_written_total, runstream_lake_bytes_written_total
//   - runstream_lake_windows_committed_total{reason="records|interval|files|idle|converge"}
//   - runstream_lake_upload_errors_total, runstream_lake_blocked
//   - runstream_lake_commit_seconds
//   - runstream_lake_current_runs, runstream_lake_current_published_total
//   - runstream_lake_runs_trimmed_total, runstream_lake_runs_rebuilt_total,
//     runstream_lake_runs_forgotten_total
//
// Lag is the consumer group's, which `runstream lake` exports itself
// (package lag's gauges, with group="runstream-lake"; `runstream lag
// --group runstream-lake`).
package lake
