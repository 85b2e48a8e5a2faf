package etl

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultSchema is the schema of the ETL's tables when none is given.
const DefaultSchema = "runstream_etl"

//go:embed migrations/*.sql
var migrationFS embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order. A badly
// named file is a programmer error caught by every test, so it panics.
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
			panic(fmt.Sprintf("etl migration %q: name must start with a number and '_'", e.Name()))
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
		return nil, fmt.Errorf("creating schema %s in the ETL database at %s:%d: %w (is it running, may this user create schemas?)",
			schema, cfg.ConnConfig.Host, cfg.ConnConfig.Port, err)
	}
	return pool, nil
}

// migrateLockKey serialises concurrent migrators of one schema (several
// ETL processes starting at once): the key is hashed with the schema name.
const migrateLockKey = "runstream-etl-migrate"

// Migrate applies the embedded migrations not yet recorded in
// etl_schema_migrations, in the pool's search_path schema, each in its own
// transaction under an advisory lock. It is idempotent and safe to run
// from several processes at once, and returns the versions it applied.
func Migrate(ctx context.Context, pool *pgxpool.Pool) ([]int, error) {
	var applied []int
	for _, m := range migrations() {
		done := false
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			var schema *string
			if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
				return err
			}
			if schema == nil {
				return errors.New("the connection's search_path names no existing schema (open the pool with etl.Connect)")
			}
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1 || '|' || $2, 0))`, migrateLockKey, *schema); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS etl_schema_migrations (
				version    integer PRIMARY KEY,
				name       text NOT NULL,
				applied_at timestamptz NOT NULL DEFAULT clock_timestamp())`); err != nil {
				return err
			}
			var exists bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM etl_schema_migrations WHERE version = $1)`, m.version).Scan(&exists); err != nil {
				return err
			}
			if exists {
				return nil
			}
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO etl_schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
				return err
			}
			done = true
			return nil
		})
		if err != nil {
			return applied, fmt.Errorf("applying ETL migration %s: %w", m.name, err)
		}
		if done {
			applied = append(applied, m.version)
		}
	}
	return applied, nil
}
