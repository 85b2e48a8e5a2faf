package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
)

// snapshotBytes counts the bytes of one key's snapshot that GET and
// GETRANGE bring back from Redis.
type snapshotBytes struct {
	key string
	n   atomic.Int64
}

func (h *snapshotBytes) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *snapshotBytes) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.add(cmd)
		return err
	}
}
func (h *snapshotBytes) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			h.add(c)
		}
		return err
	}
}
func (h *snapshotBytes) add(cmd redis.Cmder) {
	sc, ok := cmd.(*redis.StringCmd)
	if args := cmd.Args(); ok && len(args) > 1 && args[1] == h.key && (cmd.Name() == "get" || cmd.Name() == "getrange") {
		h.n.Add(int64(len(sc.Val())))
	}
}

// TestSnapshot_TenantCheckedBeforeTheSnapshotIsRead: another tenant's run
// is answered exactly as an absent one (404, the same error), on the
// snapshot and the watch routes, without its snapshot being read: of a
// 2 MB snapshot, a few KB leave Redis (the whole went before the tenant
// check), and the read costs about what an absent run's does. The owner
// still reads it whole.
func TestSnapshot_TenantCheckedBeforeTheSnapshotIsRead(t *testing.T) {
	rdb := testenv.Redis(t)
	e := newEnvOn(t, httpapi.Config{AuthTokens: roleTokens}, migratedPool(t, 20), rdb)
	run := appendAs(t, e.url, "tok-a", "tenant_a")
	counted := &snapshotBytes{key: snapshots.Key(run.RunID)}
	rdb.AddHook(counted)

	big := store.RunSnapshot{RunID: run.RunID, TenantID: "tenant_a", ProjectID: run.ProjectID, EnvironmentID: run.EnvironmentID,
		PlanID: run.PlanID, PlanVersion: run.PlanVersion, Status: store.RunRunning, LastEventSeq: 1,
		UpdatedAt: time.Now().UTC().Format(time.RFC3339Nano)}
	for i := range 8000 {
		big.Steps = append(big.Steps, store.StepSnapshot{StepID: fmt.Sprintf("model.step_%05d_%s", i, strings.Repeat("x", 200)),
			StepAttempt: store.StepAttempt{Status: "RUNNING", LogicalAttemptID: 1, EngineAttemptID: 1}, Attempts: []store.StepAttempt{}})
	}
	body := snapshots.Append(nil, &big)
	if len(body) < 2<<20 {
		t.Fatalf("the snapshot is %d bytes, want 2 MB", len(body))
	}
	ctx := context.Background()
	if err := rdb.Set(ctx, snapshots.Key(run.RunID), body, time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	absent := "0d3c6a9e-4f0c-4a8e-9d5d-3d4c0f7dbb8a"
	for _, route := range []string{"snapshot", "watch"} {
		counted.n.Store(0)
		theirs := do(t, "GET", e.url+"/v1/runs/"+run.RunID+"/"+route, "tok-b", nil)
		read := counted.n.Load()
		none := do(t, "GET", e.url+"/v1/runs/"+absent+"/"+route, "tok-b", nil)
		if theirs.status != http.StatusNotFound || none.status != http.StatusNotFound {
			t.Fatalf("%s: tenant_b reading tenant_a's run %d, an absent run %d; want 404 both", route, theirs.status, none.status)
		}
		if a, b := strings.ReplaceAll(string(theirs.body), run.RunID, "ID"), strings.ReplaceAll(string(none.body), absent, "ID"); a != b {
			t.Fatalf("%s: another tenant's run answers %s, an absent one %s", route, a, b)
		}
		if read > 16<<10 {
			t.Fatalf("%s: tenant_b's read took %d bytes of tenant_a's snapshot from Redis, want at most 16 KiB", route, read)
		}
	}
	counted.n.Store(0)
	if r := do(t, "GET", e.url+"/v1/runs/"+run.RunID+"/snapshot", "tok-a", nil); r.status != 200 || len(r.body) != len(body) {
		t.Fatalf("tenant_a's own snapshot: %d, %d bytes, want 200 with %d", r.status, len(r.body), len(body))
	}
	if n := counted.n.Load(); n < int64(len(body)) {
		t.Fatalf("tenant_a's own read took %d bytes from Redis, want the whole %d", n, len(body))
	}

	// The cost, alternated: medians of another tenant's run and of an
	// absent one.
	var theirs, none []time.Duration
	for range 15 {
		for _, c := range []struct {
			id string
			to *[]time.Duration
		}{{run.RunID, &theirs}, {absent, &none}} {
			start := time.Now()
			if r := do(t, "GET", e.url+"/v1/runs/"+c.id+"/snapshot", "tok-b", nil); r.status != http.StatusNotFound {
				t.Fatalf("%d", r.status)
			}
			*c.to = append(*c.to, time.Since(start))
		}
	}
	slices.Sort(theirs)
	slices.Sort(none)
	mt, mn := theirs[len(theirs)/2], none[len(none)/2]
	t.Logf("median of 15: another tenant's 2 MB run %v, an absent run %v", mt, mn)
	if mt > 2*mn+2*time.Millisecond {
		t.Errorf("another tenant's run costs %v against %v for an absent one: its snapshot is still read", mt, mn)
	}
}
