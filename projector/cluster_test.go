package projector_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
)

// appendTenantRuns is appendRuns for a tenant of the caller's choosing.
func (f *fixture) appendTenantRuns(t *testing.T, rng *rand.Rand, tenant string, n int) map[string][]store.RunEventRecord {
	t.Helper()
	ctx := context.Background()
	out := map[string][]store.RunEventRecord{}
	for range n {
		evs := workload.Run(rng, tenant, workload.Options{})
		for _, r := range f.store.AppendBatch(ctx, evs) {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
		recs, err := f.store.FetchEvents(ctx, evs[0].RunID, store.FetchOptions{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		out[evs[0].RunID] = recs
	}
	return out
}

// TestProjector_RedisCluster projects through a real three-master Redis
// Cluster (scripts/redis-cluster.sh): the runs' keys spread over the
// masters, the pipelined reads and guarded writes are split by slot, a gap
// resyncs, every snapshot converges to store.projectSnapshot and reads
// back with GET, the tenant's run index reads back with ZRANGE, and the
// updates channel carries every run's last watermark.
func TestProjector_RedisCluster(t *testing.T) {
	t.Parallel()
	cc := testenv.RedisCluster(t)
	f := newFixture(t)
	f.rdb = cc // waitConverged reads through the cluster
	ctx := context.Background()
	rng := seed(t)
	tenant := "tenant_" + testenv.RandomID(4)
	runs := f.appendTenantRuns(t, rng, tenant, 30)
	ids := keys(runs)

	masters := map[string]bool{}
	for _, id := range ids {
		n, err := cc.MasterForKey(ctx, snapshots.Key(id))
		if err != nil {
			t.Fatal(err)
		}
		masters[n.Options().Addr] = true
	}
	if len(masters) < 2 {
		t.Fatalf("the runs' snapshot keys all live on %v: the test would not cross slots", masters)
	}

	// One run loses its runSeq 3 on the bus; a later event reveals the gap.
	var gapped string
	for _, id := range ids {
		if len(runs[id]) >= 5 {
			gapped = id
			break
		}
	}
	if gapped == "" {
		t.Fatal("no generated run has 5 events")
	}
	watch := watchUpdates(t, cc, ids)
	// Two halves, so the second half's guarded writes compare against
	// snapshots already on the cluster.
	heads, tails := map[string][]store.RunEventRecord{}, map[string][]store.RunEventRecord{}
	for _, id := range ids {
		recs := runs[id]
		cut := len(recs) / 2
		if id == gapped {
			cut = 2
		}
		heads[id] = recs[:cut]
		for _, r := range recs[cut:] {
			if id == gapped && r.RunSeq == 3 {
				continue
			}
			tails[id] = append(tails[id], r)
		}
	}
	f.publish(t, interleave(heads))
	run := startProjector(t, f.brokers, "g-"+testenv.RandomID(4), cc, f.store)
	testenv.WaitFor(t, 30*time.Second, "the first halves projected", func() bool {
		_, final := progress(t, cc, heads)
		return final == len(heads)
	})
	f.publish(t, interleave(tails))
	f.waitConverged(t, ids, 30*time.Second)
	if got := counter(t, run.reg, "runstream_projector_non_contiguous_total", ""); got != 1 {
		t.Errorf("PROJECTOR_NON_CONTIGUOUS_FETCH_DETECTED counted %v times, want 1", got)
	}
	if got := counter(t, run.reg, "runstream_projector_resyncs_total", "ok"); got != 1 {
		t.Errorf("successful resyncs = %v, want 1", got)
	}
	// The resync set is updated right after the snapshot is written: wait.
	testenv.WaitFor(t, 10*time.Second, "the resynced run gone from the resync set", func() bool {
		n, err := cc.SIsMember(ctx, snapshots.ResyncSetKey, gapped).Result()
		return err == nil && !n
	})
	watch.check(t, runs, 10*time.Second)

	// The tenant's run index: exactly its runs, scored by the updatedAt of
	// their snapshots (ZRANGE on the cluster).
	zs, err := cc.ZRangeWithScores(ctx, snapshots.IndexKey(tenant), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(zs) != len(ids) {
		t.Fatalf("ZRANGE %s has %d members, want %d", snapshots.IndexKey(tenant), len(zs), len(ids))
	}
	for _, z := range zs {
		id, _ := z.Member.(string)
		s, ok := redisSnapshot(t, cc, id)
		if !ok {
			t.Fatalf("the run index lists %q, which has no snapshot", id)
		}
		at, err := time.Parse(time.RFC3339Nano, s.UpdatedAt)
		if err != nil {
			t.Fatalf("run %s: updatedAt %q: %v", id, s.UpdatedAt, err)
		}
		if z.Score != float64(at.UnixMilli()) {
			t.Errorf("run %s: index score %v, want its updatedAt %v", id, z.Score, at.UnixMilli())
		}
	}
	// A reader's view: GET of each snapshot key on the cluster.
	for _, id := range ids {
		if _, err := cc.Get(ctx, snapshots.Key(id)).Result(); err != nil {
			t.Fatalf("GET %s on the cluster: %v", snapshots.Key(id), err)
		}
	}
}
