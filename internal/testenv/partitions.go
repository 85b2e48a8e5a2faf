package testenv

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// attachSQL attaches a run_events partition %[1]s that began %[2]s before
// the current minute and spans %[3]s, with the keys and indexes
// runstream_ensure_partitions gives each partition, and catalogs it.
const attachSQL = `DO $$
DECLARE
    v_from timestamptz := date_trunc('minute', clock_timestamp()) - interval '%[2]s';
BEGIN
    CREATE TABLE %[1]s (LIKE run_events INCLUDING DEFAULTS);
    PERFORM runstream_index_partition('%[1]s');
    EXECUTE format('ALTER TABLE run_events ATTACH PARTITION %[1]s FOR VALUES FROM (%%L) TO (%%L)',
        v_from, v_from + interval '%[3]s');
    INSERT INTO run_event_partitions (epoch, until, name)
    VALUES (v_from, v_from + interval '%[3]s', '%[1]s');
END $$`

// dropAheadSQL drops a freshly migrated store's partitions after the
// legacy one (today's and tomorrow's, empty).
const dropAheadSQL = `DO $$
DECLARE p record;
BEGIN
    FOR p IN SELECT name FROM run_event_partitions WHERE epoch > '-infinity' LOOP
        EXECUTE format('DROP TABLE %I', p.name);
    END LOOP;
    DELETE FROM run_event_partitions WHERE epoch > '-infinity';
END $$`

func execAll(t testing.TB, pool *pgxpool.Pool, what string, stmts ...string) {
	t.Helper()
	for _, stmt := range stmts {
		if _, err := pool.Exec(context.Background(), stmt); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
}

// BackdatePartitions gives a freshly migrated, still empty store (pool's
// schema) one partition after the legacy one, run_events_backdated, that
// began ten minutes ago and ended five minutes ago: the way a store looks
// whose partition upkeep stopped. The runs appended next go to it (the
// newest that has begun), and once a later partition begins (Store.
// EnsurePartitions, or SupersedeBackdated) it takes no new run and
// retention may retire it. Tests of retention use it instead of waiting
// for a partition to end.
func BackdatePartitions(t testing.TB, pool *pgxpool.Pool) {
	t.Helper()
	execAll(t, pool, "backdating the store's partitions", dropAheadSQL,
		fmt.Sprintf(attachSQL, "run_events_backdated", "10 minutes", "5 minutes"))
}

// SupersedeBackdated gives a store BackdatePartitions prepared a partition
// that began four minutes ago and ends in ten (run_events_current): the
// runs appended next go to it, and it began longer ago than retention's
// routing grace (a minute), so the backdated one may be retired at once.
func SupersedeBackdated(t testing.TB, pool *pgxpool.Pool) {
	t.Helper()
	execAll(t, pool, "superseding the backdated partition", fmt.Sprintf(attachSQL, "run_events_current", "4 minutes", "14 minutes"))
}

// PretendRelayedAndAged stands in for the relay and for time in a store
// of pool's schema: the outbox is emptied (as if every event had been
// published) and every ended run ended an hour earlier, so retention with
// a retention under an hour may take their partitions.
func PretendRelayedAndAged(t testing.TB, pool *pgxpool.Pool) {
	t.Helper()
	execAll(t, pool, "pretending every event relayed and every ended run old", `DELETE FROM outbox`,
		`UPDATE runs SET terminal_at = terminal_at - interval '1 hour' WHERE terminal_at IS NOT NULL`)
}
