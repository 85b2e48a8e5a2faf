package main

import (
	"context"
	"flag"

	"golang.org/x/sync/errgroup"

	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/store/postgres"
)

func runAPI(ctx context.Context, env *environment, args []string) error {
	fs := flag.NewFlagSet("api", flag.ContinueOnError)
	var f serverFlags
	f.register(fs, "json", "")
	if err := parseFlags(fs, env, args, "runstream api [flags]",
		"Serves the HTTP API: appends to the Postgres Append Authority, event reads, snapshots.\nMigrates the schema on start. Stops gracefully on SIGTERM."); err != nil {
		return err
	}
	log, err := newLogger(env.stderr, f.logLevel, f.logFormat)
	if err != nil {
		return err
	}
	reg := newRegistry()
	cfg, err := f.apiConfig(log, reg)
	if err != nil {
		return err
	}
	log.Info("starting runstream api", "config", &f)
	pool, err := openPostgres(ctx, log, f.postgresURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	rdb, err := openRedis(ctx, f.redisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	st, err := postgres.New(pool, postgres.Config{Registerer: reg, Logger: log})
	if err != nil {
		return err
	}
	srv, err := httpapi.New(cfg, st, rdb)
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return srv.Run(gctx, nil) })
	g.Go(func() error { return st.RunOutboxNotifier(gctx) })
	return g.Wait()
}
