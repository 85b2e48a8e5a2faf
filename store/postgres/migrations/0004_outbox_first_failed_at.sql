-- 0004: the relay retries a refused record by time as well as by count.
--
-- A row is dead-lettered only once it was refused at least MaxAttempts times
-- AND its first refusal is older than the relay's retry window (5 minutes by
-- default, a broker rolling restart). The time of the first refusal is kept
-- here, in the row, so a relay restart or another relay taking the shard
-- does not start the window again. NULL until the first refusal; the
-- database's clock sets and reads it, so relays on hosts with skewed clocks
-- agree.
ALTER TABLE outbox ADD COLUMN first_failed_at timestamptz;

-- Carried over when the row is dead-lettered (NULL for dead letters made
-- before this migration).
ALTER TABLE outbox_dead_letters ADD COLUMN first_failed_at timestamptz;
