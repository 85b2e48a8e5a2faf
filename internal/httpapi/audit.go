package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// heldLogEvery bounds the WARN lines about an audit horizon held back by
// an open transaction.
const heldLogEvery = time.Minute

// heldWarnAfter is how long an open transaction holds the audit horizon
// back before the API says so in its log.
const heldWarnAfter = 30 * time.Second

// auditPage is the answer of GET /v1/events.
type auditPage struct {
	Events []store.RunEventRecord `json:"events"`
	// Horizon: no transaction still open can commit an event persisted
	// before it, so the answer below it is final.
	Horizon string `json:"horizon"`
	// NextCursor resumes after the last event (or at the horizon); absent
	// only when the window is finished.
	NextCursor string `json:"nextCursor,omitempty"`
	// Archived names the parts of the window whose events retention took
	// out of the store (runstream retention): not "no events" but "in
	// the archive, there".
	Archived []archivedRange `json:"archived,omitempty"`
}

// archivedRange is a postgres.ArchivedRange as the API answers it.
type archivedRange struct {
	Partition string `json:"partition"`
	// State is "archived", or "archiving" while its files are written.
	State string `json:"state"`
	// From and To bound the archived events' persistedAt, both included.
	From     string `json:"from,omitempty"`
	To       string `json:"to,omitempty"`
	Location string `json:"location,omitempty"`
	Events   int64  `json:"events,omitempty"`
}

func toArchivedRange(a postgres.ArchivedRange) archivedRange {
	out := archivedRange{Partition: a.Partition, State: a.State, Location: a.Location, Events: a.Events}
	if !a.From.IsZero() {
		out.From, out.To = store.FormatPersistedAt(a.From), store.FormatPersistedAt(a.To)
	}
	return out
}

// auditTenant is the tenant an audit read covers: a tenant's own (a
// tenantId given must be it: 403 otherwise), or for an operator and
// without tokens (development) the required tenantId.
func (s *Server) auditTenant(r *http.Request, q url.Values) (string, error) {
	given, err := queryIdentifier(q, "tenantId")
	if err != nil {
		return "", err
	}
	if t := tenantOf(r.Context()); t != "" {
		if given != "" && given != t {
			return "", &store.Error{Code: store.CodeForbidden, Field: "tenantId",
				Message: "a tenant's token reads its own tenant's events only; leave tenantId out or give your own"}
		}
		return t, nil
	}
	if given == "" {
		return "", badRequest("tenantId", "tenantId is required: an operator (or a caller without tokens configured) says which tenant's events to read")
	}
	return given, nil
}

// timeParam reads an RFC 3339 time parameter; ok is false when absent.
func timeParam(q url.Values, name string) (t time.Time, ok bool, err error) {
	v := q.Get(name)
	if v == "" {
		return time.Time{}, false, nil
	}
	t, err = time.Parse(time.RFC3339Nano, v)
	if err != nil || t.IsZero() {
		return time.Time{}, false, badRequest(name, fmt.Sprintf(
			"%s must be an RFC 3339 time after 0001-01-01T00:00:00Z such as 2026-02-16T10:30:00Z (percent-encode '+' as %%2B in an offset), got %q", name, v))
	}
	return t, true, nil
}

// readEvents: GET /v1/events?from=&to=&cursor=&limit=&tenantId= , the
// audit read: one tenant's events persisted in [from,
// to), in (persistedAt, runId, runSeq) order, never past the store's
// audit horizon (docs/ARCHITECTURE.md, "Audit reads").
func (s *Server) readEvents(w http.ResponseWriter, r *http.Request) error {
	q, err := query(r)
	if err != nil {
		return err
	}
	tenant, err := s.auditTenant(r, q)
	if err != nil {
		return err
	}
	from, ok, err := timeParam(q, "from")
	if err != nil {
		return err
	}
	if !ok {
		return badRequest("from", "from is required: the RFC 3339 time the window starts at (persistedAt >= from)")
	}
	to, hasTo, err := timeParam(q, "to")
	if err != nil {
		return err
	}
	// The window's cursor must be one this endpoint takes back.
	if why := store.AuditBoundError(from, false); why != "" {
		return badRequest("from", fmt.Sprintf("from %s, got %q", why, q.Get("from")))
	}
	if why := store.AuditBoundError(to, true); hasTo && why != "" {
		return badRequest("to", fmt.Sprintf("to %s, got %q", why, q.Get("to")))
	}
	if hasTo && to.Before(from) {
		return badRequest("to", fmt.Sprintf("the window is reversed: to (%s) is before from (%s)", to.Format(time.RFC3339Nano), from.Format(time.RFC3339Nano)))
	}
	limit, err := intParam(q, "limit", 100, 1, 1000)
	if err != nil {
		return err
	}
	win := store.AuditWindow{TenantID: tenant, From: store.AuditTime(from)}
	if hasTo {
		win.To = store.AuditTime(to)
	}
	var after store.AuditPosition
	if v := q.Get("cursor"); v != "" {
		c, err := store.DecodeAuditCursor(v)
		if err != nil {
			return err
		}
		if !c.SameWindow(win) {
			return badRequest("cursor", "this cursor was returned for another tenant or window; pass the same tenantId, from and to as the read that returned it")
		}
		after = c.After
	}
	page, err := s.store.ReadAudit(r.Context(), postgres.AuditQuery{AuditWindow: win, After: after, Limit: int(limit)})
	if err != nil {
		return err
	}
	s.noteHeldHorizon(page.Horizon)
	out := auditPage{Events: page.Events, Horizon: page.Horizon.At.Format(time.RFC3339Nano)}
	if out.Events == nil {
		out.Events = []store.RunEventRecord{}
	}
	if page.Next != nil {
		out.NextCursor = store.AuditCursor{AuditWindow: win, After: *page.Next}.Encode()
	}
	var end time.Time
	if hasTo {
		end = to
	}
	archived, err := s.store.ArchivedRanges(r.Context(), tenant, from, end)
	if err != nil {
		return err
	}
	for _, a := range archived {
		out.Archived = append(out.Archived, toArchivedRange(a))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// noteHeldHorizon logs (sampled) an audit horizon held back for long by
// an open transaction: followers of the log wait for it, and an operator
// can find it in pg_stat_activity by its pid.
func (s *Server) noteHeldHorizon(h postgres.AuditHorizon) {
	if h.Holder == nil || time.Since(h.Holder.Since) < heldWarnAfter {
		return
	}
	if ok, suppressed := s.metrics.heldLog.allow(time.Now()); ok {
		s.log.Warn("audit reads are held back by an open transaction: see pg_stat_activity for its pid",
			"pid", h.Holder.PID, "since", h.Holder.Since.Format(time.RFC3339), "horizon", h.At.Format(time.RFC3339Nano), "suppressed", suppressed)
	}
}
