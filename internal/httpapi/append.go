package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"go.opentelemetry.io/otel/attribute"

	"github.com/runstream/runstream/internal/tracing"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/validate"
)

// The append routes, POST /v1/events and POST /v1/events:batch: reading
// and decoding request bodies, the tenancy check and the append limit.

// readBody reads the whole body, within the size limit (413) and the
// request deadline (408); a client that hangs up is not our error (499).
func (s *Server) readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, s.classifyBodyError(r, err)
	}
	return b, nil
}

// checkTenant refuses a write for another tenant than the caller's.
func checkTenant(r *http.Request, w *store.RunEventWrite) error {
	if principalOf(r.Context()).operator {
		return &store.Error{Code: store.CodeForbidden, Message: "an operator's token reads and repairs; appends need the tenant's own token"}
	}
	tenant := tenantOf(r.Context())
	if tenant == "" || w.TenantID == tenant {
		return nil
	}
	return &store.Error{Code: store.CodeForbidden, Field: "tenantId",
		Message: fmt.Sprintf("your credentials are for tenant %q; you cannot append events for tenant %q", tenant, w.TenantID)}
}

func (s *Server) decode(r *http.Request, raw []byte) (store.RunEventWrite, error) {
	w, info, err := validate.DecodeWrite(raw)
	if err != nil {
		return w, err
	}
	if len(info.UnknownFields) > 0 {
		s.metrics.ignoredFields.Add(float64(len(info.UnknownFields)))
		s.log.Debug("ignored unknown fields", "requestId", requestID(r.Context()), "fields", info.UnknownFields)
	}
	return w, checkTenant(r, &w)
}

// appendEvent: POST /v1/events.
func (s *Server) appendEvent(w http.ResponseWriter, r *http.Request) error {
	raw, err := s.readBody(r)
	if err != nil {
		return err
	}
	ev, err := s.decode(r, raw)
	if err != nil {
		return err
	}
	release, err := s.acquireAppend(r.Context(), 1)
	if err != nil {
		return err
	}
	defer release()
	res, err := s.store.AppendValidated(r.Context(), &ev)
	if err != nil {
		s.noteConflict(r, &ev, err)
		return err
	}
	if tracing.Recording(r.Context()) {
		tracing.Annotate(r.Context(), attribute.String("runstream.run_id", ev.RunID), attribute.String("runstream.event_id", res.EventID),
			attribute.Int64("runstream.run_seq", res.RunSeq), attribute.String("runstream.event_type", ev.EventType),
			attribute.Bool("runstream.idempotent", res.Idempotent))
	}
	status := http.StatusCreated
	if res.Idempotent {
		status = http.StatusOK
	}
	writeJSON(w, status, res)
	return nil
}

type batchRequest struct {
	Events []json.RawMessage `json:"events"`
}

// decodeBatch reads a batch body as strictly as validate.DecodeWrite reads
// one event: one JSON object whose "events" is spelled exactly and given
// once (encoding/json would keep the last of two, and take "Events" too).
func decodeBatch(raw []byte) (batchRequest, error) {
	members, err := validate.Object(raw, `a batch {"events": [RunEventWrite, ...]}`)
	if err != nil {
		return batchRequest{}, err
	}
	var req batchRequest
	if events, ok := members["events"]; ok {
		if err := json.Unmarshal(events, &req.Events); err != nil {
			return batchRequest{}, badRequest("events", `"events" must be an array of RunEventWrite objects`)
		}
	}
	return req, nil
}

// batchItem is one entry of a batch answer: an AppendResult, or an error.
type batchItem struct {
	*store.AppendResult
	Error *errorDetail `json:"error,omitempty"`
}

// appendBatch: POST /v1/events:batch.
func (s *Server) appendBatch(w http.ResponseWriter, r *http.Request) error {
	if err := s.checkAppendShare(r.Context()); err != nil {
		return err
	}
	raw, err := s.readBody(r)
	if err != nil {
		return err
	}
	req, err := decodeBatch(raw)
	if err != nil {
		return err
	}
	if len(req.Events) == 0 {
		return badRequest("events", `"events" must be a non-empty array of RunEventWrite objects`)
	}
	if len(req.Events) > s.cfg.MaxBatchEvents {
		return badRequest("events", fmt.Sprintf("a batch holds at most %d events, got %d; split it", s.cfg.MaxBatchEvents, len(req.Events)))
	}
	// The slot is taken before the events are decoded: a tenant past its
	// share costs one scan of its body, not a validation of each event.
	release, err := s.acquireAppend(r.Context(), len(req.Events))
	if err != nil {
		return err
	}
	defer release()
	writes := make([]store.RunEventWrite, len(req.Events))
	errs := make([]error, len(req.Events))
	for i, item := range req.Events {
		writes[i], errs[i] = s.decode(r, item)
		if errs[i] != nil {
			var se *store.Error
			if errors.As(errs[i], &se) && se.Field != "" {
				// Say which item: events[3].runId.
				c := *se
				c.Field = fmt.Sprintf("events[%d].%s", i, se.Field)
				errs[i] = &c
			}
		}
	}
	results := s.store.AppendValidatedBatch(r.Context(), writes, errs, s.batchPacer(r.Context()))
	out := make([]batchItem, len(results))
	for i, res := range results {
		if res.Err != nil {
			if errs[i] == nil {
				s.noteConflict(r, &writes[i], res.Err)
			}
			d, st := toDetail(res.Err)
			if st >= 500 {
				// Unavailable for all: answer the whole request as 503 so
				// the producer retries the batch.
				if errors.Is(res.Err, store.ErrUnavailable) {
					return res.Err
				}
				if r.Context().Err() != nil {
					// The client hung up: one 499 for the request, not
					// an error line for each of its events.
					return fmt.Errorf("%w: during a batch of %d events: %w", errClientGone, len(writes), res.Err)
				}
				s.log.Error("batch item failed", "requestId", requestID(r.Context()), "index", i, "err", res.Err)
			}
			out[i] = batchItem{Error: &d}
			continue
		}
		out[i] = batchItem{AppendResult: &results[i].Result}
	}
	writeJSON(w, http.StatusOK, map[string]any{"results": out})
	return nil
}
