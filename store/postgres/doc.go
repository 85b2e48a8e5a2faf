// Package postgres is runstream's Append Authority on PostgreSQL (pgx v5):
// embedded versioned migrations, append (single and batch) with a per-run
// locked counter so runSeq is contiguous, the transactional outbox row in the
// same transaction, fetch, and snapshots (the run_snapshots checkpoint plus
// projectSnapshot through the one reducer in reduce).
//
// It owns the outbox and dead-letter tables: [Outbox] is every read and
// change of them other than the append's insert, for the relay (head read,
// delete, refusal and dead-lettering, vacuum, rotation, LISTEN) and for the
// API and `runstream relay dlq` (listing and retrying dead letters).
//
// Metrics (registered on the Registerer in [Config]):
//
//	runstream_store_appends_total{result="inserted|duplicate|duplicate_differs|rejected"}
//	runstream_store_append_seconds{mode="single|batch"}
//	runstream_store_snapshot_checkpoints_total
//	runstream_store_clock_skew_seconds{event_type}  persistedAt - emittedAt of each inserted event ("other" for types outside the contract)
package postgres
