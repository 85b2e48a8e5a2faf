package httpapi

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/validate"
)

// Stream tickets let a browser open an EventSource (which cannot send an
// Authorization header) without putting its bearer token in a URL, where
// proxies and access logs keep it. POST /v1/stream-tickets, with the
// token, returns a ticket good for one stream, within ticketTTL: the watch
// of one run ({"runId": ...}) or of the holder's tenant (no body, or {},
// or for an operator {"tenantId": ...}); that watch route alone takes it
// as ?ticket=. Tickets live in Redis (the hash only, under
// runstream:ticket:{sha256}), so any API replica redeems one, and GETDEL
// makes each single-use. docs/SECURITY.md weighs this against
// ?access_token= and a cookie.
//
// What Redis holds is not trusted: a ticket is a random id and an
// HMAC-SHA256, under a key derived from RUNSTREAM_AUTH_TOKENS (which every
// replica shares and Redis never sees), of that id and of the grant Redis
// keeps for it (holder, route, run or tenant). A key written into Redis by
// anyone else, or a grant changed there, fails the MAC; and the holder
// must still be a tenant (or "*") of the configured tokens when the
// ticket is redeemed.

// ticketTTL is how long a ticket waits to be used.
const ticketTTL = 30 * time.Second

// ticketsPerMinute bounds the tickets one tenant (or the operators) may
// ask for, so Redis holds at most about that many per tenant at once.
const ticketsPerMinute = 120

// A ticket is ticketIDLen random bytes and a SHA-256 HMAC, base64url.
const ticketIDLen = 16

var ticketLen = base64.RawURLEncoding.EncodedLen(ticketIDLen + sha256.Size)

// The watch routes a ticket opens (the ServeMux patterns of server.go).
const (
	patternWatchRun    = "GET /v1/runs/{runId}/watch"
	patternWatchTenant = "GET /v1/runs/watch"
)

// Routes of a grant.
const (
	ticketRouteRun    = "run"
	ticketRouteTenant = "tenant"
)

// ticketGrant is what Redis keeps for a ticket: who holds it and the one
// stream it opens.
type ticketGrant struct {
	Holder string `json:"h"` // a tenant, or OperatorTenant
	Route  string `json:"r"` // ticketRouteRun or ticketRouteTenant
	// Target is the run of a run's watch; for a tenant's stream, the
	// tenantId query an operator's stream must carry ("" for none; a
	// tenant's stream is always its holder's).
	Target string `json:"t"`
}

// ticketIssuer mints and checks tickets.
type ticketIssuer struct {
	limit *rateLimiter
	// key is the HMAC key: a hash of every configured token and its tenant.
	key []byte
	// holders are the tenants (and "*") of the configured tokens.
	holders map[string]bool
}

func newTicketIssuer(tokens map[string]string) *ticketIssuer {
	ti := &ticketIssuer{
		limit:   &rateLimiter{perMin: ticketsPerMinute, buckets: map[string]*bucket{}, now: time.Now},
		holders: map[string]bool{},
	}
	entries := make([]string, 0, len(tokens))
	for tok, tenant := range tokens {
		ti.holders[tenant] = true
		entries = append(entries, tok)
	}
	slices.Sort(entries)
	h := sha256.New()
	h.Write([]byte("runstream stream-ticket key v1\x00"))
	var n [8]byte
	for _, tok := range entries {
		for _, f := range []string{tok, tokens[tok]} {
			binary.BigEndian.PutUint64(n[:], uint64(len(f)))
			h.Write(n[:])
			h.Write([]byte(f))
		}
	}
	ti.key = h.Sum(nil)
	return ti
}

// mac signs a ticket's id and its grant as Redis keeps it.
func (ti *ticketIssuer) mac(id, grant []byte) []byte {
	m := hmac.New(sha256.New, ti.key)
	m.Write(id)
	m.Write(grant)
	return m.Sum(nil)
}

func ticketKey(ticket string) string {
	sum := sha256.Sum256([]byte(ticket))
	return "runstream:ticket:" + hex.EncodeToString(sum[:])
}

// ticketRequest is POST /v1/stream-tickets's body: at most one of runId
// (the run's watch) and tenantId (an operator's choice of tenant stream).
type ticketRequest struct {
	RunID    string `json:"runId"`
	TenantID string `json:"tenantId"`
}

// createStreamTicket: POST /v1/stream-tickets.
func (s *Server) createStreamTicket(w http.ResponseWriter, r *http.Request) error {
	if len(s.tokens) == 0 {
		return badRequest("", "authentication is off (RUNSTREAM_AUTH_TOKENS unset): streams need no ticket")
	}
	raw, err := s.readBody(r)
	if err != nil {
		return err
	}
	var req ticketRequest
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := decodeStrict(raw, &req); err != nil {
			return err
		}
	}
	p := principalOf(r.Context())
	g := ticketGrant{Holder: p.tenant, Route: ticketRouteTenant}
	if p.operator {
		g.Holder = OperatorTenant
	}
	switch {
	case req.RunID != "" && req.TenantID != "":
		return badRequest("tenantId", `a ticket opens one stream: give {"runId":"r"} (that run's watch) or {"tenantId":"t"} (an operator's tenant stream), not both`)
	case req.RunID != "":
		if err := validate.Identifier("runId", req.RunID); err != nil {
			return err
		}
		g.Route, g.Target = ticketRouteRun, req.RunID
	case req.TenantID != "":
		if err := validate.Identifier("tenantId", req.TenantID); err != nil {
			return err
		}
		// A tenant's stream is its own whatever it names, as on
		// GET /v1/runs/watch itself.
		if p.operator {
			g.Target = req.TenantID
		}
	}
	if s.redis == nil {
		return &store.Error{Code: store.CodeUnavailable, Message: "no Redis configured (RUNSTREAM_REDIS_URL): tickets live there"}
	}
	if ok, after := s.tickets.limit.allow(g.Holder); !ok {
		s.metrics.rejected.WithLabelValues("stream_tickets").Inc()
		return limitError(http.StatusTooManyRequests, after, "at most %d stream tickets a minute per tenant; reuse open streams", ticketsPerMinute)
	}
	grant, err := json.Marshal(g)
	if err != nil {
		return err
	}
	b := make([]byte, ticketIDLen, ticketIDLen+sha256.Size)
	_, _ = rand.Read(b)
	b = append(b, s.tickets.mac(b, grant)...)
	ticket := base64.RawURLEncoding.EncodeToString(b)
	if err := s.redis.Set(r.Context(), ticketKey(ticket), grant, ticketTTL).Err(); err != nil {
		return s.redisErr(err)
	}
	writeJSON(w, http.StatusCreated, map[string]any{"ticket": ticket, "expiresInSeconds": int(ticketTTL.Seconds())})
	return nil
}

// errTicketRefused is the answer to a ticket that is not one this API
// issued, or that was used or expired.
var errTicketRefused = &store.Error{Code: store.CodeUnauthenticated,
	Message: "unknown, used or expired stream ticket: ask POST /v1/stream-tickets for a new one"}

// redeemStreamTicket spends ticket on r, a watch route, and returns whom
// it was issued to. A ticket opens only the stream it was asked for.
func (s *Server) redeemStreamTicket(r *http.Request, ticket string) (principal, error) {
	var route, target string
	switch r.Pattern {
	case patternWatchRun:
		route, target = ticketRouteRun, r.PathValue("runId")
	case patternWatchTenant:
		route, target = ticketRouteTenant, r.URL.Query().Get("tenantId")
	default:
		return principal{}, &store.Error{Code: store.CodeUnauthenticated,
			Message: "a stream ticket opens only the watch stream it was issued for (GET /v1/runs/{runId}/watch or GET /v1/runs/watch); send Authorization: Bearer <token> here"}
	}
	raw, err := base64.RawURLEncoding.DecodeString(ticket)
	if len(ticket) != ticketLen || err != nil || s.redis == nil {
		return principal{}, errTicketRefused
	}
	grant, err := s.redis.GetDel(r.Context(), ticketKey(ticket)).Bytes()
	if errors.Is(err, redis.Nil) {
		return principal{}, errTicketRefused
	}
	if err != nil {
		return principal{}, s.redisErr(err)
	}
	id, sum := raw[:ticketIDLen], raw[ticketIDLen:]
	var g ticketGrant
	if !hmac.Equal(sum, s.tickets.mac(id, grant)) || json.Unmarshal(grant, &g) != nil || !s.tickets.holders[g.Holder] {
		// Not written by an API with this deployment's tokens, or its
		// holder's tokens are gone: either way no credential stands
		// behind it.
		return principal{}, errTicketRefused
	}
	if g.Route != route || ((route == ticketRouteRun || g.Holder == OperatorTenant) && g.Target != target) {
		return principal{}, &store.Error{Code: store.CodeUnauthenticated,
			Message: `this stream ticket was issued for another stream: ask POST /v1/stream-tickets for this one ({"runId":"<runId>"} for a run's watch, {} for your tenant's stream, {"tenantId":"<tenant>"} for an operator's)`}
	}
	if g.Holder == OperatorTenant {
		return principal{operator: true}, nil
	}
	return principal{tenant: g.Holder}, nil
}
