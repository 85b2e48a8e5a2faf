package snapshots

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/store"
)

// catalogSeed is CATALOG_SEED when set, else a new seed.
func catalogSeed(t *testing.T) int64 {
	if v := os.Getenv("CATALOG_SEED"); v != "" {
		seed, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("CATALOG_SEED=%q: %v", v, err)
		}
		return seed
	}
	return time.Now().UnixNano()
}

// TestCatalog_Property applies a random sequence of snapshot writes to many
// runs of two tenants: each run moves through statuses, gains an engine
// run ref and a start time, sometimes changes plan; the writes of each
// version are sent through WriteAll in every guard mode, duplicated and in
// shuffled order across pipelines (as replays and rebalances deliver
// them). Afterwards every catalog key must equal what a computation from
// scratch over each run's highest version gives: the catalog never moves
// backwards and never keeps a run in two places.
func TestCatalog_Property(t *testing.T) {
	seed := catalogSeed(t)
	t.Logf("seed %d (replay with CATALOG_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewSource(seed))
	rdb := testenv.Redis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tenants := []string{"cat-a-" + testenv.RandomID(6), "cat-b-" + testenv.RandomID(6)}
	t.Cleanup(func() {
		for _, tn := range tenants {
			_ = DeleteCatalog(context.Background(), rdb, tn)
		}
	})
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	plans := []string{"plan-a", "plan-b", "plan:c"}
	var writes []Write
	var runIDs []string
	final := map[string]store.RunSnapshot{}
	for r := range 150 {
		id := fmt.Sprintf("run-%03d-%s", r, testenv.RandomID(4))
		runIDs = append(runIDs, id)
		s := store.RunSnapshot{RunID: id, TenantID: tenants[r%2], Status: store.RunPending, PlanID: plans[rng.Intn(len(plans))]}
		if rng.Intn(10) == 0 {
			s.PlanID = "" // a run whose plan is unknown
		}
		at := base.Add(time.Duration(rng.Intn(3600)) * time.Second)
		versions := 1 + rng.Intn(8)
		for v := range versions {
			s.LastEventSeq = int64(v + 1)
			at = at.Add(time.Duration(rng.Intn(5000)) * time.Millisecond) // ties happen
			s.UpdatedAt = store.FormatPersistedAt(at)
			switch rng.Intn(6) {
			case 0:
				s.Status = RunStatuses[rng.Intn(len(RunStatuses))]
			case 1:
				s.Status = store.RunRunning
				if s.StartedAt == "" {
					s.StartedAt = s.UpdatedAt
					s.EngineRunRef = fmt.Sprintf("temporal://ns/wf/%s|x/%d", id, rng.Intn(3))
				}
			case 2:
				s.EngineRunRef = fmt.Sprintf("ref-%d", rng.Intn(4)) // refs shared by runs, and changed
			case 3:
				if rng.Intn(4) == 0 {
					s.PlanID = plans[rng.Intn(len(plans))]
				}
			case 4:
				if rng.Intn(6) == 0 {
					s.StartedAt, s.EngineRunRef = "", "" // reset by a repair: both must leave their indexes
				}
			}
			mode := Mode(rng.Intn(3))
			for range 1 + rng.Intn(2) { // duplicates
				writes = append(writes, Write{Snapshot: s, Expected: int64(rng.Intn(int(s.LastEventSeq) + 1)), Mode: mode})
			}
			final[id] = s
		}
	}
	rng.Shuffle(len(writes), func(i, j int) { writes[i], writes[j] = writes[j], writes[i] })
	for lo := 0; lo < len(writes); {
		hi := min(len(writes), lo+1+rng.Intn(40))
		if _, err := WriteAll(ctx, rdb, writes[lo:hi]); err != nil {
			t.Fatal(err)
		}
		lo = hi
	}
	check := func(when string) {
		t.Helper()
		for _, tn := range tenants {
			var want []store.RunSnapshot
			for _, id := range runIDs {
				if final[id].TenantID == tn {
					want = append(want, final[id])
				}
			}
			if !checkCatalog(t, ctx, rdb, tn, want) {
				t.Fatalf("%s: the catalog of tenant %s differs from the final snapshots (seed %d)", when, tn, seed)
			}
		}
	}
	check("after the writes")
	// Convergence's path (Catalog) over the final versions and a sample of
	// older ones: nothing changes (idempotent, never backwards).
	var again []store.RunSnapshot
	for _, id := range runIDs {
		again = append(again, final[id])
	}
	for range 50 {
		again = append(again, writes[rng.Intn(len(writes))].Snapshot)
	}
	rng.Shuffle(len(again), func(i, j int) { again[i], again[j] = again[j], again[i] })
	if err := Catalog(ctx, rdb, again, 0); err != nil {
		t.Fatal(err)
	}
	check("after cataloguing again")
}

// checkCatalog compares every catalog key of tenant with a computation
// from scratch over want, the tenant's final snapshots.
func checkCatalog(t *testing.T, ctx context.Context, rdb redis.UniversalClient, tenant string, want []store.RunSnapshot) bool {
	t.Helper()
	type zset map[string]float64
	expect := map[string]zset{}
	add := func(key, member string, score float64) {
		if expect[key] == nil {
			expect[key] = zset{}
		}
		expect[key][member] = score
	}
	meta := map[string]string{}
	counts := map[string]int64{}
	for _, st := range RunStatuses {
		counts[st] = 0
	}
	for i := range want {
		s := &want[i]
		e := CatalogEntryOf(s)
		started := ""
		if s.StartedAt != "" {
			ts, _ := time.Parse(time.RFC3339Nano, s.StartedAt)
			started = strconv.FormatInt(ts.UnixMilli(), 10)
			add(CatalogStartedKey(tenant), s.RunID, float64(ts.UnixMilli()))
		}
		up, _ := time.Parse(time.RFC3339Nano, s.UpdatedAt)
		meta[s.RunID] = fmt.Sprintf("%d|%s|%d|%s|%s|%s", s.LastEventSeq, s.Status, up.UnixMilli(), started, s.PlanID, s.EngineRunRef)
		if e.UpdatedMs != up.UnixMilli() {
			t.Fatalf("CatalogEntryOf(%s).UpdatedMs = %d, want %d", s.RunID, e.UpdatedMs, up.UnixMilli())
		}
		add(IndexKey(tenant), s.RunID, float64(up.UnixMilli()))
		add(CatalogIDsKey(tenant), s.RunID, 0)
		add(CatalogStatusKey(tenant, s.Status), s.RunID, float64(up.UnixMilli()))
		counts[s.Status]++
		if s.PlanID != "" {
			add(CatalogPlanKey(tenant, s.PlanID), s.RunID, float64(up.UnixMilli()))
		}
		if s.EngineRunRef != "" {
			add(CatalogRefKey(tenant), s.EngineRunRef+"\x00"+s.RunID, 0)
		}
	}
	gotMeta, err := rdb.HGetAll(ctx, CatalogMetaKey(tenant)).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(gotMeta) != len(meta) {
		t.Errorf("%s: %d catalog entries, want %d", tenant, len(gotMeta), len(meta))
	}
	for id, v := range meta {
		if gotMeta[id] != v {
			t.Errorf("%s: catalog entry of %s = %q, want %q", tenant, id, gotMeta[id], v)
		}
		if e, ok := parseCatalogEntry(id, gotMeta[id]); !ok || e.RunID != id {
			t.Errorf("%s: catalog entry of %s does not parse: %q", tenant, id, gotMeta[id])
		}
	}
	// Every key of the tenant's slot: none more, none fewer, same members
	// and scores.
	var keys []string
	it := rdb.Scan(ctx, 0, globEscape(IndexKey(tenant))+"*", 1000).Iterator()
	for it.Next(ctx) {
		if k := it.Val(); k != CatalogMetaKey(tenant) {
			keys = append(keys, k)
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	for k := range expect {
		if !slices.Contains(keys, k) {
			t.Errorf("%s: key %q missing", tenant, k)
		}
	}
	for _, k := range keys {
		zs, err := rdb.ZRangeWithScores(ctx, k, 0, -1).Result()
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		exp := expect[k]
		if len(zs) != len(exp) {
			t.Errorf("%s: %d members, want %d", strings.TrimPrefix(k, IndexKey(tenant)), len(zs), len(exp))
		}
		for _, z := range zs {
			m := z.Member.(string)
			if sc, ok := exp[m]; !ok || sc != z.Score {
				t.Errorf("%s: member %q score %v, want present=%v score %v", k, m, z.Score, ok, sc)
			}
		}
	}
	got, total, err := CatalogCounts(ctx, rdb, tenant)
	if err != nil {
		t.Fatal(err)
	}
	if total != int64(len(want)) {
		t.Errorf("%s: total %d, want %d", tenant, total, len(want))
	}
	for st, n := range counts {
		if got[st] != n {
			t.Errorf("%s: count of %s = %d, want %d", tenant, st, got[st], n)
		}
	}
	return !t.Failed()
}

// TestReindex_CataloguesRunsWrittenBeforeTheCatalog: a snapshot and index
// entry written the way runstream wrote them before the catalog (no
// catalog keys) are reported unindexed by ReadWatermarks, and Reindex
// catalogues them from the snapshot Redis holds.
func TestReindex_CataloguesRunsWrittenBeforeTheCatalog(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tenant := "old-" + testenv.RandomID(6)
	t.Cleanup(func() { _ = DeleteCatalog(context.Background(), rdb, tenant) })
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var snaps []store.RunSnapshot
	var heads []store.RunHead
	for i := range 5 {
		s := store.RunSnapshot{RunID: fmt.Sprintf("old-%d-%s", i, testenv.RandomID(4)), TenantID: tenant, Status: store.RunCompleted,
			LastEventSeq: 4, PlanID: "p", EngineRunRef: "ref", StartedAt: store.FormatPersistedAt(at),
			UpdatedAt: store.FormatPersistedAt(at.Add(time.Duration(i) * time.Second))}
		snaps = append(snaps, s)
		heads = append(heads, store.RunHead{RunID: s.RunID, TenantID: tenant, LastSeq: 4, LastPersistedAt: at.Add(time.Duration(i) * time.Second)})
		t.Cleanup(func() { rdb.Del(context.Background(), Key(s.RunID)) })
		// The old write: the snapshot and ZADD GT of the index, nothing else.
		if err := rdb.Set(ctx, Key(s.RunID), Append(nil, &s), 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.ZAddGT(ctx, IndexKey(tenant), redis.Z{Score: scoreOf(&s), Member: s.RunID}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	wm, err := ReadWatermarks(ctx, rdb, heads)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range wm {
		if w.Indexed || w.LastEventSeq != 4 {
			t.Fatalf("run %d before the catalog: %+v, want watermark 4 and not indexed", i, w)
		}
	}
	if err := Reindex(ctx, rdb, heads, 0); err != nil {
		t.Fatal(err)
	}
	wm, err = ReadWatermarks(ctx, rdb, heads)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range wm {
		if !w.Indexed {
			t.Fatalf("run %d after Reindex: %+v, want indexed", i, w)
		}
	}
	checkCatalog(t, ctx, rdb, tenant, snaps)
}

// TestCatalog_RedisCluster: on a Redis Cluster the catalog script, whose
// keys share the tenant's hash tag, runs in the tenant's slot; queries and
// DeleteCatalog work there too.
func TestCatalog_RedisCluster(t *testing.T) {
	rdb := testenv.RedisCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tenant := "cluster-" + testenv.RandomID(6)
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var ws []Write
	for i := range 40 {
		s := store.RunSnapshot{RunID: fmt.Sprintf("cl-%02d-%s", i, testenv.RandomID(3)), TenantID: tenant, Status: RunStatuses[i%len(RunStatuses)],
			LastEventSeq: 2, PlanID: fmt.Sprintf("plan-%d", i%3), EngineRunRef: fmt.Sprintf("ref-%d", i), StartedAt: store.FormatPersistedAt(at),
			UpdatedAt: store.FormatPersistedAt(at.Add(time.Duration(i) * time.Second))}
		ws = append(ws, Write{Snapshot: s, Expected: -1})
		t.Cleanup(func() { rdb.Del(context.Background(), Key(s.RunID)) })
	}
	if _, err := WriteAll(ctx, rdb, ws); err != nil {
		t.Fatal(err)
	}
	counts, total, err := CatalogCounts(ctx, rdb, tenant)
	if err != nil || total != 40 || counts[store.RunPending] != 6 {
		t.Fatalf("counts %v total %d err %v; want 40 runs, 6 PENDING", counts, total, err)
	}
	page, err := QueryCatalog(ctx, rdb, CatalogQuery{TenantID: tenant, PlanID: "plan-1", ByStarted: true, Limit: 5})
	if err != nil || len(page.Entries) != 5 || page.Next == nil {
		t.Fatalf("planId by startedAt on a cluster: %+v %v", page, err)
	}
	page, err = QueryCatalog(ctx, rdb, CatalogQuery{TenantID: tenant, EngineRunRef: "ref-7", Limit: 5})
	if err != nil || len(page.Entries) != 1 || page.Entries[0].EngineRunRef != "ref-7" {
		t.Fatalf("engineRunRef on a cluster: %+v %v", page, err)
	}
	if err := DeleteCatalog(ctx, rdb, tenant); err != nil {
		t.Fatal(err)
	}
	if _, total, _ := CatalogCounts(ctx, rdb, tenant); total != 0 {
		t.Fatalf("%d runs left after DeleteCatalog", total)
	}
}
