-- One event per transaction: the three statements of runstream_append's
-- insert path (store/postgres/migrations/0001 and 0014: the insert names no
-- conflict target, as run_events is partitioned), with the
-- same tables, indexes and immutability trigger, for a random run among
-- 10,000. See bench/README.md.
--
-- runId is a UUID derived from :r (runstream's producers send UUID runIds);
-- the idempotency key is 64 hex characters and the payload about 200 bytes
-- of JSON, the shape of a StepCompleted event.
\set r random(1, 10000)
\set shard :r % 64
BEGIN;
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r::text)::uuid::text, :seq, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r::text)::uuid::text || '/step_' || :seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard, md5(:r::text)::uuid::text, :seq);
COMMIT;
