package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/runstream/runstream/store"
)

// statusOf is the one table from error code to HTTP status.
var statusOf = map[store.Code]int{
	store.CodeSchemaValidationFailed: http.StatusBadRequest,
	store.CodeUnauthenticated:        http.StatusUnauthorized,
	store.CodeForbidden:              http.StatusForbidden,
	store.CodeNotFound:               http.StatusNotFound,
	store.CodePayloadTooLarge:        http.StatusRequestEntityTooLarge,
	store.CodeUnavailable:            http.StatusServiceUnavailable,
	store.CodeInternal:               http.StatusInternalServerError,
	store.CodeConflict:               http.StatusConflict,
	store.CodeRunArchived:            http.StatusConflict,
}

// statusClientClosed is counted for a request whose client hung up.
const statusClientClosed = 499

// retryAfterSeconds is sent with 503 UNAVAILABLE.
const retryAfterSeconds = "2"

// errorBody is the wire shape of an error.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    store.Code `json:"code"`
	Message string     `json:"message"`
	Field   string     `json:"field,omitempty"`
}

// toDetail turns any error into what a caller may see: a *store.Error's
// code, message and field, or a generic INTERNAL for anything else.
func toDetail(err error) (errorDetail, int) {
	var se *store.Error
	if errors.As(err, &se) {
		st, ok := statusOf[se.Code]
		if !ok {
			st = http.StatusInternalServerError
		}
		msg := se.Message
		if msg == "" {
			msg = string(se.Code)
		}
		return errorDetail{Code: se.Code, Message: msg, Field: se.Field}, st
	}
	return errorDetail{Code: store.CodeInternal, Message: "internal error; the cause is logged with the request id"}, http.StatusInternalServerError
}

// writeError writes err as the API's error body. Causes of 5xx answers are
// logged, never sent; a client that went away is logged as 499.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, errClientGone) || (r.Context().Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))) {
		// Nobody reads this answer: the status is for the metrics (499,
		// nginx's "client closed request") and never a page for on-call.
		s.log.Debug("client went away", "status", statusClientClosed, "requestId", requestID(r.Context()), "path", r.URL.Path, "err", err)
		w.WriteHeader(statusClientClosed)
		return
	}
	var he *httpError
	if errors.As(err, &he) {
		s.log.Debug("request refused", "status", he.status, "requestId", requestID(r.Context()), "code", he.code, "field", he.field)
		if he.retryAfter > 0 {
			w.Header().Set("Retry-After", retryAfterHeader(he.retryAfter))
		}
		if he.allow != "" {
			w.Header().Set("Allow", he.allow)
		}
		writeJSON(w, he.status, errorBody{Error: errorDetail{Code: he.code, Message: he.msg, Field: he.field}})
		return
	}
	d, st := toDetail(err)
	if st >= 500 {
		s.log.Error("request failed", "status", st, "requestId", requestID(r.Context()), "path", r.URL.Path, "err", err)
	} else {
		s.log.Debug("request refused", "status", st, "requestId", requestID(r.Context()), "code", d.Code, "field", d.Field)
	}
	if st == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", retryAfterSeconds)
	}
	if st == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="runstream"`)
	}
	writeJSON(w, st, errorBody{Error: d})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	_ = enc.Encode(v)
}

// badRequest is a SCHEMA_VALIDATION_FAILED error for a query parameter.
func badRequest(field, msg string) error {
	return &store.Error{Code: store.CodeSchemaValidationFailed, Field: field, Message: msg}
}
