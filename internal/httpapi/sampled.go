package httpapi

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/runstream/runstream/store"
)

// sampledLog lets at most one record through per interval and counts the
// ones it held back, which the next record reports: what an untrusted
// party can trigger (a tenant's appends, a Redis client's messages) must
// not flood the logs.
type sampledLog struct {
	every time.Duration

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// allow reports whether a record may be written now and, if so, how many
// were held back since the last one.
func (l *sampledLog) allow(now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() && now.Sub(l.last) < l.every {
		l.suppressed++
		return false, 0
	}
	n := l.suppressed
	l.last, l.suppressed = now, 0
	return true, n
}

// conflictLogEvery bounds the WARN lines of cross-tenant runId conflicts;
// the metric counts every one.
const conflictLogEvery = time.Second

// noteConflict counts and logs an append refused because its runId
// belongs to another tenant (the store's FORBIDDEN): an operator wants to
// know who tried. The answer never names the owner; the log does.
func (s *Server) noteConflict(r *http.Request, w *store.RunEventWrite, err error) {
	if !errors.Is(err, store.ErrForbidden) {
		return
	}
	s.metrics.crossTenantConflicts.Inc()
	ok, suppressed := s.metrics.conflictLog.allow(time.Now())
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 2*time.Second)
	defer cancel()
	owner, lerr := s.store.RunTenant(ctx, w.RunID)
	if lerr != nil {
		owner = "(unknown: " + lerr.Error() + ")"
	}
	s.log.Warn("append refused: the runId belongs to another tenant", "runId", w.RunID, "tenantId", w.TenantID,
		"ownerTenantId", owner, "requestId", requestID(r.Context()), "suppressed", suppressed)
}
