package etl

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runstream/runstream/store"
)

// newRows are the rows a flush inserts: the snapshots of runs that have no
// row yet, and the attempts no row holds. They are kept as references into
// the snapshots until the flush knows how many there are: many go straight
// from the snapshots into COPY's binary format (copyRows), a few into the
// column arrays of an INSERT (rows).
type newRows struct {
	runs     []newRun
	attempts []newAttempt
}

// newRun is a run's new runs row, in partition month.
type newRun struct {
	s     *store.RunSnapshot
	month time.Time
}

// newAttempt is a new step_attempts row, in its run's partition month.
type newAttempt struct {
	runID, stepID string
	a             *store.StepAttempt
	month         time.Time
}

// columns lays n out as the column arrays of INSERT ... SELECT FROM unnest.
func (n *newRows) columns() *rows {
	var o rows
	o.grow(len(n.runs), len(n.attempts))
	for _, r := range n.runs {
		o.addRun(r.s, r.month)
	}
	for _, a := range n.attempts {
		o.addAttempt(a.runID, a.stepID, a.a, a.month)
	}
	return &o
}

// copyRuns and copyAttempts send rows with COPY in the binary format,
// encoded from the snapshots as Postgres reads them: no column arrays, no
// value boxed in an interface, no copy of the batch in memory.
func copyRuns(ctx context.Context, tx pgx.Tx, runs []newRun) error {
	r := newCopyReader(len(runs), func(e *copyEncoder, i int) { e.run(runs[i].s, runs[i].month) })
	if _, err := tx.Conn().PgConn().CopyFrom(ctx, r, copyRunsSQL); err != nil {
		return fmt.Errorf("copying new runs: %w", err)
	}
	return nil
}

func copyAttempts(ctx context.Context, tx pgx.Tx, attempts []newAttempt) error {
	r := newCopyReader(len(attempts), func(e *copyEncoder, i int) {
		a := &attempts[i]
		e.attempt(a.runID, a.stepID, a.a, a.month)
	})
	if _, err := tx.Conn().PgConn().CopyFrom(ctx, r, copyAttemptsSQL); err != nil {
		return fmt.Errorf("copying new step attempts: %w", err)
	}
	return nil
}

var (
	copyRunsSQL     = `COPY runs (` + strings.Join(columnList(runColumns), ", ") + `) FROM STDIN (FORMAT binary)`
	copyAttemptsSQL = `COPY step_attempts (` + strings.Join(columnList(attemptColumns), ", ") + `) FROM STDIN (FORMAT binary)`
)

// run encodes s as a runs row of month, columns in runColumns' order,
// with the values rows.addRun gives the INSERT.
func (e *copyEncoder) run(s *store.RunSnapshot, month time.Time) {
	e.tuple(16)
	e.text(s.RunID)
	e.text(s.TenantID)
	e.text(s.ProjectID)
	e.text(s.EnvironmentID)
	e.text(s.PlanID)
	e.text(s.PlanVersion)
	e.text(s.Status)
	e.time(s.StartedAt)
	e.time(s.CompletedAt)
	e.int8OrNull(s.TotalDurationMs)
	e.int4(len(s.Steps))
	e.int4(s.FailedSteps)
	e.int4(attemptRows(s))
	e.int8(s.LastEventSeq)
	e.time(s.UpdatedAt)
	e.date(month)
}

// attempt encodes a as a step_attempts row of month, columns in
// attemptColumns' order, with the values rows.addAttempt gives the
// INSERT.
func (e *copyEncoder) attempt(runID, stepID string, a *store.StepAttempt, month time.Time) {
	e.tuple(13)
	e.text(runID)
	e.text(stepID)
	e.int8(a.LogicalAttemptID)
	e.int8(a.EngineAttemptID)
	e.text(a.Status)
	e.time(a.StartedAt)
	e.time(a.CompletedAt)
	e.int8OrNull(a.DurationMs)
	if err := a.Error; err != nil {
		e.textOrNull(err.Code)
		e.textOrNull(err.Message)
		e.textOrNull(err.Category)
	} else {
		e.null()
		e.null()
		e.null()
	}
	e.int4(len(a.Artifacts))
	e.date(month)
}

// copyReader is the io.Reader CopyFrom sends from: it encodes rows a
// chunk at a time, as CopyFrom asks for them, into one buffer about the
// size of a chunk.
type copyReader struct {
	e      copyEncoder
	off    int // of e.b, read so far
	n, i   int // rows, rows encoded
	encode func(e *copyEncoder, i int)
	done   bool // the trailer is in e.b
}

func newCopyReader(n int, encode func(e *copyEncoder, i int)) *copyReader {
	r := &copyReader{n: n, encode: encode}
	r.e.header()
	return r
}

func (r *copyReader) Read(p []byte) (int, error) {
	if r.off == len(r.e.b) {
		if r.done {
			return 0, io.EOF
		}
		r.e.b, r.off = r.e.b[:0], 0
		for len(r.e.b) < len(p) && r.i < r.n {
			r.encode(&r.e, r.i)
			r.i++
		}
		if r.i == r.n {
			r.e.trailer()
			r.done = true
		}
	}
	n := copy(p, r.e.b[r.off:])
	r.off += n
	return n, nil
}

// copyEncoder appends rows in COPY's binary format
// (https://www.postgresql.org/docs/15/sql-copy.html, "Binary Format"):
// a header, then per row its field count and each field as a length (-1
// for NULL) and the value in the type's binary form, then a trailer.
type copyEncoder struct {
	b []byte
}

// copySignature starts the header, which goes on with 32-bit flags (none)
// and the length of a header extension (none).
const copySignature = "PGCOPY\n\xff\r\n\x00"

func (e *copyEncoder) header() {
	e.b = append(e.b, copySignature...)
	e.b = binary.BigEndian.AppendUint32(e.b, 0)
	e.b = binary.BigEndian.AppendUint32(e.b, 0)
}

func (e *copyEncoder) trailer() { e.b = binary.BigEndian.AppendUint16(e.b, 0xffff) }

func (e *copyEncoder) tuple(fields int) { e.b = binary.BigEndian.AppendUint16(e.b, uint16(fields)) }

func (e *copyEncoder) null() { e.b = binary.BigEndian.AppendUint32(e.b, 0xffffffff) }

// text is a text value: its UTF-8 bytes, without NUL characters (see
// clean), which Postgres refuses.
func (e *copyEncoder) text(s string) {
	if strings.IndexByte(s, 0) >= 0 {
		s = clean(s)
	}
	e.b = binary.BigEndian.AppendUint32(e.b, uint32(len(s)))
	e.b = append(e.b, s...)
}

// textOrNull is text, or NULL for "" (as nullable).
func (e *copyEncoder) textOrNull(s string) {
	if s == "" {
		e.null()
		return
	}
	e.text(s)
}

// int4 is an integer value, capped at its largest (as addRun caps).
func (e *copyEncoder) int4(v int) {
	e.b = binary.BigEndian.AppendUint32(e.b, 4)
	e.b = binary.BigEndian.AppendUint32(e.b, uint32(int32(min(v, 1<<31-1))))
}

func (e *copyEncoder) int8(v int64) {
	e.b = binary.BigEndian.AppendUint32(e.b, 8)
	e.b = binary.BigEndian.AppendUint64(e.b, uint64(v))
}

func (e *copyEncoder) int8OrNull(v *int64) {
	if v == nil {
		e.null()
		return
	}
	e.int8(*v)
}

// postgresEpoch is where timestamptz counts its microseconds from.
var postgresEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).Unix()

// time is a timestamptz value, microseconds since postgresEpoch, or NULL
// for what parseTime makes NULL. Finer digits are truncated, as parseTime
// does.
func (e *copyEncoder) time(s string) {
	t, ok := parseTimeValue(s)
	if !ok {
		e.null()
		return
	}
	us := (t.Unix()-postgresEpoch)*1_000_000 + int64(t.Nanosecond()/1000)
	e.int8(us)
}

// date is a date value, days since postgresEpoch, of m's UTC day.
func (e *copyEncoder) date(m time.Time) {
	m = m.UTC()
	days := time.Date(m.Year(), m.Month(), m.Day(), 0, 0, 0, 0, time.UTC).Unix() - postgresEpoch
	e.b = binary.BigEndian.AppendUint32(e.b, 4)
	e.b = binary.BigEndian.AppendUint32(e.b, uint32(int32(days/86400)))
}
