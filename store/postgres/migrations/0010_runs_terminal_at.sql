-- 0010: runs.terminal_at, the persistedAt of the event that made the run
-- terminal (its first RunCompleted, RunFailed or RunCancelled by runSeq),
-- NULL while the run is open.
--
-- Terminal runs leave Redis --snapshot-ttl after that instant, and
-- convergence must tell a run expired by that policy from one Redis lost:
-- it reads this column with each run's head, so it never needs to project
-- a run to know. runstream_append sets it in the transaction that appends
-- the terminal event (an UPDATE of the row it already holds locked, once
-- per run); existing runs are filled from their events below (one pass
-- over the terminal events, which the upgrade pays once).
ALTER TABLE runs ADD COLUMN terminal_at timestamptz;

UPDATE runs r SET terminal_at = t.persisted_at
  FROM (SELECT DISTINCT ON (run_id) run_id, persisted_at
          FROM run_events
         WHERE event_type IN ('RunCompleted', 'RunFailed', 'RunCancelled')
         ORDER BY run_id, run_seq) t
 WHERE r.run_id = t.run_id;

-- Same signature, statuses and outputs as 0009's; the only change is the
-- terminal_at update after a terminal event's insert.
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

    -- The run's first terminal event (by runSeq, which is commit order
    -- under the counter row's lock) ends it: the reducer freezes a
    -- terminal run, so a later terminal event changes nothing, here too.
    IF p_event_type IN ('RunCompleted', 'RunFailed', 'RunCancelled') THEN
        UPDATE runs SET terminal_at = o_persisted_at
         WHERE run_id = p_run_id AND terminal_at IS NULL;
    END IF;

    INSERT INTO outbox (shard, run_id, run_seq) VALUES (p_shard, p_run_id, v_seq);
    o_status := 0;
    o_event_id := p_event_id;
    o_run_seq := v_seq;
    o_differs := false;
END $$;
