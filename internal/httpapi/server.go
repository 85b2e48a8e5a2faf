package httpapi

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/internal/httpapi/console"
	"github.com/runstream/runstream/internal/lag"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// The server: its configuration, construction, routes and lifecycle.

// Config configures a [Server]. Zero values take the defaults noted.
type Config struct {
	// Addr is the listen address; empty means 127.0.0.1:8080.
	Addr string
	// MaxBodyBytes limits request bodies (413 PAYLOAD_TOO_LARGE past it);
	// 0 means 1 MiB.
	MaxBodyBytes int64
	// MaxBatchEvents limits events per batch; 0 means 1000.
	MaxBatchEvents int
	// AuthTokens maps bearer tokens to tenants; a token mapped to "*" is an
	// operator's (lag, resync of any run, readiness details, reads of any
	// tenant's runs; no appends). Empty turns authentication off
	// (development): no credentials are asked, and browsers are guarded
	// (JSON-only POST, a loopback or AllowedHosts Host header).
	AuthTokens map[string]string
	// AllowedHosts are the Host header values (without port) accepted, in
	// development mode, besides localhost and loopback addresses; "*"
	// accepts any (only behind --insecure-no-auth on a trusted network).
	AllowedHosts []string
	// Limits bound what a caller can hold; zero values take defaults.
	Limits Limits
	// DefaultTenant is the tenant the runs list and the tenant watch read
	// when authentication is off and no ?tenantId= is given (dev mode).
	DefaultTenant string
	// Lag measures a consumer group's lag for GET /v1/lag; nil answers
	// 503 (no brokers configured).
	Lag func(ctx context.Context, group string) (lag.Report, error)
	// LagGroup is the group GET /v1/lag reports without ?group=; empty
	// means [store.DefaultProjectorGroup].
	LagGroup string
	// LagGroups are the consumer groups GET /v1/lag/groups reports even
	// before they commit (a configured consumer that never started says
	// so); nil means LagGroup and the ETL's default group.
	LagGroups []string
	// LagTopic is the run-event topic whose groups GET /v1/lag/groups
	// reports; empty means [store.DefaultTopic].
	LagTopic string
	// TopicGroups lists the groups the brokers know on a topic (committed
	// offsets or assigned members), for GET /v1/lag/groups; nil reports
	// LagGroups only.
	TopicGroups func(ctx context.Context, topic string) ([]string, error)
	// LagHistory keeps the groups' lag over the last hour (the exporter's
	// measurements and the lag routes'): GET /v1/lag and /v1/lag/groups
	// answer each group's with it; nil answers none.
	LagHistory *lag.History
	// ResetGroupOffsets and DeleteGroup change a consumer group of
	// LagTopic for POST /v1/lag/groups/{group}/reset and DELETE
	// /v1/lag/groups/{group} (lag.ResetOffsets, lag.DeleteGroup); nil
	// answers 503.
	ResetGroupOffsets func(ctx context.Context, group, topic string, to lag.ResetTo, apply bool) (lag.ResetPlan, error)
	DeleteGroup       func(ctx context.Context, group string) error
	// ShutdownTimeout bounds graceful shutdown; 0 means 10s.
	ShutdownTimeout time.Duration
	// Registerer receives the API's metrics; nil means none.
	Registerer prometheus.Registerer
	// Gatherer serves /metrics; nil means prometheus.DefaultGatherer.
	Gatherer prometheus.Gatherer
	// Logger; nil means discard.
	Logger *slog.Logger

	// SnapshotTTL is how long Redis keeps a terminal run's snapshot after
	// its terminal event (--snapshot-ttl): the runs list says it covers
	// every open run and the terminal runs of that span, and the snapshot
	// and watch of an older run are served from the store. 0 means Redis
	// keeps every run.
	SnapshotTTL time.Duration
	// SnapshotEncoding is how the snapshots this API writes (rebuilds,
	// resyncs) are stored (--snapshot-encoding). Reads take both
	// encodings whatever it says.
	SnapshotEncoding snapshots.Encoding

	// rebuildLease is how long a running rebuild's lease lasts unrenewed
	// (0: 15s); tests shorten it through export_test.go.
	rebuildLease time.Duration
	// storeReadWait bounds a snapshot read's wait for a store-read slot
	// (0: 1s); storeReadWaiting, when set, is called as a read starts
	// waiting. Tests set both through export_test.go.
	storeReadWait    time.Duration
	storeReadWaiting func()
}

// Validate reports a configuration error naming the setting to change.
func (c Config) Validate() error {
	if c.MaxBodyBytes < 0 {
		return fmt.Errorf("max body bytes (RUNSTREAM_MAX_BODY_BYTES) must be > 0, got %d", c.MaxBodyBytes)
	}
	if c.MaxBatchEvents < 0 {
		return fmt.Errorf("max batch events must be > 0, got %d", c.MaxBatchEvents)
	}
	if c.SnapshotTTL < 0 {
		return fmt.Errorf("snapshot TTL (--snapshot-ttl) must be 0 (keep every run) or positive, got %v", c.SnapshotTTL)
	}
	for tok, tenant := range c.AuthTokens {
		if tok == "" || tenant == "" {
			return errors.New("auth tokens (RUNSTREAM_AUTH_TOKENS): empty token or tenant")
		}
		if tenant != OperatorTenant && !store.ValidIdentifier(tenant) {
			return fmt.Errorf("auth tokens (RUNSTREAM_AUTH_TOKENS): tenant %q is not an identifier (1-%d bytes of printable UTF-8 without '|'), or \"*\" for an operator", tenant, store.MaxIdentifierBytes)
		}
	}
	return c.Limits.Validate()
}

// setDefaults gives every zero field its default (the Limits' too).
func (c *Config) setDefaults() {
	if c.Addr == "" {
		c.Addr = "127.0.0.1:8080"
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = 1 << 20
	}
	if c.MaxBatchEvents == 0 {
		c.MaxBatchEvents = 1000
	}
	if c.LagGroup == "" {
		c.LagGroup = store.DefaultProjectorGroup
	}
	if c.LagGroups == nil {
		c.LagGroups = slices.Compact([]string{c.LagGroup, store.DefaultETLGroup})
	}
	if c.LagTopic == "" {
		c.LagTopic = store.DefaultTopic
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = 10 * time.Second
	}
	if c.Gatherer == nil {
		c.Gatherer = prometheus.DefaultGatherer
	}
	c.Limits.setDefaults()
	if c.storeReadWait == 0 {
		c.storeReadWait = time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// eventStore is what the API needs of the Append Authority;
// *postgres.Store satisfies it.
type eventStore interface {
	AppendValidated(ctx context.Context, w *store.RunEventWrite) (store.AppendResult, error)
	AppendValidatedBatch(ctx context.Context, writes []store.RunEventWrite, errs []error, pace postgres.Pacer) []postgres.BatchResult
	FetchEvents(ctx context.Context, runID string, opts store.FetchOptions) ([]store.RunEventRecord, error)
	ReadAudit(ctx context.Context, q postgres.AuditQuery) (postgres.AuditPage, error)
	ProjectSnapshot(ctx context.Context, runID string) (store.RunSnapshot, error)
	ProjectSnapshotFor(ctx context.Context, runID, tenant string, onLarge postgres.LargeHook) (store.RunSnapshot, error)
	RunTenant(ctx context.Context, runID string) (string, error)
	ArchivedRanges(ctx context.Context, tenant string, from, to time.Time) ([]postgres.ArchivedRange, error)
	RunArchive(ctx context.Context, runID string) (*postgres.ArchivedRange, error)
	Ping(ctx context.Context) error
}

// Check is a named readiness probe.
type Check struct {
	Name string
	Fn   func(ctx context.Context) error
}

// Server is the HTTP API.
type Server struct {
	cfg     Config
	store   eventStore
	redis   redis.UniversalClient
	checks  []Check
	log     *slog.Logger
	metrics *metrics
	tokens  map[[32]byte]string
	handler http.Handler
	// patterns are the routes' ServeMux patterns, in registration order:
	// the OpenAPI document must describe each.
	patterns []string
	ready    atomic.Bool
	hub      *hub
	// getter batches the snapshot GETs of concurrent requests.
	getter  *snapshots.Getter
	closing chan struct{} // closed when shutdown starts: SSE streams end
	close   sync.Once

	appends     *shareLimiter // in-flight appends, weighed by events
	storeReads  *shareLimiter // in-flight snapshot projections from the store
	largeWork   semaphore     // large projections at once while tenants share (shares.go)
	largeRuns   largeRuns     // runs whose last store projection was large (shares.go)
	watchers    watcherLimits
	resyncs     *rateLimiter // tenants' resyncs of their own runs
	ops         opsStore     // the operator routes' store access; nil: 503
	rebuilds    *rebuilds    // operators' rebuilds in this process
	lagMeasures semaphore    // in-flight GET /v1/lag/groups measurements

	// runCounts is the runs list's storeRuns per tenant (runlist.go).
	runCounts runCountCache

	// tickets mints and checks stream tickets (tickets.go).
	tickets *ticketIssuer
}

// New builds the API on st (required) and rdb (snapshot reads; may be nil,
// then non-consistent snapshot reads answer 503). checks are added to
// /readyz after Postgres and Redis.
func New(cfg Config, st eventStore, rdb redis.UniversalClient, checks ...Check) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	log := cfg.Logger
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, store: st, redis: rdb, log: log.With("component", "api"), metrics: m,
		tokens: map[[32]byte]string{}, closing: make(chan struct{}),
		appends: newShareLimiter(cfg.Limits.MaxInflightAppends, cfg.Limits.MaxInflightAppendsPerTenant,
			cfg.Limits.MaxInflightEventsPerTenant),
		storeReads:  newShareLimiter(cfg.Limits.MaxConsistentReads, cfg.Limits.MaxConsistentReadsPerTenant, 0),
		resyncs:     &rateLimiter{perMin: cfg.Limits.TenantResyncsPerMinute, buckets: map[string]*bucket{}, now: time.Now},
		tickets:     newTicketIssuer(cfg.AuthTokens),
		rebuilds:    newRebuilds(rdb, log.With("component", "api"), cfg.rebuildLease),
		lagMeasures: make(semaphore, maxLagGroupsInflight),
		largeWork:   make(semaphore, largeWorkSlots()),
	}
	s.ops, _ = st.(opsStore)
	if rdb != nil {
		s.hub = newHub(rdb, s.log)
		s.getter = snapshots.NewGetter(rdb)
	}
	for tok, tenant := range cfg.AuthTokens {
		s.tokens[sha256.Sum256([]byte(tok))] = tenant
	}
	s.checks = append(s.checks, Check{Name: "postgres", Fn: st.Ping})
	if rdb != nil {
		s.checks = append(s.checks, Check{Name: "redis", Fn: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }})
	}
	s.checks = append(s.checks, checks...)
	s.handler = s.routes()
	return s, nil
}

// Handler returns the API's handler (tests use it with httptest).
func (s *Server) Handler() http.Handler { return s.handler }

// route says how a route is served.
type route int

const (
	public       route = 0         // no credentials (health, readiness)
	authed       route = 1 << iota // credentials when tokens are configured
	stream                         // an SSE stream: no request deadline
	operatorOnly                   // an operator's token when tokens are configured
)

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	handle := func(pattern string, h handlerFunc, how route) {
		s.patterns = append(s.patterns, pattern)
		mux.Handle(pattern, s.instrument(pattern, how, s.adapt(h, how)))
	}
	handle("POST /v1/events", s.appendEvent, authed)
	handle("POST /v1/events:batch", s.appendBatch, authed)
	handle("GET /v1/events", s.readEvents, authed)
	handle("GET /v1/runs/{runId}/events", s.fetchEvents, authed)
	handle("GET /v1/runs/{runId}/snapshot", s.getSnapshot, authed)
	handle("GET /v1/runs", s.listRuns, authed)
	handle("GET /v1/runs/watch", s.watchTenant, authed|stream)
	handle("GET /v1/runs/{runId}/watch", s.watchRun, authed|stream)
	handle("POST /v1/runs/{runId}/resync", s.resyncRun, authed)
	handle("POST /v1/stream-tickets", s.createStreamTicket, authed)
	handle("GET /v1/lag", s.lag, authed|operatorOnly)
	handle("GET /v1/lag/groups", s.lagGroups, authed|operatorOnly)
	handle("POST /v1/lag/groups/{group}/reset", s.resetGroup, authed|operatorOnly)
	handle("DELETE /v1/lag/groups/{group}", s.deleteGroup, authed|operatorOnly)
	handle("GET /v1/dead-letters", s.listDeadLetters, authed|operatorOnly)
	handle("GET /v1/dead-letters/groups", s.deadLetterGroups, authed|operatorOnly)
	handle("GET /v1/dead-letters/{id}", s.getDeadLetter, authed|operatorOnly)
	handle("POST /v1/dead-letters/{id}/retry", s.retryDeadLetter, authed|operatorOnly)
	handle("POST /v1/dead-letters/retry", s.retryDeadLetters, authed|operatorOnly)
	handle("POST /v1/rebuilds", s.startRebuild, authed|operatorOnly)
	handle("GET /v1/rebuilds", s.listRebuilds, authed|operatorOnly)
	handle("GET /v1/rebuilds/{id}", s.getRebuild, authed|operatorOnly)
	handle("GET /v1/retention", s.retentionStatus, authed|operatorOnly)
	handle("GET /v1/operator-actions", s.listOperatorActions, authed|operatorOnly)
	handle("GET /healthz", s.healthz, public)
	handle("GET /readyz", s.readyz, public)
	handle("GET /openapi.json", s.openAPI, public)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.cfg.Gatherer, promhttp.HandlerOpts{}))
	mux.Handle("GET /", console.Handler()) // the web console
	// What no route above takes: 405 with Allow, or 404 (GET /v1/...
	// here, not in the console).
	handle("GET /v1/", s.noRoute(mux), public)
	handle("/", s.noRoute(mux), public)
	return s.withRequestID(s.recoverPanics(s.guardDevelopment(mux)))
}

// noRoute answers a request no pattern took: 405 with Allow when the path
// has routes for other methods, else 404.
func (s *Server) noRoute(mux *http.ServeMux) handlerFunc {
	methods := []string{http.MethodGet, http.MethodHead, http.MethodPost}
	return func(w http.ResponseWriter, r *http.Request) error {
		var allow []string
		for _, m := range methods {
			probe := &http.Request{Method: m, URL: r.URL, Host: r.Host, Header: http.Header{}}
			if _, pattern := mux.Handler(probe); pattern != "/" && pattern != "GET /" && pattern != "GET /v1/" {
				allow = append(allow, m)
			}
		}
		if len(allow) > 0 {
			return &httpError{status: http.StatusMethodNotAllowed, code: "METHOD_NOT_ALLOWED", allow: strings.Join(allow, ", "),
				msg: fmt.Sprintf("%s is not allowed on %s; use %s", r.Method, r.URL.Path, strings.Join(allow, " or "))}
		}
		return &store.Error{Code: store.CodeNotFound, Message: fmt.Sprintf("no such endpoint: %s %s", r.Method, r.URL.Path)}
	}
}

// Run serves on cfg.Addr until ctx is done, then shuts down gracefully
// within cfg.ShutdownTimeout. started, when non-nil, receives the bound
// address once the listener is open.
func (s *Server) Run(ctx context.Context, started chan<- string) error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("listening on %s (RUNSTREAM_HTTP_ADDR): %w", s.cfg.Addr, err)
	}
	return s.Serve(ctx, ln, started)
}

// Serve is Run on an open listener.
func (s *Server) Serve(ctx context.Context, ln net.Listener, started chan<- string) error {
	budget := newConnBudget(ln, s.cfg.Limits.MaxConnections, s.metrics)
	ln = budget
	srv := &http.Server{
		Handler:           s.probeOnly(s.handler),
		MaxHeaderBytes:    s.cfg.Limits.MaxHeaderBytes,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ConnContext:       withConn,
		ConnState:         budget.track,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.ready.Store(true)
	s.log.Info("HTTP API listening", "addr", ln.Addr().String())
	if started != nil {
		started <- ln.Addr().String()
	}
	select {
	case err := <-errc:
		return fmt.Errorf("serving HTTP: %w", err)
	case <-ctx.Done():
	}
	s.ready.Store(false)
	s.Close() // ends SSE streams so Shutdown does not wait on them
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("shutting down HTTP within %v: %w", s.cfg.ShutdownTimeout, err)
	}
	<-errc
	s.log.Info("HTTP API stopped")
	return nil
}

// Close ends every SSE stream and the update subscription. Serve calls it
// at shutdown; tests using Handler call it when done. It is idempotent.
func (s *Server) Close() {
	s.close.Do(func() {
		close(s.closing)
		s.rebuilds.shutdown() // cancels a running rebuild
		if s.hub != nil {
			s.hub.close()
			s.getter.Close()
		}
	})
}
