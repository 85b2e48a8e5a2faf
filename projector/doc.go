// Package projector reduces the run-event topic into Redis snapshots
// (docs/ARCHITECTURE.md, "The projector: Kafka to Redis"; the Redis layout
// is docs/INTERFACES.md's): stateless processes in one Kafka consumer
// group apply each run's events in runSeq order with the one reducer
// (reduce), write the snapshot and its watermark lastEventSeq
// atomically with a Lua script guarded on the previous watermark, and commit
// Kafka offsets only after the Redis writes they cover succeeded.
//
// Per batch of polled records: the snapshot of every run in the batch is
// taken from the projector's bounded snapshot cache (the snapshots it last
// wrote) or read with pipelined GETs; events are applied in offset order (a run
// lives on one partition, so offset order is the relay's runSeq order);
// duplicates (runSeq <= lastEventSeq) are no-ops; a gap (runSeq >
// lastEventSeq+1) marks the run stale, raises
// PROJECTOR_NON_CONTIGUOUS_FETCH_DETECTED and resyncs it from the store:
// FROM_SNAPSHOT (the Redis snapshot plus the store's events after its
// watermark) or FULL (store projectSnapshot) when there is no usable
// snapshot; stale clears only when the watermark advanced (ExecutionSemantics
// v1 1.5.1). The writes go out in pipelines while the batch is reduced,
// each guarded on the watermark its snapshot was reduced from, whether that
// snapshot came from Redis or from the cache; a write that loses its guard
// (another projector moved the watermark during a rebalance) drops the
// run's cache entry, reloads it from Redis and retries that run. The next
// batch is polled and decoded while a batch's writes are in flight;
// rebalances are allowed only with nothing in flight. When Redis fails the batch is not
// committed: the partitions are rewound to the batch's first offsets and
// polled again after a backoff.
//
// The Redis layout (keys, the guarded write script, the snapshot codec,
// the change notification) is package snapshots; this package drives it:
// the Kafka loop, the pipelining of writes (batchWriter), the snapshot
// cache and convergence.
//
// A partition whose committed offset is no longer in the topic (retention
// deleted it while the group was stopped or too far behind) restarts at the
// earliest record left, and the records in between are never read: that is
// logged once per partition at WARN and counted; runs with later events
// resync at their gap, and convergence repairs the others (dataloss.go).
//
// A run Redis does not hold whose first event in a batch is not its first
// (Redis lost the snapshot, or the run's first events were dead-lettered)
// is resynced FULL and counted as missing, not as a gap of the bus. So is
// a run Redis does not hold whose first record is a retried dead letter
// (header redelivered, record.Redelivered): its later events came before
// it, so it may be older than what Redis lost, and the store says where
// the run stands. A record that is only late (a relay's backlog after a
// broker outage) is in its run's order and is applied like any other,
// however old. The FULL resyncs cost no round trip each: the
// projections of a group of runs (up to 128) come in one store query
// (postgres.Store.ProjectSnapshots), read while the previous group is
// reduced, so a backlog for runs absent from Redis drains at about the
// rate of one for runs present.
//
// Runs whose resync could not finish (the store is down) stay stale and are
// listed in the set runstream:resync; every projector retries them with
// backoff, so a crash does not forget them.
//
// Convergence (converge.go; docs/ARCHITECTURE.md, "Convergence: the read
// side repairs itself"): when the event source can
// report run heads (*postgres.Store can), the projector holding the
// group's lease in Redis (snapshots.ConvergeLeaseKey) compares, every
// Config.ConvergeInterval, the snapshots of the runs that changed in the
// store since its cursor (snapshots.ConvergeCursorKey; every run when
// Redis lost it) with the store's last runSeq, and resyncs or marks stale
// those behind: a dead-lettered tail, Redis restarted empty or failed over.
// The cursor lives beside the snapshots it vouches for, so what loses them
// loses the cursor too. At the start of each of its passes it sweeps
// expired runs from the runs catalogs. Config.DisableConvergence turns it
// off.
//
// Retention (Config.SnapshotTTL): a terminal run's snapshot and catalog
// entries expire in Redis SnapshotTTL after its terminal event; a late or
// replayed event of a run that ended longer ago is not written (counted in
// runstream_projector_expired_writes_total), and convergence does not bring
// the run back. Config.SnapshotEncoding stores terminal snapshots gzipped.
//
// Group membership (package internal/kgroup): Config.SessionTimeout, and
// static membership with Config.InstanceID, so a replacement under the
// same id takes its partitions back at once; a clean stop leaves the
// group. The lag gauges of each partition are refreshed every second; crossing
// Config.LagHighThreshold raises PROJECTOR_LAG_HIGH. Redis may be one
// server, a Cluster or a primary under Sentinel (any
// redis.UniversalClient): reads and writes are split by slot.
//
// The main types are [Projector] (create it with [New], then
// [Projector.Run]) and its [Config].
//
// Metrics:
//
//	runstream_projector_events_total{result="applied|duplicate|gap|unknown_type"}
//	runstream_projector_non_contiguous_total       PROJECTOR_NON_CONTIGUOUS_FETCH_DETECTED
//	runstream_projector_missing_snapshots_total    runs Redis did not hold at a later event (REDIS_SNAPSHOTS_LOST)
//	runstream_projector_commit_to_visible_seconds  persistedAt to snapshot write landed, per run written (SNAPSHOT_FRESHNESS_LOW)
//	runstream_projector_causal_violations_total    PROJECTOR_CAUSAL_VIOLATION
//	runstream_projector_undecodable_records_total  records that could not be decoded (their run is resynced)
//	runstream_projector_resyncs_total{mode="from_snapshot|full",result="ok|no_advance|error"}
//	runstream_projector_stale_runs                 runs marked stale and not yet resynced
//	runstream_projector_write_conflicts_total      guarded writes that lost to another writer
//	runstream_projector_batch_seconds              time to reduce and write one poll batch
//	runstream_projector_snapshot_cache_hits_total  runs whose snapshot came from the cache
//	runstream_projector_snapshot_cache_misses_total runs whose snapshot was read from Redis
//	runstream_projector_lag_records{partition}     records behind the partition's end
//	runstream_projector_lag_seconds{partition}     now minus persistedAt of the last applied event (0 when caught up)
//	runstream_projector_offset_resets_total        partitions restarted past records no longer in the topic (retention, broker loss)
//	runstream_projector_redis_failures_total       batches whose Redis reads or writes failed (retried, not committed)
//	runstream_projector_lag_high_total             times a partition's lag crossed PROJECTOR_LAG_HIGH's threshold
//	runstream_projector_expired_writes_total       snapshot writes not made: the run ended more than SnapshotTTL ago
//	runstream_projector_expired_catalog_runs_total expired runs the convergence leaseholder swept from the runs catalogs
//
// Convergence's metrics (with the label consumer="projector") are
// documented by package internal/converge.
package projector
