-- 0001: the Append Authority (docs/ARCHITECTURE.md, "The append path").
--
-- Objects are created in the current search_path schema, never a hard-coded
-- one, so tests can give each test its own schema.

-- runs: one counter row per run. Append locks it (the upsert below) and
-- bumps last_seq inside the append transaction, so runSeq assignment order is
-- commit order per run and runSeq is contiguous. A global
-- sequence would let a lower number commit after a higher one and a
-- projector that saw the higher one would skip it. tenant_id pins the run to
-- the tenant that created it. fillfactor leaves room for HOT updates of the
-- counter.
CREATE TABLE runs (
    run_id     text        PRIMARY KEY,
    tenant_id  text        NOT NULL,
    last_seq   bigint      NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp()
) WITH (fillfactor = 70);

-- run_events: the append-only log. emitted_at is text so it is returned
-- byte-for-byte as the producer sent it; payload is json (not
-- jsonb) for the same reason: its bytes are kept as sent.
CREATE TABLE run_events (
    run_id             text        NOT NULL,
    run_seq            bigint      NOT NULL,
    event_id           uuid        NOT NULL,
    event_type         text        NOT NULL,
    idempotency_key    text        NOT NULL,
    tenant_id          text        NOT NULL,
    project_id         text        NOT NULL,
    environment_id     text        NOT NULL,
    plan_id            text        NOT NULL,
    plan_version       text        NOT NULL,
    step_id            text,
    engine_attempt_id  integer     NOT NULL,
    logical_attempt_id integer     NOT NULL,
    emitted_at         text        NOT NULL,
    persisted_at       timestamptz NOT NULL,
    payload            json,
    CONSTRAINT run_events_run_seq_key PRIMARY KEY (run_id, run_seq),
    CONSTRAINT run_events_idempotency_key UNIQUE (run_id, idempotency_key)
);

-- Persisted rows are never updated or deleted; the database enforces it,
-- not only the code.
CREATE FUNCTION runstream_immutable_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'run_events rows are immutable: % is not allowed', TG_OP
        USING ERRCODE = 'restrict_violation';
END $$;
CREATE TRIGGER run_events_immutable BEFORE UPDATE OR DELETE ON run_events
    FOR EACH ROW EXECUTE FUNCTION runstream_immutable_event();
CREATE TRIGGER run_events_no_truncate BEFORE TRUNCATE ON run_events
    FOR EACH STATEMENT EXECUTE FUNCTION runstream_immutable_event();

-- outbox: one row per committed event, written in the same transaction (a
-- transactional outbox). shard is derived from runId so one relay at a time
-- owns all of a run's rows and per-run order holds with several relays.
CREATE TABLE outbox (
    id         bigserial   PRIMARY KEY,
    shard      integer     NOT NULL,
    run_id     text        NOT NULL,
    run_seq    bigint      NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX outbox_shard_id ON outbox (shard, id);

-- run_snapshots: checkpoints of the reducer's output so resync can be
-- FROM_SNAPSHOT (ExecutionSemantics v1 1.5.1). A cache, not the truth: it can
-- be dropped and rebuilt from run_events at any time.
CREATE TABLE run_snapshots (
    run_id         text        PRIMARY KEY,
    last_event_seq bigint      NOT NULL,
    snapshot       jsonb       NOT NULL,
    updated_at     timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- runstream_append appends one event in the caller's transaction.
--
-- Statuses: 0 inserted, 1 duplicate (returns the existing row's metadata),
-- 2 the run belongs to another tenant.
--
-- Steps: (a) a lock-free probe for an existing (runId, key) so duplicate
-- storms do not queue on the counter row; (b) lock and bump the run's counter
-- with an upsert, refused when the run is another tenant's; (c) insert the
-- event, ON CONFLICT DO NOTHING: a concurrent duplicate that committed while
-- we waited for the counter lock is visible here (READ COMMITTED takes a new
-- snapshot per statement), in which case the bump is undone under the same
-- lock, so runSeq stays contiguous and every caller gets the one row's
-- metadata; (d) insert the outbox row.
CREATE FUNCTION runstream_append(
    p_run_id text, p_tenant_id text, p_project_id text, p_environment_id text,
    p_plan_id text, p_plan_version text, p_event_id uuid, p_event_type text,
    p_idempotency_key text, p_step_id text, p_engine_attempt_id integer,
    p_logical_attempt_id integer, p_emitted_at text, p_payload json, p_shard integer,
    OUT o_status smallint, OUT o_event_id uuid, OUT o_run_seq bigint,
    OUT o_persisted_at timestamptz, OUT o_differs boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_seq bigint;
BEGIN
    SELECT e.event_id, e.run_seq, e.persisted_at,
           (e.event_id <> p_event_id OR e.emitted_at <> p_emitted_at
            OR e.engine_attempt_id <> p_engine_attempt_id
            OR e.payload::text IS DISTINCT FROM p_payload::text)
      INTO o_event_id, o_run_seq, o_persisted_at, o_differs
      FROM run_events e
     WHERE e.run_id = p_run_id AND e.idempotency_key = p_idempotency_key
       AND e.tenant_id = p_tenant_id;
    IF FOUND THEN
        o_status := 1;
        RETURN;
    END IF;

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
