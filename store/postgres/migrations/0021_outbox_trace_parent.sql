-- 0021: the outbox row keeps the append's trace context (issue 36).
--
-- With tracing on, the API's append span is sampled for some requests;
-- for those, runstream_append is given the span's W3C traceparent and
-- stores it in the event's outbox row, in the statement that writes the
-- row anyway (no extra round trip). The relay reads it with the row,
-- continues the trace in its produce span and puts that span's context in
-- the Kafka record's traceparent header, as Debezium's outbox keeps the
-- writer's span context in a column. NULL (the common case: tracing off,
-- or a span not sampled) costs a row nothing but a bit of its null
-- bitmap. The column is not copied to the dead letters: a retried dead
-- letter starts no trace.
--
-- The new parameter is last and defaults to NULL, so a binary of the
-- previous version calling the 15-argument form during a rolling upgrade
-- still appends. Adding a nullable column without a default rewrites
-- nothing and holds the outbox's lock for a moment only.
ALTER TABLE outbox ADD COLUMN trace_parent text;

DROP FUNCTION runstream_append(text, text, text, text, text, text, uuid, text,
    text, text, integer, integer, text, json, integer);

CREATE FUNCTION runstream_append(
    p_run_id text, p_tenant_id text, p_project_id text, p_environment_id text,
    p_plan_id text, p_plan_version text, p_event_id uuid, p_event_type text,
    p_idempotency_key text, p_step_id text, p_engine_attempt_id integer,
    p_logical_attempt_id integer, p_emitted_at text, p_payload json, p_shard integer,
    p_trace_parent text DEFAULT NULL,
    OUT o_status smallint, OUT o_event_id uuid, OUT o_run_seq bigint,
    OUT o_persisted_at timestamptz, OUT o_differs boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_seq bigint;
    v_epoch timestamptz;
    v_owner text;
    v_gone boolean;
    v_tenant_id text;
    v_event_id uuid;
    v_run_seq bigint;
    v_persisted_at timestamptz;
    v_differs boolean;
    v_digest uuid := runstream_idempotency_digest(p_run_id, p_idempotency_key);
BEGIN
    SELECT r.run_epoch, r.tenant_id, p.retired_at IS NOT NULL
      INTO v_epoch, v_owner, v_gone
      FROM runs r LEFT JOIN run_event_partitions p ON p.epoch = r.run_epoch
     WHERE r.run_id = p_run_id;
    IF FOUND AND v_owner = p_tenant_id THEN
        IF v_gone THEN
            o_status := 3;
            RETURN;
        END IF;
        SELECT e.tenant_id, e.event_id, e.run_seq, e.persisted_at,
               (e.event_id <> p_event_id OR e.emitted_at <> p_emitted_at
                OR e.engine_attempt_id <> p_engine_attempt_id
                OR e.payload::text IS DISTINCT FROM p_payload::text)
          INTO v_tenant_id, v_event_id, v_run_seq, v_persisted_at, v_differs
          FROM run_events e
         WHERE runstream_idempotency_digest(e.run_id, e.idempotency_key) = v_digest
           AND e.run_id = p_run_id AND e.idempotency_key = p_idempotency_key
           AND e.run_epoch = v_epoch;
        IF FOUND THEN
            o_event_id := v_event_id;
            o_run_seq := v_run_seq;
            o_persisted_at := v_persisted_at;
            o_differs := v_differs;
            o_status := 1;
            RETURN;
        END IF;
    END IF;
    -- Another tenant's run: the upsert below refuses it (status 2).

    INSERT INTO runs AS r (run_id, tenant_id, last_seq, run_epoch)
    VALUES (p_run_id, p_tenant_id, 1, coalesce(v_epoch,
        (SELECT max(epoch) FROM run_event_partitions
          WHERE epoch <= clock_timestamp() AND retired_at IS NULL)))
    ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
        WHERE r.tenant_id = EXCLUDED.tenant_id
    RETURNING r.last_seq, r.run_epoch INTO v_seq, v_epoch;
    IF NOT FOUND THEN
        o_status := 2;
        RETURN;
    END IF;

    o_persisted_at := clock_timestamp();
    INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
        tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
        engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload, run_epoch)
    VALUES (p_run_id, v_seq, p_event_id, p_event_type, p_idempotency_key,
        p_tenant_id, p_project_id, p_environment_id, p_plan_id, p_plan_version, p_step_id,
        p_engine_attempt_id, p_logical_attempt_id, p_emitted_at, o_persisted_at, p_payload, v_epoch)
    ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
        UPDATE runs SET last_seq = last_seq - 1 WHERE run_id = p_run_id;
        SELECT e.event_id, e.run_seq, e.persisted_at,
               (e.event_id <> p_event_id OR e.emitted_at <> p_emitted_at
                OR e.engine_attempt_id <> p_engine_attempt_id
                OR e.payload::text IS DISTINCT FROM p_payload::text)
          INTO o_event_id, o_run_seq, o_persisted_at, o_differs
          FROM run_events e
         WHERE runstream_idempotency_digest(e.run_id, e.idempotency_key) = v_digest
           AND e.run_id = p_run_id AND e.idempotency_key = p_idempotency_key
           AND e.run_epoch = v_epoch;
        o_status := 1;
        RETURN;
    END IF;

    IF p_event_type IN ('RunCompleted', 'RunFailed', 'RunCancelled') THEN
        UPDATE runs SET terminal_at = o_persisted_at
         WHERE run_id = p_run_id AND terminal_at IS NULL;
    END IF;

    INSERT INTO outbox (shard, run_id, run_seq, trace_parent) VALUES (p_shard, p_run_id, v_seq, p_trace_parent);
    o_status := 0;
    o_event_id := p_event_id;
    o_run_seq := v_seq;
    o_differs := false;
END $$;

ALTER FUNCTION runstream_append(text, text, text, text, text, text, uuid, text,
    text, text, integer, integer, text, json, integer, text)
    SET plan_cache_mode = force_generic_plan;
