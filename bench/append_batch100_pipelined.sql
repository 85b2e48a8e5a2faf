-- 100 events per transaction, pipelined: a stricter baseline for
-- POST /v1/events:batch than append_batch100.sql (see bench/README.md).
-- Each event's three statements of runstream_append's insert path (counter
-- upsert, event insert, outbox insert) are joined into one statement with
-- data-modifying CTEs, so no \gset is needed and the 100 statements go in
-- one pipeline, as pgx sends a batch. Runs are striped and ascending as in
-- append_batch100.sql. Not used by `runstream bench append --baseline`.
\set r1 random(1, 100)
\set r2 random(101, 200)
\set r3 random(201, 300)
\set r4 random(301, 400)
\set r5 random(401, 500)
\set r6 random(501, 600)
\set r7 random(601, 700)
\set r8 random(701, 800)
\set r9 random(801, 900)
\set r10 random(901, 1000)
\set r11 random(1001, 1100)
\set r12 random(1101, 1200)
\set r13 random(1201, 1300)
\set r14 random(1301, 1400)
\set r15 random(1401, 1500)
\set r16 random(1501, 1600)
\set r17 random(1601, 1700)
\set r18 random(1701, 1800)
\set r19 random(1801, 1900)
\set r20 random(1901, 2000)
\set r21 random(2001, 2100)
\set r22 random(2101, 2200)
\set r23 random(2201, 2300)
\set r24 random(2301, 2400)
\set r25 random(2401, 2500)
\set r26 random(2501, 2600)
\set r27 random(2601, 2700)
\set r28 random(2701, 2800)
\set r29 random(2801, 2900)
\set r30 random(2901, 3000)
\set r31 random(3001, 3100)
\set r32 random(3101, 3200)
\set r33 random(3201, 3300)
\set r34 random(3301, 3400)
\set r35 random(3401, 3500)
\set r36 random(3501, 3600)
\set r37 random(3601, 3700)
\set r38 random(3701, 3800)
\set r39 random(3801, 3900)
\set r40 random(3901, 4000)
\set r41 random(4001, 4100)
\set r42 random(4101, 4200)
\set r43 random(4201, 4300)
\set r44 random(4301, 4400)
\set r45 random(4401, 4500)
\set r46 random(4501, 4600)
\set r47 random(4601, 4700)
\set r48 random(4701, 4800)
\set r49 random(4801, 4900)
\set r50 random(4901, 5000)
\set r51 random(5001, 5100)
\set r52 random(5101, 5200)
\set r53 random(5201, 5300)
\set r54 random(5301, 5400)
\set r55 random(5401, 5500)
\set r56 random(5501, 5600)
\set r57 random(5601, 5700)
\set r58 random(5701, 5800)
\set r59 random(5801, 5900)
\set r60 random(5901, 6000)
\set r61 random(6001, 6100)
\set r62 random(6101, 6200)
\set r63 random(6201, 6300)
\set r64 random(6301, 6400)
\set r65 random(6401, 6500)
\set r66 random(6501, 6600)
\set r67 random(6601, 6700)
\set r68 random(6701, 6800)
\set r69 random(6801, 6900)
\set r70 random(6901, 7000)
\set r71 random(7001, 7100)
\set r72 random(7101, 7200)
\set r73 random(7201, 7300)
\set r74 random(7301, 7400)
\set r75 random(7401, 7500)
\set r76 random(7501, 7600)
\set r77 random(7601, 7700)
\set r78 random(7701, 7800)
\set r79 random(7801, 7900)
\set r80 random(7901, 8000)
\set r81 random(8001, 8100)
\set r82 random(8101, 8200)
\set r83 random(8201, 8300)
\set r84 random(8301, 8400)
\set r85 random(8401, 8500)
\set r86 random(8501, 8600)
\set r87 random(8601, 8700)
\set r88 random(8701, 8800)
\set r89 random(8801, 8900)
\set r90 random(8901, 9000)
\set r91 random(9001, 9100)
\set r92 random(9101, 9200)
\set r93 random(9201, 9300)
\set r94 random(9301, 9400)
\set r95 random(9401, 9500)
\set r96 random(9501, 9600)
\set r97 random(9601, 9700)
\set r98 random(9701, 9800)
\set r99 random(9801, 9900)
\set r100 random(9901, 10000)
BEGIN;
\startpipeline
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r1::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r1::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r2::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r2::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r3::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r3::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r4::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r4::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r5::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r5::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r6::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r6::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r7::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r7::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r8::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r8::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r9::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r9::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r10::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r10::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r11::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r11::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r12::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r12::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r13::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r13::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r14::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r14::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r15::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r15::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r16::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r16::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r17::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r17::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r18::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r18::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r19::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r19::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r20::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r20::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r21::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r21::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r22::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r22::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r23::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r23::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r24::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r24::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r25::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r25::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r26::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r26::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r27::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r27::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r28::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r28::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r29::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r29::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r30::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r30::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r31::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r31::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r32::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r32::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r33::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r33::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r34::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r34::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r35::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r35::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r36::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r36::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r37::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r37::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r38::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r38::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r39::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r39::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r40::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r40::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r41::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r41::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r42::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r42::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r43::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r43::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r44::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r44::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r45::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r45::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r46::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r46::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r47::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r47::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r48::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r48::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r49::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r49::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r50::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r50::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r51::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r51::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r52::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r52::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r53::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r53::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r54::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r54::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r55::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r55::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r56::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r56::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r57::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r57::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r58::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r58::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r59::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r59::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r60::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r60::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r61::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r61::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r62::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r62::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r63::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r63::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r64::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r64::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r65::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r65::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r66::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r66::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r67::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r67::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r68::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r68::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r69::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r69::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r70::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r70::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r71::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r71::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r72::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r72::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r73::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r73::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r74::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r74::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r75::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r75::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r76::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r76::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r77::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r77::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r78::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r78::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r79::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r79::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r80::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r80::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r81::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r81::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r82::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r82::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r83::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r83::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r84::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r84::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r85::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r85::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r86::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r86::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r87::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r87::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r88::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r88::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r89::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r89::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r90::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r90::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r91::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r91::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r92::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r92::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r93::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r93::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r94::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r94::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r95::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r95::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r96::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r96::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r97::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r97::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r98::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r98::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r99::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r99::int % 64, run_id, run_seq FROM e;
WITH c AS (
  INSERT INTO runs AS r (run_id, tenant_id, last_seq) VALUES (md5(:r100::text)::uuid::text, 'tenant_bench', 1)
  ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1 WHERE r.tenant_id = EXCLUDED.tenant_id
  RETURNING r.run_id, r.last_seq),
e AS (
  INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
  SELECT c.run_id, c.last_seq, gen_random_uuid(), 'StepCompleted', md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || c.last_seq::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (c.last_seq * 37 % 5000)::text || ',"result":{"rowsAffected":' || (c.last_seq * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || c.run_id || '/step_' || c.last_seq::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (c.last_seq * 7919 % 100000)::text || '}]}')::json
  FROM c
  ON CONFLICT DO NOTHING
  RETURNING run_id, run_seq)
INSERT INTO outbox (shard, run_id, run_seq) SELECT :r100::int % 64, run_id, run_seq FROM e;
\endpipeline
COMMIT;
