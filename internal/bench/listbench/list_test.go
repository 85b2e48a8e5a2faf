package listbench_test

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/bench/listbench"
	"github.com/runstream/runstream/internal/testenv"
)

// TestRun_Small runs the bench over a few thousand runs: every page kind
// answers, the counted pages are exact, and the report prints.
func TestRun_Small(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := listbench.Run(ctx, listbench.Config{RedisURL: "redis://" + rdb.Options().Addr + "/" + strconv.Itoa(rdb.Options().DB),
		PostgresURL: testenv.PostgresURL(t), Runs: 3000, Requests: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Cases) != 10 || !rep.Store {
		t.Fatalf("%d cases, store %v; want 10 and true", len(rep.Cases), rep.Store)
	}
	first := rep.Cases[0]
	if first.Runs != 50 || first.Matched == nil || *first.Matched != 3000 {
		t.Fatalf("first page: %d runs, matched %v; want 50 of 3000", first.Runs, first.Matched)
	}
	var b bytes.Buffer
	if err := rep.WriteText(&b); err != nil || !strings.Contains(b.String(), "page 100 via cursors") {
		t.Fatalf("report: %v\n%s", err, b.String())
	}
	// The bench cleaned up after itself.
	if n, err := rdb.Keys(ctx, "runstream:runs:{tenant_listbench_*").Result(); err != nil || len(n) != 0 {
		t.Fatalf("catalog keys left behind: %v %v", n, err)
	}
}
