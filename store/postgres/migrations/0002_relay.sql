-- 0002: what the relay needs to retry, dead-letter and wake up fast.

-- Retry state of an outbox row whose publish failed for a reason of its own
-- (the broker refused the record). A broker outage does not count here: the
-- relay backs off as a whole instead, so an outage never dead-letters.
ALTER TABLE outbox
    ADD COLUMN attempts        integer     NOT NULL DEFAULT 0,
    ADD COLUMN next_attempt_at timestamptz,
    ADD COLUMN last_error      text;

-- Events the relay gave up on after the configured attempts
-- (EVENT_BUS_DELIVERY_FAILED). The event itself stays in run_events: this
-- only says it never reached the bus. `runstream relay dlq retry` moves rows
-- back to the outbox.
CREATE TABLE outbox_dead_letters (
    id           bigint      PRIMARY KEY,
    shard        integer     NOT NULL,
    run_id       text        NOT NULL,
    run_seq      bigint      NOT NULL,
    created_at   timestamptz NOT NULL,
    failed_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    attempts     integer     NOT NULL,
    last_error   text
);

-- Runs whose head row is waiting for a retry are skipped by the relay's read
-- (their later rows must wait, other runs must not); this keeps finding them
-- cheap because only failed rows are in it.
CREATE INDEX outbox_retrying ON outbox (shard) WHERE next_attempt_at IS NOT NULL;
