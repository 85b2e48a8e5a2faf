// Package relay publishes the transactional outbox to Kafka: every event
// committed to the Append Authority reaches the run-event topic, keyed by
// runId, in runSeq order per run, at least once.
//
// How it never skips a committed row: there is no cursor. Each round reads
// the oldest rows still in the outbox (of the shards this relay owns),
// publishes them, and deletes only the rows the broker acknowledged. A
// transaction that commits late, with a lower id than rows already
// published, is simply found by the next round. (A relay that remembers
// "published up to id N" skips exactly such rows: watermill-sql and Marten
// both had to fix this.)
//
// How per-run order holds with several relays: outbox rows carry a shard
// derived from the runId (store/postgres.ShardOf), and each shard is owned by
// one relay at a time through a session-level Postgres advisory lock held on
// a dedicated connection. Relays also hold a membership lock, count each
// other through pg_locks, and each owns about NumShards/relays shards; a
// crashed relay's session ends, its locks vanish and the others take its
// shards on their next rebalance tick (about a second). Within a batch the
// rows of a run are published in waves, one row per run per wave, and a run
// whose row failed is held back from later waves, so a run's later events
// never overtake a failed one.
//
// Failures: when the broker is unreachable (dial errors, timeouts) the relay
// backs off as a whole with exponential backoff and jitter and nothing is
// counted against the rows, so an outage of any length loses and
// dead-letters nothing. When the broker refuses a record, that row's
// attempts grow with exponential backoff and jitter (capped at BackoffMax,
// 30s), while the run's later events wait and other runs flow. The row is
// retried until both its attempts reached MaxAttempts (8, the minimum) and
// its first refusal is more than RetryWindow old (5 minutes, longer than a
// broker rolling restart; the outbox row keeps first_failed_at, so a
// restart does not start the window again). Only then does it move to
// outbox_dead_letters, alert EVENT_BUS_DELIVERY_FAILED is logged and
// counted, and the run's later events flow again (consumers see a gap and
// resync from the store; docs/ARCHITECTURE.md, "Convergence").
//
// The topic: when absent, the relay creates it with the configured
// partitions and retention (retention.ms, a week by default) and a
// max.message.bytes that fits its produce batches (TopicMaxMessageBytes). It
// never alters a topic that exists; it warns at start when that topic's
// retention.ms differs or its max.message.bytes is below the batches.
//
// Latency: the store sends NOTIFY runstream_outbox (debounced) after
// appends and the relay LISTENs; a slow poll is the safety net.
//
// Disk: the outbox is two parts used in turn (migration 0011). Once the
// part taking appends holds Config.OutboxSwitchBytes (8 MiB) on disk and
// the other is truncated, a relay switches appends to the other part by
// moving the id sequence forward (ids only grow, so per-run order by id
// holds across parts); the part left drains and is then truncated, under
// a lock that waits for every transaction that wrote to it and with a
// read after the lock that finds it empty, so no row is lost. Its files
// are returned at once: a drained backlog does not keep its space on disk
// (DELETE and VACUUM never returned it). See store/postgres.Outbox.Rotate.
//
// The relay decides; store/postgres.Outbox holds the SQL: reading the head
// of the owned shards, deleting what the broker acknowledged, recording a
// refusal or moving a row to the dead-letter table, VACUUM, rotation and
// LISTEN. The shard locks (shards.go) are the relay's own.
//
// Metrics:
//
//	runstream_relay_published_total              records acknowledged by the broker
//	runstream_relay_batches_total                outbox rounds that published something
//	runstream_relay_retries_total                rows whose publish failed and will be retried
//	runstream_relay_dead_letters_total           rows moved to the dead-letter table (EVENT_BUS_DELIVERY_FAILED)
//	runstream_relay_broker_unavailable_total     rounds that found the broker unreachable
//	runstream_relay_publish_seconds              time of one wave's produce until acknowledged
//	runstream_relay_commit_to_ack_seconds        outbox row creation (commit) to broker acknowledgement
//	runstream_relay_owned_shards                 outbox shards this relay owns
//	runstream_outbox_backlog_rows                rows waiting in the outbox (all shards)
//	runstream_outbox_oldest_age_seconds          age of the oldest outbox row
//	runstream_outbox_dead_letters                rows in the dead-letter table
//	runstream_outbox_bytes                       size on disk of the outbox (both parts, with indexes)
//	runstream_relay_outbox_rotations_total{step="switch|truncate"}  rotation steps this relay took
package relay
