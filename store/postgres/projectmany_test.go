package postgres_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// TestProjectSnapshots_ManyRunsInOneStatement: the batched projection
// answers exactly what ProjectSnapshot answers for each run (one with a
// checkpoint and events after it, one longer than a page of events, a
// finished one), leaves out runs the store does not have, and refuses more
// than MaxProjectRuns runs.
func TestProjectSnapshots_ManyRunsInOneStatement(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, postgres.Config{SnapshotEvery: 3})
	ctx := ctxT(t)
	t0 := time.Date(2026, 2, 16, 10, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Millisecond) }
	appendSteps := func(id workload.Identity, from, n int) {
		t.Helper()
		var ws []store.RunEventWrite
		for i := from; i < from+n; i++ {
			ws = append(ws, workload.Event(id, store.EventStepStarted, fmt.Sprintf("s%d", i), 1, 1, at(i), nil))
		}
		for lo := 0; lo < len(ws); lo += 500 {
			for _, r := range s.AppendBatch(ctx, ws[lo:min(lo+500, len(ws))]) {
				if r.Err != nil {
					t.Fatal(r.Err)
				}
			}
		}
	}
	var ids []string
	// A run with a checkpoint (projected once) and events after it.
	cp := workload.NewIdentity("tenant_a")
	if _, err := s.AppendEvent(ctx, workload.Event(cp, store.EventRunStarted, "", 1, 1, at(0), nil)); err != nil {
		t.Fatal(err)
	}
	appendSteps(cp, 1, 5)
	if _, err := s.ProjectSnapshot(ctx, cp.RunID); err != nil {
		t.Fatal(err)
	}
	appendSteps(cp, 6, 2)
	ids = append(ids, cp.RunID)
	// A run longer than one page of events.
	long := workload.NewIdentity("tenant_b")
	if _, err := s.AppendEvent(ctx, workload.Event(long, store.EventRunStarted, "", 1, 1, at(0), nil)); err != nil {
		t.Fatal(err)
	}
	appendSteps(long, 1, postgres.MaxFetchLimit+20)
	ids = append(ids, long.RunID)
	// A finished run.
	done := workload.NewIdentity("tenant_a")
	for i, typ := range []string{store.EventRunStarted, store.EventRunCompleted} {
		if _, err := s.AppendEvent(ctx, workload.Event(done, typ, "", 1, 1, at(i), nil)); err != nil {
			t.Fatal(err)
		}
	}
	ids = append(ids, done.RunID, "no-such-run")

	got, err := s.ProjectSnapshots(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("got %d snapshots, want 3 (the unknown run left out)", len(got))
	}
	if _, ok := got["no-such-run"]; ok {
		t.Fatal("a run the store does not have has a snapshot")
	}
	for _, id := range ids[:3] {
		want, err := s.ProjectSnapshot(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got[id]); diff != "" {
			t.Errorf("run %s: ProjectSnapshots differs from ProjectSnapshot:\n%s", id, diff)
		}
	}
	if got[long.RunID].LastEventSeq != postgres.MaxFetchLimit+21 {
		t.Errorf("the long run ends at %d, want %d", got[long.RunID].LastEventSeq, postgres.MaxFetchLimit+21)
	}
	if none, err := s.ProjectSnapshots(ctx, nil); err != nil || len(none) != 0 {
		t.Errorf("no runs: %v, %v", none, err)
	}
	_, err = s.ProjectSnapshots(ctx, make([]string, postgres.MaxProjectRuns+1))
	if err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("too many runs: %v, want an error naming the limit", err)
	}
}
