-- 0022: run numbers, so that the indexes an append writes stay small
-- however large the current partition grows (issue 31: the WAL of an
-- append).
--
-- Each partition's two unique indexes were led by the run id, which
-- producers choose at random (UUIDs): every append dirtied a random leaf
-- of each, and after a checkpoint the first change to a page writes the
-- whole page to the WAL. So an append's WAL grew with the partition it
-- went to (1,444 bytes at an empty store, 2,663 with 0.9 million events in
-- the current partition, toward two full pages each at a day of 1,000
-- events/s).
--
-- A run now gets a number at its first append, from a sequence: runs.run_no,
-- carried on each of its events (run_events.run_no). Numbers grow with
-- time, so the runs still receiving events are the newest numbers, and
-- partitions made from now on index by them:
--   primary key   (run_no, run_seq)
--   duplicates    (run_no, runstream_idempotency_digest(run_id, idempotency_key))
-- An append then dirties pages near the right end of both, the few that
-- hold the runs still open, whatever the partition's size. The entries are
-- also smaller (the primary key's 36-character run id becomes 8 bytes).
-- The run id stays in every row: readers compare it as well as the number,
-- and every record returns byte-identical.
--
-- A run number is unique to its run (one sequence; the runs row keeps the
-- number its first append took), so the new keys enforce exactly what
-- (run_id, run_seq) and (run_id, idempotency_key) did. Readers that find
-- a run's events (projection, fetch, the relay, heads, dead letters) read
-- the run's epoch and number from its runs row and compare both: each
-- partition's plan uses the index it has.
--
-- Runs and events from before this migration keep the number 0 (a
-- constant default: nothing is rewritten, the locks are held for a
-- moment). Their partitions keep (run_id, run_seq) and the digest, which
-- the same queries use. A new partition refuses the number 0 (CHECK
-- run_no > 0), so two runs can never share the number 0 in it: an append
-- that still ran the previous function there would fail and roll back
-- whole (its runs row too), and its retry would run this function and
-- number the run.
CREATE SEQUENCE runs_run_no AS bigint;
ALTER TABLE runs ADD COLUMN run_no bigint NOT NULL DEFAULT 0;
ALTER TABLE run_events ADD COLUMN run_no bigint NOT NULL DEFAULT 0;

-- runstream_append runs with its caller's privileges, and now takes a
-- number for each new run: every role that may insert runs (an API role
-- other than the one that ran the migrations) may take one.
DO $$
DECLARE g record;
BEGIN
    FOR g IN SELECT DISTINCT grantee FROM information_schema.role_table_grants
              WHERE table_schema = current_schema() AND table_name = 'runs'
                AND privilege_type = 'INSERT' AND grantee <> current_user LOOP
        IF g.grantee = 'PUBLIC' THEN
            GRANT USAGE ON SEQUENCE runs_run_no TO PUBLIC;
        ELSE
            EXECUTE format('GRANT USAGE ON SEQUENCE runs_run_no TO %I', g.grantee);
        END IF;
    END LOOP;
END $$;

-- runstream_index_partition gives a new (still empty) partition p_name
-- its keys, indexes and checks. runstream_ensure_partitions calls it for
-- every partition it makes.
CREATE FUNCTION runstream_index_partition(p_name text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I PRIMARY KEY (run_no, run_seq)', p_name, p_name || '_pkey');
    EXECUTE format('CREATE UNIQUE INDEX %I ON %I (run_no, runstream_idempotency_digest(run_id, idempotency_key))',
        p_name || '_idem', p_name);
    EXECUTE format('CREATE INDEX %I ON %I (tenant_id, persisted_at)', p_name || '_tenant', p_name);
    EXECUTE format('CREATE INDEX %I ON %I USING brin (persisted_at) WITH (pages_per_range = 32, autosummarize = on)',
        p_name || '_brin', p_name);
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (run_no > 0)', p_name, p_name || '_numbered');
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
        PERFORM runstream_index_partition(v_name);
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
    p_trace_parent text DEFAULT NULL,
    OUT o_status smallint, OUT o_event_id uuid, OUT o_run_seq bigint,
    OUT o_persisted_at timestamptz, OUT o_differs boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_seq bigint;
    v_epoch timestamptz;
    v_owner text;
    v_gone boolean;
    v_no bigint;
    v_tenant_id text;
    v_event_id uuid;
    v_run_seq bigint;
    v_persisted_at timestamptz;
    v_differs boolean;
    v_digest uuid := runstream_idempotency_digest(p_run_id, p_idempotency_key);
BEGIN
    SELECT r.run_epoch, r.tenant_id, r.run_no, p.retired_at IS NOT NULL
      INTO v_epoch, v_owner, v_no, v_gone
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
           AND e.run_epoch = v_epoch AND e.run_no = v_no;
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

    INSERT INTO runs AS r (run_id, tenant_id, last_seq, run_epoch, run_no)
    VALUES (p_run_id, p_tenant_id, 1, coalesce(v_epoch,
        (SELECT max(epoch) FROM run_event_partitions
          WHERE epoch <= clock_timestamp() AND retired_at IS NULL)),
        coalesce(v_no, nextval('runs_run_no')))
    ON CONFLICT (run_id) DO UPDATE SET last_seq = r.last_seq + 1
        WHERE r.tenant_id = EXCLUDED.tenant_id
    RETURNING r.last_seq, r.run_epoch, r.run_no INTO v_seq, v_epoch, v_no;
    IF NOT FOUND THEN
        o_status := 2;
        RETURN;
    END IF;

    o_persisted_at := clock_timestamp();
    INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
        tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
        engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload, run_epoch, run_no)
    VALUES (p_run_id, v_seq, p_event_id, p_event_type, p_idempotency_key,
        p_tenant_id, p_project_id, p_environment_id, p_plan_id, p_plan_version, p_step_id,
        p_engine_attempt_id, p_logical_attempt_id, p_emitted_at, o_persisted_at, p_payload, v_epoch, v_no)
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
           AND e.run_epoch = v_epoch AND e.run_no = v_no;
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

-- CREATE OR REPLACE drops the settings 0021 gave the function: say them again.
ALTER FUNCTION runstream_append(text, text, text, text, text, text, uuid, text,
    text, text, integer, integer, text, json, integer, text)
    SET plan_cache_mode = force_generic_plan;

-- A fresh store (no run yet: nothing to find, by any binary) gets the new
-- keys on the partitions 0014 made at once. A store already in use keeps the keys of every partition
-- it has, those made ahead included: the new keys begin with the first
-- partition made after this migration, which takes new runs only a
-- partition's width later (a day by default). Until then the binaries of
-- the previous version, which find a run's events by run id alone, still
-- find them by an index: a rolling upgrade has that long to finish.
DO $$
DECLARE
    p record;
BEGIN
    IF EXISTS (SELECT 1 FROM runs) THEN
        RETURN;
    END IF;
    FOR p IN SELECT name FROM run_event_partitions
              WHERE epoch > '-infinity' AND dropped_at IS NULL AND retired_at IS NULL
              ORDER BY epoch LOOP
        EXECUTE format('LOCK TABLE %I IN ACCESS EXCLUSIVE MODE', p.name);
        IF EXISTS (SELECT 1 FROM pg_constraint WHERE conname = p.name || '_idem' AND conrelid = p.name::regclass) THEN
            EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', p.name, p.name || '_idem');
        ELSE
            EXECUTE format('DROP INDEX IF EXISTS %I', p.name || '_idem');
        END IF;
        EXECUTE format('ALTER TABLE %I DROP CONSTRAINT IF EXISTS %I', p.name, p.name || '_pkey');
        EXECUTE format('DROP INDEX IF EXISTS %I', p.name || '_tenant');
        EXECUTE format('DROP INDEX IF EXISTS %I', p.name || '_brin');
        PERFORM runstream_index_partition(p.name);
    END LOOP;
END $$;
