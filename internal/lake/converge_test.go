package lake_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/lake/laketest"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/store"
)

// TestLake_GapsAndDeadLetteredTails: some runs lost a middle event on the
// bus (a later record reveals the gap: it is filled from the store), and
// others their last two (dead-lettered: no later record reveals them, so
// convergence finds the runs behind the store). In the end every run's
// events are in the lake exactly once, the tails in convergence's files.
func TestLake_GapsAndDeadLetteredTails(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 3)
	rng := seeded(t)
	runs := f.runs(t, rng, 16)
	var published [][]store.RunEventRecord
	for i, recs := range runs {
		switch {
		case i%2 == 0 && len(recs) > 3:
			published = append(published, recs[:len(recs)-2])
		case len(recs) > 3:
			mid := 1 + rng.IntN(len(recs)-2)
			published = append(published, append(append([]store.RunEventRecord(nil), recs[:mid]...), recs[mid+1:]...))
		default:
			published = append(published, recs)
		}
	}
	f.kafka.Publish(t, f.topic, interleave(rng, published, 0.05))
	// Everything left the outbox: published, or dead-lettered.
	if _, err := f.pool.Exec(context.Background(), `DELETE FROM outbox`); err != nil {
		t.Fatal(err)
	}
	cfg := f.config("lake-" + testenv.RandomID(4))
	cfg.Heads, cfg.ConvergeInterval, cfg.ConvergeGrace = f.store, 200*time.Millisecond, 100*time.Millisecond
	r, _ := f.start(t, f.dir, cfg)
	testenv.WaitUntil(t, 60*time.Second, func() error { return exactlyOnce(t, f.dir, runs) })
	_, objs, err := laketest.Read(context.Background(), f.dir)
	if err != nil {
		t.Fatal(err)
	}
	converged := 0
	for _, o := range objs {
		if strings.Contains(o.Key, ".converge.") {
			converged++
		}
	}
	if converged == 0 {
		t.Fatal("no convergence file: the tails came another way")
	}
	if n := counter(t, r.reg, "runstream_lake_gaps_total"); n == 0 {
		t.Fatal("runstream_lake_gaps_total = 0, want the gaps counted")
	}
}
