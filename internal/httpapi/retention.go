package httpapi

// GET /v1/retention: the store's retention at a glance for operators, the
// same report as `runstream retention status --json`.

import (
	"net/http"

	"github.com/runstream/runstream/internal/retention"
	"github.com/runstream/runstream/store"
)

// retentionStatus: GET /v1/retention, every partition of run_events with
// its state, size, runs, what holds it in the store and its archive
// files, the retention process's last pass and the next removal.
func (s *Server) retentionStatus(w http.ResponseWriter, r *http.Request) error {
	st, ok := s.store.(retention.StatusStore)
	if !ok {
		return &store.Error{Code: store.CodeUnavailable, Message: "this API's store does not report retention"}
	}
	status, err := retention.StatusOf(r.Context(), st, 0)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, status)
	return nil
}
