-- 0009: runstream_append's first, lock-free duplicate probe looks an
-- event up by (run_id, idempotency_key) alone and compares its tenant
-- afterwards, instead of filtering on tenant_id in the query.
--
-- With tenant_id in the WHERE clause, migration 0006's index on
-- run_events (tenant_id, persisted_at, ...) became a candidate for the
-- probe. PL/pgSQL caches a generic plan per connection, and planned on a
-- table with no statistics yet (a fresh deployment, the first minutes
-- before autoanalyze) that plan chose the tenant index: every append then
-- read the whole tenant's range of it, so the cost of an append grew with
-- the tenant's events, batches held their run locks longer, and concurrent
-- batches queued on each other (Lock:transactionid). Measured on a quiet
-- machine: batches of 100 at 1,800-2,200 events/s against 10,400-11,000
-- without the index (docs/PERFORMANCE.md). Without tenant_id in the query
-- only the unique index (run_id, idempotency_key) can answer it.
--
-- Same signature, same statuses and outputs: an event found under another
-- tenant falls through to the upsert, which refuses the run as another
-- tenant's (status 2), as the filtered probe's miss did.
CREATE OR REPLACE FUNCTION runstream_append(
    p_run_id text, p_tenant_id text, p_project_id text, p_environment_id text,
    p_plan_id text, p_plan_version text, p_event_id uuid, p_event_type text,
    p_idempotency_key text, p_step_id text, p_engine_attempt_id integer,
    p_logical_attempt_id integer, p_emitted_at text, p_payload json, p_shard integer,
    OUT o_status smallint, OUT o_event_id uuid, OUT o_run_seq bigint,
    OUT o_persisted_at timestamptz, OUT o_differs boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_seq bigint;
    v_tenant_id text;
    v_event_id uuid;
    v_run_seq bigint;
    v_persisted_at timestamptz;
    v_differs boolean;
BEGIN
    SELECT e.tenant_id, e.event_id, e.run_seq, e.persisted_at,
           (e.event_id <> p_event_id OR e.emitted_at <> p_emitted_at
            OR e.engine_attempt_id <> p_engine_attempt_id
            OR e.payload::text IS DISTINCT FROM p_payload::text)
      INTO v_tenant_id, v_event_id, v_run_seq, v_persisted_at, v_differs
      FROM run_events e
     WHERE e.run_id = p_run_id AND e.idempotency_key = p_idempotency_key;
    IF FOUND AND v_tenant_id = p_tenant_id THEN
        o_event_id := v_event_id;
        o_run_seq := v_run_seq;
        o_persisted_at := v_persisted_at;
        o_differs := v_differs;
        o_status := 1;
        RETURN;
    END IF;
    -- Found under another tenant: the run is that tenant's, and the upsert
    -- below refuses it (status 2).

    INSERT INTO runs AS r (run_id, tenant_id, last_seq)
    VALUES (p_run_id, p_tenant_id, 1)
    ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
        WHERE r.tenant_id = EXCLUDED.tenant_id
    RETURNING r.last_seq INTO v_seq;
    IF NOT FOUND THEN
        o_status := 2;
        RETURN;
    END IF;

    o_persisted_at := clock_timestamp();
    INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
        tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
        engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
    VALUES (p_run_id, v_seq, p_event_id, p_event_type, p_idempotency_key,
        p_tenant_id, p_project_id, p_environment_id, p_plan_id, p_plan_version, p_step_id,
        p_engine_attempt_id, p_logical_attempt_id, p_emitted_at, o_persisted_at, p_payload)
    ON CONFLICT ON CONSTRAINT run_events_idempotency_key DO NOTHING;
    IF NOT FOUND THEN
        UPDATE runs SET last_seq = last_seq - 1 WHERE run_id = p_run_id;
        SELECT e.event_id, e.run_seq, e.persisted_at,
               (e.event_id <> p_event_id OR e.emitted_at <> p_emitted_at
                OR e.engine_attempt_id <> p_engine_attempt_id
                OR e.payload::text IS DISTINCT FROM p_payload::text)
          INTO o_event_id, o_run_seq, o_persisted_at, o_differs
          FROM run_events e
         WHERE e.run_id = p_run_id AND e.idempotency_key = p_idempotency_key;
        o_status := 1;
        RETURN;
    END IF;

    INSERT INTO outbox (shard, run_id, run_seq) VALUES (p_shard, p_run_id, v_seq);
    o_status := 0;
    o_event_id := p_event_id;
    o_run_seq := v_seq;
    o_differs := false;
END $$;
