-- 0012: every run gets an epoch, the lower bound of the run_events
-- partition that holds all of its events (issue 31: whole runs leave the
-- store together, by DROP of a partition). Migration 0014 partitions
-- run_events by it; this one and 0013 prepare the existing table so that
-- 0014 needs no scan while it holds its lock.
--
-- Runs that exist before partitioning keep the epoch -infinity: their
-- events stay where they are, in the partition run_events_legacy (0014),
-- and their later events go there too. Both columns are added with a
-- constant default, which Postgres records in the catalog without
-- rewriting a row, so this migration holds its locks for a moment only.
ALTER TABLE runs ADD COLUMN run_epoch timestamptz NOT NULL DEFAULT '-infinity';
ALTER TABLE run_events ADD COLUMN run_epoch timestamptz NOT NULL DEFAULT '-infinity';

-- The legacy partition's bound, as a constraint Postgres can trust when
-- 0014 attaches the table (it then skips the scan that ATTACH PARTITION
-- would make under its lock). NOT VALID: checked by 0013, without
-- blocking appends.
ALTER TABLE run_events ADD CONSTRAINT run_events_legacy_epoch
    CHECK (run_epoch < '1970-01-01 00:00:00+00') NOT VALID;
