package postgres

import (
	"context"
	"embed"
	"errors"
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

// migration is one numbered SQL file.
type migration struct {
	version int
	name    string
	sql     string
}

// readMigrations returns the *.sql files of dir in fsys in version order.
// Files are named <number>_<what>.sql.
func readMigrations(fsys fs.FS, dir string) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %q: name must start with a number and '_'", e.Name())
		}
		b, err := fs.ReadFile(fsys, dir+"/"+e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// Migrate applies the Append Authority's embedded migrations not yet
// recorded in schema_migrations (see [MigrateFS]).
func Migrate(ctx context.Context, pool *pgxpool.Pool) ([]int, error) {
	return MigrateFS(ctx, pool, migrationFS, "migrations", "schema_migrations")
}

// MigrateFS applies the numbered SQL files of dir in fsys that are not yet
// recorded in table, in the pool's search_path schema, each in its own
// transaction under an advisory lock keyed by table and schema (so several
// processes starting at once apply each file exactly once, and migrators of
// different schemas do not wait for each other). It is idempotent and
// returns the versions it applied. The ETL uses it for its own schema.
func MigrateFS(ctx context.Context, pool *pgxpool.Pool, fsys fs.FS, dir, table string) ([]int, error) {
	ms, err := readMigrations(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("reading migrations: %w", err)
	}
	tbl := pgx.Identifier{table}.Sanitize()
	var applied []int
	for _, m := range ms {
		done := false
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			var schema *string
			if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
				return err
			}
			if schema == nil {
				return errors.New("the connection's search_path names no existing schema")
			}
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1 || '|' || $2, 0))`, table, *schema); err != nil {
				return err
			}
			// Created under the lock: CREATE TABLE IF NOT EXISTS alone races
			// with a concurrent migrator on the catalog's unique index.
			if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+tbl+` (
				version    integer PRIMARY KEY,
				name       text NOT NULL,
				applied_at timestamptz NOT NULL DEFAULT clock_timestamp())`); err != nil {
				return err
			}
			var exists bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+tbl+` WHERE version = $1)`, m.version).Scan(&exists); err != nil {
				return err
			}
			if exists {
				return nil
			}
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO `+tbl+` (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
				return err
			}
			done = true
			return nil
		})
		if err != nil {
			return applied, classify(fmt.Errorf("applying migration %s: %w", m.name, err))
		}
		if done {
			applied = append(applied, m.version)
		}
	}
	return applied, nil
}
