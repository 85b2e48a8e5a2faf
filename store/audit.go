package store

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"
)

// Audit reads (ExecutionSemantics v2 rule 3; docs/ARCHITECTURE.md,
// "Audit reads: events by persistedAt") walk one
// tenant's events by persistedAt, in the order (persistedAt, runId, runSeq),
// runIds compared byte by byte. GET /v1/events and `runstream export` share
// the position and the cursor below, so a cursor one returns resumes the
// other.

// AuditPosition is a point in the audit order. Reading "after" it returns
// the events that sort after it. The zero RunID sorts before every runId, so
// {PersistedAt: t} is the position just before everything persisted at t.
type AuditPosition struct {
	// PersistedAt has microsecond precision, like persistedAt itself.
	PersistedAt time.Time
	RunID       string
	RunSeq      int64
}

// Compare orders positions as the audit read does: -1, 0 or +1.
func (p AuditPosition) Compare(q AuditPosition) int {
	if c := p.PersistedAt.Compare(q.PersistedAt); c != 0 {
		return c
	}
	if c := strings.Compare(p.RunID, q.RunID); c != 0 {
		return c
	}
	switch {
	case p.RunSeq < q.RunSeq:
		return -1
	case p.RunSeq > q.RunSeq:
		return 1
	}
	return 0
}

// AuditWindow is what an audit read covers: TenantID's events persisted in
// [From, To); a zero To is open-ended (a follower's window).
type AuditWindow struct {
	TenantID string
	From, To time.Time
}

// Open reports whether the window has no end.
func (w AuditWindow) Open() bool { return w.To.IsZero() }

// AuditTime rounds t up to the microsecond: persistedAt has microsecond
// precision, so "persistedAt >= t" and "persistedAt < t" mean the same
// with the rounded t, and a window compared in a cursor is compared as the
// database sees it.
func AuditTime(t time.Time) time.Time {
	r := t.Truncate(time.Microsecond)
	if r.Before(t) {
		r = r.Add(time.Microsecond)
	}
	return r.UTC()
}

// AuditCursor is where an audit read resumes: the window it was returned
// for, and the position after which the next page starts. It is opaque to
// callers ([AuditCursor.Encode]); a cursor is valid only for the same
// tenant and window.
type AuditCursor struct {
	AuditWindow
	After AuditPosition
}

// cursorWire is the cursor's JSON before base64: times in microseconds
// since the Unix epoch.
type cursorWire struct {
	V      int    `json:"v"`
	Tenant string `json:"t"`
	From   int64  `json:"f"`
	To     *int64 `json:"o,omitempty"`
	At     int64  `json:"p"`
	RunID  string `json:"r,omitempty"`
	RunSeq int64  `json:"s,omitempty"`
}

// maxCursorLen bounds what DecodeAuditCursor reads: two identifiers of at
// most 255 bytes, escaped, and a few numbers fit well within it.
const maxCursorLen = 4096

// Bounds of the times a cursor may hold: RFC 3339's years.
var (
	minAuditMicros = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	maxAuditMicros = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC).UnixMicro()
)

// AuditBoundError says why t, as [AuditTime] rounds it, cannot be the
// start (end false) or the end of an audit window, or "" when it can. A
// cursor carries its window, and holds only times of RFC 3339's years in
// microseconds (0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z), an
// end after the first of them: a window outside that range would be read
// once and answer a cursor no read accepts back.
func AuditBoundError(t time.Time, end bool) string {
	us := AuditTime(t).UnixMicro()
	const rng = "between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999Z (UTC), the times an audit cursor can carry"
	switch {
	case t.Before(time.UnixMicro(minAuditMicros)) || us < minAuditMicros || us > maxAuditMicros:
		return "must be " + rng
	case end && us == minAuditMicros:
		return "must be after 0001-01-01T00:00:00Z: a window ending there holds nothing"
	}
	return ""
}

// Encode returns the cursor as an opaque URL-safe string.
func (c AuditCursor) Encode() string {
	w := cursorWire{V: 1, Tenant: c.TenantID, From: c.From.UnixMicro(), At: c.After.PersistedAt.UnixMicro(),
		RunID: c.After.RunID, RunSeq: c.After.RunSeq}
	if !c.Open() {
		to := c.To.UnixMicro()
		w.To = &to
	}
	b, _ := json.Marshal(w) // plain strings and numbers always encode
	return base64.RawURLEncoding.EncodeToString(b)
}

// ErrBadCursor is returned by [DecodeAuditCursor] for a string no audit
// read returned (Field "cursor").
var ErrBadCursor = &Error{Code: CodeSchemaValidationFailed, Field: "cursor",
	Message: "cursor is not one an audit read returned; start again from the window's beginning without it"}

// DecodeAuditCursor reads a cursor written by [AuditCursor.Encode]. It
// checks the cursor's own consistency (identifiers, times in range, a
// position inside the window's start); whether it belongs to the window
// being read is the caller's check.
func DecodeAuditCursor(s string) (AuditCursor, error) {
	if len(s) == 0 || len(s) > maxCursorLen {
		return AuditCursor{}, ErrBadCursor
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return AuditCursor{}, ErrBadCursor
	}
	var w cursorWire
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil || dec.More() {
		return AuditCursor{}, ErrBadCursor
	}
	inRange := func(us int64) bool { return us >= minAuditMicros && us <= maxAuditMicros }
	switch {
	case w.V != 1, !ValidIdentifier(w.Tenant), !inRange(w.From), !inRange(w.At), w.At < w.From,
		w.RunID != "" && !ValidIdentifier(w.RunID), w.RunSeq < 0, w.RunID == "" && w.RunSeq != 0,
		w.RunID != "" && w.RunSeq == 0,
		w.To != nil && (!inRange(*w.To) || *w.To <= minAuditMicros || *w.To < w.From): // a To at the zero time would read as open
		return AuditCursor{}, ErrBadCursor
	}
	c := AuditCursor{
		AuditWindow: AuditWindow{TenantID: w.Tenant, From: time.UnixMicro(w.From).UTC()},
		After:       AuditPosition{PersistedAt: time.UnixMicro(w.At).UTC(), RunID: w.RunID, RunSeq: w.RunSeq},
	}
	if w.To != nil {
		c.To = time.UnixMicro(*w.To).UTC()
	}
	return c, nil
}

// SameWindow reports whether w is the window c was returned for.
func (c AuditCursor) SameWindow(w AuditWindow) bool {
	return c.TenantID == w.TenantID && c.From.Equal(w.From) && c.Open() == w.Open() && c.To.Equal(w.To)
}
