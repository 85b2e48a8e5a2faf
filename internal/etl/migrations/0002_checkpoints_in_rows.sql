-- From this version on, a run's consumer checkpoint is its runs row's
-- last_event_seq, which now counts events of unknown types too (as the
-- snapshot's lastEventSeq does). runstream_consumer_checkpoints keeps the
-- checkpoints of runs without a row; those it holds from before still
-- count (the greater of the two wins), so no data moves.
COMMENT ON COLUMN runs.last_event_seq IS
    'runSeq of the last event of the run consumed, unknown types included; the run''s consumer checkpoint';
COMMENT ON COLUMN runs.updated_at IS 'persistedAt of the event last_event_seq names';
