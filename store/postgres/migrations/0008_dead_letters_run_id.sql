-- 0008: the dead-letter listing filtered by run (GET /v1/dead-letters?runId=,
-- runstream relay dlq list --run) walks one run's letters in id order
-- instead of reading the whole table. Dead letters are rare and written one
-- at a time by the relay, so the index costs nothing on the append path.
CREATE INDEX IF NOT EXISTS outbox_dead_letters_run_id ON outbox_dead_letters (run_id, id);
