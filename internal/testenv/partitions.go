package testenv

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// backdateSQL replaces a freshly migrated store's partitions after the
// legacy one (today's and tomorrow's, empty) by one that began ten minutes
// ago and ended five minutes ago, the way a store looks whose partition
// upkeep stopped: new runs go to it, the newest that has begun, until a
// later one begins. The next runstream_ensure_partitions then makes one
// from the current minute, and the backdated partition, no longer taking
// new runs, becomes a candidate for retention at once.
const backdateSQL = `DO $$
DECLARE
    p record;
    v_from timestamptz := date_trunc('minute', clock_timestamp()) - interval '10 minutes';
BEGIN
    FOR p IN SELECT name FROM run_event_partitions WHERE epoch > '-infinity' LOOP
        EXECUTE format('DROP TABLE %I', p.name);
    END LOOP;
    DELETE FROM run_event_partitions WHERE epoch > '-infinity';
    CREATE TABLE run_events_backdated (LIKE run_events INCLUDING DEFAULTS);
    ALTER TABLE run_events_backdated ADD PRIMARY KEY (run_id, run_seq);
    ALTER TABLE run_events_backdated ADD UNIQUE (run_id, idempotency_key);
    CREATE INDEX ON run_events_backdated (tenant_id, persisted_at, run_id COLLATE "C", run_seq);
    EXECUTE format('ALTER TABLE run_events ATTACH PARTITION run_events_backdated FOR VALUES FROM (%L) TO (%L)',
        v_from, v_from + interval '5 minutes');
    INSERT INTO run_event_partitions (epoch, until, name)
    VALUES (v_from, v_from + interval '5 minutes', 'run_events_backdated');
END $$`

// BackdatePartitions gives a freshly migrated, still empty store (pool's
// schema) one partition, run_events_backdated, that began ten minutes ago
// and ended five minutes ago: the runs appended next go to it, and once
// runstream_ensure_partitions (Store.EnsurePartitions) makes a partition
// from the current minute, it takes no new run and retention may retire
// it. Tests of retention use it instead of waiting for a partition to end.
func BackdatePartitions(t testing.TB, pool *pgxpool.Pool) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), backdateSQL); err != nil {
		t.Fatalf("backdating the store's partitions: %v", err)
	}
}

// supersedeSQL attaches run_events_current, begun four minutes ago and
// ending in ten, after BackdatePartitions' partition: new runs go to it,
// and it began longer ago than retention's routing grace (a minute), so
// the backdated partition may be retired at once.
const supersedeSQL = `DO $$
DECLARE
    v_from timestamptz := date_trunc('minute', clock_timestamp()) - interval '4 minutes';
BEGIN
    CREATE TABLE run_events_current (LIKE run_events INCLUDING DEFAULTS);
    ALTER TABLE run_events_current ADD PRIMARY KEY (run_id, run_seq);
    ALTER TABLE run_events_current ADD UNIQUE (run_id, idempotency_key);
    CREATE INDEX ON run_events_current (tenant_id, persisted_at, run_id COLLATE "C", run_seq);
    EXECUTE format('ALTER TABLE run_events ATTACH PARTITION run_events_current FOR VALUES FROM (%L) TO (%L)',
        v_from, v_from + interval '14 minutes');
    INSERT INTO run_event_partitions (epoch, until, name)
    VALUES (v_from, v_from + interval '14 minutes', 'run_events_current');
END $$`

// SupersedeBackdated gives a store BackdatePartitions prepared a partition
// that began four minutes ago (run_events_current): the runs appended next
// go to it, and retention may take the backdated one without waiting for
// its routing grace.
func SupersedeBackdated(t testing.TB, pool *pgxpool.Pool) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), supersedeSQL); err != nil {
		t.Fatalf("superseding the backdated partition: %v", err)
	}
}
