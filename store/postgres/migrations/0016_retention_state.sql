-- 0016: what the retention process last did, so that `runstream retention
-- status` and the operators' GET /v1/retention, run anywhere, can say
-- whether retention runs at all, with which settings, and how its last
-- pass ended. One row, written by each pass.
CREATE TABLE retention_state (
    id                integer     PRIMARY KEY CHECK (id = 1),
    retention_seconds bigint      NOT NULL,
    partition_seconds bigint      NOT NULL,
    archive_url       text        NOT NULL,
    pass_at           timestamptz NOT NULL,
    pass_error        text,
    dropped           text[]      NOT NULL DEFAULT '{}'
);
