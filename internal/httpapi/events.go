package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/validate"
)

// The event read, GET /v1/runs/{runId}/events, and the checks every
// /v1/runs/{runId} route shares: the run id, the caller's access to the
// run, integer query parameters.

// runID reads the {runId} path segment, an identifier like a body's
// runId: 400 naming runId, never a lookup of bytes
// Postgres refuses.
func runID(r *http.Request) (string, error) {
	id := r.PathValue("runId")
	if err := validate.Identifier("runId", id); err != nil {
		return "", err
	}
	return id, nil
}

// notFound is the answer for an unknown run and for another tenant's run
// alike (docs/ARCHITECTURE.md, "Tenancy"), so existence does not leak.
func notFound(id string) error {
	return &store.Error{Code: store.CodeNotFound, Field: "runId", Message: fmt.Sprintf("run %q not found", id)}
}

// authorizeRun answers NOT_FOUND unless the caller may read the run.
func (s *Server) authorizeRun(r *http.Request, id string) error {
	tenant := tenantOf(r.Context())
	owner, err := s.store.RunTenant(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return notFound(id)
	}
	if err != nil {
		return err
	}
	if tenant != "" && owner != tenant {
		return notFound(id)
	}
	return nil
}

func intParam(q url.Values, name string, def, min, max int64) (int64, error) {
	v := q.Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < min || n > max {
		return 0, badRequest(name, fmt.Sprintf("%s must be an integer from %d to %d, got %q", name, min, max, v))
	}
	return n, nil
}

// fetchEvents: GET /v1/runs/{runId}/events?afterSeq=N&limit=M.
func (s *Server) fetchEvents(w http.ResponseWriter, r *http.Request) error {
	id, err := runID(r)
	if err != nil {
		return err
	}
	q, err := query(r)
	if err != nil {
		return err
	}
	after, err := intParam(q, "afterSeq", 0, 0, 1<<62)
	if err != nil {
		return err
	}
	limit, err := intParam(q, "limit", 100, 1, 1000)
	if err != nil {
		return err
	}
	if err := s.authorizeRun(r, id); err != nil {
		return err
	}
	events, err := s.store.FetchEvents(r.Context(), id, store.FetchOptions{AfterSeq: after, Limit: int(limit)})
	if err != nil {
		return err
	}
	if events == nil {
		events = []store.RunEventRecord{}
	}
	out := map[string]any{"events": events}
	// A run whose partition retention took out says where its events
	// went, so an empty page never reads as a run without events; asked
	// on a run's last page only.
	if len(events) < int(limit) {
		gone, err := s.store.RunArchive(r.Context(), id)
		if err != nil {
			return err
		}
		if gone != nil {
			out["archived"] = toArchivedRange(*gone)
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
