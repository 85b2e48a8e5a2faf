// Package archive is runstream's archive of run events: the one Parquet
// schema for a [store.RunEventRecord] (used by retention, issue 31, and by
// the lake consumer, issue 37), its [Writer] and [Read], the [Digest] both
// compute so a file read back can be compared with the rows it was written
// from, and the [Storage] the files live in: a local directory ([Dir]) or
// an S3-compatible bucket ([S3]), opened from a URL by [OpenStorage].
//
// # Files
//
// One file holds the events of one tenant, under a Hive-style key made by
// [Key]: tenant=<tenant>/date=<YYYY-MM-DD>/<name>.parquet. Each row is one
// record, with typed columns (see [Columns] and docs/ARCHIVE.md); a record
// read back is byte-identical to the one written: every string as given,
// the payload's bytes as stored (a missing payload is a null), persistedAt
// both as a TIMESTAMP(MICROS, UTC) column that stock tools query and, for
// the API's text, rebuilt exactly by [store.FormatPersistedAt] (the writer
// refuses a persistedAt that function would not give back).
//
// # Checksum
//
// [Digest] is a SHA-256 over the records in the order given, each in a
// canonical length-prefixed encoding independent of Parquet. The writer
// records it in the file's footer and in its [Summary]; [Read] recomputes
// it from the rows and refuses a file whose footer disagrees. Order
// matters: the retention pass writes a file's rows in (runId, runSeq)
// order, and digests what it read from Postgres in that same order.
//
// # Storage
//
// [Storage.Put] of a whole file is atomic in both backends: a [Dir] writes
// a temporary name in the same directory, syncs it, renames it and syncs
// the directory, so a crash never leaves a partial file under the final
// name; an S3 PUT (or a multipart upload) makes the object appear whole or
// not at all. [Storage.Check] proves the location can be written before
// retention removes anything.
package archive
