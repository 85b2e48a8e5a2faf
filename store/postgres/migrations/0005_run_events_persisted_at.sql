-- 0005: what convergence (package converge) reads: the runs whose latest
-- event was persisted in a time window.
--
-- run_events is append-only and persisted_at grows with the heap's order,
-- so a BRIN index fits: a few pages for the whole table, nothing to
-- maintain per insert (block ranges are summarised later, by autovacuum
-- with autosummarize), and the ranges not yet summarised, which are the
-- recent ones a convergence pass asks for, are simply read.
CREATE INDEX run_events_persisted_at_brin ON run_events USING brin (persisted_at)
    WITH (pages_per_range = 32, autosummarize = on);
