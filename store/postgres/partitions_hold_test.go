package postgres_test

import (
	"testing"
	"time"

	"github.com/runstream/runstream/store/postgres"
)

// TestPartitions_NewPartitionsHeldUntilOneBeganLongAgo: in a store whose
// partitions all began less than the routing grace ago (or have not begun)
// and whose legacy partition is retired, no partition may be retired: new
// runs go to them, or will. (The routing check compared each epoch with
// the newest one begun a grace ago, and with none such took "infinity":
// every partition, the current and the future ones, was retirable, and a
// pass retired them all, so that every later append failed on a run with
// no partition to go to.)
func TestPartitions_NewPartitionsHeldUntilOneBeganLongAgo(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t, postgres.Config{})
	ctx := ctxT(t)
	// The migration's day-wide partitions out, minute-wide ones from now.
	if _, err := pool.Exec(ctx, `DO $$
DECLARE p record;
BEGIN
    FOR p IN SELECT name FROM run_event_partitions WHERE epoch > '-infinity' LOOP
        EXECUTE format('DROP TABLE %I', p.name);
    END LOOP;
    DELETE FROM run_event_partitions WHERE epoch > '-infinity';
END $$`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EnsurePartitions(ctx, time.Minute, time.Minute); err != nil {
		t.Fatal(err)
	}
	parts, err := s.Partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) < 3 || !parts[0].Legacy {
		t.Fatalf("partitions %+v; want the legacy one and at least two minute-wide ones", parts)
	}
	if err := s.RetirePartition(ctx, parts[0]); err != nil {
		t.Fatal(err)
	}
	// Each began less than a minute ago or has not begun: with a grace
	// of two minutes, every one is held for its routing.
	for _, p := range parts[1:] {
		hold, err := s.RetirementHold(ctx, p, time.Now().Add(-time.Minute), 2*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if hold != postgres.HoldRouting {
			t.Fatalf("partition %s (from %v, now %v): hold %q; want %q", p.Name, p.Epoch, time.Now(), hold, postgres.HoldRouting)
		}
	}
	// And appends still find one.
	appendRun(ctx, t, s)
}
