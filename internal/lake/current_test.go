package lake_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/runstream/runstream/internal/archive"
	"github.com/runstream/runstream/internal/lake"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/reduce"
	"github.com/runstream/runstream/store"
)

// currentRow is the current-state table's row as a reader sees it.
type currentRow struct {
	RunID        string  `parquet:"run_id"`
	TenantID     string  `parquet:"tenant_id"`
	PlanID       string  `parquet:"plan_id"`
	PlanVersion  string  `parquet:"plan_version"`
	Status       string  `parquet:"status"`
	LastEventSeq int64   `parquet:"last_event_seq"`
	FailedSteps  int64   `parquet:"failed_steps"`
	StartedAt    *string `parquet:"started_at,optional"`
	CompletedAt  *string `parquet:"completed_at,optional"`
	DurationMs   *int64  `parquet:"duration_ms,optional"`
}

// readCurrent reads the current-state table the manifest names.
func readCurrent(t *testing.T, st archive.Storage) (lake.Manifest, map[string]currentRow) {
	t.Helper()
	ctx := context.Background()
	man, err := lake.ReadManifest(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]currentRow{}
	for _, f := range man.Files {
		obj, err := st.Open(ctx, f.Key)
		if err != nil {
			t.Fatalf("the manifest names %s: %v", f.Key, err)
		}
		rows, err := parquet.Read[currentRow](obj, obj.Size())
		obj.Close()
		if err != nil {
			t.Fatalf("reading %s: %v", f.Key, err)
		}
		if int64(len(rows)) != f.Rows {
			t.Fatalf("%s holds %d rows, the manifest says %d", f.Key, len(rows), f.Rows)
		}
		for _, r := range rows {
			if _, dup := out[r.RunID]; dup {
				t.Fatalf("run %s twice in the current-state table", r.RunID)
			}
			out[r.RunID] = r
		}
	}
	return man, out
}

// currentAgrees says how the current-state table differs from the
// reducer's projection of each run's stored events.
func currentAgrees(t *testing.T, st archive.Storage, runs [][]store.RunEventRecord) error {
	_, got := readCurrent(t, st)
	for _, recs := range runs {
		want, _ := reduce.Project(store.RunSnapshot{}, recs)
		g, ok := got[want.RunID]
		if !ok {
			return fmt.Errorf("run %s is not in the current-state table", want.RunID)
		}
		if g.Status != want.Status || g.LastEventSeq != want.LastEventSeq || g.FailedSteps != int64(want.FailedSteps) ||
			g.PlanID != want.PlanID || g.TenantID != want.TenantID {
			return fmt.Errorf("run %s: current state %+v, the reducer says status %s, lastEventSeq %d, failedSteps %d",
				want.RunID, g, want.Status, want.LastEventSeq, want.FailedSteps)
		}
		if (g.DurationMs == nil) != (want.TotalDurationMs == nil) || (g.DurationMs != nil && *g.DurationMs != *want.TotalDurationMs) {
			return fmt.Errorf("run %s: duration %v, the reducer says %v", want.RunID, g.DurationMs, want.TotalDurationMs)
		}
	}
	if len(got) != len(runs) {
		return fmt.Errorf("%d runs in the current-state table, %d in the store", len(got), len(runs))
	}
	return nil
}

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
	var gens []string
	for range 3 {
		ok, err := r.lake.PublishCurrent(ctx)
		if err != nil || !ok {
			t.Fatalf("PublishCurrent = %v, %v", ok, err)
		}
		man, _ := readCurrent(t, f.dir)
		gens = append(gens, man.Generation)
		if err := currentAgrees(t, f.dir, runs); err != nil {
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
