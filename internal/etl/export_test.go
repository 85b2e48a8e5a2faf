package etl

import (
	"context"
	"io/fs"
	"strconv"
	"strings"
	"testing/fstest"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runstream/runstream/store/postgres"
)

// CopyMinRows is copyMinRows, for tests that need the COPY path.
const CopyMinRows = copyMinRows

// MigrateTo applies the migrations up to version only: the schema an
// earlier version of the ETL left.
func MigrateTo(ctx context.Context, pool *pgxpool.Pool, version int) ([]int, error) {
	older := fstest.MapFS{}
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		num, _, _ := strings.Cut(e.Name(), "_")
		if v, err := strconv.Atoi(num); err != nil || v > version {
			continue
		}
		b, err := fs.ReadFile(migrationFS, "migrations/"+e.Name())
		if err != nil {
			return nil, err
		}
		older["migrations/"+e.Name()] = &fstest.MapFile{Data: b}
	}
	return postgres.MigrateFS(ctx, pool, older, "migrations", "etl_schema_migrations")
}

// MigrationSQL is the text of the embedded migration file name.
func MigrationSQL(name string) (string, error) {
	b, err := fs.ReadFile(migrationFS, "migrations/"+name)
	return string(b), err
}
