-- 0014: run_events partitioned by run_epoch (issue 31), so that whole runs
-- leave the store by DROP of a partition, never by DELETE: the
-- immutability triggers stay as they are.
--
-- Every event of a run carries the run's epoch (runs.run_epoch, chosen at
-- its first append), so a run lives in exactly one partition, and each
-- partition's own unique indexes enforce what the whole table's did: one
-- row per (run_id, run_seq) and per (run_id, idempotency_key). Postgres
-- refuses a unique index on the partitioned table that lacks the
-- partition key, and one that has it would cost eight more bytes per
-- entry for nothing, so the indexes are the partitions' own
-- (runstream_ensure_partitions creates them with each partition).
--
-- The existing table becomes the partition run_events_legacy, holding the
-- runs that existed before this migration (epoch -infinity) with their
-- later events. Nothing is copied: the table is renamed and attached, and
-- 0013's validated constraint proves its rows fit the partition's bound,
-- so the attach reads no row. Appends wait only for this migration's
-- catalog changes (milliseconds). Privileges granted on run_events to
-- other roles are granted again on the partitioned table.
--
-- Partitions after it are ranges [epoch, until) of time, created ahead of
-- need by runstream_ensure_partitions. A new run takes the epoch of the
-- newest partition that has begun, so an append never needs a partition
-- to be created first: when nothing keeps partitions ahead, new runs keep
-- going to the newest one.
ALTER TABLE run_events RENAME TO run_events_legacy;

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
    run_epoch          timestamptz NOT NULL DEFAULT '-infinity'
) PARTITION BY RANGE (run_epoch);

-- Rows stay immutable in every partition: the row trigger is cloned onto
-- each partition as it is attached (the legacy table's own copy goes, or
-- the clone would clash with it by name). TRUNCATE triggers are not
-- cloned: the legacy table keeps its own, each new partition gets one.
DROP TRIGGER run_events_immutable ON run_events_legacy;
CREATE TRIGGER run_events_immutable BEFORE UPDATE OR DELETE ON run_events
    FOR EACH ROW EXECUTE FUNCTION runstream_immutable_event();
CREATE TRIGGER run_events_no_truncate BEFORE TRUNCATE ON run_events
    FOR EACH STATEMENT EXECUTE FUNCTION runstream_immutable_event();

ALTER TABLE run_events ATTACH PARTITION run_events_legacy
    FOR VALUES FROM (MINVALUE) TO ('1970-01-01 00:00:00+00');

DO $$
DECLARE g record;
BEGIN
    FOR g IN SELECT grantee, privilege_type FROM information_schema.role_table_grants
              WHERE table_schema = current_schema() AND table_name = 'run_events_legacy'
                AND grantee <> current_user LOOP
        EXECUTE format('GRANT %s ON run_events TO %I', g.privilege_type, g.grantee);
    END LOOP;
END $$;

-- run_event_partitions: runstream's catalog of the partitions, one row per
-- partition, keyed by the epoch its runs carry. Retention (issue 31) moves
-- a partition through three steps, each recorded here so that a pass
-- interrupted at any point resumes where it stopped:
--   retired_at   appends to its runs are refused (status 3, RUN_ARCHIVED)
--                and no new run is routed to it; then it is detached, so
--                its rows can no longer change;
--   archived_at  every tenant's events are in the archive, read back and
--                verified against the table (run_event_archives);
--   dropped_at   the table is gone. Its runs rows stay, as tombstones.
CREATE TABLE run_event_partitions (
    epoch       timestamptz PRIMARY KEY,
    until       timestamptz NOT NULL,
    name        text        NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    retired_at  timestamptz,
    archived_at timestamptz,
    dropped_at  timestamptz
);

-- run_event_archives: the manifest, one row per archived file (a
-- partition's events of one tenant), written once the file was read back
-- and matched the table: its row count, its checksum over the records in
-- the order written, and the persistedAt range it covers (what audit reads
-- name when a window reaches into removed events).
CREATE TABLE run_event_archives (
    epoch            timestamptz NOT NULL REFERENCES run_event_partitions (epoch),
    tenant_id        text        NOT NULL,
    location         text        NOT NULL,
    events           bigint      NOT NULL,
    bytes            bigint      NOT NULL,
    checksum         text        NOT NULL,
    min_persisted_at timestamptz NOT NULL,
    max_persisted_at timestamptz NOT NULL,
    verified_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (epoch, tenant_id)
);
CREATE INDEX run_event_archives_tenant ON run_event_archives (tenant_id, min_persisted_at);

INSERT INTO run_event_partitions (epoch, until, name)
VALUES ('-infinity', '1970-01-01 00:00:00+00', 'run_events_legacy');

-- runstream_ensure_partitions makes sure partitions of p_width exist from
-- now until at least now + p_ahead, and returns how many it created. A new
-- partition starts where the newest one ends, or, past a pause longer than
-- that, at now rounded down to p_width (no partition is made for a past
-- that no run can be routed to any more). Each is built as a table of its
-- own with its indexes and TRUNCATE trigger, then attached: ATTACH
-- PARTITION takes SHARE UPDATE EXCLUSIVE on run_events, which appends do
-- not wait for (CREATE TABLE ... PARTITION OF would take ACCESS
-- EXCLUSIVE). One caller at a time (an advisory lock per schema).
--
-- SECURITY DEFINER, with the search_path of the schema it was created in:
-- a role that may append but not create tables can still keep partitions
-- ahead.
CREATE FUNCTION runstream_ensure_partitions(p_width interval, p_ahead interval)
RETURNS integer LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
    v_now   timestamptz := clock_timestamp();
    v_from  timestamptz;
    v_until timestamptz;
    v_name  text;
    v_made  integer := 0;
BEGIN
    IF p_width IS NULL OR p_width < interval '1 minute' THEN
        RAISE EXCEPTION 'a run_events partition must span at least 1 minute, got %', p_width
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_ahead IS NULL OR p_ahead < interval '0' THEN
        RAISE EXCEPTION 'partitions are made ahead by a duration of 0 or more, got %', p_ahead
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended('runstream_ensure_partitions|' || current_schema(), 0));
    SELECT max(until) INTO v_from FROM run_event_partitions WHERE epoch > '-infinity';
    v_from := greatest(coalesce(v_from, '-infinity'),
        date_bin(p_width, v_now, timestamptz '2000-01-01 00:00:00+00'));
    WHILE v_from <= v_now + p_ahead LOOP
        v_until := v_from + p_width;
        v_name := 'run_events_' || to_char(v_from AT TIME ZONE 'UTC', 'YYYYMMDD"t"HH24MISS');
        EXECUTE format('CREATE TABLE %I (LIKE run_events INCLUDING DEFAULTS)', v_name);
        EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I PRIMARY KEY (run_id, run_seq)', v_name, v_name || '_pkey');
        EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I UNIQUE (run_id, idempotency_key)', v_name, v_name || '_idem');
        EXECUTE format('CREATE INDEX %I ON %I (tenant_id, persisted_at, run_id COLLATE "C", run_seq)',
            v_name || '_tenant', v_name);
        EXECUTE format('CREATE INDEX %I ON %I USING brin (persisted_at) WITH (pages_per_range = 32, autosummarize = on)',
            v_name || '_brin', v_name);
        EXECUTE format('CREATE TRIGGER run_events_no_truncate BEFORE TRUNCATE ON %I '
            'FOR EACH STATEMENT EXECUTE FUNCTION runstream_immutable_event()', v_name);
        EXECUTE format('ALTER TABLE run_events ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
            v_name, v_from, v_until);
        INSERT INTO run_event_partitions (epoch, until, name) VALUES (v_from, v_until, v_name);
        v_made := v_made + 1;
        v_from := v_until;
    END LOOP;
    RETURN v_made;
END $$;
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION runstream_ensure_partitions(interval, interval) SET search_path = %I, pg_temp',
        current_schema());
END $$;

-- Statuses as before (0 inserted, 1 duplicate, 2 another tenant's run),
-- and 3: retention retired the run's partition (run_event_partitions.
-- retired_at): the event is refused, so that nothing is written to a
-- partition on its way to the archive, and a late duplicate can never
-- start the run anew at runSeq 1 once its events are gone.
--
-- (a) The probe reads the run's epoch first and looks the key up in that
-- one partition (runtime pruning), not in every partition's index; a run
-- with no runs row yet has no event to find. (b) A new run takes the
-- epoch of the newest partition that has begun. (c) The insert's ON
-- CONFLICT names no target: the arbiters are the partition's own unique
-- indexes, of which only (run_id, idempotency_key) can conflict, the
-- counter row's lock making runSeq unique.
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
    v_epoch timestamptz;
    v_owner text;
    v_gone boolean;
    v_tenant_id text;
    v_event_id uuid;
    v_run_seq bigint;
    v_persisted_at timestamptz;
    v_differs boolean;
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
         WHERE e.run_id = p_run_id AND e.idempotency_key = p_idempotency_key
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
         WHERE e.run_id = p_run_id AND e.idempotency_key = p_idempotency_key
           AND e.run_epoch = v_epoch;
        o_status := 1;
        RETURN;
    END IF;

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

SELECT runstream_ensure_partitions(interval '1 day', interval '1 day');
