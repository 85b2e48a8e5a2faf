package harness

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runstream/runstream/store/postgres"
)

// Schema is a fresh schema of a bench, prefix_<random>, dropped by Drop
// unless kept.
type Schema struct {
	// Name is the schema's name.
	Name string
	// URL is the database URL with the schema as its search_path.
	URL   string
	admin *pgxpool.Pool
	keep  bool
}

// NewSchema creates the schema prefix<random> in the database at pgURL.
// With keep, Drop leaves it for inspection.
func NewSchema(ctx context.Context, pgURL, prefix string, keep bool) (*Schema, error) {
	admin, err := postgres.Connect(ctx, pgURL)
	if err != nil {
		return nil, err
	}
	name := prefix + RandomHex(6)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		admin.Close()
		return nil, fmt.Errorf("creating schema %s (the role needs CREATE on the database): %w", name, err)
	}
	return &Schema{Name: name, URL: WithSearchPath(pgURL, name), admin: admin, keep: keep}, nil
}

// MigratedSchema creates a fresh schema bench_<random> (see [NewSchema]),
// opens a pool on it and applies the store's migrations: the Append
// Authority of a bench. On error it leaves nothing behind; else the caller
// closes the pool and drops the schema.
func MigratedSchema(ctx context.Context, pgURL string, keep bool) (_ *Schema, _ *pgxpool.Pool, err error) {
	sc, err := NewSchema(ctx, pgURL, "bench_", keep)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, sc.Drop(ctx))
		}
	}()
	pool, err := postgres.Connect(ctx, sc.URL)
	if err != nil {
		return nil, nil, err
	}
	if _, err := postgres.Migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, nil, fmt.Errorf("migrating the bench schema %s: %w", sc.Name, err)
	}
	return sc, pool, nil
}

// ExistingSchema opens a pool on schema name, which an earlier bench left
// (--keep-schema), and applies the store's migrations to it (a no-op when
// it is current). The schema is kept: Drop only closes.
func ExistingSchema(ctx context.Context, pgURL, name string) (_ *Schema, _ *pgxpool.Pool, err error) {
	admin, err := postgres.Connect(ctx, pgURL)
	if err != nil {
		return nil, nil, err
	}
	sc := &Schema{Name: name, URL: WithSearchPath(pgURL, name), admin: admin, keep: true}
	defer func() {
		if err != nil {
			err = errors.Join(err, sc.Drop(ctx))
		}
	}()
	var exists bool
	if err := admin.QueryRow(ctx, `SELECT to_regnamespace($1) IS NOT NULL`, name).Scan(&exists); err != nil {
		return nil, nil, fmt.Errorf("looking up schema %s: %w", name, err)
	}
	if !exists {
		return nil, nil, fmt.Errorf("schema %q does not exist: load one with runstream bench read --source store --keep-schema (it prints the schema's name)", name)
	}
	pool, err := postgres.Connect(ctx, sc.URL)
	if err != nil {
		return nil, nil, err
	}
	if _, err := postgres.Migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, nil, fmt.Errorf("migrating schema %s: %w", name, err)
	}
	return sc, pool, nil
}

// StoreSchema is the store a bench appends into: schema existing when set
// ([ExistingSchema]: migrated, always kept), else a fresh one
// ([MigratedSchema], kept when keep is).
func StoreSchema(ctx context.Context, pgURL, existing string, keep bool) (*Schema, *pgxpool.Pool, error) {
	if existing != "" {
		return ExistingSchema(ctx, pgURL, existing)
	}
	return MigratedSchema(ctx, pgURL, keep)
}

// Drop drops the schema unless it is kept, also after ctx was cancelled
// (an interrupted bench still cleans up). It is safe to call more than
// once.
func (s *Schema) Drop(ctx context.Context) error {
	if s.admin == nil {
		return nil
	}
	defer func() { s.admin.Close(); s.admin = nil }()
	if s.keep {
		return nil
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 60*time.Second)
	defer cancel()
	if _, err := s.admin.Exec(dctx, "DROP SCHEMA "+s.Name+" CASCADE"); err != nil {
		return fmt.Errorf("dropping bench schema %s: %w", s.Name, err)
	}
	return nil
}

// WithSearchPath sets search_path in a pgx connection string (URL or
// keyword/value form).
func WithSearchPath(pgURL, schema string) string {
	if !strings.Contains(pgURL, "://") {
		return pgURL + " search_path=" + schema
	}
	u, err := url.Parse(pgURL)
	if err != nil {
		return pgURL // postgres.Connect reports the parse error
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// WarmPool opens n connections of pool before a window, so connection
// setup is not measured.
func WarmPool(ctx context.Context, pool *pgxpool.Pool, n int) error {
	conns := make([]*pgxpool.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for range n {
		c, err := pool.Acquire(ctx)
		if err != nil {
			return fmt.Errorf("opening %d connections before the window: %w", n, err)
		}
		conns = append(conns, c)
	}
	return nil
}
