package etl_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/etl"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/store"
)

// TestETL_ConvergesOnADeadLetteredTail: the last events of some runs never
// reach the topic (the relay dead-lettered them), so no later record
// reveals a gap. Convergence finds the runs behind the store and brings
// their rows to the reducer's state of every event, and counts them.
func TestETL_ConvergesOnADeadLetteredTail(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 3, "tail")
	runs := f.runs(t, 8)
	var published [][]store.RunEventRecord
	for _, recs := range runs {
		published = append(published, recs[:len(recs)-2])
	}
	f.publish(t, "tail", interleave(published))
	// Everything left the outbox: published, or dead-lettered.
	if _, err := f.pool.Exec(context.Background(), `DELETE FROM outbox`); err != nil {
		t.Fatal(err)
	}
	db := newETLDB(t)
	r := f.start(t, db, "tail", "g-"+testenv.RandomID(4), func(c *etl.Config) {
		c.Heads, c.ConvergeInterval, c.ConvergeGrace = f.store, 200*time.Millisecond, 100*time.Millisecond
	})
	testenv.WaitUntil(t, 60*time.Second, func() error {
		return lastSeqs(db, runs)
	})
	checkAgainstReducer(t, db, runs)
	if n := counterValue(t, r, "runstream_converge_runs_total"); n < float64(len(runs)) {
		t.Fatalf("runstream_converge_runs_total = %v, want the %d runs behind counted", n, len(runs))
	}
}

// lastSeqs says which run's row is not yet at its last event.
func lastSeqs(db *etlDB, runs [][]store.RunEventRecord) error {
	for _, recs := range runs {
		last := recs[len(recs)-1]
		var seq int64
		err := db.pool.QueryRow(context.Background(), `SELECT last_event_seq FROM runs WHERE run_id = $1`, last.RunID).Scan(&seq)
		if err != nil {
			return err
		}
		if seq != last.RunSeq {
			return fmt.Errorf("run %s is at %d, the store at %d", last.RunID, seq, last.RunSeq)
		}
	}
	return nil
}

func counterValue(t *testing.T, r *running, name string) float64 {
	t.Helper()
	mfs, err := r.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}
