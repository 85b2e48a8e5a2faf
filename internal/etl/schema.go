package etl

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runstream/runstream/store/postgres"
)

// DefaultSchema is the schema of the ETL's tables when none is given.
const DefaultSchema = "runstream_etl"

//go:embed migrations/*.sql
var migrationFS embed.FS

// schemaName is what CheckSchema accepts: a plain lowercase identifier, so
// it needs no quoting in SQL, in search_path or in psql.
var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// CheckSchema reports whether name can be the ETL's schema.
func CheckSchema(name string) error {
	if !schemaName.MatchString(name) {
		return fmt.Errorf("schema name %q must be lowercase letters, digits and '_', starting with a letter or '_', at most 63 characters", name)
	}
	return nil
}

// Connect opens a pool on url whose connections use schema (empty means
// [DefaultSchema]) as their search_path, creating the schema when absent.
// The sink's tables and the consumer checkpoints
// (runstream_consumer_checkpoints, from consumer/pgcheckpoint) live there.
func Connect(ctx context.Context, url, schema string) (*pgxpool.Pool, error) {
	if schema == "" {
		schema = DefaultSchema
	}
	if err := CheckSchema(schema); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parsing the ETL database URL: %w", err)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("opening the ETL database pool: %w", err)
	}
	if _, err := pool.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
		pool.Close()
		hint := postgres.ConnectHint(err, cfg.ConnConfig.User, "RUNSTREAM_ETL_DATABASE_URL")
		if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "42501" {
			hint = "may this user create schemas?"
		}
		return nil, fmt.Errorf("creating schema %s in the ETL database at %s:%d: %w (%s)",
			schema, cfg.ConnConfig.Host, cfg.ConnConfig.Port, err, hint)
	}
	return pool, nil
}

// Migrate applies the embedded migrations not yet recorded in
// etl_schema_migrations, in the pool's search_path schema (open the pool
// with [Connect]), with store/postgres's migration runner: each in its own
// transaction under an advisory lock per schema, idempotent and safe to run
// from several processes at once. It returns the versions it applied.
func Migrate(ctx context.Context, pool *pgxpool.Pool) ([]int, error) {
	applied, err := postgres.MigrateFS(ctx, pool, migrationFS, "migrations", "etl_schema_migrations")
	if err != nil {
		return applied, fmt.Errorf("migrating the ETL schema: %w", err)
	}
	return applied, nil
}
