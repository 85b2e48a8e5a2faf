-- 0024: the audit index keys a tenant by a 64-bit hash of its id, so that
-- every tenant's appends fill its pages as the last tenant's do (issue 31:
-- the WAL of an append, and the bytes of an event at rest).
--
-- Each partition's audit index was (tenant_id, persisted_at). Appends of
-- one tenant land at the right end of its own range, which for every
-- tenant but the one whose id sorts last is in the middle of the index.
-- Postgres splits a full page there in two halves unless it can tell that
-- the inserts come in ascending order, and it tells that only for keys no
-- wider than two 8-byte values: a text tenant id is wider. So with two
-- tenants or more, all but one left their pages half full, split twice as
-- often, and wrote each split's half page to the WAL: at 20 million events
-- with two tenants, the audit index wrote 141 bytes of WAL per append
-- against 104 with one tenant, which made the whole append 2.6% dearer.
--
-- Partitions made from now on index (hashtextextended(tenant_id, 0),
-- persisted_at): 8 + 8 bytes, which Postgres splits by its fill factor
-- wherever a tenant's range is. The audit read names the hash beside the
-- tenant id (the id is still compared: two tenants whose ids hash alike
-- share a range and the read skips the other's rows), so it reads this
-- index where a partition has it and (tenant_id, persisted_at) where it
-- has that. hashtextextended is the function hash partitioning uses: its
-- values are the same on every Postgres version, as stored indexes need.
CREATE OR REPLACE FUNCTION runstream_index_partition(p_name text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I PRIMARY KEY (run_no, run_seq)', p_name, p_name || '_pkey');
    EXECUTE format('CREATE UNIQUE INDEX %I ON %I (run_no, runstream_idempotency_digest(run_id, idempotency_key))',
        p_name || '_idem', p_name);
    EXECUTE format('CREATE INDEX %I ON %I (hashtextextended(tenant_id, 0), persisted_at)', p_name || '_tenant', p_name);
    EXECUTE format('CREATE INDEX %I ON %I USING brin (persisted_at) WITH (pages_per_range = 32, autosummarize = on)',
        p_name || '_brin', p_name);
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (run_no > 0)', p_name, p_name || '_numbered');
END $$;

-- A fresh store (no event yet) gets the new index on the partitions 0014
-- and 0022 made at once. A store in use keeps the index of every partition
-- it has, those made ahead included: the binaries of the previous version
-- read audits without the hash, and find them by an index until the first
-- partition made after this migration takes events, a partition's width
-- later (a day by default). A rolling upgrade has that long to finish.
DO $$
DECLARE
    p record;
BEGIN
    IF EXISTS (SELECT 1 FROM run_events) THEN
        RETURN;
    END IF;
    FOR p IN SELECT name FROM run_event_partitions
              WHERE epoch > '-infinity' AND dropped_at IS NULL AND retired_at IS NULL
              ORDER BY epoch LOOP
        EXECUTE format('DROP INDEX IF EXISTS %I', p.name || '_tenant');
        EXECUTE format('CREATE INDEX %I ON %I (hashtextextended(tenant_id, 0), persisted_at)', p.name || '_tenant', p.name);
    END LOOP;
END $$;
