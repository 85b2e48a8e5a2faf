-- 0006: audit reads: one tenant's events by persistedAt,
-- paged by the keyset (persisted_at, run_id, run_seq).
--
-- The BRIN index of 0005 cannot serve them: it has no tenant and no order,
-- so a tenant's page would read every tenant's rows of the window and sort
-- them. This btree answers a page as one index range in order, from the
-- cursor on, whatever the other tenants wrote. run_id is compared byte by
-- byte (COLLATE "C"): the order is the same on every server and in every
-- client, and cheaper to compare. The BRIN stays: convergence reads every
-- tenant's window of the recent tail, which it answers with a few pages,
-- and it costs appends nothing.
--
-- Applied in the migration's transaction, so on a large existing table the
-- build blocks appends while it runs (CREATE INDEX CONCURRENTLY cannot run
-- in a transaction); create it concurrently by hand first under this name
-- to avoid that: the IF NOT EXISTS then skips it.
CREATE INDEX IF NOT EXISTS run_events_tenant_persisted_at
    ON run_events (tenant_id, persisted_at, run_id COLLATE "C", run_seq);
