package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/runstream/runstream/internal/config"
	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/store/postgres"
)

const (
	defaultPostgresURL = "postgres://runstream:runstream@127.0.0.1:5432/runstream?sslmode=disable"
	defaultRedisURL    = "redis://127.0.0.1:6379/0"
	defaultHTTPAddr    = "127.0.0.1:8080"
)

// serverFlags are the settings shared by api and dev.
type serverFlags struct {
	postgresURL   string
	redisURL      string
	httpAddr      string
	authTokens    string
	maxBodyBytes  int64
	logLevel      string
	logFormat     string
	defaultTenant string
	allowedHosts  string
	insecure      bool
	limits        httpapi.Limits
	snapshots     snapshotFlags
}

func (f *serverFlags) register(fs *flag.FlagSet, logFormat, defaultTenant string) {
	fs.StringVar(&f.postgresURL, "postgres-url", defaultPostgresURL, "PostgreSQL URL of the Append Authority")
	fs.StringVar(&f.redisURL, "redis-url", defaultRedisURL, "Redis URL of the snapshot cache")
	fs.StringVar(&f.httpAddr, "http-addr", defaultHTTPAddr, "HTTP listen address")
	fs.StringVar(&f.authTokens, "auth-tokens", "", `bearer tokens "token1:tenantA,token2:tenantB"; empty: no credentials asked (development)`)
	fs.Int64Var(&f.maxBodyBytes, "max-body-bytes", 1<<20, "largest request body accepted (413 past it)")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", logFormat, "json or text")
	fs.StringVar(&f.defaultTenant, "default-tenant", defaultTenant, "tenant listed by GET /v1/runs when authentication is off and no ?tenantId= is given")
	fs.StringVar(&f.allowedHosts, "allowed-hosts", "", `without --auth-tokens: Host header names accepted besides localhost and loopback addresses (comma-separated; "*" any)`)
	fs.BoolVar(&f.insecure, "insecure-no-auth", false, "allow a non-loopback --http-addr without --auth-tokens (anyone who reaches it can append and read every tenant)")
	l := &f.limits
	fs.IntVar(&l.MaxHeaderBytes, "max-header-bytes", 32<<10, "largest request header block (431 past it)")
	fs.DurationVar(&l.RequestTimeout, "request-timeout", 30*time.Second, "time to read a request body and write the answer, except live streams (408 for a slow body)")
	fs.IntVar(&l.MaxConnections, "max-connections", 4096, "open client connections (past it: 503 and close)")
	fs.IntVar(&l.MaxInflightAppends, "max-inflight-appends", 256, "appends being written at once (503 + Retry-After past it)")
	fs.IntVar(&l.MaxInflightAppendsPerTenant, "max-inflight-appends-per-tenant", 0, "one tenant's share of --max-inflight-appends (429 + Retry-After past it); 0: an eighth of it")
	fs.IntVar(&l.MaxInflightEventsPerTenant, "max-inflight-events-per-tenant", 1000, "events of one tenant's appends being written at once, a batch counting its events (429 + Retry-After past it); a larger batch goes alone")
	fs.IntVar(&l.MaxWatchers, "max-watchers", 10000, "live streams (SSE) of this process (503 + Retry-After past it)")
	fs.IntVar(&l.MaxWatchersPerTenant, "max-watchers-per-tenant", 1000, "live streams of one tenant on this process (429 + Retry-After past it)")
	fs.IntVar(&l.MaxConsistentReads, "max-consistent-reads", 8, "snapshots projected from the store at once: ?consistent=true, and runs Redis does not hold (past --snapshot-ttl); a read past it waits up to 1 s, then 503 + Retry-After")
	fs.IntVar(&l.MaxConsistentReadsPerTenant, "max-consistent-reads-per-tenant", 0, "one tenant's share of --max-consistent-reads (a read past it waits up to 1 s, then 429 + Retry-After); 0: half of it")
	fs.IntVar(&l.TenantResyncsPerMinute, "tenant-resyncs-per-minute", 30, "resyncs of its own runs a tenant may ask for per minute (operators: unlimited)")
	f.snapshots.register(fs)
}

// parseFlags parses args with env fallbacks; --help prints usage and
// returns flag.ErrHelp. A parse error is returned, not printed: the flag
// package would print it (and the whole usage) before runProcess prints
// it again, so the error says where to look instead.
func parseFlags(fs *flag.FlagSet, env *environment, args []string, synopsis, description string) error {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := config.Parse(fs, args, env.getenv)
	fs.SetOutput(env.stderr)
	fs.Usage = config.Usage(fs, synopsis, description)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.Usage()
			return err
		}
		if !strings.HasPrefix(err.Error(), "invalid RUNSTREAM_") {
			err = fmt.Errorf("%w (see 'runstream help %s')", err, fs.Name())
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q; see --help", fs.Args())}
	}
	return nil
}

// newRegistry returns the process's metrics registry with Go and process
// collectors and runstream_build_info.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		buildInfoCollector(readBuildInfo()))
	return reg
}

// openPostgres connects and migrates.
func openPostgres(ctx context.Context, log *slog.Logger, url string) (*pgxpool.Pool, error) {
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	pool, err := postgres.Connect(cctx, url)
	if err != nil {
		return nil, err
	}
	applied, err := postgres.Migrate(cctx, pool)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("migrating: %w", err)
	}
	if len(applied) > 0 {
		log.Info("applied migrations", "versions", applied)
	}
	return pool, nil
}

// openRedis connects to Redis and checks it answers: one server, a Redis
// Cluster (addr= parameters) or a Sentinel-managed primary (master_name=);
// see config.RedisClient.
func openRedis(ctx context.Context, url string) (redis.UniversalClient, error) {
	c, where, err := config.RedisClient(url)
	if err != nil {
		return nil, usageError{err}
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	redisQuiet.Add(1)
	err = c.Ping(cctx).Err()
	redisQuiet.Add(-1)
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("connecting to Redis at %s: %w (%s)", where, err, config.RedisConnectHint(err))
	}
	return c, nil
}

// apiConfig builds the HTTP API config from the shared flags.
func (f *serverFlags) apiConfig(log *slog.Logger, reg *prometheus.Registry) (httpapi.Config, error) {
	tokens, err := config.Tokens(f.authTokens)
	if err != nil {
		return httpapi.Config{}, usageError{err}
	}
	if err := config.CheckAddr("http-addr", f.httpAddr); err != nil {
		return httpapi.Config{}, usageError{err}
	}
	if f.maxBodyBytes <= 0 {
		return httpapi.Config{}, usageError{fmt.Errorf("--max-body-bytes (RUNSTREAM_MAX_BODY_BYTES) must be > 0, got %d", f.maxBodyBytes)}
	}
	if err := f.limits.Validate(); err != nil {
		return httpapi.Config{}, usageError{err}
	}
	policy, err := f.snapshots.policy()
	if err != nil {
		return httpapi.Config{}, err
	}
	if len(tokens) == 0 && !f.insecure && !loopbackAddr(f.httpAddr) {
		return httpapi.Config{}, usageError{fmt.Errorf("--http-addr %s is reachable from other machines, and no --auth-tokens (RUNSTREAM_AUTH_TOKENS) are set: "+
			"anyone could append and read every tenant. Set tokens, listen on 127.0.0.1, or pass --insecure-no-auth on a network you trust", f.httpAddr)}
	}
	return httpapi.Config{Addr: f.httpAddr, MaxBodyBytes: f.maxBodyBytes, AuthTokens: tokens, DefaultTenant: f.defaultTenant,
		AllowedHosts: config.Brokers(f.allowedHosts), Limits: f.limits, SnapshotTTL: policy.TTL, SnapshotEncoding: policy.Encoding,
		Registerer: reg, Gatherer: reg, Logger: log}, nil
}

// noAuthWarnEvery is how often an API without tokens says so again.
const noAuthWarnEvery = 5 * time.Minute

// loopbackAddr reports whether a listen address is reachable from this
// machine only: localhost or a loopback IP (not "", 0.0.0.0 or ::).
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && httpapi.IsLoopbackName(host)
}

// warnNoAuth says, at start and then every interval until ctx ends, that
// the API asks for no credentials: a setting that must not go unnoticed in
// a log that is only skimmed.
func warnNoAuth(ctx context.Context, log *slog.Logger, cfg httpapi.Config, every time.Duration) {
	if len(cfg.AuthTokens) > 0 {
		return
	}
	warn := func() {
		log.Warn("authentication is off: no credentials are asked, every caller may append and read every tenant (set RUNSTREAM_AUTH_TOKENS)",
			"httpAddr", cfg.Addr)
	}
	warn()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			warn()
		}
	}
}

// LogValue redacts secrets when the effective config is logged.
func (f *serverFlags) LogValue() slog.Value {
	auth := "off"
	if f.authTokens != "" {
		auth = "on"
	} else if f.insecure {
		auth = "off (--insecure-no-auth)"
	}
	return slog.GroupValue(
		slog.String("postgresUrl", config.RedactURL(f.postgresURL)),
		slog.String("redisUrl", config.RedactURL(f.redisURL)),
		slog.String("httpAddr", f.httpAddr),
		slog.String("auth", auth),
		slog.Any("limits", f.limits),
		slog.Int64("maxBodyBytes", f.maxBodyBytes),
		slog.String("snapshotTtl", f.snapshots.ttl.String()),
		slog.String("snapshotEncoding", f.snapshots.encoding),
	)
}

// runWithOpsServer runs a component (relay, projector) next to a small
// HTTP server with /metrics, /healthz and /readyz, until ctx ends or the
// component returns; it then shuts the server down.
func runWithOpsServer(ctx context.Context, log *slog.Logger, reg *prometheus.Registry, addr string,
	ready func(context.Context) error, run func(context.Context) error) error {
	if err := config.CheckAddr("http-addr", addr); err != nil {
		return usageError{err}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		rctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := ready(rctx); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s (--http-addr): %w", addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	g.Go(func() error {
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
		return run(gctx)
	})
	log.Info("ops endpoints listening", "addr", ln.Addr().String())
	return g.Wait()
}
