package projector

import (
	"context"
	"fmt"
	"testing"

	"github.com/runstream/runstream/store"
)

// snap returns a run's snapshot with steps steps, at watermark seq.
func snap(runID string, seq int64, steps int) store.RunSnapshot {
	s := store.RunSnapshot{RunID: runID, TenantID: "t", Status: store.RunRunning, LastEventSeq: seq,
		Steps: []store.StepSnapshot{}, Artifacts: []store.ArtifactRef{}, UpdatedAt: "2026-01-01T00:00:00.000000Z"}
	for i := range steps {
		s.Steps = append(s.Steps, store.StepSnapshot{StepID: fmt.Sprintf("step-%d", i),
			StepAttempt: store.StepAttempt{LogicalAttemptID: 1, Status: store.StepSuccess,
				StartedAt: "2026-01-01T00:00:00.000000Z", Artifacts: []store.ArtifactRef{{URI: "s3://bucket/run_results.json", Kind: "dbt_run_results"}}},
			Attempts: []store.StepAttempt{}})
	}
	return s
}

func TestSnapCache_TakeOwnsTheEntry(t *testing.T) {
	c := newSnapCache(1 << 20)
	c.put(3, snap("a", 7, 2), false)
	s, ok := c.take("a")
	if !ok || s.LastEventSeq != 7 || len(s.Steps) != 2 {
		t.Fatalf("take = %+v, %v; want the snapshot at 7", s, ok)
	}
	// Taken means gone: a batch whose write then fails or loses its guard
	// leaves nothing behind for the next attempt.
	if _, ok := c.take("a"); ok {
		t.Fatal("a taken entry is still cached")
	}
	if n, b := c.stats(); n != 0 || b != 0 {
		t.Fatalf("after take: %d entries, %d bytes; want none", n, b)
	}
}

func TestSnapCache_StaleAndTerminalAreNotCached(t *testing.T) {
	c := newSnapCache(1 << 20)
	stale := snap("stale", 4, 1)
	stale.Stale = true
	done := snap("done", 9, 1)
	done.Status = store.RunCompleted
	c.put(0, snap("done", 8, 1), false)
	c.put(0, stale, false)
	c.put(0, done, true) // replaces the entry at 8: it must go
	for _, id := range []string{"stale", "done"} {
		if _, ok := c.take(id); ok {
			t.Errorf("%s snapshot was cached", id)
		}
	}
}

func TestSnapCache_StaysWithinItsBudget(t *testing.T) {
	one := snapshotBytes(ptr(snap("run-000", 1, 20)))
	budget := 50 * one
	c := newSnapCache(budget)
	for round := range 3 {
		for i := range 200 {
			c.put(int32(i%12), snap(fmt.Sprintf("run-%03d", i), int64(round+1), 20), round > 0)
			if _, b := c.stats(); b > budget {
				t.Fatalf("%d bytes cached, budget %d", b, budget)
			}
		}
	}
	if n, _ := c.stats(); n < 40 || n > 50 {
		t.Fatalf("%d entries of %d bytes in a %d-byte budget; want about 50", n, one, budget)
	}
	if newSnapCache(0) != nil || newSnapCache(-1) != nil {
		t.Fatal("a budget <= 0 must disable the cache")
	}
	var off *snapCache // disabled: every method is a no-op
	off.put(0, snap("x", 1, 1), true)
	if _, ok := off.take("x"); ok {
		t.Fatal("a disabled cache returned an entry")
	}
}

// TestSnapCache_RoundRobinOverBudgetStillHits: runs visited round-robin,
// twice as many bytes as the budget. A plain LRU evicts every run just
// before it comes round again (no hits at all); the admission rule keeps a
// stable half of them.
func TestSnapCache_RoundRobinOverBudgetStillHits(t *testing.T) {
	one := snapshotBytes(ptr(snap("run-000", 1, 20)))
	c := newSnapCache(100 * one)
	hits, lookups := 0, 0
	for round := range 10 {
		for i := range 200 {
			id := fmt.Sprintf("run-%03d", i)
			_, hit := c.take(id)
			if round >= 2 {
				lookups++
				if hit {
					hits++
				}
			}
			c.put(0, snap(id, int64(round+1), 20), hit)
		}
	}
	if rate := float64(hits) / float64(lookups); rate < 0.45 {
		t.Fatalf("hit rate %.2f with half the working set fitting; want about 0.5", rate)
	}
}

// TestSnapCache_IdleEntriesMakeRoom: once entries have been idle for
// minIdle, a run not in the cache replaces the least recently used.
func TestSnapCache_IdleEntriesMakeRoom(t *testing.T) {
	one := snapshotBytes(ptr(snap("run-000", 1, 20)))
	c := newSnapCache(10 * one)
	for i := range 10 {
		c.put(0, snap(fmt.Sprintf("run-%03d", i), 1, 20), false)
	}
	c.put(0, snap("new-1", 1, 20), false)
	if _, ok := c.take("new-1"); ok {
		t.Fatal("a new run evicted an entry that was used just now")
	}
	c.minIdle = 0
	c.put(0, snap("new-2", 1, 20), false)
	if _, ok := c.take("new-2"); !ok {
		t.Fatal("a new run was not cached although idle entries could make room")
	}
	if _, ok := c.take("run-000"); ok {
		t.Fatal("the least recently used entry was not the one evicted")
	}
	if _, ok := c.take("run-001"); !ok {
		t.Fatal("more was evicted than needed")
	}
}

func TestSnapCache_DropPartitions(t *testing.T) {
	c := newSnapCache(1 << 20)
	for i := range 12 {
		c.put(int32(i%3), snap(fmt.Sprintf("run-%d", i), 1, 1), i%2 == 0)
	}
	c.dropPartitions([]int32{1})
	for i := range 12 {
		_, ok := c.take(fmt.Sprintf("run-%d", i))
		if want := i%3 != 1; ok != want {
			t.Errorf("run-%d (partition %d) cached = %v, want %v", i, i%3, ok, want)
		}
	}
}

// TestProjector_ForgetDropsCachedSnapshots: a revoked or lost partition's
// snapshots leave the cache (its runs may now be written by another
// projector), the others stay.
func TestProjector_ForgetDropsCachedSnapshots(t *testing.T) {
	p, err := New(Config{Brokers: []string{"127.0.0.1:1"}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.cache == nil || p.cache.budget != DefaultSnapshotCacheBytes {
		t.Fatalf("cache %+v; want one of the default budget", p.cache)
	}
	p.cache.put(4, snap("on-4", 3, 1), true)
	p.cache.put(5, snap("on-5", 3, 1), false)
	p.cache.put(6, snap("on-6", 3, 1), false)
	p.forget(context.Background(), nil, map[string][]int32{"run-events": {4, 6}})
	if _, ok := p.cache.take("on-4"); ok {
		t.Error("a revoked partition's run is still cached")
	}
	if _, ok := p.cache.take("on-6"); ok {
		t.Error("a revoked partition's run is still cached")
	}
	if _, ok := p.cache.take("on-5"); !ok {
		t.Error("a kept partition's run left the cache")
	}
	if q, _ := New(Config{Brokers: []string{"127.0.0.1:1"}, DisableSnapshotCache: true}, nil, nil); q.cache != nil {
		t.Error("DisableSnapshotCache must disable the cache")
	}
	if _, err := New(Config{Brokers: []string{"127.0.0.1:1"}, SnapshotCacheBytes: -1}, nil, nil); err == nil {
		t.Error("SnapshotCacheBytes < 0 was accepted; it is an error, DisableSnapshotCache turns the cache off")
	}
}

func TestSnapshotBytes_GrowsWithTheSnapshot(t *testing.T) {
	small, big := snapshotBytes(ptr(snap("a", 1, 1))), snapshotBytes(ptr(snap("a", 1, 40)))
	if small <= 0 || big < 30*(small-entryOverhead) {
		t.Fatalf("1 step: %d bytes, 40 steps: %d bytes", small, big)
	}
}

func ptr[T any](v T) *T { return &v }
