package postgres

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// schemaName is what CheckSchemaName accepts: a plain lowercase
// identifier, so it needs no quoting in SQL, in search_path or in psql.
var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// CheckSchemaName reports whether name can be the schema a sink keeps its
// own tables in (the ETL's, the lake's state).
func CheckSchemaName(name string) error {
	if !schemaName.MatchString(name) {
		return fmt.Errorf("schema name %q must be lowercase letters, digits and '_', starting with a letter or '_', at most 63 characters", name)
	}
	return nil
}

// ConnectSchema opens a pool on url whose connections use schema as their
// search_path, creating the schema when absent: the home of a sink's own
// tables. what names the database in errors ("the ETL database"), urlVar
// the variable its URL came from (for ConnectHint).
func ConnectSchema(ctx context.Context, url, schema, what, urlVar string) (*pgxpool.Pool, error) {
	if err := CheckSchemaName(schema); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parsing %s URL: %w", what, err)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("opening %s pool: %w", what, err)
	}
	if _, err := pool.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
		pool.Close()
		hint := ConnectHint(err, cfg.ConnConfig.User, urlVar)
		if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "42501" {
			hint = "may this user create schemas?"
		}
		return nil, fmt.Errorf("creating schema %s in %s at %s:%d: %w (%s)",
			schema, what, cfg.ConnConfig.Host, cfg.ConnConfig.Port, err, hint)
	}
	return pool, nil
}
