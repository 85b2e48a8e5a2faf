-- Checkpoints leave the store with their runs.
--
-- Retention drops a partition's events and, later, the runs rows kept as
-- tombstones; versions before this one left those runs' checkpoints in
-- run_snapshots for good: the store grew by one per large run removed, a
-- read of a removed run could be answered with a checkpoint taken before
-- its last events, and a new run taking a pruned run's id would have
-- started from the old run's checkpoint. DropPartition and
-- PruneTombstones now delete them with the events and the tombstones; this
-- deletes the ones already left: checkpoints of runs the store no longer
-- has, or whose partition was dropped.
DELETE FROM run_snapshots c
 WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.run_id = c.run_id)
    OR EXISTS (SELECT 1 FROM runs r JOIN run_event_partitions p ON p.epoch = r.run_epoch
                WHERE r.run_id = c.run_id AND p.dropped_at IS NOT NULL);
