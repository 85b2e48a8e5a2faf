-- 0020: operator_actions, the audit log of what operators did (issue 36).
--
-- One row per action that changed something on an operator's (or a
-- tenant's) say: a dead letter or many retried, a rebuild started, a run
-- resynced. Who (the caller: an operator token's fingerprint, a tenant, or
-- the development mode), when, what (the action and its target), how many
-- (dead letters moved, runs to rebuild) and the reason the caller gave.
-- Rows are only ever inserted; the API reads them newest first by id.
CREATE TABLE operator_actions (
    id         bigserial   PRIMARY KEY,
    at         timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor      text        NOT NULL,
    action     text        NOT NULL,
    target     text        NOT NULL,
    count      bigint      NOT NULL,
    reason     text        NOT NULL DEFAULT '',
    request_id text        NOT NULL DEFAULT ''
);
