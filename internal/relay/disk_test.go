package relay_test

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store/postgres"
)

// outboxBytes is the outbox's size on disk: its table, indexes and TOAST,
// or those of every part when it is partitioned.
func outboxBytes(t *testing.T, pool *pgxpool.Pool) int64 {
	t.Helper()
	var n int64
	if err := pool.QueryRow(context.Background(), `SELECT sum(pg_total_relation_size(r))::bigint
		FROM (SELECT 'outbox'::regclass r UNION SELECT relid FROM pg_partition_tree('outbox')) t`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func mb(b int64) string { return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) + " MB" }

// fillBacklog puts n events of n/100 runs in the store and their rows in
// the outbox by SQL, the runs interleaved in id order as live appends
// leave them (a broker outage's backlog).
func fillBacklog(t *testing.T, pool *pgxpool.Pool, n int) {
	t.Helper()
	ctx := context.Background()
	runs := max(n/100, 1)
	ids := make([]string, runs)
	shards := make([]int32, runs)
	for i := range ids {
		ids[i] = workload.NewIdentity("tenant_a").RunID
		shards[i] = int32(postgres.ShardOf(ids[i]))
	}
	per := (n + runs - 1) / runs
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO runs (run_id, tenant_id, last_seq) SELECT r, 'tenant_a', $2 FROM unnest($1::text[]) r`, []any{ids, per}},
		{`INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key, tenant_id, project_id,
			environment_id, plan_id, plan_version, step_id, engine_attempt_id, logical_attempt_id, emitted_at, persisted_at)
		SELECT r, s, gen_random_uuid(), 'StepStarted', 'key-' || s, 'tenant_a', 'proj', 'env', 'plan', 'v1', 'step-' || s,
			1, 1, '2026-01-01T00:00:00Z', clock_timestamp()
		FROM unnest($1::text[]) r CROSS JOIN generate_series(1, $2) s`, []any{ids, per}},
		{`INSERT INTO outbox (shard, run_id, run_seq)
		SELECT r.shard, r.id, s FROM unnest($1::text[], $2::int[]) WITH ORDINALITY r(id, shard, i)
		CROSS JOIN generate_series(1, $3) s ORDER BY s, r.i`, []any{ids, shards, per}},
	} {
		if _, err := pool.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatalf("filling the backlog: %v", err)
		}
	}
}

// TestRelay_OutboxDiskAfterABacklog measures the outbox's size on disk
// after a backlog drained while appends went on: a broker outage's worth
// of rows is filled (by default 15,000 against a switch size of 1 MiB, so
// that make test covers the whole cycle in seconds rather than minutes:
// 60,000 rows against the default 8 MiB took 242 s at load 15; with
// RELAY_BACKLOG, that many rows against the default switch size, 300,000
// for the figure in docs/ARCHITECTURE.md), the relay drains it while a live run
// appends, and the outbox is measured once it is empty, then once the
// relay truncated the drained part (it must, within 30 s, leaving less
// than the switch size), then after a VACUUM (as autovacuum would run it)
// with the relay running, then after another with the relay stopped.
// Before migration 0011 the empty outbox kept 49.8 MB after 300,000 rows,
// and VACUUM gave back at most the table's empty tail.
func TestRelay_OutboxDiskAfterABacklog(t *testing.T) {
	t.Parallel()
	n, switchBytes := 15_000, int64(1<<20)
	if v := os.Getenv("RELAY_BACKLOG"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			t.Fatalf("RELAY_BACKLOG=%q: want a number of rows", v)
		}
		switchBytes = postgres.DefaultOutboxSwitchBytes
	}
	f := newFixture(t)
	ctx := context.Background()
	fillBacklog(t, f.pool, n)
	filled := outboxBytes(t, f.pool)
	if filled < switchBytes {
		t.Fatalf("a backlog of %d rows takes %s, under the switch size %s: nothing to measure", n, mb(filled), mb(switchBytes))
	}
	rows := outboxRows(t, f.pool)
	cfg := testConfig()
	cfg.BatchSize = 5000
	cfg.OutboxSwitchBytes = switchBytes
	start := time.Now()
	run := startRelay(t, f.pool, f.brokers, cfg)

	// Live appends during the drain, one run at a time, about 200 a second.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(1, 2))
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			for _, ev := range workload.Run(rng, "tenant_a", workload.Options{}) {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				if _, err := f.store.AppendEvent(ctx, ev); err != nil {
					t.Errorf("live append: %v", err)
					return
				}
			}
		}
	}()
	testenv.WaitFor(t, 10*time.Minute, "the backlog to drain", func() bool {
		return counter(t, run.reg, "runstream_relay_published_total") >= float64(rows)
	})
	close(stop)
	wg.Wait()
	testenv.WaitFor(t, time.Minute, "the outbox to be empty", func() bool { return outboxRows(t, f.pool) == 0 })
	drained := outboxBytes(t, f.pool)
	took := time.Since(start)
	// The relay switched appends away from the backlog's part at its
	// first rotation step and truncates it once drained: what stays is the
	// other part, below the switch size.
	testenv.WaitFor(t, 30*time.Second, "the drained part to be truncated", func() bool {
		return counterWith(t, run.reg, "runstream_relay_outbox_rotations_total", "truncate") > 0 &&
			outboxBytes(t, f.pool) < switchBytes
	})
	rotated := outboxBytes(t, f.pool)
	settle := time.Since(start) - took
	vacuum := func() int64 {
		t.Helper()
		if _, err := f.pool.Exec(ctx, "VACUUM outbox"); err != nil {
			t.Fatal(err)
		}
		return outboxBytes(t, f.pool)
	}
	running := vacuum()
	run.stop(t)
	stopped := vacuum()
	t.Logf("outbox of %d rows: %s filled; drained in %v: %s on disk for 0 rows, %s %v later; after VACUUM %s (relay running), %s (relay stopped)",
		rows, mb(filled), took.Round(time.Millisecond), mb(drained), mb(rotated), settle.Round(time.Millisecond), mb(running), mb(stopped))
}
