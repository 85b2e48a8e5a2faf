package lake_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/lake"
	"github.com/runstream/runstream/internal/lake/laketest"
	"github.com/runstream/runstream/internal/testenv"
)

// TestLake_CurrentState: the current-state table has one row per run,
// equal to the reducer's projection of the store's events; publishing
// again swaps the manifest to a new generation, keeps the previous one
// for readers that read the old manifest, and deletes the older ones.
func TestLake_CurrentState(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2)
	rng := seeded(t)
	runs := f.runs(t, rng, 15)
	f.kafka.Publish(t, f.topic, interleave(rng, runs, 0.1))
	r, _ := f.start(t, f.dir, f.config("lake-"+testenv.RandomID(4)))
	testenv.WaitUntil(t, 60*time.Second, func() error { return exactlyOnce(t, f.dir, runs) })
	ctx := context.Background()
	// A window's files are uploaded before its state commits: wait for the
	// state, which the table is made from, to hold every run's last event.
	testenv.WaitUntil(t, 60*time.Second, func() error {
		if ok, err := r.lake.PublishCurrent(ctx); !ok || err != nil {
			return fmt.Errorf("PublishCurrent = %v, %v", ok, err)
		}
		return laketest.CurrentAgrees(ctx, f.dir, runs)
	})
	var gens []string
	for range 3 {
		ok, err := r.lake.PublishCurrent(ctx)
		if err != nil || !ok {
			t.Fatalf("PublishCurrent = %v, %v", ok, err)
		}
		man, _, err := laketest.ReadCurrent(ctx, f.dir)
		if err != nil {
			t.Fatal(err)
		}
		gens = append(gens, man.Generation)
		if err := laketest.CurrentAgrees(ctx, f.dir, runs); err != nil {
			t.Fatal(err)
		}
	}
	objs, err := f.dir.List(ctx, "current/")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.Key != lake.ManifestKey && !strings.HasPrefix(o.Key, "current/"+gens[2]+"/") && !strings.HasPrefix(o.Key, "current/"+gens[1]+"/") {
			t.Fatalf("%s is left from an older generation (the last two are %s and %s)", o.Key, gens[1], gens[2])
		}
	}
}
