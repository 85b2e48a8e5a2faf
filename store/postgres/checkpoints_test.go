package postgres_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store/postgres"
)

// TestCheckpoints_UpgradeDeletesThoseOfRemovedRuns: migration 0023
// deletes the checkpoints earlier versions left of runs retention removed
// (a partition dropped, a tombstone pruned) and keeps every other.
func TestCheckpoints_UpgradeDeletesThoseOfRemovedRuns(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	before, pool := storeBefore(ctx, t, "0023")
	live := workload.NewIdentity("tenant_a")
	appendStepsRun(ctx, t, before, live, 40, time.Now()) // 81 events
	if snap, err := before.ProjectSnapshot(ctx, live.RunID); err != nil || snap.LastEventSeq != 81 {
		t.Fatalf("ProjectSnapshot: seq %d, %v", snap.LastEventSeq, err)
	}
	for _, sql := range []string{
		`INSERT INTO run_event_partitions (epoch, until, name, retired_at, archived_at, dropped_at)
			VALUES ('2001-01-01', '2001-01-02', 'run_events_20010101t000000', now(), now(), now())`,
		`INSERT INTO runs (run_id, tenant_id, last_seq, run_epoch, run_no) VALUES ('removed-run', 'tenant_a', 81, '2001-01-01', 7)`,
		`INSERT INTO run_snapshots (run_id, last_event_seq, snapshot) VALUES
			('removed-run', 81, '{"runId": "removed-run", "lastEventSeq": 81}'),
			('pruned-run', 81, '{"runId": "pruned-run", "lastEventSeq": 81}')`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if _, err := postgres.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	rows, err := pool.Query(ctx, `SELECT run_id FROM run_snapshots ORDER BY run_id`)
	if err != nil {
		t.Fatal(err)
	}
	kept, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(kept) != 1 || kept[0] != live.RunID {
		t.Fatalf("checkpoints after the migration: %v, %v; want only the live run's (%s)", kept, err, live.RunID)
	}
}
