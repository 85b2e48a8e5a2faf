-- 0013: checks 0012's constraint on the existing rows. VALIDATE CONSTRAINT
-- takes SHARE UPDATE EXCLUSIVE, which appends and reads do not wait for:
-- this scan of run_events (seconds per ten million events) runs while the
-- store keeps taking appends. It is its own migration, so its own
-- transaction, so 0012's brief ACCESS EXCLUSIVE is released before it.
ALTER TABLE run_events VALIDATE CONSTRAINT run_events_legacy_epoch;
