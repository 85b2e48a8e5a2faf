package readbench

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/testenv"
)

func TestBenchRead_SmallRun(t *testing.T) {
	if _, err := exec.LookPath("redis-benchmark"); err != nil {
		testenv.Missing(t, "redis-benchmark (apt-get install redis-tools)")
	}
	pg := testenv.PostgresURL(t)
	testenv.Redis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, runs := range []int{1, 4} {
		rep, err := Run(ctx, Config{RedisURL: os.Getenv("RUNSTREAM_TEST_REDIS_URL"), PostgresURL: pg,
			Clients: 4, Duration: 500 * time.Millisecond, Runs: 20, Watchers: 20, WatchedRuns: runs, Changes: 12})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Gets == 0 || rep.Errors != 0 || rep.GetsPerSec <= 0 || rep.RedisBenchmarkGetsPerSec <= 0 {
			t.Fatalf("GET phase: %+v", rep)
		}
		// Each change reaches the watchers of its run only (Watchers /
		// WatchedRuns of them). Latest-wins delivery may skip an
		// intermediate change for a slow watcher, but most must arrive,
		// and none twice or to another run's watchers.
		all := int64(rep.Watchers / runs * rep.Changes)
		if rep.Deliveries < all/2 || rep.Deliveries > all || rep.SSELatency.Max <= 0 {
			t.Fatalf("SSE phase over %d runs: %d deliveries for %d watchers x %d changes", runs, rep.Deliveries, rep.Watchers/runs, rep.Changes)
		}
	}
}
