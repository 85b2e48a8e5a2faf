package duckdb_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/runstream/runstream/internal/archive"
	"github.com/runstream/runstream/internal/lake"
	"github.com/runstream/runstream/internal/lake/laketest"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/testenv/testkafka"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// TestLake_DuckDB: the lake sink writes a lake from the topic (runs of
// three tenants, with retries and failures, some records twice); then
// DuckDB runs docs/LAKE.md's queries on its files (lake.mjs) and each
// answer must equal the same computation over the store: Postgres SQL on
// run_events for events and failures, the reducer's projection of each
// run's stored events for durations, and no event twice. It runs under
// scripts/test-duckdb.sh, which installs DuckDB's Node API and sets
// RUNSTREAM_TEST_DUCKDB_LAKE=1.
func TestLake_DuckDB(t *testing.T) {
	if os.Getenv("RUNSTREAM_TEST_DUCKDB_LAKE") == "" {
		t.Skip("run by scripts/test-duckdb.sh (DuckDB's Node API; RUNSTREAM_TEST_DUCKDB_LAKE=1)")
	}
	ctx := context.Background()
	pool, _ := testenv.Postgres(t, 10)
	if _, err := postgres.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	st, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	const topic = "lake-duckdb"
	k := testkafka.Start(t, kfake.SeedTopics(3, topic))
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 43))
	var runs [][]store.RunEventRecord
	var topicRecs []store.RunEventRecord
	for i := range 45 {
		id := workload.NewIdentity([]string{"acme", "beta corp", "gamma"}[i%3])
		id.PlanID = []string{"plan_daily_etl", "plan_hourly_sync"}[i%2]
		evs := workload.RunFor(rng, id, workload.Options{StepFailureRate: 0.3, MaxAttempts: 2})
		for _, r := range st.AppendBatch(ctx, evs) {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
		recs, err := st.FetchEvents(ctx, evs[0].RunID, store.FetchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, recs)
		topicRecs = append(topicRecs, recs...)
		if rng.IntN(3) == 0 {
			topicRecs = append(topicRecs, recs[rng.IntN(len(recs))]) // published twice, later
		}
	}
	k.Publish(t, topic, topicRecs)

	url := testenv.PostgresURL(t)
	schema := "lake_duckdb_" + testenv.RandomID(6)
	state, err := lake.Connect(ctx, url, schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		state.Close()
		if admin, err := pgxpool.New(context.Background(), url); err == nil {
			_, _ = admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
			admin.Close()
		}
	})
	dir := t.TempDir()
	storage, err := archive.NewDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lake.New(lake.Config{Brokers: k.Brokers, Topic: topic, Group: "lake-duckdb", Fetcher: st,
		RotateRecords: 100, FlushIdle: 300 * time.Millisecond, DisableCurrent: true, SpoolDir: t.TempDir()}, storage, state)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- l.Run(runCtx) }()
	testenv.WaitUntil(t, 60*time.Second, func() error { return laketest.ExactlyOnce(ctx, storage, runs) })
	// A window's files are uploaded before its state commits, so the
	// current-state table may trail the files for a moment: publish until
	// it has every run's last event.
	testenv.WaitUntil(t, 60*time.Second, func() error {
		if ok, err := l.PublishCurrent(ctx); !ok || err != nil {
			return fmt.Errorf("PublishCurrent = %v, %v", ok, err)
		}
		return laketest.CurrentAgrees(ctx, storage, runs)
	})
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	if err := laketest.DuckDB(ctx, testenv.ModuleRoot(t), dir, pool, runs, t.Logf); err != nil {
		t.Fatal(err)
	}
}
