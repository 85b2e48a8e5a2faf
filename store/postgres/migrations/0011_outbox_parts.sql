-- 0011: the outbox in two parts used in turn, so that the disk space a
-- backlog took is given back once it drained (issue 30).
--
-- The outbox is a queue. DELETE leaves dead rows whose space VACUUM reuses
-- but does not return to the filesystem (at most the table's empty tail,
-- when VACUUM gets its lock and no other transaction still sees the rows;
-- indexes never shrink), so after a backlog the table kept its high-water
-- mark: 49.8 MB for 0 rows after a backlog of 300,000 drained
-- (TestRelay_OutboxDiskAfterABacklog). VACUUM FULL would return it under
-- an exclusive lock that stops appends; TRUNCATE returns it at once, but
-- only a table that no append writes to may be truncated.
--
-- So the outbox is partitioned by one bit of its id: outbox_0 holds the
-- ids whose bit 24 is 0, outbox_1 the others, so blocks of 16,777,216 ids
-- alternate between the two. Appends are unchanged (runstream_append and
-- every INSERT INTO outbox route by the id the sequence gives, with
-- nothing more to read). The relay switches appends to the other part by
-- moving the id sequence forward to the next block; ids only ever grow, so
-- a run's later rows still get higher ids, and the relay's reads take
-- both parts in id order: per-run order holds across the switch. Once the
-- part appends left is empty, the relay truncates it, under ACCESS
-- EXCLUSIVE (which waits for every transaction that wrote to it) and only
-- when a read made after taking that lock finds no row, so neither a
-- committed row nor one of a transaction in flight can be lost
-- (internal/relay/rotate.go, docs/ARCHITECTURE.md "The relay").
--
-- An existing outbox is carried over, with its ids and retry state: its
-- rows are copied into the parts while this migration holds the table
-- (appends wait for the migration's commit), and the id sequence is kept.
-- It need not be drained first. Privileges granted on the old table to
-- other roles are not carried over.
--
-- No primary key: Postgres allows none on a table partitioned by an
-- expression. ids are unique by the sequence; the index on id serves the
-- lookups by id and the oldest row (ConvergenceHorizon).
ALTER SEQUENCE outbox_id_seq OWNED BY NONE;

CREATE TABLE outbox_parted (
    id              bigint      NOT NULL DEFAULT nextval('outbox_id_seq'),
    shard           integer     NOT NULL,
    run_id          text        NOT NULL,
    run_seq         bigint      NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz,
    last_error      text,
    first_failed_at timestamptz
) PARTITION BY LIST (((id >> 24) & 1));

-- Migration 0003's autovacuum settings, on each part: a partitioned table
-- takes none of its own (autovacuum visits the parts), and TRUNCATE keeps
-- them.
CREATE TABLE outbox_0 PARTITION OF outbox_parted FOR VALUES IN (0) WITH (
    autovacuum_vacuum_scale_factor = 0,
    autovacuum_vacuum_threshold = 2000,
    autovacuum_vacuum_cost_delay = 0
);
CREATE TABLE outbox_1 PARTITION OF outbox_parted FOR VALUES IN (1) WITH (
    autovacuum_vacuum_scale_factor = 0,
    autovacuum_vacuum_threshold = 2000,
    autovacuum_vacuum_cost_delay = 0
);

INSERT INTO outbox_parted (id, shard, run_id, run_seq, created_at, attempts,
    next_attempt_at, last_error, first_failed_at)
SELECT id, shard, run_id, run_seq, created_at, attempts,
    next_attempt_at, last_error, first_failed_at
FROM outbox;

DROP TABLE outbox;
ALTER TABLE outbox_parted RENAME TO outbox;
ALTER SEQUENCE outbox_id_seq OWNED BY outbox.id;

-- The indexes of 0001 and 0002, on both parts.
CREATE INDEX outbox_id ON outbox (id);
CREATE INDEX outbox_shard_id ON outbox (shard, id);
CREATE INDEX outbox_retrying ON outbox (shard) WHERE next_attempt_at IS NOT NULL;
