-- 0019: smaller indexes for the run_events partitions made from now on
-- (issue 31: bytes per event at rest, and the WAL of an append).
--
-- Of the 833 bytes an event of the demo's shape took at rest, 182 were the
-- unique index on (run_id, idempotency_key) and 172 the index on
-- (tenant_id, persisted_at, run_id, run_seq). Both repeat text the row
-- already holds (a run id of 36 characters, a key of 64), and the first,
-- led by a random run id, is also the index whose pages every append
-- dirties at random: after each checkpoint the first change to a page
-- writes the whole page to the WAL.
--
-- (a) Duplicates are found by a 16-byte digest of the run id and the key
-- (SHA-256, the first 16 bytes, held as a uuid: fixed width, no length
-- header): one unique index on runstream_idempotency_digest(run_id,
-- idempotency_key), about a quarter of the old index's size. The digest
-- only finds the candidate row; the probe still compares the run id and
-- the key themselves, so two keys with the same digest (2^-64 odds for
-- 2^32 events in one partition) could never be mistaken for each other:
-- the second would be refused as a conflict the probe cannot explain, and
-- the append fails with an error instead of returning the wrong event.
--
-- (b) The audit index keeps (tenant_id, persisted_at) only. An audit page
-- is ordered by (persisted_at, run_id, run_seq); persisted_at is each
-- event's own clock_timestamp(), so two events of a tenant rarely share
-- one, and the few that do are put in order by a sort of those rows alone
-- (Incremental Sort over the index's order).
--
-- Partitions made before this migration that hold no event yet (the ones
-- made ahead) get the new indexes here, each locked against appends for
-- the moment it takes; those with events (and run_events_legacy) keep
-- their indexes until retention drops them. The probe below is answered by
-- either form (its WHERE names the digest and the two columns, and each
-- partition's plan uses the index it has).
--
-- The digest function is IMMUTABLE as an index expression must be:
-- convert_to is only STABLE because it depends on the database's
-- encoding, which never changes under a database's feet. It is PL/pgSQL,
-- not SQL: a SQL function whose body is less immutable than it says is
-- never inlined, and evaluated as an index expression it is set up again
-- by every INSERT statement (appends were 19% slower with it); PL/pgSQL
-- keeps its compiled expression for the session (about 1.5 us a call).
-- Every name in it is pg_catalog's, whatever the caller's search_path.
CREATE FUNCTION runstream_idempotency_digest(p_run_id text, p_key text) RETURNS uuid
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
BEGIN
    RETURN pg_catalog.encode(pg_catalog.substr(pg_catalog.sha256(pg_catalog.convert_to(
        pg_catalog.length(p_run_id) || ':' || p_run_id || p_key, 'UTF8')), 1, 16), 'hex')::uuid;
END $$;

CREATE OR REPLACE FUNCTION runstream_ensure_partitions(p_width interval, p_ahead interval)
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
        EXECUTE format('CREATE UNIQUE INDEX %I ON %I (runstream_idempotency_digest(run_id, idempotency_key))',
            v_name || '_idem', v_name);
        EXECUTE format('CREATE INDEX %I ON %I (tenant_id, persisted_at)', v_name || '_tenant', v_name);
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

    INSERT INTO outbox (shard, run_id, run_seq) VALUES (p_shard, p_run_id, v_seq);
    o_status := 0;
    o_event_id := p_event_id;
    o_run_seq := v_seq;
    o_differs := false;
END $$;

-- CREATE OR REPLACE drops the settings 0017 gave the function: say them again.
ALTER FUNCTION runstream_append(text, text, text, text, text, text, uuid, text,
    text, text, integer, integer, text, json, integer)
    SET plan_cache_mode = force_generic_plan;

DO $$
DECLARE
    p record;
    v_rows boolean;
BEGIN
    FOR p IN SELECT name FROM run_event_partitions
              WHERE epoch > '-infinity' AND dropped_at IS NULL AND retired_at IS NULL
              ORDER BY epoch LOOP
        EXECUTE format('LOCK TABLE %I IN SHARE ROW EXCLUSIVE MODE', p.name);
        CONTINUE WHEN EXISTS (SELECT 1 FROM pg_constraint
                               WHERE conname = p.name || '_idem' AND conrelid = p.name::regclass) IS NOT TRUE;
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I)', p.name) INTO STRICT v_rows;
        CONTINUE WHEN v_rows;
        EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', p.name, p.name || '_idem');
        EXECUTE format('DROP INDEX %I', p.name || '_tenant');
        EXECUTE format('CREATE UNIQUE INDEX %I ON %I (runstream_idempotency_digest(run_id, idempotency_key))',
            p.name || '_idem', p.name);
        EXECUTE format('CREATE INDEX %I ON %I (tenant_id, persisted_at)', p.name || '_tenant', p.name);
    END LOOP;
END $$;
