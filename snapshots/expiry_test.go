package snapshots

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/store"
)

// TestExpiry_TerminalRunsLeaveWithTheirCatalogEntries: under a retention,
// an open run never expires; a terminal one is written to expire exactly
// ttl after its terminalAt (PXAT, judged by Redis's clock), and its
// catalog entries go at the first catalog call after that (a write of the
// tenant, or SweepExpired); a terminal version offered after its time is
// not written, and takes the older version Redis held with it. On one
// Redis server and on a Redis Cluster.
func TestExpiry_TerminalRunsLeaveWithTheirCatalogEntries(t *testing.T) {
	t.Run("server", func(t *testing.T) { testExpiry(t, testenv.Redis(t), true) })
	t.Run("cluster", func(t *testing.T) { testExpiry(t, testenv.RedisCluster(t), false) })
}

func testExpiry(t *testing.T, rdb redis.UniversalClient, sweepByWrite bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tenant := "exp-" + testenv.RandomID(6)
	t.Cleanup(func() { _ = DeleteCatalog(context.Background(), rdb, tenant) })
	now, err := Now(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	const ttl = time.Hour
	snap := func(name, status string, seq int64, terminalAt time.Time) store.RunSnapshot {
		s := store.RunSnapshot{RunID: name + "-" + testenv.RandomID(4), TenantID: tenant, Status: status, LastEventSeq: seq,
			PlanID: "plan-" + name, EngineRunRef: "ref-" + name, StartedAt: store.FormatPersistedAt(now.Add(-3 * time.Hour)),
			UpdatedAt: store.FormatPersistedAt(now.Add(-time.Second))}
		if !terminalAt.IsZero() {
			s.TerminalAt = store.FormatPersistedAt(terminalAt)
			s.UpdatedAt = s.TerminalAt
		}
		t.Cleanup(func() { rdb.Del(context.Background(), Key(s.RunID)) })
		return s
	}
	open := snap("open", store.RunRunning, 3, time.Time{})
	later := snap("later", store.RunCompleted, 2, now.Add(-time.Minute))
	soon := snap("soon", store.RunFailed, 2, now.Add(-ttl+1500*time.Millisecond))
	past := snap("past", store.RunCancelled, 2, now.Add(-2*ttl))
	pastOpen := past
	pastOpen.Status, pastOpen.LastEventSeq, pastOpen.TerminalAt = store.RunRunning, 1, ""

	// What a replay leaves before the run's end arrives: an open version.
	if res, err := WriteAll(ctx, rdb, []Write{{Snapshot: pastOpen, Expected: -1, TTL: ttl}}); err != nil || !res[0].Written {
		t.Fatalf("open version of the expired run: %+v %v", res, err)
	}
	res, err := WriteAll(ctx, rdb, []Write{
		{Snapshot: open, Expected: -1, TTL: ttl},
		{Snapshot: later, Expected: -1, TTL: ttl},
		{Snapshot: soon, Expected: -1, TTL: ttl},
		{Snapshot: past, Expected: 1, TTL: ttl},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Written || !res[1].Written || !res[2].Written || res[3].Written || !res[3].Expired {
		t.Fatalf("results %+v: want the first three written, the last expired", res)
	}
	expireTime := func(id string) int64 {
		ms, err := rdb.Do(ctx, "PEXPIRETIME", Key(id)).Int64()
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}
	if ms := expireTime(open.RunID); ms != -1 {
		t.Errorf("open run: PEXPIRETIME %d, want -1 (no expiry)", ms)
	}
	for _, s := range []store.RunSnapshot{later, soon} {
		at, _ := time.Parse(time.RFC3339Nano, s.TerminalAt)
		if ms := expireTime(s.RunID); ms != at.Add(ttl).UnixMilli() {
			t.Errorf("%s: PEXPIRETIME %d, want terminalAt + ttl = %d", s.RunID, ms, at.Add(ttl).UnixMilli())
		}
	}
	if n, _ := rdb.Exists(ctx, Key(past.RunID)).Result(); n != 0 {
		t.Error("the expired run's older snapshot is still there")
	}
	wms, err := ReadWatermarks(ctx, rdb, []store.RunHead{{RunID: open.RunID, TenantID: tenant}, {RunID: later.RunID, TenantID: tenant}, {RunID: past.RunID, TenantID: tenant}})
	if err != nil {
		t.Fatal(err)
	}
	if wms[0].Expires || !wms[1].Expires || wms[2].LastEventSeq != -1 || wms[2].Indexed {
		t.Errorf("watermarks %+v: want open without expiry, later expiring, past gone and uncatalogued", wms)
	}
	checkCounts := func(when string, want map[string]int64, total int64) {
		t.Helper()
		counts, n, err := CatalogCounts(ctx, rdb, tenant)
		if err != nil {
			t.Fatal(err)
		}
		for st, c := range want {
			if counts[st] != c {
				t.Errorf("%s: %s count %d, want %d", when, st, counts[st], c)
			}
		}
		if n != total {
			t.Errorf("%s: %d runs catalogued, want %d", when, n, total)
		}
	}
	checkCounts("after the writes", map[string]int64{store.RunRunning: 1, store.RunCompleted: 1, store.RunFailed: 1, store.RunCancelled: 0}, 3)
	entries, err := CatalogEntries(ctx, rdb, tenant, []string{past.RunID})
	if err != nil || len(entries) != 0 {
		t.Fatalf("the expired run's catalog entry: %+v %v, want none", entries, err)
	}

	// soon's time comes: Redis removes the snapshot by itself.
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err := rdb.Exists(ctx, Key(soon.RunID)).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the snapshot did not expire at terminalAt + ttl")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if sweepByWrite {
		open.LastEventSeq++
		if _, err := WriteAll(ctx, rdb, []Write{{Snapshot: open, Expected: 3, TTL: ttl}}); err != nil {
			t.Fatal(err)
		}
	} else {
		n, err := SweepExpired(ctx, rdb)
		if err != nil || n < 1 {
			t.Fatalf("SweepExpired: dropped %d, %v; want at least the expired run", n, err)
		}
	}
	checkCounts("after soon expired", map[string]int64{store.RunRunning: 1, store.RunCompleted: 1, store.RunFailed: 0}, 2)
	for _, k := range []string{CatalogIDsKey(tenant), CatalogStartedKey(tenant), CatalogPlanKey(tenant, soon.PlanID), CatalogExpiryKey(tenant)} {
		if _, err := rdb.ZScore(ctx, k, soon.RunID).Result(); !errors.Is(err, redis.Nil) {
			t.Errorf("%s still holds the expired run (%v)", k, err)
		}
	}
	if n, _ := rdb.ZCard(ctx, CatalogRefKey(tenant)).Result(); n != 2 {
		t.Errorf("%d engine run refs catalogued, want 2", n)
	}
	if ok, _ := rdb.SIsMember(ctx, ExpiringTenantsKey, tenant).Result(); !ok {
		t.Error("the tenant is not in the set SweepExpired reads")
	}
}

// TestSetExpiry_GivesALegacyTerminalSnapshotItsRetention: a terminal
// snapshot written without a retention gets one from SetExpiry (what
// convergence does for snapshots written before the retention was set);
// a time already past removes it at once, and its catalog entries at the
// next sweep.
func TestSetExpiry_GivesALegacyTerminalSnapshotItsRetention(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tenant := "setexp-" + testenv.RandomID(6)
	t.Cleanup(func() { _ = DeleteCatalog(context.Background(), rdb, tenant) })
	now := time.Now()
	mk := func(n string) store.RunSnapshot {
		s := store.RunSnapshot{RunID: n + testenv.RandomID(4), TenantID: tenant, Status: store.RunCompleted, LastEventSeq: 4,
			UpdatedAt: store.FormatPersistedAt(now), TerminalAt: store.FormatPersistedAt(now)}
		t.Cleanup(func() { rdb.Del(context.Background(), Key(s.RunID)) })
		return s
	}
	keep, gone := mk("keep-"), mk("gone-")
	if _, err := WriteAll(ctx, rdb, []Write{{Snapshot: keep, Expected: -1}, {Snapshot: gone, Expected: -1}}); err != nil {
		t.Fatal(err)
	}
	at := now.Add(time.Hour).UnixMilli()
	if err := SetExpiry(ctx, rdb, []Expiry{{RunID: keep.RunID, TenantID: tenant, At: at}, {RunID: gone.RunID, TenantID: tenant, At: now.Add(-time.Second).UnixMilli()}}); err != nil {
		t.Fatal(err)
	}
	if ms, _ := rdb.Do(ctx, "PEXPIRETIME", Key(keep.RunID)).Int64(); ms != at {
		t.Errorf("PEXPIRETIME %d, want %d", ms, at)
	}
	if n, _ := rdb.Exists(ctx, Key(gone.RunID)).Result(); n != 0 {
		t.Error("a snapshot whose time had passed is still there")
	}
	if _, err := SweepExpired(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	if _, total, _ := CatalogCounts(ctx, rdb, tenant); total != 1 {
		t.Errorf("%d runs catalogued after the sweep, want 1", total)
	}
}

// ExpireAt: open runs and a zero ttl never expire; a terminal snapshot
// from before terminalAt existed counts from its updatedAt.
func TestExpireAt(t *testing.T) {
	at := time.Date(2026, 3, 1, 10, 0, 0, 123456000, time.UTC)
	s := store.RunSnapshot{Status: store.RunFailed, TerminalAt: store.FormatPersistedAt(at), UpdatedAt: store.FormatPersistedAt(at.Add(time.Hour))}
	if got := ExpireAt(&s, time.Minute); got != at.Add(time.Minute).UnixMilli() {
		t.Errorf("ExpireAt = %d, want %d", got, at.Add(time.Minute).UnixMilli())
	}
	if got := ExpireAt(&s, 0); got != 0 {
		t.Errorf("ttl 0: %d, want 0", got)
	}
	s.TerminalAt = ""
	if got := ExpireAt(&s, time.Minute); got != at.Add(time.Hour+time.Minute).UnixMilli() {
		t.Errorf("legacy terminal snapshot: %d, want updatedAt + ttl", got)
	}
	s.Status = store.RunRunning
	if got := ExpireAt(&s, time.Minute); got != 0 {
		t.Errorf("open run: %d, want 0", got)
	}
}
