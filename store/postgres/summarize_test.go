package postgres_test

import (
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// TestSummarizeNewEvents: the persisted_at BRIN ranges appends filled are
// summarized by one call (the convergence window query then reads no
// unsummarized tail, whatever autovacuum managed), nothing is left for a
// second, and a partition whose lock another session holds (a vacuum, a
// detach) is skipped within the lock timeout instead of waited for.
func TestSummarizeNewEvents(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t, postgres.Config{})
	ctx := ctxT(t)
	var writes []store.RunEventWrite
	for range 400 {
		id := workload.NewIdentity("tenant_a")
		writes = append(writes, workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil))
		for _, step := range []string{"a", "b", "c", "d"} {
			writes = append(writes, workload.Event(id, store.EventStepStarted, step, 1, 1, time.Now(), nil),
				workload.Event(id, store.EventStepCompleted, step, 1, 1, time.Now(), map[string]any{"rows": 1234, "note": "some payload to fill pages"}))
		}
	}
	// Autovacuum summarizes a filled range on its own (autosummarize), at
	// whatever moment it visits the database: off for this test's BRIN
	// indexes, so the ranges are left for SummarizeNewEvents to count.
	brins, err := pool.Query(ctx, `SELECT c.oid::regclass::text FROM pg_class c JOIN pg_am a ON a.oid = c.relam
		WHERE a.amname = 'brin' AND c.relnamespace = current_schema()::regnamespace`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(brins, pgx.RowTo[string])
	if err != nil || len(names) == 0 {
		t.Fatalf("the store's BRIN indexes: %v, %v", names, err)
	}
	for _, name := range names {
		if _, err := pool.Exec(ctx, "ALTER INDEX "+name+" SET (autosummarize = off)"); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < len(writes); i += 1000 {
		for _, res := range s.AppendBatch(ctx, writes[i:min(i+1000, len(writes))]) {
			if res.Err != nil {
				t.Fatal(res.Err)
			}
		}
	}
	// Where the events went, and that index's unsummarized ranges.
	var partition, index string
	if err := pool.QueryRow(ctx, `SELECT c.relname, i.indexrelid::regclass::text
		FROM run_events e JOIN pg_class c ON c.oid = e.tableoid
		JOIN pg_index i ON i.indrelid = c.oid JOIN pg_class ic ON ic.oid = i.indexrelid
		JOIN pg_am a ON a.oid = ic.relam AND a.amname = 'brin' LIMIT 1`).Scan(&partition, &index); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(names, index) {
		t.Fatalf("the events went to %s, whose BRIN index %s was made during the appends (autosummarize on); want one of %v", partition, index, names)
	}
	var pages int
	if err := pool.QueryRow(ctx, "SELECT pg_relation_size($1::regclass) / current_setting('block_size')::int", partition).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if pages < 64 {
		t.Fatalf("%s holds %d pages; the test needs ranges of 32 to summarize", partition, pages)
	}

	// A session holding the partition's SHARE UPDATE EXCLUSIVE lock, as a
	// vacuum or a detach would: skipped within the lock timeout.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "LOCK TABLE "+pgx.Identifier{partition}.Sanitize()+" IN SHARE UPDATE EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	n, err := s.SummarizeNewEvents(ctx)
	if err != nil || n != 0 || time.Since(began) > 5*time.Second {
		t.Fatalf("with %s locked: %d ranges, %v, in %v; want it skipped at once", partition, n, err, time.Since(began))
	}
	_ = tx.Rollback(ctx)

	n, err = s.SummarizeNewEvents(ctx)
	if err != nil || n < pages/32 {
		t.Fatalf("SummarizeNewEvents: %d ranges, %v; want at least %d (%d pages of 32-page ranges)", n, err, pages/32, pages)
	}
	var left int
	if err := pool.QueryRow(ctx, "SELECT brin_summarize_new_values($1::regclass)", index).Scan(&left); err != nil || left != 0 {
		t.Fatalf("after SummarizeNewEvents, %d ranges of %s were still unsummarized (%v)", left, index, err)
	}
	if n, err := s.SummarizeNewEvents(ctx); err != nil || n != 0 {
		t.Fatalf("a second SummarizeNewEvents: %d ranges, %v; want nothing left", n, err)
	}
	t.Logf("%s: %d pages, %d ranges summarized", partition, pages, n)
}
