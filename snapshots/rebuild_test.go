package snapshots

import (
	"context"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/store"
)

// fakeSource is a store of fixed projections; a run it lacks is unknown.
type fakeSource map[string]store.RunSnapshot

func (f fakeSource) ProjectSnapshot(_ context.Context, runID string) (store.RunSnapshot, error) {
	s, ok := f[runID]
	if !ok {
		return store.RunSnapshot{}, store.ErrNotFound
	}
	return s, nil
}

// TestRebuildRuns_CountsWhyARunWasNotWritten: each run given is counted
// once, as written, current (Redis holds as new), expired (ended past the
// TTL) or unknown (not in the store); a second rebuild writes nothing and
// says the runs were current.
func TestRebuildRuns_CountsWhyARunWasNotWritten(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tenant := "rb-" + testenv.RandomID(6)
	t.Cleanup(func() { _ = DeleteCatalog(context.Background(), rdb, tenant) })
	now, err := Now(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	const ttl = time.Hour
	src := fakeSource{}
	snap := func(name, status string, terminalAt time.Time) string {
		s := store.RunSnapshot{RunID: name + "-" + testenv.RandomID(4), TenantID: tenant, Status: status, LastEventSeq: 2,
			StartedAt: store.FormatPersistedAt(now.Add(-3 * time.Hour)), UpdatedAt: store.FormatPersistedAt(now.Add(-time.Second))}
		if !terminalAt.IsZero() {
			s.TerminalAt = store.FormatPersistedAt(terminalAt)
			s.UpdatedAt = s.TerminalAt
		}
		src[s.RunID] = s
		t.Cleanup(func() { rdb.Del(context.Background(), Key(s.RunID)) })
		return s.RunID
	}
	open := snap("open", store.RunRunning, time.Time{})
	done := snap("done", store.RunCompleted, now.Add(-time.Minute))
	past := snap("past", store.RunCancelled, now.Add(-2*ttl))
	ids := []string{open, done, past, "unknown-" + testenv.RandomID(4)}

	got, err := RebuildRuns(ctx, rdb, src, ids, 2, Policy{TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	if want := (RebuildResult{Written: 2, Expired: 1, Unknown: 1}); got != want {
		t.Fatalf("first rebuild: %+v, want %+v", got, want)
	}
	got, err = RebuildRuns(ctx, rdb, src, ids, 2, Policy{TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	if want := (RebuildResult{Current: 2, Expired: 1, Unknown: 1}); got != want {
		t.Fatalf("second rebuild: %+v, want %+v", got, want)
	}
	if n, err := Rebuild(ctx, rdb, src, ids, 2, Policy{TTL: ttl}); err != nil || n != 0 {
		t.Fatalf("Rebuild of current runs: %d, %v; want 0 written", n, err)
	}
	if sum := got.Add(RebuildResult{Written: 1, Current: 1}); sum != (RebuildResult{Written: 1, Current: 3, Expired: 1, Unknown: 1}) {
		t.Fatalf("Add: %+v", sum)
	}
}
