package projector_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
)

// dropCatalogs deletes every runs catalog key of the Redis behind rdb but
// the run indexes, leaving what runstream wrote before the catalog
// existed: snapshots and run index entries.
func dropCatalogs(t *testing.T, rdb *redis.Client) {
	t.Helper()
	ctx := context.Background()
	var found []string
	it := rdb.Scan(ctx, 0, "runstream:runs:{*}:*", 1000).Iterator()
	for it.Next(ctx) {
		found = append(found, it.Val())
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if len(found) == 0 {
		t.Fatal("no catalog keys to drop: the projector wrote none")
	}
	if err := rdb.Del(ctx, found...).Err(); err != nil {
		t.Fatal(err)
	}
}

// checkCatalogued fails unless every run's catalog entry is its snapshot's
// (watermark and status) and the tenant's counts add up to the runs.
func checkCatalogued(rdb *redis.Client, runs map[string][]store.RunEventRecord) error {
	ctx := context.Background()
	perTenant := map[string]int64{}
	for id, recs := range runs {
		tenant := recs[0].TenantID
		perTenant[tenant]++
		es, err := snapshots.CatalogEntries(ctx, rdb, tenant, []string{id})
		if err != nil {
			return err
		}
		e, ok := es[id]
		if !ok {
			return fmt.Errorf("run %s is not catalogued", id)
		}
		b, err := rdb.Get(ctx, snapshots.Key(id)).Bytes()
		if err != nil {
			return err
		}
		var s store.RunSnapshot
		if err := snapshots.Decode(b, &s); err != nil {
			return err
		}
		if e.LastEventSeq != s.LastEventSeq || e.Status != s.Status {
			return fmt.Errorf("run %s catalogued at %d %s, its snapshot is at %d %s", id, e.LastEventSeq, e.Status, s.LastEventSeq, s.Status)
		}
	}
	for tenant, n := range perTenant {
		counts, _, err := snapshots.CatalogCounts(ctx, rdb, tenant)
		if err != nil {
			return err
		}
		var sum int64
		for _, c := range counts {
			sum += c
		}
		if sum != n {
			return fmt.Errorf("tenant %s: counts %v add up to %d, want %d", tenant, counts, sum, n)
		}
	}
	return nil
}

// TestConverge_CataloguesRunsFromBeforeTheCatalog: an upgraded deployment.
// Its runs have snapshots and run index entries but no catalog, and its
// convergence cursor was recorded by a projector from before the catalog.
// The new projector's convergence makes a full pass that catalogues every
// run (nothing was behind, so no events are replayed); `runstream rebuild`
// (snapshots.Rebuild) catalogues them too, although their snapshots are
// up to date and not rewritten.
func TestConverge_CataloguesRunsFromBeforeTheCatalog(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv := testenv.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	f.rdb = rdb
	runs := f.appendRuns(t, seed(t), 25)
	var all []store.RunEventRecord
	for _, recs := range runs {
		all = append(all, recs...)
	}
	f.publish(t, all)
	f.clearOutbox(t)
	group := "g-" + testenv.RandomID(4)
	first := startConverging(t, f, group, rdb, convergenceOff)
	f.waitConverged(t, keys(runs), 30*time.Second)
	first.stop(t)
	ctx := context.Background()

	// Rebuild catalogues up-to-date runs.
	dropCatalogs(t, rdb)
	if err := checkCatalogued(rdb, runs); err == nil {
		t.Fatal("runs still catalogued after dropping the catalog")
	}
	written, err := snapshots.Rebuild(ctx, rdb, f.store, keys(runs), 2, snapshots.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if written != 0 {
		t.Fatalf("Rebuild rewrote %d up-to-date snapshots", written)
	}
	if err := checkCatalogued(rdb, runs); err != nil {
		t.Fatalf("after rebuild: %v", err)
	}

	// Convergence, from a cursor of the old format (generation without
	// the catalog's prefix), catalogues them.
	dropCatalogs(t, rdb)
	old := "0123456789abcdef|" + time.Now().UTC().Format(time.RFC3339Nano)
	if err := rdb.Set(ctx, snapshots.ConvergeCursorKey(group), old, 0).Err(); err != nil {
		t.Fatal(err)
	}
	run := startConverging(t, f, group, rdb, 200*time.Millisecond)
	testenv.WaitUntil(t, 30*time.Second, func() error { return checkCatalogued(rdb, runs) })
	waitRepaired(t, run.reg, "index", len(runs))
	if n := counter(t, run.reg, "runstream_converge_runs_total", "missing") + counter(t, run.reg, "runstream_converge_runs_total", "behind"); n != 0 {
		t.Fatalf("convergence repaired %v runs as missing or behind; they were only uncatalogued", n)
	}
}
