package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/runstream/runstream/store"
)

// Health, readiness and the lag report: what load balancers, orchestrators
// and monitors poll (/healthz, /readyz, /v1/lag).

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

// readyz answers 200 when every dependency answers within 2s, else 503
// with each check's result, so an orchestrator stops routing to us.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	results := map[string]string{}
	ok := s.ready.Load()
	if !ok {
		results["server"] = "not serving (starting or shutting down)"
	}
	for _, c := range s.checks {
		if err := c.Fn(ctx); err != nil {
			ok = false
			results[c.Name] = err.Error()
		} else {
			results[c.Name] = "ok"
		}
	}
	st := http.StatusOK
	if !ok {
		st = http.StatusServiceUnavailable
		w.Header().Set("Retry-After", retryAfterSeconds)
	}
	// Dependency errors name hosts and users: only an operator sees them.
	if len(s.tokens) > 0 {
		if p, err := s.authenticate(r); err != nil || !p.operator {
			writeJSON(w, st, map[string]any{"ready": ok})
			return nil
		}
	}
	writeJSON(w, st, map[string]any{"ready": ok, "checks": results})
	return nil
}

// lag: GET /v1/lag?group=, the consumer-group lag report as JSON.
func (s *Server) lag(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Lag == nil {
		return &store.Error{Code: store.CodeUnavailable, Message: "no Kafka brokers configured for this API process (RUNSTREAM_KAFKA_BROKERS)"}
	}
	q, err := query(r)
	if err != nil {
		return err
	}
	group, err := queryIdentifier(q, "group")
	if err != nil {
		return err
	}
	if group == "" {
		group = s.cfg.LagGroup
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	rep, err := s.cfg.Lag(ctx, group)
	if err != nil {
		return &store.Error{Code: store.CodeUnavailable, Message: "measuring lag failed: the brokers did not answer; retry", Err: err}
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}
