package postgres

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runstream/runstream/internal/tracing"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/validate"
)

// appendSQL and appendTracedSQL append one event; the second also gives
// the outbox row the append's trace context (migration 0021). An untraced
// append calls the same 15 arguments it always did: it costs nothing more
// with tracing off, and works on a schema migrated to any earlier version.
const (
	appendSQL = `SELECT o_status, o_event_id::text, o_run_seq, o_persisted_at, o_differs
FROM runstream_append($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14::json, $15)`
	appendTracedSQL = `SELECT o_status, o_event_id::text, o_run_seq, o_persisted_at, o_differs
FROM runstream_append($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14::json, $15, $16)`
)

// Statuses returned by runstream_append (migrations/0001, 0014).
const (
	statusInserted       = 0
	statusDuplicate      = 1
	statusTenantMismatch = 2
	statusRunArchived    = 3
)

// appendCall is the statement and arguments of runstream_append for w.
// traceParent is the W3C traceparent of the append's sampled span ("" when
// tracing is off or the span is not sampled): migration 0021 keeps it in
// the outbox row, in the same statement, for the relay to carry on.
func appendCall(w *store.RunEventWrite, traceParent string) (string, []any) {
	var step, payload any
	if w.StepID != "" {
		step = w.StepID
	}
	if len(w.Payload) > 0 {
		payload = string(w.Payload)
	}
	args := []any{w.RunID, w.TenantID, w.ProjectID, w.EnvironmentID, w.PlanID, w.PlanVersion,
		w.EventID, w.EventType, w.IdempotencyKey, step, int32(w.EngineAttemptID),
		int32(w.LogicalAttemptID), w.EmittedAt, payload, ShardOf(w.RunID)}
	if traceParent == "" {
		return appendSQL, args
	}
	return appendTracedSQL, append(args, traceParent)
}

// scanAppend reads one runstream_append row of w into an AppendResult.
func (s *Store) scanAppend(row pgx.Row, w *store.RunEventWrite) (store.AppendResult, error) {
	var (
		status    int16
		eventID   *string
		runSeq    *int64
		persisted *time.Time
		differs   *bool
	)
	if err := row.Scan(&status, &eventID, &runSeq, &persisted, &differs); err != nil {
		return store.AppendResult{}, err
	}
	switch status {
	case statusTenantMismatch:
		s.metrics.appends.WithLabelValues("rejected").Inc()
		return store.AppendResult{}, errTenant
	case statusRunArchived:
		s.metrics.appends.WithLabelValues("rejected").Inc()
		return store.AppendResult{}, &store.Error{Code: store.CodeRunArchived, Field: "runId", Message: fmt.Sprintf(
			"run %q was archived and its events removed from the store by retention: it takes no more events (a late or duplicate event of an ended run; do not retry it)", w.RunID)}
	case statusInserted, statusDuplicate:
	default:
		return store.AppendResult{}, fmt.Errorf("runstream_append returned unknown status %d", status)
	}
	if eventID == nil || runSeq == nil || persisted == nil {
		return store.AppendResult{}, errors.New("runstream_append returned no metadata")
	}
	res := store.AppendResult{
		EventID:     *eventID,
		RunSeq:      *runSeq,
		PersistedAt: store.FormatPersistedAt(*persisted),
		Idempotent:  status == statusDuplicate,
		Persisted:   status == statusInserted,
	}
	switch {
	case res.Persisted:
		s.metrics.appends.WithLabelValues("inserted").Inc()
		s.metrics.observeSkew(w, *persisted)
	case differs != nil && *differs:
		s.metrics.appends.WithLabelValues("duplicate_differs").Inc()
	default:
		s.metrics.appends.WithLabelValues("duplicate").Inc()
	}
	return res, nil
}

// AppendEvent validates w and appends it in one transaction: the run's
// counter row is locked and bumped, the event row and its outbox row are
// inserted, and the commit makes all three visible at once. A duplicate
// (runId, idempotencyKey) returns the existing row's metadata with
// Idempotent set (docs/CONTRACT.md, "Appending"), also under concurrent
// duplicates.
func (s *Store) AppendEvent(ctx context.Context, w store.RunEventWrite) (store.AppendResult, error) {
	if err := validate.Check(&w); err != nil {
		s.metrics.appends.WithLabelValues("rejected").Inc()
		return store.AppendResult{}, err
	}
	return s.AppendValidated(ctx, &w)
}

// AppendValidated appends w, which the caller has already validated with
// validate.DecodeWrite or validate.Check (the HTTP API does, to avoid
// validating twice on the hot path).
//
// Concurrent calls share transactions once the pool is saturated (see
// appendGroups); each returns after its own event committed.
func (s *Store) AppendValidated(ctx context.Context, w *store.RunEventWrite) (store.AppendResult, error) {
	return s.groups.append(ctx, w)
}

// appendOne appends w in a transaction of its own; traceParent is the
// append span's (see appendCall).
func (s *Store) appendOne(ctx context.Context, w *store.RunEventWrite, traceParent string) (store.AppendResult, error) {
	start := time.Now()
	sql, args := appendCall(w, traceParent)
	res, err := s.scanAppend(s.pool.QueryRow(ctx, sql, args...), w)
	s.metrics.appendTime.WithLabelValues("single").Observe(time.Since(start).Seconds())
	if err != nil {
		return store.AppendResult{}, classify(fmt.Errorf("appending event %s to run %q: %w", w.EventID, w.RunID, err))
	}
	if res.Persisted {
		s.pokeOutbox()
	}
	return res, nil
}

// BatchResult is one item's outcome in [Store.AppendBatch]: a Result, or an
// Err (a *store.Error for anything the caller can fix).
type BatchResult struct {
	Result store.AppendResult
	Err    error
}

// AppendBatch validates and appends many events in one transaction and
// returns one result per input, in input order. An invalid item gets its
// own error and does not stop the others. Events of one run get runSeq in
// input order. Rows are locked in runId order so concurrent batches cannot
// deadlock on each other's counter rows.
//
// If the transaction fails as a whole (the server went away), every valid
// item gets the same error; when one item makes the database fail (which
// validation should prevent), the batch falls back to one transaction per
// item so only that item fails.
func (s *Store) AppendBatch(ctx context.Context, writes []store.RunEventWrite) []BatchResult {
	out := make([]BatchResult, len(writes))
	var valid []int
	for i := range writes {
		if err := validate.Check(&writes[i]); err != nil {
			s.metrics.appends.WithLabelValues("rejected").Inc()
			out[i].Err = err
			continue
		}
		valid = append(valid, i)
	}
	s.appendValidatedBatch(ctx, writes, valid, out, nil, nil)
	return out
}

// A Pacer spaces a batch's steps. [Store.AppendValidatedBatch] sends a
// batch in steps, each one pipelined round trip inside the batch's
// transaction, and calls the pacer before each: it answers how many events
// the step sends (at least one), and may wait first, for example while
// other tenants' appends run, so that a large batch does not keep a
// database core busy for its whole length while they wait behind it. The
// transaction stays open while it waits, holding the locks of the batch's
// runs only; the wait must be short and bounded.
type Pacer func(ctx context.Context) (events int)

// AppendValidatedBatch is AppendBatch for writes the caller already
// validated; errs[i] non-nil marks an item that failed validation and is
// skipped (its result carries that error). With pace non-nil, the batch is
// sent in the steps pace says (see [Pacer]); nil sends it in one.
func (s *Store) AppendValidatedBatch(ctx context.Context, writes []store.RunEventWrite, errs []error, pace Pacer) []BatchResult {
	out := make([]BatchResult, len(writes))
	var valid []int
	for i := range writes {
		if errs != nil && errs[i] != nil {
			out[i].Err = errs[i]
			continue
		}
		valid = append(valid, i)
	}
	s.appendValidatedBatch(ctx, writes, valid, out, nil, pace)
	return out
}

// appendValidatedBatch appends writes[valid] in one transaction, in the
// steps pace says (nil: one). Their trace parents are parents[i], or with
// parents nil the span's of ctx (one request's batch).
func (s *Store) appendValidatedBatch(ctx context.Context, writes []store.RunEventWrite, valid []int, out []BatchResult, parents []string, pace Pacer) {
	if len(valid) == 0 {
		return
	}
	parentOf := func(int) string { return "" }
	if parents != nil {
		parentOf = func(i int) string { return parents[i] }
	} else if p := tracing.Parent(ctx); p != "" {
		parentOf = func(int) string { return p }
	}
	sort.SliceStable(valid, func(a, b int) bool { return writes[valid[a]].RunID < writes[valid[b]].RunID })
	start := time.Now()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for rest := valid; len(rest) > 0; {
			n := len(rest)
			if pace != nil {
				n = min(max(pace(ctx), 1), n)
			}
			if err := s.appendStep(ctx, tx, writes, rest[:n], out, parentOf); err != nil {
				return err
			}
			rest = rest[n:]
		}
		return nil
	})
	s.metrics.appendTime.WithLabelValues("batch").Observe(time.Since(start).Seconds())
	if err == nil {
		s.pokeOutbox()
		return
	}
	err = classify(fmt.Errorf("appending a batch of %d events: %w", len(valid), err))
	if errors.Is(err, store.ErrUnavailable) || ctx.Err() != nil {
		for _, i := range valid {
			out[i] = BatchResult{Err: err}
		}
		return
	}
	s.log.Warn("batch append failed; retrying its items one transaction each", "err", err, "events", len(valid))
	for _, i := range valid {
		res, err := s.appendOne(ctx, &writes[i], parentOf(i))
		out[i] = BatchResult{Result: res, Err: err}
	}
}

// appendStep sends writes[step] in one pipelined round trip of tx and
// fills their results; an error that is not an item's own ends the batch.
func (s *Store) appendStep(ctx context.Context, tx pgx.Tx, writes []store.RunEventWrite, step []int, out []BatchResult, parentOf func(int) string) error {
	b := &pgx.Batch{}
	for _, i := range step {
		sql, args := appendCall(&writes[i], parentOf(i))
		b.Queue(sql, args...)
	}
	br := tx.SendBatch(ctx, b)
	for _, i := range step {
		res, err := s.scanAppend(br.QueryRow(), &writes[i])
		var se *store.Error
		if errors.As(err, &se) {
			out[i] = BatchResult{Err: err}
			continue
		}
		if err != nil {
			_ = br.Close()
			return err
		}
		out[i] = BatchResult{Result: res}
	}
	return br.Close()
}
