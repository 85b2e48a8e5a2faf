package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// batchTransactions counts the store's shared (batch) append transactions.
func batchTransactions(t *testing.T, reg *prometheus.Registry) uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "runstream_store_append_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "mode" && l.GetValue() == "batch" {
					return m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return 0
}

// TestAppend_SaturatedPoolSharesTransactions: with two appends allowed at
// once, 60 concurrent callers queue and their appends share transactions.
// Each caller must still get its own answer: contiguous runSeq per run with
// the caller's event at its runSeq, one row for a duplicate storm, and
// FORBIDDEN for another tenant's run without failing the others in its
// transaction.
func TestAppend_SaturatedPoolSharesTransactions(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	s, _ := newStore(t, postgres.Config{AppendConcurrency: 2, Registerer: reg})
	ctx := ctxT(t)
	runs := make([]workload.Identity, 6)
	for i := range runs {
		runs[i] = workload.NewIdentity("tenant_a")
	}
	byRun := map[string]map[int64]string{} // runSeq -> eventId, as answered
	for _, id := range runs {
		// The runs exist before the storm, so tenant_b's appends find them.
		w := workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil)
		res, err := s.AppendEvent(ctx, w)
		if err != nil {
			t.Fatal(err)
		}
		byRun[id.RunID] = map[int64]string{res.RunSeq: w.EventID}
	}
	dup := workload.Event(workload.NewIdentity("tenant_a"), store.EventRunStarted, "", 1, 1, time.Now(), nil)
	foreign := runs[0]
	foreign.TenantID = "tenant_b"

	type answer struct {
		w   store.RunEventWrite
		res store.AppendResult
		err error
	}
	var mu sync.Mutex
	var answers []answer
	var wg sync.WaitGroup
	call := func(w store.RunEventWrite) {
		res, err := s.AppendEvent(ctx, w)
		mu.Lock()
		answers = append(answers, answer{w, res, err})
		mu.Unlock()
	}
	for g := range 36 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				call(workload.Event(runs[g%len(runs)], store.EventStepStarted, fmt.Sprintf("s-%d-%d", g, i), 1, 1, time.Now(), nil))
			}
		}()
	}
	for range 16 {
		wg.Add(1)
		go func() { defer wg.Done(); call(dup) }()
	}
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			call(workload.Event(foreign, store.EventStepStarted, fmt.Sprintf("f-%d", i), 1, 1, time.Now(), nil))
		}()
	}
	wg.Wait()

	var dupSeqs []int64
	persistedDup := 0
	for _, a := range answers {
		switch {
		case a.w.TenantID == "tenant_b":
			if !errors.Is(a.err, store.ErrForbidden) {
				t.Fatalf("append to another tenant's run: %+v, %v; want FORBIDDEN", a.res, a.err)
			}
			continue
		case a.err != nil:
			t.Fatalf("append %s to %s: %v", a.w.EventID, a.w.RunID, a.err)
		case a.w.RunID == dup.RunID:
			dupSeqs = append(dupSeqs, a.res.RunSeq)
			if a.res.Persisted {
				persistedDup++
			}
			continue
		}
		if !a.res.Persisted || a.res.EventID != a.w.EventID {
			t.Fatalf("fresh event %s answered %+v", a.w.EventID, a.res)
		}
		if prev, ok := byRun[a.w.RunID][a.res.RunSeq]; ok {
			t.Fatalf("run %s: runSeq %d answered twice (%s and %s)", a.w.RunID, a.res.RunSeq, prev, a.w.EventID)
		}
		byRun[a.w.RunID][a.res.RunSeq] = a.w.EventID
	}
	if persistedDup != 1 || len(dupSeqs) != 16 {
		t.Fatalf("duplicate storm: %d of %d answers persisted; want exactly one", persistedDup, len(dupSeqs))
	}
	for _, seq := range dupSeqs {
		if seq != 1 {
			t.Fatalf("duplicate storm answered runSeq %v; want 1 for all", dupSeqs)
		}
	}
	for _, id := range runs {
		recs, err := s.FetchEvents(ctx, id.RunID, store.FetchOptions{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != len(byRun[id.RunID]) || len(recs) != 61 {
			t.Fatalf("run %s: %d events stored, %d answered; want 61", id.RunID, len(recs), len(byRun[id.RunID]))
		}
		for i, r := range recs {
			if r.RunSeq != int64(i+1) || byRun[id.RunID][r.RunSeq] != r.EventID {
				t.Fatalf("run %s: stored runSeq %d is event %s, answered %s", id.RunID, r.RunSeq, r.EventID, byRun[id.RunID][r.RunSeq])
			}
		}
	}
	if n := batchTransactions(t, reg); n == 0 {
		t.Fatal("no append shared a transaction: the test did not saturate the two slots")
	} else {
		t.Logf("%d appends, %d shared transactions", len(answers), n)
	}
}

// TestAppend_CancelledWhileQueuedIsNotAppended: an append waiting for a
// slot whose caller gives up leaves the queue and is never written; the
// slot then serves the next append.
func TestAppend_CancelledWhileQueuedIsNotAppended(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t, postgres.Config{AppendConcurrency: 1})
	ctx := ctxT(t)
	// The next append to held takes the only slot and waits in Postgres.
	held, tx, holder := holdRun(ctx, t, s, pool)
	blocked := make(chan error, 1)
	go func() {
		_, err := s.AppendEvent(ctx, workload.Event(held, store.EventStepStarted, "s1", 1, 1, time.Now(), nil))
		blocked <- err
	}()
	waitBlockedBy(ctx, t, pool, holder, "the append holding the slot to wait on the row lock")
	gaveUp := workload.NewIdentity("tenant_a")
	qctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err := s.AppendEvent(qctx, workload.Event(gaveUp, store.EventRunStarted, "", 1, 1, time.Now(), nil))
	cancel()
	if err == nil {
		t.Fatal("an append queued behind a held slot returned no error when its context ended")
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-blocked; err != nil {
		t.Fatalf("the append holding the slot: %v", err)
	}
	next := workload.NewIdentity("tenant_a")
	if _, err := s.AppendEvent(ctx, workload.Event(next, store.EventRunStarted, "", 1, 1, time.Now(), nil)); err != nil {
		t.Fatalf("an append after the queue emptied: %v", err)
	}
	time.Sleep(100 * time.Millisecond) // a wrongly kept queue entry would be appended by now
	if recs, err := s.FetchEvents(ctx, gaveUp.RunID, store.FetchOptions{}); err != nil || len(recs) != 0 {
		t.Fatalf("the abandoned append left %d events (%v); want none", len(recs), err)
	}
}
