package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one embedded, numbered SQL file.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order. A badly named
// file is a programmer error caught by tests, so it panics.
func migrations() []migration {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		panic(err)
	}
	var out []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			panic(fmt.Sprintf("migration %q: name must start with a number and '_'", e.Name()))
		}
		b, err := migrationFS.ReadFile("migrations/" + e.Name())
		if err != nil {
			panic(err)
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out
}

// migrateLockKey serialises concurrent migrators (several api processes
// starting at once) with a transaction-scoped advisory lock.
const migrateLockKey = 0x72756e73 // "runs"

// Migrate applies every embedded migration not yet recorded in
// schema_migrations, each in its own transaction, under an advisory lock. It
// is idempotent and safe to run from several processes at once. It returns the
// versions it applied.
func Migrate(ctx context.Context, pool *pgxpool.Pool) ([]int, error) {
	var applied []int
	for _, m := range migrations() {
		done, err := applyMigration(ctx, pool, m)
		if err != nil {
			return applied, err
		}
		if done {
			applied = append(applied, m.version)
		}
	}
	return applied, nil
}

func applyMigration(ctx context.Context, pool *pgxpool.Pool, m migration) (bool, error) {
	applied := false
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLockKey); err != nil {
			return err
		}
		// Created under the lock: CREATE TABLE IF NOT EXISTS alone races
		// with a concurrent migrator on the catalog's unique index.
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version integer PRIMARY KEY,
			name text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT clock_timestamp())`); err != nil {
			return err
		}
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`, m.version).Scan(&exists); err != nil {
			return err
		}
		if exists {
			return nil
		}
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
			return err
		}
		applied = true
		return nil
	})
	if err != nil {
		return false, classify(fmt.Errorf("applying migration %s: %w", m.name, err))
	}
	return applied, nil
}
