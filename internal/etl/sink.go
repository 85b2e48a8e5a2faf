package etl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/runstream/runstream/consumer"
	"github.com/runstream/runstream/consumer/pgcheckpoint"
	"github.com/runstream/runstream/internal/jsonx"
	"github.com/runstream/runstream/reduce"
	"github.com/runstream/runstream/store"
)

// sink is the consumer.Handler that keeps the runs and step_attempts
// tables. Its writes go through pgcheckpoint.Tx(ctx), the transaction in
// which the consumer also commits the events' checkpoints.
//
// How a run's rows follow its events: the rows are read back into a
// partial store.RunSnapshot (the fields the tables keep), or the snapshot
// this process committed last is taken from the run cache, the events are
// folded in with a reduce.Projection, the one reducer the projector and the
// store use, and the rows are written back from the result. So statuses,
// attempts (a retry is a new logical attempt, a late event lands on its
// own attempt, a terminal run is frozen) and durations are decided by the
// same code as the snapshots the API serves, not by a second
// implementation in SQL that could drift from it. None of the fields the
// tables drop (artifacts' URIs, skip reasons, substatus, the run's error)
// feeds any field they keep.
//
// Batching: by default the handler folds each event into its run's
// snapshot as it comes (pending.add) and batcher.Transact writes the
// transaction's runs when the consumer's function returns, just before
// the checkpoints, with one pipelined read (of the runs the cache cannot
// vouch for) and one pipelined write (inserts and updates) for the whole
// partition batch. Without the batcher (DisableBatching) the handler
// writes each event as it comes, in the same transaction.
type sink struct {
	log       *slog.Logger
	flushTime prometheus.Observer
	// parts knows the partitions; fetcher reads a run's first event when
	// the sink must know the run's month and has not seen it (monthOfNewRun).
	parts   *partitions
	fetcher consumer.Fetcher
	now     func() time.Time
	// upsertAll is set once a write met a unique violation (see
	// noteWriteError).
	upsertAll atomic.Bool
	// cache holds runs' snapshots as last committed, so that a run's next
	// batch need not read its rows back; nil without the batcher, which
	// tells it what committed.
	cache *runCache
}

// pending holds one transaction's runs in first-seen order, each with the
// transaction's events folded into its snapshot so far.
//
// A run's events are folded as they arrive when its state before the
// transaction is known then: none for a run whose first event is runSeq 1,
// or the run cache's snapshot. So a transaction holds a snapshot per run
// rather than its events, and costs about as much per event however large
// it grows. Only the events of a run whose rows must be read back wait, in
// order, for flush, which reads all such runs' rows at once.
type pending struct {
	runs  map[string]*runEvents
	order []*runEvents
	// cache is where a run's state before the transaction may be found;
	// nil: read every run's rows back.
	cache *runCache
	// month is the current month when the transaction started.
	month time.Time
}

// projecting is how the sink projects: the tables keep only how many
// artifacts an attempt has.
var projecting = reduce.Options{ArtifactCounts: true}

// attemptKey names one step_attempts row of a run.
type attemptKey struct {
	step    string
	logical int64
}

// runEvents is one run's events in a transaction.
type runEvents struct {
	id string
	// first and last are the runSeq of the run's first and last event in
	// the transaction, unknown types included; firstAt is the persistedAt
	// of the first one, events how many there are.
	first, last int64
	firstAt     string
	events      int
	// known counts the run's events of known types.
	known int
	// month is the run's partition key (run_month), zero until known: from
	// the rows read back or the cache, or for a run without rows from the
	// persistedAt of its runSeq 1 (monthOfNewRun).
	month time.Time
	// based: base, the run's state before the transaction, is known, and
	// proj folds its events into it as they arrive. A run is based from
	// its first event when that is runSeq 1 of the current month (see
	// pending.currentMonth: it has no rows) or when the run cache vouches
	// for its snapshot; otherwise in flush, once its rows are read back.
	based bool
	base  store.RunSnapshot
	proj  reduce.Projection
	// held are the events that wait for the run's rows, in order (not
	// based yet).
	held []store.RunEventRecord
	// next is the run's snapshot after the transaction, once flushed.
	next *store.RunSnapshot
	// touched lists the step attempts the events name, each once.
	touched []attemptKey
	seen    map[attemptKey]bool // for runs touching many attempts
}

// add folds ev into its run, or holds it until flush. It may modify ev
// (times cut to microseconds): the caller passes its own copy.
func (p *pending) add(ev *store.RunEventRecord) {
	if p.runs == nil {
		p.runs = map[string]*runEvents{}
	}
	r := p.runs[ev.RunID]
	if r == nil {
		r = &runEvents{id: ev.RunID, first: ev.RunSeq, firstAt: ev.PersistedAt}
		if m, ok := p.currentMonth(ev); ok {
			r.based, r.month, r.proj = true, m, reduce.NewProjection(store.RunSnapshot{}, projecting)
		} else if sn, m, ok := p.cache.get(ev.RunID, ev.RunSeq-1); ok {
			r.based, r.base, r.month, r.proj = true, sn, m, reduce.NewProjection(sn, projecting)
		}
		p.runs[ev.RunID] = r
		p.order = append(p.order, r)
	}
	r.last = ev.RunSeq
	r.events++
	// A future event type changes no column but last_event_seq and
	// updated_at, as it changes only lastEventSeq and updatedAt in the
	// snapshot: the reducer says so. It makes no row of its own (see
	// flush).
	if store.IsKnownEvent(ev.EventType) {
		r.known++
	}
	if store.IsStepEvent(ev.EventType) && ev.StepID != "" {
		r.touch(attemptKey{ev.StepID, ev.LogicalAttemptID})
	}
	microseconds(ev)
	if r.based {
		r.proj.Add(ev)
	} else {
		r.held = append(r.held, *ev)
	}
}

// currentMonth returns the month of ev, a run's first event in the
// transaction, when the run has no rows for sure: ev is its runSeq 1
// (the consumer delivers a run's events in order from its checkpoint + 1,
// so the checkpoint was 0), and of the current month, whose rows the
// checkpoint read looks in (ownCheckpoints: a row there would have
// given a checkpoint). A runSeq 1 of an older month may be the
// redelivery of a run whose row the checkpoint read did not look for.
func (p *pending) currentMonth(ev *store.RunEventRecord) (time.Time, bool) {
	if ev.RunSeq != 1 {
		return time.Time{}, false
	}
	t, ok := parseTimeValue(ev.PersistedAt)
	if !ok || monthOf(t) != p.month {
		return time.Time{}, false
	}
	return p.month, true
}

// touch adds k to r.touched unless it is there: a linear search while the
// list is short (most runs touch a few attempts per batch), a map beyond.
func (r *runEvents) touch(k attemptKey) {
	const linear = 16
	if r.seen == nil {
		for _, t := range r.touched {
			if t == k {
				return
			}
		}
		r.touched = append(r.touched, k)
		if len(r.touched) > linear {
			r.seen = make(map[attemptKey]bool, 2*len(r.touched))
			for _, t := range r.touched {
				r.seen[t] = true
			}
		}
		return
	}
	if !r.seen[k] {
		r.seen[k] = true
		r.touched = append(r.touched, k)
	}
}

type ctxKey int

const (
	pendingKey ctxKey = iota
	partitionsKey
)

// Handle implements consumer.Handler.
func (s *sink) Handle(ctx context.Context, ev consumer.Event) error {
	if p, ok := ctx.Value(pendingKey).(*pending); ok {
		p.add(&ev.RunEventRecord)
		return nil
	}
	tx := pgcheckpoint.Tx(ctx)
	if tx == nil {
		return ErrNoTransaction
	}
	p := pending{month: monthOf(s.now())}
	p.add(&ev.RunEventRecord)
	err := s.flush(ctx, tx, &p, nil, s.upsertAll.Load())
	s.noteWriteError(err)
	if st := partitionsOf(ctx); st != nil && isNoPartition(err) {
		// The consumer hides the cause behind its handler error.
		st.stale = true
	}
	return err
}

// noteWriteError switches the sink to upserts for good when a write hit a
// unique violation: its INSERTs rely on knowing which rows exist (from
// the rows read back and the run cache, under the checkpoints' locks), and
// a violation means that knowledge was wrong (a bug, or rows written by
// something else). The transaction is retried by the consumer; with
// upserts it goes through, and the cache, which may be what was wrong, is
// emptied.
func (s *sink) noteWriteError(err error) {
	var pe *pgconn.PgError
	if err == nil || !errors.As(err, &pe) || pe.Code != pgerrcode.UniqueViolation {
		return
	}
	if !s.upsertAll.Swap(true) {
		s.log.Error("a sink INSERT found its row already there; writing every row with upserts from now on (please report this)",
			"table", pe.TableName, "constraint", pe.ConstraintName, "detail", pe.Detail)
	}
	s.cache.clear()
}

// batcher wraps the checkpoint store so that the sink writes a whole
// transaction's events at once, in that transaction, right before the
// checkpoints.
type batcher struct {
	inner consumer.Checkpoints
	sink  *sink
}

// Transact implements consumer.Checkpoints. Each call of the consumer's fn
// gets a fresh pending, so a retried transaction never sees the events of
// a rolled-back attempt; the run cache learns the new snapshots only once
// the transaction committed.
func (b *batcher) Transact(ctx context.Context, group string, fn func(context.Context, consumer.CheckpointTx) error) error {
	var p *pending
	var flushed time.Time
	err := b.inner.Transact(ctx, group, func(ctx context.Context, ctp consumer.CheckpointTx) error {
		p, flushed = &pending{cache: b.sink.cache, month: monthOf(b.sink.now())}, time.Time{}
		if err := fn(context.WithValue(ctx, pendingKey, p), ctp); err != nil {
			return err
		}
		if len(p.order) == 0 {
			return nil
		}
		tx := pgcheckpoint.Tx(ctx)
		if tx == nil {
			return ErrNoTransaction
		}
		// The writes go in the checkpoint store's batch: one round trip
		// with the checkpoints.
		flushed = time.Now()
		return b.sink.flush(ctx, tx, p, pgcheckpoint.Batch(ctx), b.sink.upsertAll.Load())
	})
	b.sink.noteWriteError(err)
	if err == nil && !flushed.IsZero() {
		// From the read-back to the commit, the writes' round trip
		// included.
		b.sink.flushTime.Observe(time.Since(flushed).Seconds())
	}
	if err == nil && p != nil && b.sink.cache != nil {
		b.sink.cache.commit(p)
	}
	return err
}

// flush reads back the rows of the runs p could not fold yet, folds their
// events in, and writes every run's rows in tx, or, when into is not nil,
// queues the writes there (for the checkpoint store to send with the
// checkpoints, at the end of the transaction). With upsert, every row is
// written with INSERT ... ON CONFLICT DO UPDATE rather than INSERT or
// UPDATE as the previous state says.
func (s *sink) flush(ctx context.Context, tx pgx.Tx, p *pending, into *pgx.Batch, upsert bool) error {
	if into == nil {
		start := time.Now()
		defer func() { s.flushTime.Observe(time.Since(start).Seconds()) }()
	}
	now := s.now()
	if err := s.readBack(ctx, tx, p, now); err != nil {
		return err
	}
	var fresh []*runEvents
	for _, r := range p.order {
		next := r.proj.Snapshot()
		if next.RunID == "" || (r.base.RunID == "" && r.known == 0) {
			// Every event was a duplicate of what the rows hold, or the run
			// has no rows and only events of unknown types, which make none:
			// its checkpoint goes to the checkpoint table.
			continue
		}
		if r.base.RunID != "" && next.LastEventSeq == r.base.LastEventSeq {
			// Nothing past what the row holds: a run whose row is older
			// than the months the checkpoint read looks in (ownCheckpoints)
			// got events it had again.
			continue
		}
		r.next = &next
		if r.base.RunID == "" {
			fresh = append(fresh, r)
		}
	}
	if err := s.placeNewRuns(ctx, tx, fresh, now); err != nil {
		return err
	}
	// Each row goes to a plain INSERT when the run's previous state (the
	// rows read back, the cache, or nothing for a fresh run) shows it does
	// not exist yet, and to an UPDATE when it does: an upsert's speculative
	// insertion costs Postgres about twice a plain insert, and most rows
	// are new. With upsert set (the retry after a unique violation, which
	// only a bug could cause) every row is upserted instead.
	var ins newRows
	var upd updates
	// Most rows are new: size the new rows' list for all of them, so that
	// it is not grown (and copied) row by row.
	nAttempts := 0
	for _, r := range p.order {
		nAttempts += len(r.touched)
	}
	ins.runs, ins.attempts = make([]newRun, 0, len(p.order)), make([]newAttempt, 0, nAttempts)
	for _, r := range p.order {
		next := r.next
		if next == nil {
			continue
		}
		base := &r.base
		if r.month.IsZero() {
			return fmt.Errorf("etl: run %q has no month to write its rows in (a bug)", r.id)
		}
		if recordsOwnCheckpoint(r.month, now) {
			// The run's row records its checkpoint (see Run).
			pgcheckpoint.Recorded(ctx, r.id, next.LastEventSeq)
		}
		if base.RunID == "" {
			ins.runs = append(ins.runs, newRun{next, r.month})
		} else {
			upd.of(r.month).addRun(next, r.month)
		}
		for _, k := range r.touched {
			st, a := findAttempt(next, k)
			if a == nil {
				continue
			}
			if _, old := findAttempt(base, k); old == nil {
				ins.attempts = append(ins.attempts, newAttempt{next.RunID, st, a, r.month})
			} else {
				upd.of(r.month).addAttempt(next.RunID, st, a, r.month)
			}
		}
	}
	return writeRows(ctx, tx, into, &ins, &upd, upsert)
}

// readBack bases the runs p could not fold yet on their rows, and folds
// their events in. It reads the rows in the hot partitions (hotFrom), then
// in the older ones those of the runs it did not find there whose rows
// could be older: a run's rows are found wherever they are, while most
// transactions probe two partitions per run, not every one the tables have.
func (s *sink) readBack(ctx context.Context, tx pgx.Tx, p *pending, now time.Time) error {
	var load []string
	for _, r := range p.order {
		if !r.based {
			load = append(load, r.id)
		}
	}
	if len(load) == 0 {
		return nil
	}
	hot := hotFrom(now)
	prev, err := loadRuns(ctx, tx, load, hot, time.Time{})
	if err != nil {
		return err
	}
	var older []string
	for _, r := range p.order {
		if r.based {
			continue
		}
		if _, ok := prev[clean(r.id)]; ok {
			continue
		}
		if t, ok := parseTimeValue(r.firstAt); ok && r.first == 1 && !monthOf(t).Before(hot) {
			// Its rows, if it had any, would be in its first event's
			// month, a hot one: it has none.
			r.month = monthOf(t)
			continue
		}
		older = append(older, r.id)
	}
	if len(older) > 0 {
		cold, err := loadRuns(ctx, tx, older, time.Time{}, hot)
		if err != nil {
			return err
		}
		maps.Copy(prev, cold)
	}
	for _, r := range p.order {
		if r.based {
			continue
		}
		if l, ok := prev[clean(r.id)]; ok {
			r.base, r.month = l.snap, l.month
		}
		// Events at or below the row's last_event_seq are duplicates to
		// the reducer: they reach the sink when the run's checkpoint was
		// read short of its row (an older month's row, see ownCheckpoints).
		r.proj = reduce.NewProjection(r.base, projecting)
		for i := range r.held {
			r.proj.Add(&r.held[i])
		}
		r.based, r.held = true, nil
	}
	return nil
}

// placeNewRuns finds the month of each run in fresh (runs getting their
// first rows), takes out those the retention dropped (their month is
// before etl_retention.kept_from: written again, they would be a late
// event's half of a run), and checks that the others' partitions exist,
// failing with errMissingPartitions, for partitioner, when one does not.
//
// kept_from is read only when a run belongs to an earlier month than the
// current one (the retention never closes the current month), under the
// retention's lock, shared, held to the end of the transaction: the
// retention cannot close the month between this read and the commit, and
// once it closed it no run goes in unseen.
func (s *sink) placeNewRuns(ctx context.Context, tx pgx.Tx, fresh []*runEvents, now time.Time) error {
	this := monthOf(now)
	older := false
	for _, r := range fresh {
		if r.month.IsZero() {
			m, err := s.monthOfNewRun(ctx, r)
			if err != nil {
				return err
			}
			r.month = m
		}
		older = older || r.month.Before(this)
	}
	if older {
		b := &pgx.Batch{}
		b.Queue(`SELECT pg_advisory_xact_lock_shared(` + retentionLock + `)`)
		b.Queue(`SELECT kept_from FROM etl_retention`)
		br := tx.SendBatch(ctx, b)
		var kept *time.Time
		_, err := br.Exec()
		if err == nil {
			err = br.QueryRow().Scan(&kept)
		}
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("reading the retention's kept_from: %w", err)
		}
		st := partitionsOf(ctx)
		for _, r := range fresh {
			if kept != nil && r.month.Before(*kept) {
				s.log.Debug("event of a run whose month the retention dropped: not written",
					"runId", r.id, "month", r.month.Format("2006-01"), "runSeq", r.last)
				if st != nil {
					st.retired += r.events
				}
				r.next = nil
			}
		}
	}
	var missing []time.Time
	for _, r := range fresh {
		if r.next != nil && !s.parts.has(r.month) && !slices.Contains(missing, r.month) {
			missing = append(missing, r.month)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if st := partitionsOf(ctx); st != nil {
		st.missing = missing
	}
	return fmt.Errorf("%w (months %v)", errMissingPartitions, missing)
}

// monthOfNewRun returns the month of the persistedAt of r's first event
// (runSeq 1): r's own first event when it is that one, else the store's,
// for a run seen first from a later event (its first events were of
// unknown types, or its rows were dropped by the retention and a late
// event came).
func (s *sink) monthOfNewRun(ctx context.Context, r *runEvents) (time.Time, error) {
	if t, ok := parseTimeValue(r.firstAt); ok && r.first == 1 {
		return monthOf(t), nil
	}
	if s.fetcher != nil {
		evs, err := s.fetcher.FetchEvents(ctx, r.id, store.FetchOptions{AfterSeq: 0, Limit: 1})
		if err != nil {
			return time.Time{}, fmt.Errorf("reading the first event of run %q (its month is the tables' partition key): %w", r.id, err)
		}
		if len(evs) > 0 {
			if t, ok := parseTimeValue(evs[0].PersistedAt); ok {
				return monthOf(t), nil
			}
		}
	}
	// The store has not got it: the earliest event seen will do.
	if t, ok := parseTimeValue(r.firstAt); ok {
		return monthOf(t), nil
	}
	return monthOf(s.now()), nil
}

// findAttempt returns the attempt k of the snapshot, nil when the run never
// got it (a step event that reached a terminal run changes nothing).
func findAttempt(s *store.RunSnapshot, k attemptKey) (string, *store.StepAttempt) {
	for i := range s.Steps {
		st := &s.Steps[i]
		if st.StepID != k.step {
			continue
		}
		if st.LogicalAttemptID == k.logical {
			return st.StepID, &st.StepAttempt
		}
		for j := range st.Attempts {
			if st.Attempts[j].LogicalAttemptID == k.logical {
				return st.StepID, &st.Attempts[j]
			}
		}
		return "", nil
	}
	return "", nil
}

// The columns a flush writes: the data columns (runDataColumns,
// attemptDataColumns) and the partition key after them (runColumns,
// attemptColumns).
const (
	runDataColumns = `run_id, tenant_id, project_id, environment_id, plan_id, plan_version, status,
		started_at, completed_at, duration_ms, steps, failed_steps, attempts_total, last_event_seq, updated_at`
	attemptDataColumns = `run_id, step_id, logical_attempt_id, engine_attempt_id, status,
		started_at, completed_at, duration_ms, error_code, error_message, failure_category, artifacts_count`
	runColumns     = runDataColumns + `, run_month`
	attemptColumns = attemptDataColumns + `, run_month`
)

// loadedRun is a run's rows read back: what the tables keep of its
// snapshot, and its month.
type loadedRun struct {
	snap  store.RunSnapshot
	month time.Time
}

// Bounds of run_month for loadRuns when there is none.
var (
	firstMonth = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	lastMonth  = time.Date(9999, 12, 1, 0, 0, 0, 0, time.UTC)
)

// loadRuns reads ids' rows back, from the partitions of the months in
// [from, before) (a zero bound is none), with one pipelined round trip for
// both tables. The bounds are parameters of the statements, so Postgres
// reads only those partitions. The map's keys are the run IDs as stored
// (see clean).
func loadRuns(ctx context.Context, tx pgx.Tx, ids []string, from, before time.Time) (map[string]loadedRun, error) {
	out := make(map[string]loadedRun, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	for i, id := range ids {
		ids[i] = clean(id)
	}
	if from.IsZero() {
		from = firstMonth
	}
	if before.IsZero() {
		before = lastMonth
	}
	b := &pgx.Batch{}
	b.Queue(`SELECT `+runColumns+` FROM runs WHERE run_id = ANY($1) AND run_month >= $2::date AND run_month < $3::date`,
		ids, from, before)
	b.Queue(`SELECT `+attemptDataColumns+` FROM step_attempts
		WHERE run_id = ANY($1) AND run_month >= $2::date AND run_month < $3::date
		ORDER BY run_id, step_id, logical_attempt_id`, ids, from, before)
	br := tx.SendBatch(ctx, b)
	defer br.Close()

	rs, err := br.Query()
	if err != nil {
		return nil, fmt.Errorf("reading runs: %w", err)
	}
	for rs.Next() {
		var s store.RunSnapshot
		var started, completed, updated *time.Time
		var steps, failed, attempts int32
		var month time.Time
		if err := rs.Scan(&s.RunID, &s.TenantID, &s.ProjectID, &s.EnvironmentID, &s.PlanID, &s.PlanVersion, &s.Status,
			&started, &completed, &s.TotalDurationMs, &steps, &failed, &attempts, &s.LastEventSeq, &updated, &month); err != nil {
			rs.Close()
			return nil, fmt.Errorf("reading runs: %w", err)
		}
		s.StartedAt, s.CompletedAt, s.UpdatedAt = formatTime(started), formatTime(completed), formatTime(updated)
		s.FailedSteps = int(failed)
		s.Steps, s.Artifacts = []store.StepSnapshot{}, []store.ArtifactRef{}
		out[s.RunID] = loadedRun{snap: s, month: month.UTC()}
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("reading runs: %w", err)
	}

	as, err := br.Query()
	if err != nil {
		return nil, fmt.Errorf("reading step attempts: %w", err)
	}
	defer as.Close()
	for as.Next() {
		var runID, stepID string
		var a store.StepAttempt
		var started, completed *time.Time
		var code, msg, category *string
		var artifacts int32
		if err := as.Scan(&runID, &stepID, &a.LogicalAttemptID, &a.EngineAttemptID, &a.Status,
			&started, &completed, &a.DurationMs, &code, &msg, &category, &artifacts); err != nil {
			return nil, fmt.Errorf("reading step attempts: %w", err)
		}
		a.StartedAt, a.CompletedAt = formatTime(started), formatTime(completed)
		if code != nil || msg != nil || category != nil {
			a.Error = &store.ErrorInfo{Code: deref(code), Message: deref(msg), Category: deref(category)}
		}
		// Only the count is kept; the reducer replaces or keeps the slice
		// as a whole, so placeholders count right.
		a.Artifacts = make([]store.ArtifactRef, artifacts)
		l, ok := out[runID]
		if !ok {
			continue // cannot happen: rows commit together
		}
		s := &l.snap
		// Rows come in (step, logical attempt) order: the last attempt of
		// a step is its current one, the earlier ones its history.
		if n := len(s.Steps); n > 0 && s.Steps[n-1].StepID == stepID {
			st := &s.Steps[n-1]
			st.Attempts = append(st.Attempts, st.StepAttempt)
			st.StepAttempt = a
		} else {
			s.Steps = append(s.Steps, store.StepSnapshot{StepID: stepID, StepAttempt: a, Attempts: []store.StepAttempt{}})
		}
		out[runID] = l
	}
	if err := as.Err(); err != nil {
		return nil, fmt.Errorf("reading step attempts: %w", err)
	}
	return out, nil
}

// rows are the rows one flush writes, column by column for unnest.
type rows struct {
	run     runCols
	attempt attemptCols
}

type runCols struct {
	id, tenant, project, env, plan, version, status []string
	started, completed, updated                     []*time.Time
	duration                                        []*int64
	steps, failed, attempts                         []int32
	seq                                             []int64
	month                                           []time.Time
}

type attemptCols struct {
	run, step, status       []string
	logical, engine         []int64
	started, completed      []*time.Time
	duration                []*int64
	code, message, category []*string
	artifacts               []int32
	month                   []time.Time
}

// grow sizes o's columns for runs and attempts rows.
func (o *rows) grow(runs, attempts int) {
	r := &o.run
	r.id, r.tenant, r.project, r.env = make([]string, 0, runs), make([]string, 0, runs), make([]string, 0, runs), make([]string, 0, runs)
	r.plan, r.version, r.status = make([]string, 0, runs), make([]string, 0, runs), make([]string, 0, runs)
	r.started, r.completed, r.updated = make([]*time.Time, 0, runs), make([]*time.Time, 0, runs), make([]*time.Time, 0, runs)
	r.duration, r.seq = make([]*int64, 0, runs), make([]int64, 0, runs)
	r.steps, r.failed, r.attempts = make([]int32, 0, runs), make([]int32, 0, runs), make([]int32, 0, runs)
	r.month = make([]time.Time, 0, runs)

	a := &o.attempt
	a.run, a.step, a.status = make([]string, 0, attempts), make([]string, 0, attempts), make([]string, 0, attempts)
	a.logical, a.engine = make([]int64, 0, attempts), make([]int64, 0, attempts)
	a.started, a.completed = make([]*time.Time, 0, attempts), make([]*time.Time, 0, attempts)
	a.duration = make([]*int64, 0, attempts)
	a.code, a.message, a.category = make([]*string, 0, attempts), make([]*string, 0, attempts), make([]*string, 0, attempts)
	a.artifacts = make([]int32, 0, attempts)
	a.month = make([]time.Time, 0, attempts)
}

// attemptRows is how many step_attempts rows s makes: each step's
// current attempt and its history.
func attemptRows(s *store.RunSnapshot) int {
	n := 0
	for i := range s.Steps {
		n += 1 + len(s.Steps[i].Attempts)
	}
	return n
}

func (o *rows) addRun(s *store.RunSnapshot, month time.Time) {
	c := &o.run
	attempts := attemptRows(s)
	c.id = append(c.id, clean(s.RunID))
	c.tenant = append(c.tenant, clean(s.TenantID))
	c.project = append(c.project, clean(s.ProjectID))
	c.env = append(c.env, clean(s.EnvironmentID))
	c.plan = append(c.plan, clean(s.PlanID))
	c.version = append(c.version, clean(s.PlanVersion))
	c.status = append(c.status, clean(s.Status))
	c.started = append(c.started, parseTime(s.StartedAt))
	c.completed = append(c.completed, parseTime(s.CompletedAt))
	c.duration = append(c.duration, s.TotalDurationMs)
	c.steps = append(c.steps, int32(min(len(s.Steps), 1<<31-1)))
	c.failed = append(c.failed, int32(min(s.FailedSteps, 1<<31-1)))
	c.attempts = append(c.attempts, int32(min(attempts, 1<<31-1)))
	c.seq = append(c.seq, s.LastEventSeq)
	c.updated = append(c.updated, parseTime(s.UpdatedAt))
	c.month = append(c.month, month)
}

func (o *rows) addAttempt(runID, stepID string, a *store.StepAttempt, month time.Time) {
	c := &o.attempt
	c.run = append(c.run, clean(runID))
	c.step = append(c.step, clean(stepID))
	c.logical = append(c.logical, a.LogicalAttemptID)
	c.engine = append(c.engine, a.EngineAttemptID)
	c.status = append(c.status, clean(a.Status))
	c.started = append(c.started, parseTime(a.StartedAt))
	c.completed = append(c.completed, parseTime(a.CompletedAt))
	c.duration = append(c.duration, a.DurationMs)
	var code, msg, category *string
	if e := a.Error; e != nil {
		code, msg, category = nullable(e.Code), nullable(e.Message), nullable(e.Category)
	}
	c.code = append(c.code, code)
	c.message = append(c.message, msg)
	c.category = append(c.category, category)
	c.artifacts = append(c.artifacts, int32(min(len(a.Artifacts), 1<<31-1)))
	c.month = append(c.month, month)
}

// updates are a flush's changed rows by month. Each month's go in UPDATEs
// of their own whose run_month is a parameter, not a column of the
// unnested rows: Postgres then reads only that month's partition, where a
// join on run_month was planned, for a few thousand rows, as a hash join
// over every partition.
type updates struct {
	months  []time.Time
	byMonth map[time.Time]*rows
}

// of returns the changed rows of month m.
func (u *updates) of(m time.Time) *rows {
	if r, ok := u.byMonth[m]; ok {
		return r
	}
	if u.byMonth == nil {
		u.byMonth = map[time.Time]*rows{}
	}
	r := &rows{}
	u.byMonth[m] = r
	u.months = append(u.months, m)
	return r
}

// The writes overwrite whole rows: flush computed each row's complete new
// state. unnest turns the column arrays into rows in one statement, however
// many runs the batch touched. The INSERTs take run_month as a column (a
// row goes to its month's partition); the UPDATEs as a parameter, $16 and
// $13 (see updates).
const (
	runDataParams = `$1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
			$8::timestamptz[], $9::timestamptz[], $10::bigint[], $11::integer[], $12::integer[], $13::integer[],
			$14::bigint[], $15::timestamptz[]`
	runParams         = `unnest(` + runDataParams + `, $16::date[])`
	attemptDataParams = `$1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::text[],
			$6::timestamptz[], $7::timestamptz[], $8::bigint[], $9::text[], $10::text[], $11::text[], $12::integer[]`
	attemptParams = `unnest(` + attemptDataParams + `, $13::date[])`

	insertRuns = `INSERT INTO runs (` + runColumns + `) SELECT * FROM ` + runParams
	updateRuns = `UPDATE runs AS r SET
			tenant_id = u.tenant_id, project_id = u.project_id, environment_id = u.environment_id,
			plan_id = u.plan_id, plan_version = u.plan_version, status = u.status,
			started_at = u.started_at, completed_at = u.completed_at, duration_ms = u.duration_ms,
			steps = u.steps, failed_steps = u.failed_steps, attempts_total = u.attempts_total,
			last_event_seq = u.last_event_seq, updated_at = u.updated_at
		FROM unnest(` + runDataParams + `) AS u(` + runDataColumns + `)
		WHERE r.run_month = $16::date AND r.run_id = u.run_id`
	upsertRuns = insertRuns + `
		ON CONFLICT (run_id, run_month) DO UPDATE SET
			tenant_id = EXCLUDED.tenant_id, project_id = EXCLUDED.project_id,
			environment_id = EXCLUDED.environment_id, plan_id = EXCLUDED.plan_id,
			plan_version = EXCLUDED.plan_version, status = EXCLUDED.status,
			started_at = EXCLUDED.started_at, completed_at = EXCLUDED.completed_at,
			duration_ms = EXCLUDED.duration_ms, steps = EXCLUDED.steps,
			failed_steps = EXCLUDED.failed_steps, attempts_total = EXCLUDED.attempts_total,
			last_event_seq = EXCLUDED.last_event_seq, updated_at = EXCLUDED.updated_at`

	insertAttempts = `INSERT INTO step_attempts (` + attemptColumns + `) SELECT * FROM ` + attemptParams
	updateAttempts = `UPDATE step_attempts AS a SET
			engine_attempt_id = u.engine_attempt_id, status = u.status,
			started_at = u.started_at, completed_at = u.completed_at, duration_ms = u.duration_ms,
			error_code = u.error_code, error_message = u.error_message,
			failure_category = u.failure_category, artifacts_count = u.artifacts_count
		FROM unnest(` + attemptDataParams + `) AS u(` + attemptDataColumns + `)
		WHERE a.run_month = $13::date AND a.run_id = u.run_id AND a.step_id = u.step_id
			AND a.logical_attempt_id = u.logical_attempt_id`
	upsertAttempts = insertAttempts + `
		ON CONFLICT (run_id, step_id, logical_attempt_id, run_month) DO UPDATE SET
			engine_attempt_id = EXCLUDED.engine_attempt_id, status = EXCLUDED.status,
			started_at = EXCLUDED.started_at, completed_at = EXCLUDED.completed_at,
			duration_ms = EXCLUDED.duration_ms, error_code = EXCLUDED.error_code,
			error_message = EXCLUDED.error_message, failure_category = EXCLUDED.failure_category,
			artifacts_count = EXCLUDED.artifacts_count`
)

// columnList splits a comma-separated list of column names.
func columnList(cols string) []string {
	return strings.Fields(strings.ReplaceAll(cols, ",", " "))
}

// queueRuns queues sql, an INSERT or upsert, with o's runs rows.
func (o *rows) queueRuns(b *pgx.Batch, sql string) {
	if r := &o.run; len(r.id) > 0 {
		b.Queue(sql, r.id, r.tenant, r.project, r.env, r.plan, r.version, r.status,
			r.started, r.completed, r.duration, r.steps, r.failed, r.attempts, r.seq, r.updated, r.month)
	}
}

// queueRunUpdates queues the UPDATE of o's runs rows, all of month m.
func (o *rows) queueRunUpdates(b *pgx.Batch, m time.Time) {
	if r := &o.run; len(r.id) > 0 {
		b.Queue(updateRuns, r.id, r.tenant, r.project, r.env, r.plan, r.version, r.status,
			r.started, r.completed, r.duration, r.steps, r.failed, r.attempts, r.seq, r.updated, m)
	}
}

// queueAttempts queues sql, an INSERT or upsert, with o's step_attempts
// rows.
func (o *rows) queueAttempts(b *pgx.Batch, sql string) {
	if a := &o.attempt; len(a.run) > 0 {
		b.Queue(sql, a.run, a.step, a.logical, a.engine, a.status,
			a.started, a.completed, a.duration, a.code, a.message, a.category, a.artifacts, a.month)
	}
}

// queueAttemptUpdates queues the UPDATE of o's step_attempts rows, all
// of month m.
func (o *rows) queueAttemptUpdates(b *pgx.Batch, m time.Time) {
	if a := &o.attempt; len(a.run) > 0 {
		b.Queue(updateAttempts, a.run, a.step, a.logical, a.engine, a.status,
			a.started, a.completed, a.duration, a.code, a.message, a.category, a.artifacts, m)
	}
}

// copyMinRows is the fewest new rows of a table that go through COPY
// rather than an INSERT of unnested arrays. COPY costs Postgres less per
// row (no array to unpack into a tuplestore, several rows per heap page
// and WAL record) and the client less (rows are encoded straight from the
// snapshots, a chunk at a time, instead of into one Bind message the size
// of the batch), but it is a round trip of its own, which a handful of
// rows does not repay.
const copyMinRows = 64

// writeRows writes the new rows (ins) and the changed ones (upd): new rows
// by COPY when there are enough of them, the rest in one pipelined round
// trip, or queued into b when it is not nil. With upsert, every row goes
// through INSERT ... ON CONFLICT DO UPDATE.
func writeRows(ctx context.Context, tx pgx.Tx, into *pgx.Batch, ins *newRows, upd *updates, upsert bool) error {
	b := into
	if b == nil {
		b = &pgx.Batch{}
	}
	if upsert {
		cols := ins.columns()
		cols.queueRuns(b, upsertRuns)
		cols.queueAttempts(b, upsertAttempts)
		for _, m := range upd.months {
			upd.byMonth[m].queueRuns(b, upsertRuns)
			upd.byMonth[m].queueAttempts(b, upsertAttempts)
		}
	} else {
		copyRunRows, copyAttemptRows := len(ins.runs) >= copyMinRows, len(ins.attempts) >= copyMinRows
		if copyRunRows {
			if err := copyRuns(ctx, tx, ins.runs); err != nil {
				return err
			}
		}
		if copyAttemptRows {
			if err := copyAttempts(ctx, tx, ins.attempts); err != nil {
				return err
			}
		}
		if !copyRunRows || !copyAttemptRows {
			small := newRows{}
			if !copyRunRows {
				small.runs = ins.runs
			}
			if !copyAttemptRows {
				small.attempts = ins.attempts
			}
			cols := small.columns()
			cols.queueRuns(b, insertRuns)
			cols.queueAttempts(b, insertAttempts)
		}
		for _, m := range upd.months {
			upd.byMonth[m].queueRunUpdates(b, m)
			upd.byMonth[m].queueAttemptUpdates(b, m)
		}
	}
	if into != nil || b.Len() == 0 {
		return nil
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("writing runs and step attempts: %w", err)
	}
	return nil
}

// parseTime reads a snapshot time; nil (NULL) when empty or not RFC 3339
// (the store validates times, so only a damaged record has such a one).
// Postgres keeps microseconds: a time with finer digits is truncated.
func parseTime(s string) *time.Time {
	t, ok := parseTimeValue(s)
	if !ok {
		return nil
	}
	return &t
}

// parseTimeValue is parseTime without the pointer: ok is false for NULL.
func parseTimeValue(s string) (t time.Time, ok bool) {
	if s == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, false
	}
	return t.Truncate(time.Microsecond), true
}

func formatTime(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	c := clean(s)
	return &c
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// clean drops NUL characters, which JSON may carry (\u0000) but Postgres
// text refuses: a refused write would retry forever instead of failing the
// one record.
func clean(s string) string {
	if strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(s, "\x00", "")
}

// runCache remembers the snapshot of the runs this process wrote last, with
// the runSeq their checkpoint reached in the same commit, so that the next
// batch of a run folds its events into the cached snapshot instead of
// reading the rows back.
//
// Why a hit is safe: the consumer delivers a run's events from its
// checkpoint + 1, and rows only change with the checkpoint. An entry is
// used only when the run's first event in the transaction is exactly its
// seq + 1, so the checkpoint is still where this process left it: no other
// member (after a rebalance), dead letter or restart moved it since, and
// the rows are what the entry says. Anything else reads the rows back.
type runCache struct {
	mu   sync.Mutex
	max  int
	runs map[string]cachedRun
}

type cachedRun struct {
	snap  store.RunSnapshot // never modified: reduce.Project copies its input
	seq   int64
	month time.Time
}

func newRunCache(max int) *runCache {
	return &runCache{max: max, runs: make(map[string]cachedRun)}
}

// clear forgets every run.
func (c *runCache) clear() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.runs)
}

// get returns runID's snapshot and month if it was cached at checkpoint
// seq.
func (c *runCache) get(runID string, seq int64) (store.RunSnapshot, time.Time, bool) {
	if c == nil {
		return store.RunSnapshot{}, time.Time{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.runs[runID]
	if !ok || e.seq != seq {
		return store.RunSnapshot{}, time.Time{}, false
	}
	return e.snap, e.month, true
}

// commit records the snapshots of a committed transaction. Terminal runs
// are dropped (they rarely hear from again, and then a read-back is cheap);
// when full, an arbitrary tenth of the entries goes.
func (c *runCache) commit(p *pending) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range p.order {
		switch {
		case r.next != nil && !store.IsTerminalRunStatus(r.next.Status):
			if len(c.runs) >= c.max {
				drop := c.max/10 + 1
				for id := range c.runs {
					delete(c.runs, id)
					if drop--; drop == 0 {
						break
					}
				}
			}
			c.runs[r.id] = cachedRun{snap: *r.next, seq: r.last, month: r.month}
		case r.next == nil:
			// No row written: the run has none (only unknown types so far,
			// its checkpoint in the checkpoint table) or nothing was new.
			if e, ok := c.runs[r.id]; ok && e.seq == r.first-1 {
				e.seq = r.last
				c.runs[r.id] = e
			} else {
				delete(c.runs, r.id)
			}
		default:
			delete(c.runs, r.id)
		}
	}
}

// microseconds truncates the times the reducer reads (emittedAt, and the
// payload's sourceOccurredAt and startedAt) to the microsecond, the
// precision timestamptz keeps. A run's next batch starts from times read
// back from the rows; without this, a duration computed across two batches
// (from a truncated start) could differ by a millisecond from one computed
// within a batch, and the tables would depend on where batches happened to
// end. Times with at most six fractional digits are left as they are.
func microseconds(ev *store.RunEventRecord) {
	if t, ok := truncated(ev.EmittedAt); ok {
		ev.EmittedAt = t
	}
	p := ev.Payload
	// The cheaper test first: most payloads hold no time at all, so no '.'
	// followed by seven digits, which one fast pass over them shows.
	if len(p) == 0 || !mayHaveLongFraction(p) ||
		(!bytes.Contains(p, []byte(`"sourceOccurredAt"`)) && !bytes.Contains(p, []byte(`"startedAt"`))) {
		return
	}
	if out, ok := truncatePayloadTimes(p); ok {
		ev.Payload = out
	} else {
		ev.Payload = truncatePayloadTimesDecoded(p)
	}
}

// truncatePayloadTimesDecoded is truncatePayloadTimes through a decoded
// map, for any payload: it returns p itself when nothing changed or p is
// not a JSON object (the reducer reads such a payload as empty too).
func truncatePayloadTimesDecoded(p []byte) []byte {
	var fields map[string]json.RawMessage
	if json.Unmarshal(p, &fields) != nil {
		return p
	}
	changed := false
	for _, k := range []string{"sourceOccurredAt", "startedAt"} {
		var v string
		if raw, ok := fields[k]; !ok || json.Unmarshal(raw, &v) != nil {
			continue
		}
		if t, ok := truncated(v); ok {
			fields[k], _ = json.Marshal(t)
			changed = true
		}
	}
	if changed {
		if b, err := json.Marshal(fields); err == nil {
			return b
		}
	}
	return p
}

// truncatePayloadTimes is microseconds' one pass over a payload without
// escapes: it cuts the top-level sourceOccurredAt and startedAt strings
// (every occurrence, so the last, which the reducer reads, too) to six
// fractional digits and copies the payload only when one changed. ok is
// false for anything it is not sure of (escapes, a value that is not
// plain, invalid JSON), which microseconds then decodes as a map.
func truncatePayloadTimes(p []byte) (out []byte, ok bool) {
	type cut struct {
		start, end int
		with       string
	}
	var cuts []cut
	o := jsonx.NewObject(p, jsonx.MaxDepth)
	for o.Next() {
		if k := p[o.KeyStart:o.KeyEnd]; (string(k) != "sourceOccurredAt" && string(k) != "startedAt") || p[o.ValueStart] != '"' {
			continue
		}
		v := jsonx.Scanner{B: p[:o.ValueEnd], I: o.ValueStart}
		s, e, ok := v.PlainString()
		if !ok || e+1 != o.ValueEnd {
			return nil, false // a string with escapes: the slow path
		}
		if t, ok := truncated(string(p[s:e])); ok {
			cuts = append(cuts, cut{s, e, t})
		}
	}
	if !o.OK() {
		return nil, false
	}
	if len(cuts) == 0 {
		return p, true
	}
	out = make([]byte, 0, len(p))
	from := 0
	for _, c := range cuts {
		out = append(append(out, p[from:c.start]...), c.with...)
		from = c.end
	}
	return append(out, p[from:]...), true
}

// mayHaveLongFraction reports whether raw JSON might hold a time with more
// than six fractional digits: a '.' followed by seven digits or more, or an
// escape (which could spell one). Without either, microseconds need not
// parse the payload.
func mayHaveLongFraction(p []byte) bool {
	if bytes.IndexByte(p, '\\') >= 0 {
		return true
	}
	for i := 0; ; {
		j := bytes.IndexByte(p[i:], '.')
		if j < 0 {
			return false
		}
		i += j + 1
		n := 0
		for i < len(p) && p[i] >= '0' && p[i] <= '9' {
			n++
			i++
		}
		if n > 6 {
			return true
		}
	}
}

// truncated returns s with its fraction of a second cut to six digits,
// when s looks like an RFC 3339 time with more than six. Cutting digits
// truncates the instant too (offsets are whole minutes), without the cost
// of parsing and formatting every emittedAt.
func truncated(s string) (string, bool) {
	t := strings.IndexByte(s, 'T')
	if t < 0 {
		return "", false
	}
	dot := strings.IndexByte(s[t:], '.')
	if dot < 0 {
		return "", false
	}
	dot += t
	digits := 0
	for dot+1+digits < len(s) && s[dot+1+digits] >= '0' && s[dot+1+digits] <= '9' {
		digits++
	}
	if digits <= 6 {
		return "", false
	}
	return s[:dot+7] + s[dot+1+digits:], true
}
