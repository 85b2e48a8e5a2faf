package bench

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
	rep, err := RunRead(ctx, ReadConfig{RedisURL: os.Getenv("RUNSTREAM_TEST_REDIS_URL"), PostgresURL: pg,
		Clients: 4, Duration: 500 * time.Millisecond, Runs: 20, Watchers: 20, Changes: 10})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Gets == 0 || rep.Errors != 0 || rep.GetsPerSec <= 0 || rep.RedisBenchmarkGetsPerSec <= 0 {
		t.Fatalf("GET phase: %+v", rep)
	}
	// Latest-wins delivery may skip an intermediate change for a slow
	// watcher, but most must arrive, and the last change reaches everyone.
	if rep.Deliveries < int64(rep.Watchers*rep.Changes/2) || rep.SSELatency.Max <= 0 {
		t.Fatalf("SSE phase: %d deliveries for %d watchers x %d changes", rep.Deliveries, rep.Watchers, rep.Changes)
	}
}
