package lake

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runstream/runstream/consumer"
	"github.com/runstream/runstream/internal/archive"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
)

// noFetch is a gap source the test never needs.
type noFetch struct{}

func (noFetch) FetchEvents(context.Context, string, store.FetchOptions) ([]store.RunEventRecord, error) {
	return nil, nil
}

// records turns a generated run into stored records, persisted from at.
func records(writes []store.RunEventWrite, at time.Time) []store.RunEventRecord {
	out := make([]store.RunEventRecord, len(writes))
	for i, w := range writes {
		out[i] = store.RunEventRecord{RunEventWrite: w, RunSeq: int64(i + 1), PersistedAt: store.FormatPersistedAt(at.Add(time.Duration(i) * time.Millisecond))}
	}
	return out
}

// TestCommit_LeavesOutWhatARepairCommitted: a partition's window holds
// runs X and Y; before it commits, a convergence repair commits X up to
// its last event (its checkpoint in the state moves past the window's
// start). The window's commit leaves X's events out of its files, keeps
// Y's, and X's checkpoint stays the repair's.
func TestCommit_LeavesOutWhatARepairCommitted(t *testing.T) {
	ctx := context.Background()
	url := testenv.PostgresURL(t)
	schema := "lake_drop_" + testenv.RandomID(6)
	pool, err := Connect(ctx, url, schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pool.Close()
		if admin, err := pgxpool.New(context.Background(), url); err == nil {
			_, _ = admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
			admin.Close()
		}
	})
	dir, err := archive.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(Config{Brokers: []string{"127.0.0.1:1"}, Topic: "t", Fetcher: noFetch{}, SpoolDir: t.TempDir()}, dir, pool)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.state.migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.makeSpool(); err != nil {
		t.Fatal(err)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 5))
	now := time.Now().UTC()
	x := records(workload.Run(rng, "tenant_x", workload.Options{}), now)
	y := records(workload.Run(rng, "tenant_x", workload.Options{}), now)

	w := l.window(partitionStream("t", 0), "t", 0, true)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := l.load(ctx, w); err != nil {
		t.Fatal(err)
	}
	tx := &lakeTx{l: l, w: w}
	if _, err := tx.Get(ctx, []string{x[0].RunID, y[0].RunID}); err != nil {
		t.Fatal(err)
	}
	hctx := context.WithValue(ctx, windowKey, w)
	offset := int64(0)
	for _, recs := range [][]store.RunEventRecord{x, y} {
		for _, rec := range recs {
			if err := (*handler)(l).Handle(hctx, consumer.Event{RunEventRecord: rec, Topic: "t", Offset: offset}); err != nil {
				t.Fatal(err)
			}
			offset++
		}
	}
	// The repair: X up to its last event, committed in the state.
	if _, err := pool.Exec(ctx, `INSERT INTO lake_runs (group_id, run_id, run_seq, tenant_id) VALUES ($1, $2, $3, 'tenant_x')`,
		l.cfg.Group, x[0].RunID, int64(len(x))); err != nil {
		t.Fatal(err)
	}
	if err := l.commit(ctx, w, offset, closeIdle); err != nil {
		t.Fatal(err)
	}
	// What the files hold, per run and runSeq.
	got := map[string]map[int64]int{}
	objs, err := dir.List(ctx, "tenant=")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		obj, err := dir.Open(ctx, o.Key)
		if err != nil {
			t.Fatal(err)
		}
		_, err = archive.Read(obj, obj.Size(), func(r store.RunEventRecord) error {
			if got[r.RunID] == nil {
				got[r.RunID] = map[int64]int{}
			}
			got[r.RunID][r.RunSeq]++
			return nil
		})
		obj.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := len(got[x[0].RunID]); n != 0 {
		t.Fatalf("the window's files hold %d of X's events, which the repair committed first", n)
	}
	for _, rec := range y {
		if n := got[y[0].RunID][rec.RunSeq]; n != 1 {
			t.Fatalf("Y's runSeq %d is in the files %d times, want once", rec.RunSeq, n)
		}
	}
	st, err := l.state.loadRuns(ctx, []string{x[0].RunID, y[0].RunID})
	if err != nil {
		t.Fatal(err)
	}
	if st[x[0].RunID].seq != int64(len(x)) || st[y[0].RunID].seq != int64(len(y)) {
		t.Fatalf("checkpoints X %d, Y %d; want %d and %d", st[x[0].RunID].seq, st[y[0].RunID].seq, len(x), len(y))
	}
}
