package etl

import (
	"context"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runstream/runstream/store/postgres"
)

// DefaultSchema is the schema of the ETL's tables when none is given.
const DefaultSchema = "runstream_etl"

//go:embed migrations/*.sql
var migrationFS embed.FS

// CheckSchema reports whether name can be the ETL's schema
// (postgres.CheckSchemaName).
func CheckSchema(name string) error { return postgres.CheckSchemaName(name) }

// Connect opens a pool on url whose connections use schema (empty means
// [DefaultSchema]) as their search_path, creating the schema when absent.
// The sink's tables and the consumer checkpoints
// (runstream_consumer_checkpoints, from consumer/pgcheckpoint) live there.
func Connect(ctx context.Context, url, schema string) (*pgxpool.Pool, error) {
	if schema == "" {
		schema = DefaultSchema
	}
	return postgres.ConnectSchema(ctx, url, schema, "the ETL database", "RUNSTREAM_ETL_DATABASE_URL")
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
