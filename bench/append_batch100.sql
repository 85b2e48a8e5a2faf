-- 100 events per transaction: the three statements of runstream_append's
-- insert path (see append_single.sql) repeated for 100 events, as
-- POST /v1/events:batch runs runstream_append 100 times in one transaction.
-- See bench/README.md.
--
-- Event i's run is random within its own stripe of 100 runs
-- (100*(i-1)+1 .. 100*i), so the 100 runs are distinct, uniform over 10,000,
-- and locked in ascending order: concurrent transactions cannot deadlock on
-- each other's counter rows, as the store avoids deadlocks by locking a
-- batch's runs in runId order.
--
-- Generated from append_single.sql; to regenerate, see bench/README.md.
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
\set shard1 :r1 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r1::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq1 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r1::text)::uuid::text, :seq1, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq1::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq1::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq1::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r1::text)::uuid::text || '/step_' || :seq1::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq1::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard1, md5(:r1::text)::uuid::text, :seq1);
\set shard2 :r2 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r2::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq2 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r2::text)::uuid::text, :seq2, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq2::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq2::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq2::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r2::text)::uuid::text || '/step_' || :seq2::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq2::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard2, md5(:r2::text)::uuid::text, :seq2);
\set shard3 :r3 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r3::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq3 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r3::text)::uuid::text, :seq3, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq3::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq3::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq3::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r3::text)::uuid::text || '/step_' || :seq3::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq3::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard3, md5(:r3::text)::uuid::text, :seq3);
\set shard4 :r4 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r4::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq4 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r4::text)::uuid::text, :seq4, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq4::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq4::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq4::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r4::text)::uuid::text || '/step_' || :seq4::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq4::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard4, md5(:r4::text)::uuid::text, :seq4);
\set shard5 :r5 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r5::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq5 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r5::text)::uuid::text, :seq5, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq5::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq5::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq5::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r5::text)::uuid::text || '/step_' || :seq5::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq5::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard5, md5(:r5::text)::uuid::text, :seq5);
\set shard6 :r6 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r6::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq6 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r6::text)::uuid::text, :seq6, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq6::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq6::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq6::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r6::text)::uuid::text || '/step_' || :seq6::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq6::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard6, md5(:r6::text)::uuid::text, :seq6);
\set shard7 :r7 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r7::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq7 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r7::text)::uuid::text, :seq7, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq7::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq7::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq7::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r7::text)::uuid::text || '/step_' || :seq7::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq7::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard7, md5(:r7::text)::uuid::text, :seq7);
\set shard8 :r8 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r8::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq8 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r8::text)::uuid::text, :seq8, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq8::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq8::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq8::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r8::text)::uuid::text || '/step_' || :seq8::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq8::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard8, md5(:r8::text)::uuid::text, :seq8);
\set shard9 :r9 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r9::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq9 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r9::text)::uuid::text, :seq9, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq9::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq9::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq9::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r9::text)::uuid::text || '/step_' || :seq9::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq9::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard9, md5(:r9::text)::uuid::text, :seq9);
\set shard10 :r10 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r10::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq10 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r10::text)::uuid::text, :seq10, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq10::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq10::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq10::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r10::text)::uuid::text || '/step_' || :seq10::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq10::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard10, md5(:r10::text)::uuid::text, :seq10);
\set shard11 :r11 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r11::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq11 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r11::text)::uuid::text, :seq11, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq11::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq11::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq11::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r11::text)::uuid::text || '/step_' || :seq11::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq11::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard11, md5(:r11::text)::uuid::text, :seq11);
\set shard12 :r12 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r12::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq12 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r12::text)::uuid::text, :seq12, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq12::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq12::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq12::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r12::text)::uuid::text || '/step_' || :seq12::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq12::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard12, md5(:r12::text)::uuid::text, :seq12);
\set shard13 :r13 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r13::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq13 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r13::text)::uuid::text, :seq13, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq13::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq13::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq13::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r13::text)::uuid::text || '/step_' || :seq13::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq13::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard13, md5(:r13::text)::uuid::text, :seq13);
\set shard14 :r14 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r14::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq14 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r14::text)::uuid::text, :seq14, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq14::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq14::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq14::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r14::text)::uuid::text || '/step_' || :seq14::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq14::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard14, md5(:r14::text)::uuid::text, :seq14);
\set shard15 :r15 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r15::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq15 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r15::text)::uuid::text, :seq15, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq15::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq15::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq15::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r15::text)::uuid::text || '/step_' || :seq15::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq15::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard15, md5(:r15::text)::uuid::text, :seq15);
\set shard16 :r16 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r16::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq16 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r16::text)::uuid::text, :seq16, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq16::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq16::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq16::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r16::text)::uuid::text || '/step_' || :seq16::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq16::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard16, md5(:r16::text)::uuid::text, :seq16);
\set shard17 :r17 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r17::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq17 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r17::text)::uuid::text, :seq17, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq17::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq17::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq17::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r17::text)::uuid::text || '/step_' || :seq17::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq17::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard17, md5(:r17::text)::uuid::text, :seq17);
\set shard18 :r18 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r18::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq18 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r18::text)::uuid::text, :seq18, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq18::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq18::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq18::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r18::text)::uuid::text || '/step_' || :seq18::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq18::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard18, md5(:r18::text)::uuid::text, :seq18);
\set shard19 :r19 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r19::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq19 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r19::text)::uuid::text, :seq19, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq19::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq19::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq19::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r19::text)::uuid::text || '/step_' || :seq19::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq19::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard19, md5(:r19::text)::uuid::text, :seq19);
\set shard20 :r20 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r20::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq20 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r20::text)::uuid::text, :seq20, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq20::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq20::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq20::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r20::text)::uuid::text || '/step_' || :seq20::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq20::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard20, md5(:r20::text)::uuid::text, :seq20);
\set shard21 :r21 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r21::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq21 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r21::text)::uuid::text, :seq21, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq21::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq21::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq21::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r21::text)::uuid::text || '/step_' || :seq21::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq21::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard21, md5(:r21::text)::uuid::text, :seq21);
\set shard22 :r22 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r22::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq22 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r22::text)::uuid::text, :seq22, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq22::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq22::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq22::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r22::text)::uuid::text || '/step_' || :seq22::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq22::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard22, md5(:r22::text)::uuid::text, :seq22);
\set shard23 :r23 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r23::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq23 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r23::text)::uuid::text, :seq23, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq23::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq23::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq23::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r23::text)::uuid::text || '/step_' || :seq23::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq23::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard23, md5(:r23::text)::uuid::text, :seq23);
\set shard24 :r24 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r24::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq24 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r24::text)::uuid::text, :seq24, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq24::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq24::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq24::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r24::text)::uuid::text || '/step_' || :seq24::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq24::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard24, md5(:r24::text)::uuid::text, :seq24);
\set shard25 :r25 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r25::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq25 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r25::text)::uuid::text, :seq25, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq25::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq25::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq25::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r25::text)::uuid::text || '/step_' || :seq25::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq25::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard25, md5(:r25::text)::uuid::text, :seq25);
\set shard26 :r26 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r26::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq26 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r26::text)::uuid::text, :seq26, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq26::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq26::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq26::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r26::text)::uuid::text || '/step_' || :seq26::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq26::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard26, md5(:r26::text)::uuid::text, :seq26);
\set shard27 :r27 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r27::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq27 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r27::text)::uuid::text, :seq27, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq27::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq27::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq27::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r27::text)::uuid::text || '/step_' || :seq27::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq27::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard27, md5(:r27::text)::uuid::text, :seq27);
\set shard28 :r28 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r28::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq28 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r28::text)::uuid::text, :seq28, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq28::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq28::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq28::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r28::text)::uuid::text || '/step_' || :seq28::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq28::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard28, md5(:r28::text)::uuid::text, :seq28);
\set shard29 :r29 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r29::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq29 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r29::text)::uuid::text, :seq29, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq29::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq29::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq29::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r29::text)::uuid::text || '/step_' || :seq29::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq29::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard29, md5(:r29::text)::uuid::text, :seq29);
\set shard30 :r30 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r30::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq30 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r30::text)::uuid::text, :seq30, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq30::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq30::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq30::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r30::text)::uuid::text || '/step_' || :seq30::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq30::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard30, md5(:r30::text)::uuid::text, :seq30);
\set shard31 :r31 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r31::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq31 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r31::text)::uuid::text, :seq31, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq31::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq31::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq31::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r31::text)::uuid::text || '/step_' || :seq31::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq31::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard31, md5(:r31::text)::uuid::text, :seq31);
\set shard32 :r32 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r32::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq32 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r32::text)::uuid::text, :seq32, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq32::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq32::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq32::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r32::text)::uuid::text || '/step_' || :seq32::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq32::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard32, md5(:r32::text)::uuid::text, :seq32);
\set shard33 :r33 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r33::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq33 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r33::text)::uuid::text, :seq33, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq33::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq33::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq33::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r33::text)::uuid::text || '/step_' || :seq33::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq33::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard33, md5(:r33::text)::uuid::text, :seq33);
\set shard34 :r34 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r34::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq34 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r34::text)::uuid::text, :seq34, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq34::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq34::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq34::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r34::text)::uuid::text || '/step_' || :seq34::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq34::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard34, md5(:r34::text)::uuid::text, :seq34);
\set shard35 :r35 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r35::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq35 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r35::text)::uuid::text, :seq35, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq35::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq35::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq35::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r35::text)::uuid::text || '/step_' || :seq35::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq35::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard35, md5(:r35::text)::uuid::text, :seq35);
\set shard36 :r36 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r36::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq36 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r36::text)::uuid::text, :seq36, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq36::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq36::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq36::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r36::text)::uuid::text || '/step_' || :seq36::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq36::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard36, md5(:r36::text)::uuid::text, :seq36);
\set shard37 :r37 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r37::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq37 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r37::text)::uuid::text, :seq37, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq37::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq37::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq37::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r37::text)::uuid::text || '/step_' || :seq37::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq37::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard37, md5(:r37::text)::uuid::text, :seq37);
\set shard38 :r38 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r38::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq38 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r38::text)::uuid::text, :seq38, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq38::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq38::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq38::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r38::text)::uuid::text || '/step_' || :seq38::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq38::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard38, md5(:r38::text)::uuid::text, :seq38);
\set shard39 :r39 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r39::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq39 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r39::text)::uuid::text, :seq39, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq39::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq39::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq39::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r39::text)::uuid::text || '/step_' || :seq39::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq39::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard39, md5(:r39::text)::uuid::text, :seq39);
\set shard40 :r40 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r40::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq40 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r40::text)::uuid::text, :seq40, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq40::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq40::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq40::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r40::text)::uuid::text || '/step_' || :seq40::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq40::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard40, md5(:r40::text)::uuid::text, :seq40);
\set shard41 :r41 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r41::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq41 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r41::text)::uuid::text, :seq41, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq41::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq41::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq41::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r41::text)::uuid::text || '/step_' || :seq41::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq41::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard41, md5(:r41::text)::uuid::text, :seq41);
\set shard42 :r42 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r42::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq42 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r42::text)::uuid::text, :seq42, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq42::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq42::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq42::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r42::text)::uuid::text || '/step_' || :seq42::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq42::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard42, md5(:r42::text)::uuid::text, :seq42);
\set shard43 :r43 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r43::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq43 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r43::text)::uuid::text, :seq43, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq43::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq43::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq43::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r43::text)::uuid::text || '/step_' || :seq43::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq43::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard43, md5(:r43::text)::uuid::text, :seq43);
\set shard44 :r44 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r44::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq44 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r44::text)::uuid::text, :seq44, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq44::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq44::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq44::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r44::text)::uuid::text || '/step_' || :seq44::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq44::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard44, md5(:r44::text)::uuid::text, :seq44);
\set shard45 :r45 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r45::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq45 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r45::text)::uuid::text, :seq45, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq45::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq45::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq45::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r45::text)::uuid::text || '/step_' || :seq45::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq45::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard45, md5(:r45::text)::uuid::text, :seq45);
\set shard46 :r46 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r46::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq46 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r46::text)::uuid::text, :seq46, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq46::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq46::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq46::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r46::text)::uuid::text || '/step_' || :seq46::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq46::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard46, md5(:r46::text)::uuid::text, :seq46);
\set shard47 :r47 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r47::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq47 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r47::text)::uuid::text, :seq47, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq47::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq47::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq47::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r47::text)::uuid::text || '/step_' || :seq47::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq47::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard47, md5(:r47::text)::uuid::text, :seq47);
\set shard48 :r48 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r48::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq48 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r48::text)::uuid::text, :seq48, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq48::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq48::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq48::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r48::text)::uuid::text || '/step_' || :seq48::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq48::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard48, md5(:r48::text)::uuid::text, :seq48);
\set shard49 :r49 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r49::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq49 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r49::text)::uuid::text, :seq49, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq49::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq49::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq49::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r49::text)::uuid::text || '/step_' || :seq49::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq49::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard49, md5(:r49::text)::uuid::text, :seq49);
\set shard50 :r50 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r50::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq50 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r50::text)::uuid::text, :seq50, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq50::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq50::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq50::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r50::text)::uuid::text || '/step_' || :seq50::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq50::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard50, md5(:r50::text)::uuid::text, :seq50);
\set shard51 :r51 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r51::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq51 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r51::text)::uuid::text, :seq51, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq51::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq51::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq51::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r51::text)::uuid::text || '/step_' || :seq51::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq51::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard51, md5(:r51::text)::uuid::text, :seq51);
\set shard52 :r52 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r52::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq52 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r52::text)::uuid::text, :seq52, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq52::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq52::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq52::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r52::text)::uuid::text || '/step_' || :seq52::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq52::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard52, md5(:r52::text)::uuid::text, :seq52);
\set shard53 :r53 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r53::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq53 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r53::text)::uuid::text, :seq53, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq53::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq53::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq53::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r53::text)::uuid::text || '/step_' || :seq53::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq53::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard53, md5(:r53::text)::uuid::text, :seq53);
\set shard54 :r54 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r54::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq54 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r54::text)::uuid::text, :seq54, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq54::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq54::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq54::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r54::text)::uuid::text || '/step_' || :seq54::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq54::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard54, md5(:r54::text)::uuid::text, :seq54);
\set shard55 :r55 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r55::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq55 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r55::text)::uuid::text, :seq55, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq55::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq55::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq55::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r55::text)::uuid::text || '/step_' || :seq55::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq55::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard55, md5(:r55::text)::uuid::text, :seq55);
\set shard56 :r56 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r56::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq56 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r56::text)::uuid::text, :seq56, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq56::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq56::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq56::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r56::text)::uuid::text || '/step_' || :seq56::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq56::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard56, md5(:r56::text)::uuid::text, :seq56);
\set shard57 :r57 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r57::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq57 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r57::text)::uuid::text, :seq57, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq57::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq57::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq57::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r57::text)::uuid::text || '/step_' || :seq57::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq57::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard57, md5(:r57::text)::uuid::text, :seq57);
\set shard58 :r58 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r58::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq58 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r58::text)::uuid::text, :seq58, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq58::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq58::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq58::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r58::text)::uuid::text || '/step_' || :seq58::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq58::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard58, md5(:r58::text)::uuid::text, :seq58);
\set shard59 :r59 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r59::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq59 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r59::text)::uuid::text, :seq59, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq59::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq59::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq59::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r59::text)::uuid::text || '/step_' || :seq59::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq59::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard59, md5(:r59::text)::uuid::text, :seq59);
\set shard60 :r60 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r60::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq60 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r60::text)::uuid::text, :seq60, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq60::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq60::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq60::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r60::text)::uuid::text || '/step_' || :seq60::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq60::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard60, md5(:r60::text)::uuid::text, :seq60);
\set shard61 :r61 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r61::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq61 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r61::text)::uuid::text, :seq61, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq61::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq61::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq61::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r61::text)::uuid::text || '/step_' || :seq61::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq61::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard61, md5(:r61::text)::uuid::text, :seq61);
\set shard62 :r62 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r62::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq62 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r62::text)::uuid::text, :seq62, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq62::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq62::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq62::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r62::text)::uuid::text || '/step_' || :seq62::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq62::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard62, md5(:r62::text)::uuid::text, :seq62);
\set shard63 :r63 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r63::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq63 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r63::text)::uuid::text, :seq63, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq63::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq63::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq63::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r63::text)::uuid::text || '/step_' || :seq63::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq63::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard63, md5(:r63::text)::uuid::text, :seq63);
\set shard64 :r64 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r64::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq64 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r64::text)::uuid::text, :seq64, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq64::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq64::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq64::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r64::text)::uuid::text || '/step_' || :seq64::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq64::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard64, md5(:r64::text)::uuid::text, :seq64);
\set shard65 :r65 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r65::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq65 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r65::text)::uuid::text, :seq65, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq65::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq65::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq65::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r65::text)::uuid::text || '/step_' || :seq65::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq65::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard65, md5(:r65::text)::uuid::text, :seq65);
\set shard66 :r66 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r66::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq66 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r66::text)::uuid::text, :seq66, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq66::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq66::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq66::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r66::text)::uuid::text || '/step_' || :seq66::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq66::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard66, md5(:r66::text)::uuid::text, :seq66);
\set shard67 :r67 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r67::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq67 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r67::text)::uuid::text, :seq67, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq67::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq67::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq67::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r67::text)::uuid::text || '/step_' || :seq67::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq67::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard67, md5(:r67::text)::uuid::text, :seq67);
\set shard68 :r68 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r68::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq68 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r68::text)::uuid::text, :seq68, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq68::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq68::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq68::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r68::text)::uuid::text || '/step_' || :seq68::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq68::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard68, md5(:r68::text)::uuid::text, :seq68);
\set shard69 :r69 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r69::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq69 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r69::text)::uuid::text, :seq69, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq69::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq69::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq69::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r69::text)::uuid::text || '/step_' || :seq69::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq69::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard69, md5(:r69::text)::uuid::text, :seq69);
\set shard70 :r70 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r70::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq70 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r70::text)::uuid::text, :seq70, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq70::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq70::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq70::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r70::text)::uuid::text || '/step_' || :seq70::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq70::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard70, md5(:r70::text)::uuid::text, :seq70);
\set shard71 :r71 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r71::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq71 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r71::text)::uuid::text, :seq71, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq71::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq71::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq71::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r71::text)::uuid::text || '/step_' || :seq71::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq71::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard71, md5(:r71::text)::uuid::text, :seq71);
\set shard72 :r72 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r72::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq72 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r72::text)::uuid::text, :seq72, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq72::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq72::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq72::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r72::text)::uuid::text || '/step_' || :seq72::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq72::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard72, md5(:r72::text)::uuid::text, :seq72);
\set shard73 :r73 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r73::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq73 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r73::text)::uuid::text, :seq73, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq73::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq73::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq73::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r73::text)::uuid::text || '/step_' || :seq73::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq73::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard73, md5(:r73::text)::uuid::text, :seq73);
\set shard74 :r74 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r74::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq74 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r74::text)::uuid::text, :seq74, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq74::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq74::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq74::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r74::text)::uuid::text || '/step_' || :seq74::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq74::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard74, md5(:r74::text)::uuid::text, :seq74);
\set shard75 :r75 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r75::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq75 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r75::text)::uuid::text, :seq75, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq75::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq75::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq75::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r75::text)::uuid::text || '/step_' || :seq75::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq75::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard75, md5(:r75::text)::uuid::text, :seq75);
\set shard76 :r76 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r76::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq76 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r76::text)::uuid::text, :seq76, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq76::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq76::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq76::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r76::text)::uuid::text || '/step_' || :seq76::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq76::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard76, md5(:r76::text)::uuid::text, :seq76);
\set shard77 :r77 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r77::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq77 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r77::text)::uuid::text, :seq77, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq77::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq77::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq77::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r77::text)::uuid::text || '/step_' || :seq77::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq77::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard77, md5(:r77::text)::uuid::text, :seq77);
\set shard78 :r78 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r78::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq78 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r78::text)::uuid::text, :seq78, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq78::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq78::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq78::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r78::text)::uuid::text || '/step_' || :seq78::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq78::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard78, md5(:r78::text)::uuid::text, :seq78);
\set shard79 :r79 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r79::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq79 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r79::text)::uuid::text, :seq79, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq79::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq79::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq79::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r79::text)::uuid::text || '/step_' || :seq79::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq79::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard79, md5(:r79::text)::uuid::text, :seq79);
\set shard80 :r80 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r80::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq80 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r80::text)::uuid::text, :seq80, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq80::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq80::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq80::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r80::text)::uuid::text || '/step_' || :seq80::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq80::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard80, md5(:r80::text)::uuid::text, :seq80);
\set shard81 :r81 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r81::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq81 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r81::text)::uuid::text, :seq81, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq81::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq81::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq81::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r81::text)::uuid::text || '/step_' || :seq81::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq81::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard81, md5(:r81::text)::uuid::text, :seq81);
\set shard82 :r82 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r82::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq82 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r82::text)::uuid::text, :seq82, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq82::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq82::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq82::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r82::text)::uuid::text || '/step_' || :seq82::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq82::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard82, md5(:r82::text)::uuid::text, :seq82);
\set shard83 :r83 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r83::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq83 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r83::text)::uuid::text, :seq83, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq83::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq83::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq83::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r83::text)::uuid::text || '/step_' || :seq83::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq83::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard83, md5(:r83::text)::uuid::text, :seq83);
\set shard84 :r84 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r84::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq84 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r84::text)::uuid::text, :seq84, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq84::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq84::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq84::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r84::text)::uuid::text || '/step_' || :seq84::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq84::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard84, md5(:r84::text)::uuid::text, :seq84);
\set shard85 :r85 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r85::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq85 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r85::text)::uuid::text, :seq85, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq85::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq85::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq85::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r85::text)::uuid::text || '/step_' || :seq85::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq85::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard85, md5(:r85::text)::uuid::text, :seq85);
\set shard86 :r86 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r86::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq86 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r86::text)::uuid::text, :seq86, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq86::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq86::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq86::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r86::text)::uuid::text || '/step_' || :seq86::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq86::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard86, md5(:r86::text)::uuid::text, :seq86);
\set shard87 :r87 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r87::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq87 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r87::text)::uuid::text, :seq87, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq87::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq87::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq87::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r87::text)::uuid::text || '/step_' || :seq87::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq87::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard87, md5(:r87::text)::uuid::text, :seq87);
\set shard88 :r88 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r88::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq88 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r88::text)::uuid::text, :seq88, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq88::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq88::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq88::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r88::text)::uuid::text || '/step_' || :seq88::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq88::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard88, md5(:r88::text)::uuid::text, :seq88);
\set shard89 :r89 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r89::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq89 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r89::text)::uuid::text, :seq89, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq89::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq89::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq89::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r89::text)::uuid::text || '/step_' || :seq89::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq89::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard89, md5(:r89::text)::uuid::text, :seq89);
\set shard90 :r90 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r90::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq90 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r90::text)::uuid::text, :seq90, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq90::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq90::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq90::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r90::text)::uuid::text || '/step_' || :seq90::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq90::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard90, md5(:r90::text)::uuid::text, :seq90);
\set shard91 :r91 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r91::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq91 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r91::text)::uuid::text, :seq91, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq91::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq91::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq91::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r91::text)::uuid::text || '/step_' || :seq91::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq91::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard91, md5(:r91::text)::uuid::text, :seq91);
\set shard92 :r92 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r92::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq92 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r92::text)::uuid::text, :seq92, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq92::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq92::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq92::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r92::text)::uuid::text || '/step_' || :seq92::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq92::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard92, md5(:r92::text)::uuid::text, :seq92);
\set shard93 :r93 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r93::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq93 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r93::text)::uuid::text, :seq93, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq93::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq93::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq93::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r93::text)::uuid::text || '/step_' || :seq93::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq93::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard93, md5(:r93::text)::uuid::text, :seq93);
\set shard94 :r94 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r94::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq94 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r94::text)::uuid::text, :seq94, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq94::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq94::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq94::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r94::text)::uuid::text || '/step_' || :seq94::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq94::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard94, md5(:r94::text)::uuid::text, :seq94);
\set shard95 :r95 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r95::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq95 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r95::text)::uuid::text, :seq95, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq95::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq95::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq95::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r95::text)::uuid::text || '/step_' || :seq95::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq95::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard95, md5(:r95::text)::uuid::text, :seq95);
\set shard96 :r96 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r96::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq96 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r96::text)::uuid::text, :seq96, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq96::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq96::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq96::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r96::text)::uuid::text || '/step_' || :seq96::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq96::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard96, md5(:r96::text)::uuid::text, :seq96);
\set shard97 :r97 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r97::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq97 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r97::text)::uuid::text, :seq97, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq97::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq97::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq97::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r97::text)::uuid::text || '/step_' || :seq97::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq97::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard97, md5(:r97::text)::uuid::text, :seq97);
\set shard98 :r98 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r98::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq98 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r98::text)::uuid::text, :seq98, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq98::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq98::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq98::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r98::text)::uuid::text || '/step_' || :seq98::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq98::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard98, md5(:r98::text)::uuid::text, :seq98);
\set shard99 :r99 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r99::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq99 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r99::text)::uuid::text, :seq99, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq99::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq99::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq99::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r99::text)::uuid::text || '/step_' || :seq99::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq99::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard99, md5(:r99::text)::uuid::text, :seq99);
\set shard100 :r100 % 64
INSERT INTO runs AS r (run_id, tenant_id, last_seq)
VALUES (md5(:r100::text)::uuid::text, 'tenant_bench', 1)
ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
    WHERE r.tenant_id = EXCLUDED.tenant_id
RETURNING r.last_seq AS seq100 \gset
INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
    tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
    engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
VALUES (md5(:r100::text)::uuid::text, :seq100, gen_random_uuid(), 'StepCompleted',
    md5(random()::text) || md5(random()::text),
    'tenant_bench', 'proj_analytics', 'prod', 'plan_daily_etl', '3', 'step_' || :seq100::text,
    1, 1, replace((clock_timestamp() AT TIME ZONE 'UTC')::text, ' ', 'T') || 'Z', clock_timestamp(),
    ('{"durationMs":' || (:seq100::bigint * 37 % 5000)::text || ',"result":{"rowsAffected":' || (:seq100::bigint * 131 % 1000000)::text || '},"artifacts":[{"uri":"s3://runstream-artifacts/' || md5(:r100::text)::uuid::text || '/step_' || :seq100::text || '/1/run_results.json","kind":"dbt-run-results","sizeBytes":' || (:seq100::bigint * 7919 % 100000)::text || '}]}')::json)
ON CONFLICT DO NOTHING;
INSERT INTO outbox (shard, run_id, run_seq) VALUES (:shard100, md5(:r100::text)::uuid::text, :seq100);
COMMIT;
