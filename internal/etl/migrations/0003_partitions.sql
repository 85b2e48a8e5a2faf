-- Partitions runs and step_attempts by month (issue 30), so that the
-- retention (--etl-retention) removes a month as a whole: a partition is
-- detached and dropped, never emptied by DELETE (no dead rows, no vacuum,
-- no index bloat, and the space goes back to the filesystem at once).
--
-- The key, run_month, is the first day of the UTC month of the persistedAt
-- of the run's first event (runSeq 1), carried on the run's runs row and
-- on every step_attempts row of it, so a run's rows always sit in one
-- partition and each primary key (which must hold the key) still says one
-- row per run and per attempt. Why not the month of started_at: a run is
-- queued (RunQueued) before it starts, its runs row is written before any
-- start time is known, and started_at is the engine's clock, which can be
-- anything. The persistedAt of runSeq 1 is known with the run's first
-- event, is the store's clock, and never changes.
--
-- Partitions are named <table>_YYYY_MM and created by etl_add_month, which
-- the ETL calls for the current and the next month ahead and, on demand,
-- for an older month a late or replayed run needs. Native partitioning,
-- no extension.
--
-- Existing tables are converted in this one transaction: rows are copied
-- into the partitioned tables and the old tables dropped. Their run_month
-- is the month of updated_at (the persistedAt of the last event the row
-- took; the rows do not know runSeq 1's): never earlier than the true
-- key, so a converted run is never dropped earlier than a new one would
-- be. The ETL must be stopped while it runs (docs/ETL.md, "Upgrading to
-- the partitioned tables"): it takes the tables' locks for as long as the
-- copy lasts.
--
-- Idempotent: run again, it finds runs partitioned and changes nothing.

-- etl_retention.kept_from: the retention has dropped, or is about to drop,
-- the rows of runs whose run_month is before it; such a run that has no
-- rows is never written again (a late event of a dropped run must not
-- bring back half of it). NULL: nothing dropped.
CREATE TABLE IF NOT EXISTS etl_retention (
    kept_from  date,
    updated_at timestamptz
);
INSERT INTO etl_retention (kept_from) SELECT NULL WHERE NOT EXISTS (SELECT FROM etl_retention);

-- etl_add_month(m) creates the partitions of both tables for the month
-- starting on m, unless they exist, and reports whether it created any.
-- CREATE TABLE then ATTACH PARTITION, rather than CREATE TABLE ...
-- PARTITION OF: attaching takes a SHARE UPDATE EXCLUSIVE lock on the
-- parent, which the sink's reads and writes do not conflict with, where
-- PARTITION OF takes an ACCESS EXCLUSIVE one. fillfactor as the tables had
-- it (0001): room for HOT updates.
CREATE OR REPLACE FUNCTION etl_add_month(m date) RETURNS boolean
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    suffix text := to_char(m, 'YYYY_MM');
    made   boolean := false;
    t      text;
BEGIN
    IF extract(day FROM m) <> 1 THEN
        RAISE EXCEPTION 'etl_add_month: % is not the first day of a month', m;
    END IF;
    FOREACH t IN ARRAY ARRAY['runs', 'step_attempts'] LOOP
        IF to_regclass(t || '_' || suffix) IS NULL THEN
            EXECUTE format('CREATE TABLE %I (LIKE %I) WITH (fillfactor = 80)', t || '_' || suffix, t);
            EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
                t, t || '_' || suffix, m, (m + interval '1 month')::date);
            made := true;
        END IF;
    END LOOP;
    RETURN made;
END $$;

DO $$
DECLARE
    this_month date := date_trunc('month', now() AT TIME ZONE 'UTC')::date;
BEGIN
    IF (SELECT relkind FROM pg_class WHERE oid = 'runs'::regclass) = 'p' THEN
        RETURN;
    END IF;

    ALTER TABLE runs RENAME TO runs_unpartitioned;
    ALTER INDEX runs_pkey RENAME TO runs_unpartitioned_pkey;
    ALTER TABLE step_attempts RENAME TO step_attempts_unpartitioned;
    ALTER INDEX step_attempts_pkey RENAME TO step_attempts_unpartitioned_pkey;

    -- The columns of 0001, and run_month.
    CREATE TABLE runs (
        run_id         text NOT NULL,
        tenant_id      text NOT NULL,
        project_id     text NOT NULL,
        environment_id text NOT NULL,
        plan_id        text NOT NULL,
        plan_version   text NOT NULL,
        status         text NOT NULL,
        started_at     timestamptz,
        completed_at   timestamptz,
        duration_ms    bigint,
        steps          integer NOT NULL,
        failed_steps   integer NOT NULL,
        attempts_total integer NOT NULL,
        last_event_seq bigint NOT NULL,
        updated_at     timestamptz,
        run_month      date NOT NULL,
        PRIMARY KEY (run_id, run_month)
    ) PARTITION BY RANGE (run_month);

    CREATE TABLE step_attempts (
        run_id             text   NOT NULL,
        step_id            text   NOT NULL,
        logical_attempt_id bigint NOT NULL,
        engine_attempt_id  bigint NOT NULL,
        status             text   NOT NULL,
        started_at         timestamptz,
        completed_at       timestamptz,
        duration_ms        bigint,
        error_code         text,
        error_message      text,
        failure_category   text,
        artifacts_count    integer NOT NULL,
        run_month          date   NOT NULL,
        PRIMARY KEY (run_id, step_id, logical_attempt_id, run_month)
    ) PARTITION BY RANGE (run_month);

    PERFORM etl_add_month(m) FROM (
        SELECT DISTINCT date_trunc('month', coalesce(updated_at, now()) AT TIME ZONE 'UTC')::date AS m
        FROM runs_unpartitioned
        UNION SELECT this_month
        UNION SELECT (this_month + interval '1 month')::date) months;

    INSERT INTO runs (run_id, tenant_id, project_id, environment_id, plan_id, plan_version, status,
            started_at, completed_at, duration_ms, steps, failed_steps, attempts_total, last_event_seq,
            updated_at, run_month)
        SELECT run_id, tenant_id, project_id, environment_id, plan_id, plan_version, status,
            started_at, completed_at, duration_ms, steps, failed_steps, attempts_total, last_event_seq,
            updated_at, date_trunc('month', coalesce(updated_at, now()) AT TIME ZONE 'UTC')::date
        FROM runs_unpartitioned;

    -- An attempt goes with its run; one without a runs row (which the sink
    -- never leaves: both commit together) is kept, in this month.
    INSERT INTO step_attempts (run_id, step_id, logical_attempt_id, engine_attempt_id, status,
            started_at, completed_at, duration_ms, error_code, error_message, failure_category,
            artifacts_count, run_month)
        SELECT a.run_id, a.step_id, a.logical_attempt_id, a.engine_attempt_id, a.status,
            a.started_at, a.completed_at, a.duration_ms, a.error_code, a.error_message, a.failure_category,
            a.artifacts_count, coalesce(r.run_month, this_month)
        FROM step_attempts_unpartitioned a LEFT JOIN runs r ON r.run_id = a.run_id;

    DROP TABLE runs_unpartitioned, step_attempts_unpartitioned;
END $$;

COMMENT ON COLUMN runs.last_event_seq IS
    'runSeq of the last event of the run consumed, unknown types included; the run''s consumer checkpoint';
COMMENT ON COLUMN runs.updated_at IS 'persistedAt of the event last_event_seq names';
COMMENT ON COLUMN runs.run_month IS
    'partition key: first day of the UTC month of the persistedAt of the run''s first event (of updated_at for rows converted by migration 0003)';
COMMENT ON COLUMN step_attempts.run_month IS 'partition key: the run''s runs.run_month';
