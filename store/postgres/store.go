package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/runstream/runstream/store"
)

// NumShards is the number of outbox shards. A run's outbox rows all carry
// the shard [ShardOf] its runId, and each shard is published by one relay at
// a time, which keeps per-run order with several relays. Changing it needs an
// empty outbox.
const NumShards = 64

// ShardOf returns the outbox shard of a run (FNV-1a of the runId).
func ShardOf(runID string) int {
	h := fnv.New32a()
	h.Write([]byte(runID))
	return int(h.Sum32() % NumShards)
}

// Config configures a [Store]. The zero value is usable.
type Config struct {
	// SnapshotEvery checkpoints a run's reduced snapshot into run_snapshots
	// when ProjectSnapshot reduced at least this many events past the last
	// checkpoint. Zero means 64.
	SnapshotEvery int
	// DisableSnapshotCheckpoints makes ProjectSnapshot read-only.
	DisableSnapshotCheckpoints bool
	// Registerer receives the store's metrics; nil means none.
	Registerer prometheus.Registerer
	// Logger receives warnings; nil means discard.
	Logger *slog.Logger
	// AppendConcurrency is the most single appends (AppendEvent,
	// AppendValidated) running at once, each in its own transaction; more
	// wait and then share one (see appendGroups). Zero means the pool's
	// MaxConns: appends beyond it would wait for a connection anyway.
	AppendConcurrency int
	// AuditGrace is how far behind the database's clock the audit horizon
	// stays at least (ReadAudit): it covers appends by roles whose
	// transactions' start this role cannot see, and small steps of the
	// server's clock. Zero means DefaultAuditGrace (1s).
	AuditGrace time.Duration
}

// Validate reports a configuration error.
func (c Config) Validate() error {
	if c.SnapshotEvery < 0 {
		return fmt.Errorf("snapshot checkpoint interval must be >= 0 events, got %d", c.SnapshotEvery)
	}
	if c.AppendConcurrency < 0 {
		return fmt.Errorf("append concurrency must be >= 0 (0: the pool's size), got %d", c.AppendConcurrency)
	}
	if c.AuditGrace < 0 {
		return fmt.Errorf("audit grace must be >= 0 (0: %v), got %v", DefaultAuditGrace, c.AuditGrace)
	}
	return nil
}

// setDefaults gives every zero field its default; AppendConcurrency's
// depends on the pool.
func (c *Config) setDefaults(pool *pgxpool.Pool) {
	if c.SnapshotEvery == 0 {
		c.SnapshotEvery = 64
	}
	if c.AuditGrace == 0 {
		c.AuditGrace = DefaultAuditGrace
	}
	if c.AppendConcurrency == 0 {
		c.AppendConcurrency = max(1, int(pool.Config().MaxConns))
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Store is the Append Authority on a pgx pool. It is safe for concurrent
// use.
type Store struct {
	pool    *pgxpool.Pool
	cfg     Config
	log     *slog.Logger
	metrics *metrics
	poke    chan struct{}
	groups  *appendGroups
}

var _ store.Store = (*Store)(nil)

// New returns a Store on pool. It does not migrate; call [Migrate] first.
func New(pool *pgxpool.Pool, cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults(pool)
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	s := &Store{pool: pool, cfg: cfg, log: cfg.Logger.With("component", "store"), metrics: m,
		poke: make(chan struct{}, 1)}
	s.groups = &appendGroups{s: s, limit: cfg.AppendConcurrency}
	return s, nil
}

// Pool returns the store's pool (for readiness checks and the relay).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Ping checks that Postgres answers, for readiness.
func (s *Store) Ping(ctx context.Context) error {
	return classify(s.pool.Ping(ctx))
}

// Connect opens a pool on url with sane defaults for runstream and checks
// that the server answers within ctx.
func Connect(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parsing the Postgres URL (RUNSTREAM_POSTGRES_URL): %w", err)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("opening the Postgres pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connecting to Postgres at %s: %w (%s)", hostsOf(cfg), err, ConnectHint(err, cfg.ConnConfig.User, "RUNSTREAM_POSTGRES_URL"))
	}
	return pool, nil
}

// ConnectHint says what to check after a failed connection to Postgres,
// from the cause: the server refused the user or password (SQLSTATE 28P01
// invalid_password, 28000 invalid_authorization_specification: no such
// role, or pg_hba.conf refuses it), the database does not exist (3D000),
// another refusal by the server, or no answer at all (refused, timed out,
// unknown host), the one case where "is it running?" fits. urlVar names
// the variable the URL came from.
func ConnectHint(err error, user, urlVar string) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "28P01", "28000":
			return fmt.Sprintf("authentication failed for user %q: check the credentials in %s", user, urlVar)
		case "3D000":
			return fmt.Sprintf("the database does not exist: create it, or fix the database name in %s", urlVar)
		}
		return "the server answered and refused: see its message"
	}
	return "is it running? scripts/up.sh starts one"
}

// hostsOf lists the servers a (multi-host) URL names, for messages:
// "a:5432,b:5432".
func hostsOf(cfg *pgxpool.Config) string {
	hosts := []string{net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port)))}
	for _, f := range cfg.ConnConfig.Fallbacks {
		if h := net.JoinHostPort(f.Host, strconv.Itoa(int(f.Port))); !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	return strings.Join(hosts, ",")
}

// errTenant is returned by append for a run owned by another tenant.
var errTenant = &store.Error{Code: store.CodeForbidden, Field: "tenantId",
	Message: "this runId belongs to another tenant; a run's events must all carry the tenantId of its first event"}
