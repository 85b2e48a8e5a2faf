package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/runstream/runstream/internal/config"
	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store/postgres"
)

func runDev(ctx context.Context, env *environment, args []string) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	var f serverFlags
	f.register(fs, "text")
	demo := fs.Bool("demo", false, "also drive a workload of realistic runs through the API")
	demoRuns := fs.Int("demo-runs", 4, "runs in flight at once with --demo")
	demoDelay := fs.Duration("demo-event-delay", 300*time.Millisecond, "pause between a demo run's events")
	if err := parseFlags(fs, env, args, "runstream dev [flags]",
		"Everything in one process for a laptop: migrates Postgres, serves the HTTP API, and\nwith --demo drives realistic runs through it. Needs Postgres and Redis (scripts/up.sh\nstarts both). Ctrl-C stops it."); err != nil {
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
	if *demoRuns < 1 {
		return usageError{fmt.Errorf("--demo-runs must be >= 1, got %d", *demoRuns)}
	}
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
	started := make(chan string, 1)
	g.Go(func() error { return srv.Run(gctx, started) })
	var addr string
	select {
	case addr = <-started:
	case <-gctx.Done():
		return g.Wait()
	}
	base := "http://" + addr
	fmt.Fprintf(env.stdout, "runstream dev is up:\n  HTTP API   %s  (try: curl %s/v1/runs/<runId>/events)\n  metrics    %s/metrics\n  Postgres   %s\n  Redis      %s\n",
		base, base, base, config.RedactURL(f.postgresURL), f.redisURL)
	if *demo {
		token := ""
		tenant := ""
		if cfg.AuthTokens != nil {
			for tok, ten := range cfg.AuthTokens {
				token, tenant = tok, ten
				break
			}
		}
		d := &workload.Driver{BaseURL: base, Token: token, Tenant: tenant, Concurrency: *demoRuns,
			EventDelay: *demoDelay, Logger: log.With("component", "demo")}
		fmt.Fprintf(env.stdout, "  demo       %d runs in flight, posting through the API\n", *demoRuns)
		g.Go(func() error { return d.Run(gctx) })
	}
	fmt.Fprintln(env.stdout, "Ctrl-C stops it.")
	return g.Wait()
}
