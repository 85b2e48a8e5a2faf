package httpapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/store"
)

// Stream tickets let a browser open an EventSource (which cannot send an
// Authorization header) without putting its bearer token in a URL, where
// proxies and access logs keep it. POST /v1/stream-tickets, with the
// token, returns a random ticket good for one stream, within ticketTTL;
// the watch routes take it as ?ticket=. Tickets live in Redis (the hash
// only, under runstream:ticket:{sha256}), so any API replica redeems one,
// and GETDEL makes each single-use. docs/SECURITY.md weighs this against
// ?access_token= and a cookie.

// ticketTTL is how long a ticket waits to be used.
const ticketTTL = 30 * time.Second

// ticketsPerMinute bounds the tickets one tenant (or the operators) may
// ask for, so Redis holds at most about that many per tenant at once.
const ticketsPerMinute = 120

// ticketLen is the length of a ticket: 32 random bytes, base64url.
var ticketLen = base64.RawURLEncoding.EncodedLen(32)

func ticketKey(ticket string) string {
	sum := sha256.Sum256([]byte(ticket))
	return "runstream:ticket:" + hex.EncodeToString(sum[:])
}

// createStreamTicket: POST /v1/stream-tickets.
func (s *Server) createStreamTicket(w http.ResponseWriter, r *http.Request) error {
	if len(s.tokens) == 0 {
		return badRequest("", "authentication is off (RUNSTREAM_AUTH_TOKENS unset): streams need no ticket")
	}
	if s.redis == nil {
		return &store.Error{Code: store.CodeUnavailable, Message: "no Redis configured (RUNSTREAM_REDIS_URL): tickets live there"}
	}
	p := principalOf(r.Context())
	holder := p.tenant
	if p.operator {
		holder = OperatorTenant
	}
	if ok, after := s.tickets.allow(holder); !ok {
		s.metrics.rejected.WithLabelValues("stream_tickets").Inc()
		return limitError(http.StatusTooManyRequests, after, "at most %d stream tickets a minute per tenant; reuse open streams", ticketsPerMinute)
	}
	var b [32]byte
	_, _ = rand.Read(b[:])
	ticket := base64.RawURLEncoding.EncodeToString(b[:])
	if err := s.redis.Set(r.Context(), ticketKey(ticket), holder, ticketTTL).Err(); err != nil {
		return s.redisErr(err)
	}
	writeJSON(w, http.StatusCreated, map[string]any{"ticket": ticket, "expiresInSeconds": int(ticketTTL.Seconds())})
	return nil
}

// redeemStreamTicket spends a ticket and returns whom it was issued to.
func (s *Server) redeemStreamTicket(ctx context.Context, ticket string) (principal, error) {
	refused := &store.Error{Code: store.CodeUnauthenticated,
		Message: "unknown, used or expired stream ticket: ask POST /v1/stream-tickets for a new one"}
	if len(ticket) != ticketLen || s.redis == nil {
		return principal{}, refused
	}
	holder, err := s.redis.GetDel(ctx, ticketKey(ticket)).Result()
	if errors.Is(err, redis.Nil) {
		return principal{}, refused
	}
	if err != nil {
		return principal{}, s.redisErr(err)
	}
	if holder == OperatorTenant {
		return principal{operator: true}, nil
	}
	return principal{tenant: holder}, nil
}
