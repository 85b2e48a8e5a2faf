package postgres

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/runstream/runstream/store"
)

// Audit reads: one tenant's events by persistedAt, in the
// order (persistedAt, runId, runSeq), never past the audit horizon. See
// docs/ARCHITECTURE.md, "Audit reads".

// DefaultAuditGrace is how far behind the database's clock the audit
// horizon stays at least (Config.AuditGrace).
const DefaultAuditGrace = time.Second

// openWritersSQL lists the backends other than this one that hold
// RowExclusiveLock on run_events or runs, with the start of their
// transaction (pid, xact_start; xact_start is NULL when this role may not
// see it: pg_stat_activity shows other roles' sessions only to members of
// pg_read_all_stats). An append (single: runstream_append; batch or shared:
// BEGIN, then runstream_append per event) locks its run's counter row by
// an upsert on runs, then takes its event's persistedAt with
// clock_timestamp(), then inserts it, and holds both locks until it ends:
// so while a transaction is not listed here, it cannot hold an event not
// yet committed, and every event it will still commit is persisted after
// the moment it is first listed. ConvergenceHorizon and AuditHorizon both
// read it.
const openWritersSQL = `SELECT l.pid, a.xact_start
	FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
	WHERE l.locktype = 'relation' AND l.relation IN ('run_events'::regclass, 'runs'::regclass)
	  AND l.mode = 'RowExclusiveLock' AND l.granted AND l.pid <> pg_backend_pid()`

// auditHorizonSQL is the audit horizon: the earliest of now() - grace and
// the start of the oldest open writer (an invisible start counts as now()
// - grace, which grace covers for appends, one short statement each).
// now() is the statement's start, taken before pg_locks is read, so a
// writer that locks after the read takes a later persistedAt than the
// horizon. No cap, unlike ConvergenceHorizon's MaxHorizonHold: an export
// must not skip an event, however long its transaction stays open. It
// also returns that oldest writer, for the operator.
const auditHorizonSQL = `WITH w AS (` + openWritersSQL + `),
	oldest AS (SELECT pid, coalesce(xact_start, now() - $1 * interval '1 microsecond') AS since
	           FROM w ORDER BY 2, 1 LIMIT 1)
	SELECT least(now() - $1 * interval '1 microsecond', (SELECT since FROM oldest)),
	       (SELECT pid FROM oldest), (SELECT since FROM oldest)`

// HorizonHolder is the open transaction that holds an audit horizon back:
// its backend's pid (pg_stat_activity) and the start of its transaction.
type HorizonHolder struct {
	PID   int32
	Since time.Time
}

// AuditHorizon is the time before which the store's answer to an audit
// read is final: no transaction still open can commit an event persisted
// before it. Holder is the oldest open writing transaction when it, not
// grace, sets the horizon, else nil.
type AuditHorizon struct {
	At     time.Time
	Holder *HorizonHolder
}

// AuditHorizon reads the audit horizon (see auditHorizonSQL), on the
// database's clock.
func (s *Store) AuditHorizon(ctx context.Context) (AuditHorizon, error) {
	return auditHorizon(ctx, s.pool, s.cfg.AuditGrace)
}

type queryRower interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func auditHorizon(ctx context.Context, q queryRower, grace time.Duration) (AuditHorizon, error) {
	var (
		h     AuditHorizon
		pid   *int32
		since *time.Time
	)
	if err := q.QueryRow(ctx, auditHorizonSQL, grace.Microseconds()).Scan(&h.At, &pid, &since); err != nil {
		return AuditHorizon{}, classify(fmt.Errorf("reading the audit horizon: %w", err))
	}
	if pid != nil && since != nil && !since.After(h.At) {
		h.Holder = &HorizonHolder{PID: *pid, Since: *since}
	}
	h.At = h.At.Truncate(time.Microsecond).UTC()
	return h, nil
}

// AuditQuery is one page of an audit read.
type AuditQuery struct {
	store.AuditWindow
	// After is where the page starts (exclusive); the zero position
	// means the window's start.
	After store.AuditPosition
	// Limit is the most events the page returns; it must be > 0.
	Limit int
	// Each, when set, receives each event (and its persistedAt as a
	// time) as it is read instead of collecting them into
	// AuditPage.Events. rec and rec.Payload are reused for the next event
	// (the payload is the connection's read buffer), so Each copies what
	// it keeps of them; its strings may be kept. An error from Each ends
	// the read with it.
	Each func(rec *store.RunEventRecord, at time.Time) error
}

// AuditPage is one page of an audit read.
type AuditPage struct {
	// Events are in (persistedAt, runId, runSeq) order (nil with Each).
	Events []store.RunEventRecord
	// Count is how many events the page held.
	Count int
	// Horizon is the horizon the page was read below.
	Horizon AuditHorizon
	// Next is where the next page starts; nil when the window is
	// finished (it has an end, the horizon passed it and nothing is
	// left).
	Next *store.AuditPosition
}

// auditSQL reads one page. The hash beside the tenant id leads the audit
// index of partitions made since migration 0024 (the id is still
// compared: ids that hash alike share a range); the (tenant_id,
// persisted_at) index of older partitions is read by the id.
const auditSQL = `SELECT run_id, run_seq, event_id::text, event_type, idempotency_key, tenant_id,
	project_id, environment_id, plan_id, plan_version, coalesce(step_id, ''),
	engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload::text
FROM run_events
WHERE tenant_id = $1 AND hashtextextended(tenant_id, 0) = hashtextextended($1, 0)
	AND (persisted_at, run_id COLLATE "C", run_seq) > ($2, $3, $4) AND persisted_at < $5
ORDER BY tenant_id, persisted_at, run_id COLLATE "C", run_seq LIMIT $6`

// ReadAudit reads one page of q's window: the events after q.After (at
// q.From when zero) persisted before the earlier of q.To and the audit
// horizon, in (persistedAt, runId, runSeq) order, at most q.Limit. The
// horizon is read first, then the page, so every event persisted before
// it has committed when the page is read (see auditHorizonSQL).
func (s *Store) ReadAudit(ctx context.Context, q AuditQuery) (AuditPage, error) {
	if q.Limit <= 0 {
		return AuditPage{}, errors.New("audit read: limit must be > 0")
	}
	after := q.After
	if after.PersistedAt.Before(q.From) {
		after = store.AuditPosition{PersistedAt: q.From}
	}
	h, err := s.AuditHorizon(ctx)
	if err != nil {
		return AuditPage{}, err
	}
	page := AuditPage{Horizon: h}
	bound := h.At
	if !q.Open() && q.To.Before(bound) {
		bound = q.To
	}
	if !after.PersistedAt.Before(bound) {
		// Nothing can be read yet (or ever, past the window's end).
		if !q.Open() && !q.To.After(h.At) {
			return page, nil
		}
		page.Next = &after
		return page, nil
	}
	rows, err := s.pool.Query(ctx, auditSQL, q.TenantID, after.PersistedAt, after.RunID, after.RunSeq, bound, q.Limit)
	if err != nil {
		return AuditPage{}, classify(fmt.Errorf("reading tenant %q's events after %s: %w", q.TenantID, after.PersistedAt.Format(time.RFC3339Nano), err))
	}
	var (
		rec  store.RunEventRecord
		last store.AuditPosition
		at   time.Time
		raw  rawRows
	)
	for rows.Next() {
		// A streaming read (the export) decodes the wire values itself.
		if q.Each == nil || !raw.decode(rows, &rec, &at) {
			if err := scanAuditRow(rows, &rec, &at); err != nil {
				rows.Close()
				return AuditPage{}, classify(fmt.Errorf("reading tenant %q's events: %w", q.TenantID, err))
			}
		}
		page.Count++
		last = store.AuditPosition{PersistedAt: at, RunID: rec.RunID, RunSeq: rec.RunSeq}
		if q.Each != nil {
			if err := q.Each(&rec, at); err != nil {
				rows.Close()
				return AuditPage{}, err
			}
			continue
		}
		page.Events = append(page.Events, rec)
	}
	if err := rows.Err(); err != nil {
		return AuditPage{}, classify(fmt.Errorf("reading tenant %q's events: %w", q.TenantID, err))
	}
	switch {
	case page.Count == q.Limit:
		// More may follow the last event.
		page.Next = &last
	case !q.Open() && !q.To.After(h.At):
		// Everything before the window's end was read.
	default:
		// Everything before the horizon was read: resume there.
		next := store.AuditPosition{PersistedAt: bound}
		page.Next = &next
	}
	return page, nil
}

func scanAuditRow(rows pgx.Rows, r *store.RunEventRecord, at *time.Time) error {
	var (
		eng, log int32
		payload  *string
	)
	err := rows.Scan(&r.RunID, &r.RunSeq, &r.EventID, &r.EventType, &r.IdempotencyKey, &r.TenantID,
		&r.ProjectID, &r.EnvironmentID, &r.PlanID, &r.PlanVersion, &r.StepID,
		&eng, &log, &r.EmittedAt, at, &payload)
	if err != nil {
		return err
	}
	r.EngineAttemptID, r.LogicalAttemptID = int64(eng), int64(log)
	*at = at.UTC()
	r.PersistedAt = store.FormatPersistedAt(*at)
	r.Payload = nil
	if payload != nil {
		r.Payload = []byte(*payload)
	}
	return nil
}

// rawRows decodes audit rows from the wire values without pgx's Scan, for
// streaming reads (AuditQuery.Each): the row's text columns are copied
// into one string whose substrings become the record's fields (one
// allocation per row instead of one per field, and no reflection), the
// payload is the wire bytes themselves. An export spent half its CPU in
// Scan and the collector behind it (docs/PERFORMANCE.md). Rows whose
// columns do not come in the formats it knows (binary integers and
// timestamp) go to Scan.
type rawRows struct {
	checked, ok bool
	buf         []byte
	ends        [len(textCols)]int
}

// Columns of auditSQL by position.
const (
	colRunID = iota
	colRunSeq
	colEventID
	colEventType
	colKey
	colTenant
	colProject
	colEnvironment
	colPlan
	colPlanVersion
	colStep
	colEngineAttempt
	colLogicalAttempt
	colEmittedAt
	colPersistedAt
	colPayload
)

// textCols are the text columns, in the order they are copied.
var textCols = [...]int{colRunID, colEventID, colEventType, colKey, colTenant, colProject, colEnvironment,
	colPlan, colPlanVersion, colStep, colEmittedAt}

// pgEpochMicros is 2000-01-01T00:00:00Z, the origin of Postgres's binary
// timestamps, in Unix microseconds.
var pgEpochMicros = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()

func (r *rawRows) decode(rows pgx.Rows, rec *store.RunEventRecord, at *time.Time) bool {
	if !r.checked {
		r.checked = true
		fds := rows.FieldDescriptions()
		r.ok = len(fds) == colPayload+1 && fds[colRunSeq].Format == pgx.BinaryFormatCode && fds[colRunSeq].DataTypeOID == pgtype.Int8OID &&
			fds[colEngineAttempt].Format == pgx.BinaryFormatCode && fds[colEngineAttempt].DataTypeOID == pgtype.Int4OID &&
			fds[colLogicalAttempt].Format == pgx.BinaryFormatCode && fds[colLogicalAttempt].DataTypeOID == pgtype.Int4OID &&
			fds[colPersistedAt].Format == pgx.BinaryFormatCode && fds[colPersistedAt].DataTypeOID == pgtype.TimestamptzOID
		for _, c := range textCols {
			r.ok = r.ok && fds[c].DataTypeOID == pgtype.TextOID
		}
		r.ok = r.ok && fds[colPayload].DataTypeOID == pgtype.TextOID
	}
	if !r.ok {
		return false
	}
	v := rows.RawValues()
	if len(v[colRunSeq]) != 8 || len(v[colEngineAttempt]) != 4 || len(v[colLogicalAttempt]) != 4 || len(v[colPersistedAt]) != 8 {
		return false // NULL or not what was announced: Scan says what is wrong
	}
	us := int64(binary.BigEndian.Uint64(v[colPersistedAt]))
	if us == math.MaxInt64 || us == math.MinInt64 {
		return false // infinity
	}
	*at = time.UnixMicro(us + pgEpochMicros).UTC()
	b := r.buf[:0]
	for i, c := range textCols {
		b = append(b, v[c]...)
		r.ends[i] = len(b)
	}
	b = store.AppendPersistedAt(b, *at)
	r.buf = b
	str := string(b)
	field := func(i int) string {
		start := 0
		if i > 0 {
			start = r.ends[i-1]
		}
		return str[start:r.ends[i]]
	}
	rec.RunID, rec.EventID, rec.EventType, rec.IdempotencyKey = field(0), field(1), field(2), field(3)
	rec.TenantID, rec.ProjectID, rec.EnvironmentID, rec.PlanID = field(4), field(5), field(6), field(7)
	rec.PlanVersion, rec.StepID, rec.EmittedAt = field(8), field(9), field(10)
	rec.PersistedAt = str[r.ends[10]:]
	rec.RunSeq = int64(binary.BigEndian.Uint64(v[colRunSeq]))
	rec.EngineAttemptID = int64(int32(binary.BigEndian.Uint32(v[colEngineAttempt])))
	rec.LogicalAttemptID = int64(int32(binary.BigEndian.Uint32(v[colLogicalAttempt])))
	rec.Payload = v[colPayload] // nil for NULL
	return true
}
