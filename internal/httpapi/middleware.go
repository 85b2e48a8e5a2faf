package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/runstream/runstream/internal/tracing"
	"github.com/runstream/runstream/store"
)

// What every route goes through: the adapter of handlers that return
// errors (roles, the request deadline, the error answer), request ids,
// the recovery of panics, authentication and the request metrics.

// handlerFunc is an HTTP handler that returns its error for the adapter.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

type ctxKey int

const (
	requestIDKey ctxKey = iota
	principalKey
)

// principal is who is calling: a tenant, or an operator (token mapped to
// "*"). Without configured tokens there is none (development).
type principal struct {
	tenant   string
	operator bool
	// key is a fingerprint of the token (hex of its SHA-256's first 4
	// bytes): who an operator is, in the audit log.
	key string
}

func requestID(ctx context.Context) string {
	v, _ := ctx.Value(requestIDKey).(string)
	return v
}

// principalOf returns who is calling: the zero principal when auth is off.
func principalOf(ctx context.Context) principal {
	p, _ := ctx.Value(principalKey).(principal)
	return p
}

// tenantOf returns the authenticated tenant, or "" for an operator and
// when auth is off (both may read any tenant's runs).
func tenantOf(ctx context.Context) string { return principalOf(ctx).tenant }

// isOperator reports whether the caller may do what operators do: an
// operator's token, or no tokens configured at all (development).
func (s *Server) isOperator(ctx context.Context) bool {
	return len(s.tokens) == 0 || principalOf(ctx).operator
}

func (s *Server) withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if id == "" || len(id) > 128 {
			id = uuid.NewString()
		}
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey, id)))
	})
}

func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.writeError(w, r, fmt.Errorf("panic serving %s: %v", r.URL.Path, v))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// adapt turns a handlerFunc into an http.Handler: authentication and
// roles, the body size limit and read deadline, and the one error mapping.
func (s *Server) adapt(h handlerFunc, how route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if how&authed != 0 && len(s.tokens) > 0 {
			p, err := s.authenticate(r)
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			if how&operatorOnly != 0 && !p.operator {
				s.writeError(w, r, &store.Error{Code: store.CodeForbidden,
					Message: "this endpoint is for operators: use a token mapped to \"*\" in RUNSTREAM_AUTH_TOKENS"})
				return
			}
			markAuthenticated(r.Context())
			r = r.WithContext(context.WithValue(r.Context(), principalKey, p))
		}
		if how&stream == 0 {
			// A deadline for the body and the answer, set on the
			// connection: a stream keeps none.
			rc := http.NewResponseController(w)
			deadline := time.Now().Add(s.cfg.Limits.RequestTimeout)
			_ = rc.SetReadDeadline(deadline)
			// The answer may still be written after a body timed out (408).
			_ = rc.SetWriteDeadline(deadline.Add(5 * time.Second))
		}
		if r.ContentLength > s.cfg.MaxBodyBytes {
			// Refused before reading a byte: a declared length past the
			// limit is never waited for.
			s.writeError(w, r, &store.Error{Code: store.CodePayloadTooLarge,
				Message: fmt.Sprintf("request body of %d bytes exceeds %d bytes (RUNSTREAM_MAX_BODY_BYTES); send fewer events per batch or a smaller payload", r.ContentLength, s.cfg.MaxBodyBytes)})
			return
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
		}
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	})
}

// authenticate finds the caller's principal from the bearer token (or,
// for EventSource, which cannot send headers, ?ticket= on the watch route
// it was issued for, or ?access_token=).
func (s *Server) authenticate(r *http.Request) (principal, error) {
	h := r.Header.Get("Authorization")
	const prefix = "Bearer "
	if h == "" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		q := r.URL.Query()
		if t := q.Get("ticket"); t != "" {
			return s.redeemStreamTicket(r, t)
		}
		// ?access_token= is kept for older clients; proxies log query
		// strings, so the console asks for a ticket instead.
		if tok := q.Get("access_token"); tok != "" {
			h = prefix + tok
		}
	}
	if len(h) <= len(prefix) || !equalFold(h[:len(prefix)], prefix) {
		return principal{}, &store.Error{Code: store.CodeUnauthenticated, Message: "missing credentials: send Authorization: Bearer <token>"}
	}
	sum := sha256.Sum256([]byte(h[len(prefix):]))
	tenant, ok := s.tokens[sum]
	if !ok {
		return principal{}, &store.Error{Code: store.CodeUnauthenticated, Message: "unknown bearer token"}
	}
	key := hex.EncodeToString(sum[:4])
	if tenant == OperatorTenant {
		return principal{operator: true, key: key}, nil
	}
	return principal{tenant: tenant, key: key}, nil
}

// OperatorTenant is what RUNSTREAM_AUTH_TOKENS maps an operator's token to.
const OperatorTenant = "*"

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush on the real writer.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// instrument counts and times every request of pattern. With tracing on,
// an authenticated request that is not a stream is a server span too
// (internal/tracing); health probes, metrics scrapes and long-lived
// streams are not traced.
func (s *Server) instrument(pattern string, how route, next http.Handler) http.Handler {
	traced := how&authed != 0 && how&stream == 0
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		var span trace.Span
		if traced {
			r, span = tracing.StartServer(r, pattern)
		}
		next.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		tracing.EndServer(span, rec.status)
		s.metrics.requests.WithLabelValues(pattern, strconv.Itoa(rec.status)).Inc()
		s.metrics.latency.WithLabelValues(pattern).Observe(time.Since(start).Seconds())
	})
}
