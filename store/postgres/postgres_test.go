package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/reduce"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
	"github.com/runstream/runstream/store/validate"
)

// newStore returns a migrated store in a fresh schema.
func newStore(t *testing.T, cfg postgres.Config) (*postgres.Store, *pgxpool.Pool) {
	t.Helper()
	pool, _ := testenv.Postgres(t, 80)
	ctx := context.Background()
	if _, err := postgres.Migrate(ctx, pool); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	s, err := postgres.New(pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, pool
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestMigrate_IdempotentAndConcurrent(t *testing.T) {
	t.Parallel()
	pool, _ := testenv.Postgres(t, 10)
	ctx := ctxT(t)
	var wg sync.WaitGroup
	applied := make([][]int, 4)
	errs := make([]error, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			applied[i], errs[i] = postgres.Migrate(ctx, pool)
		}()
	}
	wg.Wait()
	total := 0
	for i, err := range errs {
		if err != nil {
			t.Fatalf("migrator %d: %v", i, err)
		}
		total += len(applied[i])
	}
	var want int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&want); err != nil {
		t.Fatal(err)
	}
	if total != want || want == 0 {
		t.Fatalf("4 concurrent migrators applied %d migrations in all, schema_migrations has %d: each must be applied exactly once", total, want)
	}
	again, err := postgres.Migrate(ctx, pool)
	if err != nil || len(again) != 0 {
		t.Fatalf("second Migrate applied %v, err %v; want nothing", again, err)
	}
}

func TestAppend_ConcurrentAppendersGetContiguousRunSeq(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, postgres.Config{})
	ctx := ctxT(t)
	id := workload.NewIdentity("tenant_a")
	const writers, perWriter = 64, 8
	var wg sync.WaitGroup
	seqs := make(chan int64, writers*perWriter)
	errc := make(chan error, writers*perWriter)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				ev := workload.Event(id, store.EventStepStarted, fmt.Sprintf("step-%d-%d", w, i), 1, 1, time.Now(), nil)
				res, err := s.AppendEvent(ctx, ev)
				if err != nil {
					errc <- err
					return
				}
				if !res.Persisted || res.Idempotent {
					errc <- fmt.Errorf("fresh event answered %+v", res)
				}
				seqs <- res.RunSeq
			}
		}()
	}
	wg.Wait()
	close(seqs)
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	var got []int64
	for s := range seqs {
		got = append(got, s)
	}
	sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
	for i, s := range got {
		if s != int64(i+1) {
			t.Fatalf("runSeq %d at position %d: 64 concurrent appenders must get 1..%d with no gap or repeat; got %v", s, i, writers*perWriter, got)
		}
	}
	recs, err := s.FetchEvents(ctx, id.RunID, store.FetchOptions{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != writers*perWriter {
		t.Fatalf("fetched %d events, want %d", len(recs), writers*perWriter)
	}
	// persistedAt follows runSeq: the counter lock serialises a run's appends.
	for i := 1; i < len(recs); i++ {
		if recs[i].PersistedAt < recs[i-1].PersistedAt {
			t.Fatalf("persistedAt went backwards between runSeq %d and %d: %s < %s", recs[i-1].RunSeq, recs[i].RunSeq, recs[i].PersistedAt, recs[i-1].PersistedAt)
		}
	}
}

func TestAppend_DuplicateStormMakesOneRow(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t, postgres.Config{})
	ctx := ctxT(t)
	id := workload.NewIdentity("tenant_a")
	first := workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), map[string]any{"engineRunRef": "x"})
	if _, err := s.AppendEvent(ctx, workload.Event(id, "RunQueued", "", 1, 1, time.Now(), nil)); err != nil {
		t.Fatal(err)
	}
	const copies = 100
	results := make([]store.AppendResult, copies)
	errs := make([]error, copies)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range copies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ev := first
			if i%2 == 1 {
				// A re-emission with a new eventId and engine attempt: still
				// the same key, so still a duplicate (docs/CONTRACT.md,
				// "Appending").
				ev.EventID = workload.Event(id, "X", "", 1, 1, time.Now(), nil).EventID
				ev.EngineAttemptID = 2
			}
			<-start
			results[i], errs[i] = s.AppendEvent(ctx, ev)
		}()
	}
	close(start)
	wg.Wait()
	inserted := 0
	for i, err := range errs {
		if err != nil {
			t.Fatalf("copy %d: %v", i, err)
		}
		if results[i].Persisted {
			inserted++
		}
		if results[i].Persisted == results[i].Idempotent {
			t.Fatalf("copy %d: persisted=%v idempotent=%v, exactly one must be true", i, results[i].Persisted, results[i].Idempotent)
		}
		if results[i].EventID != results[0].EventID || results[i].RunSeq != results[0].RunSeq || results[i].PersistedAt != results[0].PersistedAt {
			t.Fatalf("copy %d got metadata %+v, copy 0 got %+v: every caller must get the one row's metadata", i, results[i], results[0])
		}
	}
	if inserted != 1 {
		t.Fatalf("%d copies inserted, want exactly 1", inserted)
	}
	var rows, lastSeq, outbox int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM run_events WHERE run_id=$1),
		(SELECT last_seq FROM runs WHERE run_id=$1), (SELECT count(*) FROM outbox WHERE run_id=$1)`, id.RunID).Scan(&rows, &lastSeq, &outbox); err != nil {
		t.Fatal(err)
	}
	if rows != 2 || lastSeq != 2 || outbox != 2 {
		t.Fatalf("after 1 + 100 duplicate appends: %d event rows, counter %d, %d outbox rows; want 2, 2, 2 (a duplicate must not bump runSeq)", rows, lastSeq, outbox)
	}
	// The next event continues contiguously.
	res, err := s.AppendEvent(ctx, workload.Event(id, store.EventRunCompleted, "", 1, 1, time.Now(), nil))
	if err != nil || res.RunSeq != 3 {
		t.Fatalf("next append got %+v, %v; want runSeq 3", res, err)
	}
}

func TestAppend_PreservesEmittedAtAndFormatsPersistedAt(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, postgres.Config{})
	ctx := ctxT(t)
	id := workload.NewIdentity("tenant_a")
	ev := workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil)
	ev.EmittedAt = "2026-02-16T11:30:00.1+01:00"
	ev.Payload = json.RawMessage(`{ "engineRunRef" : "r1",  "z": [1, 2.50, 1e3], "a": {} }`)
	res, err := s.AppendEvent(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := time.Parse("2006-01-02T15:04:05.000000Z", res.PersistedAt); err != nil {
		t.Fatalf("persistedAt %q is not RFC 3339 UTC with microseconds: %v", res.PersistedAt, err)
	}
	pa, _ := time.Parse(time.RFC3339Nano, res.PersistedAt)
	if d := time.Since(pa); d < -time.Minute || d > time.Minute {
		t.Fatalf("persistedAt %s is not the database clock near now (off by %v)", res.PersistedAt, d)
	}
	recs, err := s.FetchEvents(ctx, id.RunID, store.FetchOptions{})
	if err != nil || len(recs) != 1 {
		t.Fatalf("fetch: %v, %d events", err, len(recs))
	}
	got := recs[0]
	if got.EmittedAt != ev.EmittedAt {
		t.Errorf("emittedAt = %q, want byte-for-byte %q", got.EmittedAt, ev.EmittedAt)
	}
	if string(got.Payload) != string(ev.Payload) {
		t.Errorf("payload = %s, want byte-for-byte %s", got.Payload, ev.Payload)
	}
	if got.PersistedAt != res.PersistedAt || got.RunSeq != 1 || got.EventID != ev.EventID {
		t.Errorf("record %+v disagrees with append result %+v", got, res)
	}
	want := ev
	want.Payload = got.Payload
	if diff := cmp.Diff(want, got.RunEventWrite); diff != "" {
		t.Errorf("record differs from the write (-want +got):\n%s", diff)
	}
}

func TestEvents_AreImmutable(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t, postgres.Config{})
	ctx := ctxT(t)
	id := workload.NewIdentity("tenant_a")
	if _, err := s.AppendEvent(ctx, workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil)); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`UPDATE run_events SET event_type = 'RunFailed' WHERE run_id = $1`,
		`UPDATE run_events SET payload = '{}' WHERE run_id = $1`,
		`DELETE FROM run_events WHERE run_id = $1`,
		`TRUNCATE run_events`,
	} {
		var err error
		if strings.HasPrefix(q, "TRUNCATE") {
			_, err = pool.Exec(ctx, q)
		} else {
			_, err = pool.Exec(ctx, q, id.RunID)
		}
		if err == nil || !strings.Contains(err.Error(), "immutable") {
			t.Errorf("%s: err = %v, want the immutability trigger to refuse it", q, err)
		}
	}
	recs, _ := s.FetchEvents(ctx, id.RunID, store.FetchOptions{})
	if len(recs) != 1 || recs[0].EventType != store.EventRunStarted {
		t.Fatalf("event changed or vanished: %+v", recs)
	}
}

func TestAppend_RunOwnedByAnotherTenantIsForbidden(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, postgres.Config{})
	ctx := ctxT(t)
	id := workload.NewIdentity("tenant_a")
	ev := workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil)
	if _, err := s.AppendEvent(ctx, ev); err != nil {
		t.Fatal(err)
	}
	other := id
	other.TenantID = "tenant_b"
	for _, w := range []store.RunEventWrite{
		workload.Event(other, store.EventRunStarted, "", 1, 1, time.Now(), nil), // same key as tenant_a's row
		workload.Event(other, store.EventRunCompleted, "", 1, 1, time.Now(), nil),
	} {
		res, err := s.AppendEvent(ctx, w)
		if !errors.Is(err, store.ErrForbidden) {
			t.Fatalf("append of %s for tenant_b to tenant_a's run: %+v, %v; want FORBIDDEN", w.EventType, res, err)
		}
	}
	recs, _ := s.FetchEvents(ctx, id.RunID, store.FetchOptions{})
	if len(recs) != 1 {
		t.Fatalf("run has %d events after refused appends, want 1", len(recs))
	}
}

func TestAppend_InvalidIsRejectedBeforeTheDatabase(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, postgres.Config{})
	ctx := ctxT(t)
	ev := workload.Event(workload.NewIdentity("t"), store.EventRunStarted, "", 1, 1, time.Now(), nil)
	ev.IdempotencyKey = strings.Repeat("0", 64)
	_, err := s.AppendEvent(ctx, ev)
	if !errors.Is(err, store.ErrSchemaValidation) {
		t.Fatalf("wrong key: err = %v, want SCHEMA_VALIDATION_FAILED", err)
	}
}

// TestAppendBatch_PerItemResults: each item answers for itself, and a
// batch sent in steps (a Pacer's) answers exactly as one sent at once,
// across step boundaries too (the in-batch duplicate, runSeq order).
func TestAppendBatch_PerItemResults(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, postgres.Config{})
	for _, step := range []int{0, 1, 2, 3} {
		name := "one round trip"
		if step > 0 {
			name = fmt.Sprintf("steps of %d", step)
		}
		t.Run(name, func(t *testing.T) { checkPerItemResults(t, s, step) })
	}
}

// checkPerItemResults appends a batch of every kind of item through
// AppendBatch (step 0) or AppendValidatedBatch in steps of step events.
func checkPerItemResults(t *testing.T, s *postgres.Store, step int) {
	ctx := ctxT(t)
	a := workload.NewIdentity("tenant_a")
	b := workload.NewIdentity("tenant_a")
	foreign := workload.NewIdentity("tenant_b")
	if _, err := s.AppendEvent(ctx, workload.Event(foreign, store.EventRunStarted, "", 1, 1, time.Now(), nil)); err != nil {
		t.Fatal(err)
	}
	stolen := foreign
	stolen.TenantID = "tenant_a"
	bad := workload.Event(a, store.EventStepStarted, "s1", 1, 1, time.Now(), nil)
	bad.StepID = "" // a step event without stepId
	writes := []store.RunEventWrite{
		workload.Event(b, store.EventRunStarted, "", 1, 1, time.Now(), nil), // b:1
		workload.Event(a, store.EventRunStarted, "", 1, 1, time.Now(), nil), // a:1
		bad, // invalid
		workload.Event(a, store.EventStepStarted, "s1", 1, 1, time.Now(), nil),     // a:2
		workload.Event(stolen, store.EventRunCompleted, "", 1, 1, time.Now(), nil), // another tenant's run
		workload.Event(b, store.EventStepStarted, "s1", 1, 1, time.Now(), nil),     // b:2
		workload.Event(a, store.EventStepStarted, "s1", 1, 1, time.Now(), nil),     // duplicate of a:2 inside the batch
		workload.Event(a, store.EventStepCompleted, "s1", 1, 1, time.Now(), nil),   // a:3
	}
	var res []postgres.BatchResult
	if step == 0 {
		res = s.AppendBatch(ctx, writes)
	} else {
		errs := make([]error, len(writes))
		valid := 0
		for i := range writes {
			if errs[i] = validate.Check(&writes[i]); errs[i] == nil {
				valid++
			}
		}
		steps := 0
		res = s.AppendValidatedBatch(ctx, writes, errs, func(context.Context) int { steps++; return step })
		if want := (valid + step - 1) / step; steps != want {
			t.Errorf("the pacer was asked %d times for %d valid events in steps of %d, want %d", steps, valid, step, want)
		}
	}
	type want struct {
		seq  int64
		dup  bool
		code store.Code
	}
	wants := []want{{1, false, ""}, {1, false, ""}, {0, false, store.CodeSchemaValidationFailed}, {2, false, ""},
		{0, false, store.CodeForbidden}, {2, false, ""}, {2, true, ""}, {3, false, ""}}
	for i, w := range wants {
		r := res[i]
		if w.code != "" {
			var se *store.Error
			if !errors.As(r.Err, &se) || se.Code != w.code {
				t.Errorf("item %d: err = %v, want %s", i, r.Err, w.code)
			}
			continue
		}
		if r.Err != nil {
			t.Errorf("item %d: %v", i, r.Err)
			continue
		}
		if r.Result.RunSeq != w.seq || r.Result.Idempotent != w.dup {
			t.Errorf("item %d: got runSeq %d idempotent %v, want %d %v", i, r.Result.RunSeq, r.Result.Idempotent, w.seq, w.dup)
		}
	}
	if res[6].Result.EventID != res[3].Result.EventID {
		t.Errorf("in-batch duplicate answered eventId %s, want the first copy's %s", res[6].Result.EventID, res[3].Result.EventID)
	}
}

// TestAppendValidatedBatch_StepsAreOneTransaction: a paced batch whose
// caller gives up between two steps writes nothing, not the steps sent so
// far; a pacer answering less than one event still makes progress.
func TestAppendValidatedBatch_StepsAreOneTransaction(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, postgres.Config{})
	ids := make([]workload.Identity, 6)
	writes := make([]store.RunEventWrite, len(ids))
	for i := range ids {
		ids[i] = workload.NewIdentity("tenant_a")
		writes[i] = workload.Event(ids[i], store.EventRunStarted, "", 1, 1, time.Now(), nil)
	}
	ctx, cancel := context.WithCancel(ctxT(t))
	steps := 0
	res := s.AppendValidatedBatch(ctx, writes, nil, func(context.Context) int {
		steps++
		if steps == 4 { // after three steps of one event went through
			cancel()
		}
		return 0
	})
	for i, r := range res {
		if r.Err == nil {
			t.Errorf("item %d succeeded although the batch was given up: %+v", i, r.Result)
		}
	}
	for _, id := range ids {
		recs, err := s.FetchEvents(ctxT(t), id.RunID, store.FetchOptions{})
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("fetching run %s: %v", id.RunID, err)
		}
		if len(recs) != 0 {
			t.Fatalf("run %s has %d events from a batch given up after %d steps; nothing may be half-written", id.RunID, len(recs), steps-1)
		}
	}
}

func TestAppendBatch_ConcurrentBatchesAcrossRunsDoNotDeadlock(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, postgres.Config{})
	ctx := ctxT(t)
	ids := make([]workload.Identity, 5)
	for i := range ids {
		ids[i] = workload.NewIdentity("tenant_a")
	}
	var wg sync.WaitGroup
	errc := make(chan error, 8*20)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			var batch []store.RunEventWrite
			for i := range 20 {
				id := ids[rng.IntN(len(ids))]
				batch = append(batch, workload.Event(id, store.EventStepStarted, fmt.Sprintf("g%d-%d", g, i), 1, 1, time.Now(), nil))
			}
			for _, r := range s.AppendBatch(ctx, batch) {
				if r.Err != nil {
					errc <- r.Err
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	total := 0
	for _, id := range ids {
		recs, _ := s.FetchEvents(ctx, id.RunID, store.FetchOptions{Limit: 1000})
		for i, r := range recs {
			if r.RunSeq != int64(i+1) {
				t.Fatalf("run %s: runSeq %d at index %d", id.RunID, r.RunSeq, i)
			}
		}
		total += len(recs)
	}
	if total != 160 {
		t.Fatalf("stored %d events, want 160", total)
	}
}

func TestFetchEvents_Paging(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, postgres.Config{})
	ctx := ctxT(t)
	id := workload.NewIdentity("tenant_a")
	var batch []store.RunEventWrite
	for i := range 250 {
		batch = append(batch, workload.Event(id, store.EventStepStarted, fmt.Sprintf("s%03d", i), 1, 1, time.Now(), nil))
	}
	for _, r := range s.AppendBatch(ctx, batch) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	var all []store.RunEventRecord
	after := int64(0)
	for {
		page, err := s.FetchEvents(ctx, id.RunID, store.FetchOptions{AfterSeq: after, Limit: 40})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		if len(page) > 40 {
			t.Fatalf("page of %d, limit 40", len(page))
		}
		all = append(all, page...)
		after = page[len(page)-1].RunSeq
	}
	if len(all) != 250 {
		t.Fatalf("paged %d events, want 250", len(all))
	}
	for i, r := range all {
		if r.RunSeq != int64(i+1) || r.StepID != fmt.Sprintf("s%03d", i) {
			t.Fatalf("event %d: runSeq %d stepId %s", i, r.RunSeq, r.StepID)
		}
	}
	page, _ := s.FetchEvents(ctx, id.RunID, store.FetchOptions{})
	if len(page) != postgres.DefaultFetchLimit {
		t.Errorf("default limit returned %d, want %d", len(page), postgres.DefaultFetchLimit)
	}
	page, _ = s.FetchEvents(ctx, id.RunID, store.FetchOptions{Limit: 100000})
	if len(page) != 250 {
		t.Errorf("huge limit returned %d", len(page))
	}
	none, err := s.FetchEvents(ctx, "no-such-run", store.FetchOptions{})
	if err != nil || len(none) != 0 {
		t.Errorf("unknown run: %v, %d events", err, len(none))
	}
}

// TestProjectSnapshot_RealisticRun covers retries, failures, skips,
// artifacts and an unknown event type, and checks the FROM_SNAPSHOT path
// (checkpoint plus delta) agrees with FULL.
func TestProjectSnapshot_RealisticRun(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, postgres.Config{SnapshotEvery: 3})
	ctx := ctxT(t)
	id := workload.NewIdentity("tenant_a")
	t0 := time.Date(2026, 2, 16, 10, 0, 0, 0, time.UTC)
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	art := func(uri string) map[string]any {
		return map[string]any{"artifacts": []map[string]any{{"uri": uri, "kind": "log-bundle"}}, "durationMs": 1500}
	}
	evs := []store.RunEventWrite{
		workload.Event(id, store.EventRunStarted, "", 1, 1, at(0), map[string]any{"engineRunRef": "temporal://r1"}),
		workload.Event(id, store.EventStepStarted, "extract", 1, 1, at(1), nil),
		workload.Event(id, store.EventStepFailed, "extract", 1, 1, at(2), map[string]any{"errorCode": "TIMEOUT", "errorMessage": "slow", "retryable": true}),
		workload.Event(id, store.EventStepStarted, "extract", 2, 1, at(3), nil),
		workload.Event(id, "StepHeartbeatRecorded", "extract", 2, 1, at(4), nil),
		workload.Event(id, store.EventStepCompleted, "extract", 2, 1, at(5), art("s3://a/extract.log")),
		workload.Event(id, store.EventStepSkipped, "notify", 1, 1, at(6), map[string]any{"reasonCode": "CONDITION_FALSE"}),
	}
	for _, ev := range evs {
		if _, err := s.AppendEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.GetSnapshot(ctx, id.RunID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetSnapshot before any projection: %v, want NOT_FOUND", err)
	}
	mid, err := s.ProjectSnapshot(ctx, id.RunID)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := s.GetSnapshot(ctx, id.RunID)
	if err != nil || cp.LastEventSeq != 7 {
		t.Fatalf("checkpoint after projecting 7 events (SnapshotEvery 3): %+v, %v", cp.LastEventSeq, err)
	}
	if diff := cmp.Diff(mid, cp); diff != "" {
		t.Fatalf("checkpoint differs from the projection:\n%s", diff)
	}
	if _, err := s.AppendEvent(ctx, workload.Event(id, store.EventRunCompleted, "", 1, 1, at(7), nil)); err != nil {
		t.Fatal(err)
	}
	got, err := s.ProjectSnapshot(ctx, id.RunID) // FROM_SNAPSHOT: checkpoint 7 + event 8
	if err != nil {
		t.Fatal(err)
	}
	all, _ := s.FetchEvents(ctx, id.RunID, store.FetchOptions{Limit: 1000})
	full, _ := reduce.Project(store.RunSnapshot{}, all)
	if diff := cmp.Diff(full, got); diff != "" {
		t.Fatalf("FROM_SNAPSHOT projection differs from FULL (-full +got):\n%s", diff)
	}
	if got.Status != store.RunCompleted || got.LastEventSeq != 8 || got.Stale {
		t.Fatalf("status %s lastEventSeq %d stale %v; want COMPLETED 8 false", got.Status, got.LastEventSeq, got.Stale)
	}
	if len(got.Steps) != 2 {
		t.Fatalf("steps = %+v, want extract and notify", got.Steps)
	}
	ex := got.Steps[0]
	if ex.StepID != "extract" || ex.Status != store.StepSuccess || ex.LogicalAttemptID != 2 || len(ex.Attempts) != 1 ||
		ex.Attempts[0].Status != store.StepFailed || ex.Attempts[0].Error == nil || ex.Attempts[0].Error.Code != "TIMEOUT" {
		t.Fatalf("extract step = %+v; want SUCCESS on attempt 2 with failed attempt 1 (TIMEOUT) kept", ex)
	}
	if got.Steps[1].Status != store.StepSkipped {
		t.Fatalf("notify step = %+v, want SKIPPED", got.Steps[1])
	}
	// failedSteps is the contract's counter (StepFailed events applied):
	// extract failed once, and its successful retry does not take that back,
	// in the FULL projection (mid) and in the FROM_SNAPSHOT one (got).
	if mid.FailedSteps != 1 || got.FailedSteps != 1 {
		t.Fatalf("failedSteps %d (FULL) and %d (FROM_SNAPSHOT), want 1: one StepFailed applied", mid.FailedSteps, got.FailedSteps)
	}
	if len(got.Artifacts) != 1 || got.Artifacts[0].URI != "s3://a/extract.log" {
		t.Fatalf("run artifacts = %+v, want the extract log aggregated", got.Artifacts)
	}
	if got.EngineRunRef != "temporal://r1" || got.TenantID != "tenant_a" {
		t.Fatalf("engineRunRef %q tenant %q", got.EngineRunRef, got.TenantID)
	}
	if _, err := s.ProjectSnapshot(ctx, "no-such-run"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ProjectSnapshot of an unknown run: %v, want NOT_FOUND", err)
	}
}

func TestStore_PostgresDownIsUnavailable(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	// A port nothing listens on: the pool cannot connect.
	pool, err := pgxpool.New(ctx, "postgres://runstream:runstream@127.0.0.1:1/runstream?sslmode=disable&connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ev := workload.Event(workload.NewIdentity("t"), store.EventRunStarted, "", 1, 1, time.Now(), nil)
	if _, err := s.AppendEvent(ctx, ev); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("append with Postgres down: %v, want UNAVAILABLE", err)
	}
	for _, r := range s.AppendBatch(ctx, []store.RunEventWrite{ev}) {
		if !errors.Is(r.Err, store.ErrUnavailable) {
			t.Fatalf("batch with Postgres down: %v, want UNAVAILABLE", r.Err)
		}
	}
	if _, err := s.FetchEvents(ctx, ev.RunID, store.FetchOptions{}); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("fetch with Postgres down: %v, want UNAVAILABLE", err)
	}
}

// TestAppendBatch_KilledConnectionWritesNothing terminates the backend in
// the middle of a batch's transaction: nothing of the batch may remain.
func TestAppendBatch_KilledConnectionWritesNothing(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t, postgres.Config{})
	ctx := ctxT(t)
	// Hold the run's counter row so the batch blocks inside its transaction.
	id, tx, holder := holdRun(ctx, t, s, pool)
	other := workload.NewIdentity("tenant_a")
	batch := []store.RunEventWrite{
		workload.Event(other, store.EventRunStarted, "", 1, 1, time.Now(), nil),
		workload.Event(id, store.EventStepStarted, "s", 1, 1, time.Now(), nil),
	}
	done := make(chan []postgres.BatchResult, 1)
	go func() { done <- s.AppendBatch(ctx, batch) }()
	victim := waitBlockedBy(ctx, t, pool, holder, "the batch to block on the counter lock")
	if _, err := pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, victim); err != nil {
		t.Fatal(err)
	}
	res := <-done
	for i, r := range res {
		if r.Err == nil {
			t.Fatalf("item %d succeeded although its connection was killed: %+v", i, r.Result)
		}
	}
	_ = tx.Rollback(ctx)
	recs, err := s.FetchEvents(ctx, other.RunID, store.FetchOptions{})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("fetching run %s: %v", other.RunID, err)
	}
	if len(recs) != 0 {
		t.Fatalf("run %s has %d events from a killed batch; nothing may be half-written", other.RunID, len(recs))
	}
	recs, err = s.FetchEvents(ctx, id.RunID, store.FetchOptions{})
	if err != nil {
		t.Fatalf("fetching run %s: %v", id.RunID, err)
	}
	if len(recs) != 1 {
		t.Fatalf("run %s has %d events, want only the first", id.RunID, len(recs))
	}
}

// holdRun appends a run's first event and locks the run's counter row in a
// transaction of its own (rolled back at the end of the test unless
// before), so the next append to the run blocks inside Postgres. holder is
// that transaction's backend: tests run in parallel, each with backends
// waiting on locks, and waitBlockedBy finds the one this test blocked.
func holdRun(ctx context.Context, t *testing.T, s *postgres.Store, pool *pgxpool.Pool) (workload.Identity, pgx.Tx, int32) {
	t.Helper()
	id := workload.NewIdentity("tenant_a")
	if _, err := s.AppendEvent(ctx, workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil)); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	var holder int32
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid() FROM runs WHERE run_id = $1 FOR UPDATE`, id.RunID).Scan(&holder); err != nil {
		t.Fatal(err)
	}
	return id, tx, holder
}

// waitBlockedBy waits for a backend blocked by holder and returns its pid.
func waitBlockedBy(ctx context.Context, t *testing.T, pool *pgxpool.Pool, holder int32, what string) int32 {
	t.Helper()
	var victim int32
	testenv.WaitFor(t, 10*time.Second, what, func() bool {
		err := pool.QueryRow(ctx, `SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid)) LIMIT 1`, holder).Scan(&victim)
		return err == nil
	})
	return victim
}

// TestAppend_ClockSkewObserved: each inserted event's persistedAt -
// emittedAt lands in runstream_store_clock_skew_seconds under its type
// ("other" outside the contract); a duplicate is not observed again.
func TestAppend_ClockSkewObserved(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	s, _ := newStore(t, postgres.Config{Registerer: reg})
	ctx := ctxT(t)
	id := workload.NewIdentity("tenant_a")
	late := workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now().Add(-2*time.Hour), nil)
	ahead := workload.Event(id, "WorkerHeartbeat", "", 1, 1, time.Now().Add(10*time.Minute), nil)
	for _, ev := range []store.RunEventWrite{late, late, ahead} {
		if _, err := s.AppendEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]float64{} // type -> count, sum
	for _, mf := range mfs {
		if mf.GetName() != "runstream_store_clock_skew_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			got[m.GetLabel()[0].GetValue()] = [2]float64{float64(m.GetHistogram().GetSampleCount()), m.GetHistogram().GetSampleSum()}
		}
	}
	if c := got[store.EventRunStarted]; c[0] != 1 || c[1] < 7100 || c[1] > 7300 {
		t.Errorf("RunStarted two hours late: count %v, sum %v s; want 1 and about 7200", c[0], c[1])
	}
	if c := got["other"]; c[0] != 1 || c[1] > -500 || c[1] < -700 {
		t.Errorf("an unknown type ten minutes ahead: count %v, sum %v s; want 1 under \"other\", about -600", c[0], c[1])
	}
}

func TestRunCount_CountsOneTenantsRuns(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t, postgres.Config{})
	ctx := ctxT(t)
	want := map[string]int64{"tenant_a": 3, "tenant_b": 2}
	for tenant, n := range want {
		for range n {
			id := workload.NewIdentity(tenant)
			// Two events each: a run is counted once, however many events.
			for seq := range 2 {
				if _, err := s.AppendEvent(ctx, workload.Event(id, store.EventStepStarted, fmt.Sprintf("s%d", seq), 1, 1, time.Now(), nil)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for tenant, n := range map[string]int64{"tenant_a": 3, "tenant_b": 2, "tenant_c": 0} {
		got, err := s.RunCount(ctx, tenant)
		if err != nil || got != n {
			t.Errorf("RunCount(%q) = %d, %v; want %d", tenant, got, err, n)
		}
	}
	var idx bool
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_indexes WHERE indexname = 'runs_tenant_id' AND schemaname = current_schema())`).Scan(&idx); err != nil || !idx {
		t.Fatalf("index runs_tenant_id missing after Migrate (%v)", err)
	}
}

// appendStepsRun appends run id: RunStarted at t0, then steps started and
// completed (2 x steps + 1 events), and returns the events.
func appendStepsRun(ctx context.Context, t *testing.T, s *postgres.Store, id workload.Identity, steps int, t0 time.Time) []store.RunEventWrite {
	t.Helper()
	evs := []store.RunEventWrite{workload.Event(id, store.EventRunStarted, "", 1, 1, t0, nil)}
	for i := range steps {
		step := fmt.Sprintf("step-%03d", i)
		evs = append(evs, workload.Event(id, store.EventStepStarted, step, 1, 1, t0.Add(time.Second), nil),
			workload.Event(id, store.EventStepCompleted, step, 1, 1, t0.Add(2*time.Second), map[string]any{"n": i}))
	}
	for lo := 0; lo < len(evs); lo += 500 {
		for i, res := range s.AppendBatch(ctx, evs[lo:min(len(evs), lo+500)]) {
			if res.Err != nil {
				t.Fatalf("appending event %d: %v", lo+i, res.Err)
			}
		}
	}
	return evs
}

// TestProjectSnapshotFor_LargeHook: the hook is called once for a
// projection that reduces many events and for one that decodes a large
// checkpoint, never for a small run or another tenant's, and its error
// ends the projection.
func TestProjectSnapshotFor_LargeHook(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t, postgres.Config{SnapshotEvery: 300})
	ctx := ctxT(t)
	t0 := time.Now().UTC()
	large, small := workload.NewIdentity("tenant_a"), workload.NewIdentity("tenant_a")
	appendStepsRun(ctx, t, s, large, 300, t0) // 601 events
	appendStepsRun(ctx, t, s, small, 2, t0)
	calls := 0
	hook := func(context.Context) error { calls++; return nil }
	project := func(id workload.Identity, reader string) error {
		_, err := s.ProjectSnapshotFor(ctx, id.RunID, reader, hook)
		return err
	}

	for _, tc := range []struct {
		what   string
		id     workload.Identity
		reader string
		calls  int
	}{
		{"601 events, no checkpoint", large, "tenant_a", 1},
		{"a small run", small, "tenant_a", 0},
		{"another tenant's large run", large, "tenant_b", 0},
	} {
		calls = 0
		err := project(tc.id, tc.reader)
		if tc.reader == "tenant_b" && !errors.Is(err, store.ErrNotFound) || tc.reader != "tenant_b" && err != nil {
			t.Fatalf("%s: %v", tc.what, err)
		}
		if calls != tc.calls {
			t.Fatalf("%s: the hook was called %d times, want %d", tc.what, calls, tc.calls)
		}
	}
	// The first projection checkpointed the 601 events: the next reduces
	// none but decodes the checkpoint.
	var size int
	if err := pool.QueryRow(ctx, `SELECT length(snapshot::text) FROM run_snapshots WHERE run_id = $1`, large.RunID).Scan(&size); err != nil {
		t.Fatalf("the large run's checkpoint: %v", err)
	}
	if size < postgres.LargeCheckpointBytes {
		t.Fatalf("the large run's checkpoint has %d bytes, want at least %d for this test", size, postgres.LargeCheckpointBytes)
	}
	calls = 0
	if err := project(large, "tenant_a"); err != nil || calls != 1 {
		t.Fatalf("from a checkpoint of %d bytes: %v, hook called %d times, want once", size, err, calls)
	}
	refused := errors.New("no large work now")
	if _, err := s.ProjectSnapshotFor(ctx, large.RunID, "", func(context.Context) error { return refused }); !errors.Is(err, refused) {
		t.Fatalf("a hook's error: the projection answered %v, want the hook's error", err)
	}
}

// TestProjectSnapshotOf_OneStatementAgreesWithFull: the one-statement
// projection equals the FULL reduction of every event, for a run longer
// than one fetch (MaxFetchLimit) and from a checkpoint; a reader limited
// to another tenant gets NOT_FOUND, exactly as for an unknown run.
func TestProjectSnapshotOf_OneStatementAgreesWithFull(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, postgres.Config{SnapshotEvery: 600})
	ctx := ctxT(t)
	id := workload.NewIdentity("tenant_a")
	t0 := time.Date(2026, 2, 16, 10, 0, 0, 0, time.UTC)
	evs := appendStepsRun(ctx, t, s, id, 700, t0) // 1,401 events: more than one fetch of MaxFetchLimit
	full := func() store.RunSnapshot {
		t.Helper()
		var all []store.RunEventRecord
		for after := int64(0); ; {
			page, err := s.FetchEvents(ctx, id.RunID, store.FetchOptions{AfterSeq: after, Limit: postgres.MaxFetchLimit})
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			all = append(all, page...)
			after = page[len(page)-1].RunSeq
		}
		snap, _ := reduce.Project(store.RunSnapshot{}, all)
		snap.Stale = false
		return snap
	}
	for _, reader := range []string{"tenant_a", ""} {
		got, err := s.ProjectSnapshotOf(ctx, id.RunID, reader)
		if err != nil {
			t.Fatalf("reader %q: %v", reader, err)
		}
		if diff := cmp.Diff(full(), got); diff != "" {
			t.Fatalf("reader %q: one-statement projection differs from FULL (-full +got):\n%s", reader, diff)
		}
	}
	// The first projection checkpointed (1,401 events past none, SnapshotEvery
	// 600); two more events project from that checkpoint.
	if cp, err := s.GetSnapshot(ctx, id.RunID); err != nil || cp.LastEventSeq != int64(len(evs)) {
		t.Fatalf("checkpoint after the projection: seq %d, %v; want %d", cp.LastEventSeq, err, len(evs))
	}
	for _, ev := range []store.RunEventWrite{
		workload.Event(id, store.EventStepFailed, "late", 1, 1, t0.Add(3*time.Second), map[string]any{"errorCode": "X"}),
		workload.Event(id, store.EventRunCompleted, "", 1, 1, t0.Add(4*time.Second), nil),
	} {
		if _, err := s.AppendEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.ProjectSnapshotOf(ctx, id.RunID, "tenant_a")
	if err != nil {
		t.Fatal(err)
	}
	want := full()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("projection from the checkpoint differs from FULL (-full +got):\n%s", diff)
	}
	if got.Status != store.RunCompleted || got.TerminalAt == "" {
		t.Fatalf("status %s terminalAt %q, want COMPLETED with the end's time", got.Status, got.TerminalAt)
	}
	for _, tc := range []struct{ run, reader string }{{id.RunID, "tenant_b"}, {"run-unknown", "tenant_a"}, {"run-unknown", ""}} {
		if _, err := s.ProjectSnapshotOf(ctx, tc.run, tc.reader); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("run %q read by %q: %v, want NOT_FOUND", tc.run, tc.reader, err)
		}
	}
}
