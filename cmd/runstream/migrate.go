package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/runstream/runstream/store/postgres"
)

func runMigrate(ctx context.Context, env *environment, args []string) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	url := fs.String("postgres-url", defaultPostgresURL, "PostgreSQL URL of the Append Authority")
	if err := parseFlags(fs, env, args, "runstream migrate [flags]",
		"Applies the embedded schema migrations not yet applied. Idempotent; safe to run\nfrom several processes at once."); err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	pool, err := postgres.Connect(cctx, *url)
	if err != nil {
		return err
	}
	defer pool.Close()
	applied, err := postgres.Migrate(cctx, pool)
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		fmt.Fprintln(env.stdout, "schema is up to date")
		return nil
	}
	fmt.Fprintf(env.stdout, "applied migrations %v\n", applied)
	return nil
}
