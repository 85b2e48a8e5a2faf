-- The convergence window query against an unsummarized BRIN tail (docs/PERFORMANCE.md, issue 34):
-- run as a role that may create a schema: psql -d runstream -f bench/brin_tail.sql
DROP SCHEMA IF EXISTS brin_probe CASCADE;
CREATE SCHEMA brin_probe;
SET search_path = brin_probe;
CREATE TABLE ev (run_id text, run_seq bigint, persisted_at timestamptz, payload jsonb) WITH (autovacuum_enabled = false);
CREATE INDEX ev_brin ON ev USING brin (persisted_at) WITH (pages_per_range = 32, autosummarize = on);
-- 2,000,000 events at 1,000/s, appended in time order: none summarized (the burst's dropped requests)
INSERT INTO ev SELECT md5(g::text), g % 20, timestamptz '2026-11-29 00:00' + g * interval '1 millisecond',
  jsonb_build_object('rows', g, 'note', repeat('x', 200)) FROM generate_series(1, 2000000) g;
ANALYZE ev;
SELECT pg_size_pretty(pg_relation_size('ev')) AS heap;
\timing on
SET enable_seqscan = off;
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) SELECT count(*) FROM ev WHERE persisted_at >= timestamptz '2026-11-29 00:33:15' AND persisted_at < timestamptz '2026-11-29 00:33:20';
RESET enable_seqscan;
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) SELECT count(*) FROM ev WHERE persisted_at >= timestamptz '2026-11-29 00:33:15' AND persisted_at < timestamptz '2026-11-29 00:33:20';
SELECT brin_summarize_new_values('ev_brin') AS summarized;
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) SELECT count(*) FROM ev WHERE persisted_at >= timestamptz '2026-11-29 00:33:15' AND persisted_at < timestamptz '2026-11-29 00:33:20';
-- 5 s more of appends, then the next pass's summary
INSERT INTO ev SELECT md5(g::text), g % 20, timestamptz '2026-11-29 00:00' + g * interval '1 millisecond',
  jsonb_build_object('rows', g, 'note', repeat('x', 200)) FROM generate_series(2000001, 2005000) g;
SELECT brin_summarize_new_values('ev_brin') AS summarized_next_pass;
DROP SCHEMA brin_probe CASCADE;
