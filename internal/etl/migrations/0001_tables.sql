-- The ETL's analytics tables. Rows are written only by the sink, in the
-- same transaction as the consumer checkpoint of the events they reflect
-- (runstream_consumer_checkpoints, created by consumer/pgcheckpoint in this
-- schema), so they are effectively once: a redelivered event never counts
-- twice. Times are the events' own (sourceOccurredAt, emittedAt,
-- persistedAt), never the loader's clock, so a replay builds equal rows.
--
-- No secondary indexes: every sink write is an upsert by primary key, and
-- each extra index costs every write. Analysts add the ones their queries
-- need (docs/ETL.md). A row is rewritten by each batch that holds events
-- of its run; fillfactor leaves room in each page so that the new version
-- goes into the same page without touching the primary key index (a HOT
-- update: no indexed column ever changes).

-- runs: one row per run that had at least one known event.
CREATE TABLE runs (
    run_id         text PRIMARY KEY,
    tenant_id      text NOT NULL,
    project_id     text NOT NULL,
    environment_id text NOT NULL,
    plan_id        text NOT NULL,
    plan_version   text NOT NULL,
    -- PENDING, APPROVED, RUNNING, PAUSED, COMPLETED, FAILED or CANCELLED,
    -- exactly as the snapshot reducer (projector/reduce) decides it.
    status         text NOT NULL,
    started_at     timestamptz,
    completed_at   timestamptz,
    -- completed_at - started_at in whole milliseconds; NULL while running
    -- or when the clocks disagree (negative).
    duration_ms    bigint,
    -- distinct stepIds seen, steps whose current attempt is FAILED, and
    -- step_attempts rows of the run.
    steps          integer NOT NULL,
    failed_steps   integer NOT NULL,
    attempts_total integer NOT NULL,
    -- runSeq of the last event applied, and its persistedAt.
    last_event_seq bigint NOT NULL,
    updated_at     timestamptz
) WITH (fillfactor = 80);

-- step_attempts: one row per (run, step, logical attempt). A retry opens a
-- new logical attempt; the earlier one keeps its final status.
CREATE TABLE step_attempts (
    run_id             text   NOT NULL,
    step_id            text   NOT NULL,
    logical_attempt_id bigint NOT NULL,
    -- the engine's attempt of the last event applied to this attempt.
    engine_attempt_id  bigint NOT NULL,
    -- PENDING, RUNNING, SUCCESS, FAILED or SKIPPED.
    status             text   NOT NULL,
    started_at         timestamptz,
    completed_at       timestamptz,
    -- payload.durationMs when the engine gave it, else completed_at -
    -- started_at.
    duration_ms        bigint,
    -- StepFailed payload errorCode, errorMessage, failureCategory; NULL
    -- when absent or empty, and cleared by a later StepCompleted.
    error_code         text,
    error_message      text,
    failure_category   text,
    artifacts_count    integer NOT NULL,
    PRIMARY KEY (run_id, step_id, logical_attempt_id)
) WITH (fillfactor = 80);
