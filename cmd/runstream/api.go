package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"golang.org/x/sync/errgroup"

	"github.com/runstream/runstream/internal/config"
	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/internal/lag"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

func runAPI(ctx context.Context, env *environment, args []string) error {
	fs := flag.NewFlagSet("api", flag.ContinueOnError)
	var f serverFlags
	f.register(fs, "json", "")
	brokers := fs.String("kafka-brokers", "", "Kafka brokers, optional: enables GET /v1/lag, the lag gauges and the Kafka readiness check")
	group := fs.String("group", store.DefaultProjectorGroup, "consumer group GET /v1/lag reports by default")
	var lagGroups lagGroupsFlag
	lagGroups.register(fs)
	if err := parseFlags(fs, env, args, "runstream api [flags]",
		"Serves the HTTP API: appends to the Postgres Append Authority, event reads, snapshots.\nMigrates the schema on start. Stops gracefully on SIGTERM."); err != nil {
		return err
	}
	log, err := newLogger(env.stderr, f.logLevel, f.logFormat)
	if err != nil {
		return err
	}
	exported, err := lagGroups.groups(*group)
	if err != nil {
		return usageError{err}
	}
	reg := newRegistry()
	cfg, err := f.apiConfig(log, reg)
	if err != nil {
		return err
	}
	stopTracing, err := startTracing(ctx, env, "api", reg, log)
	if err != nil {
		return err
	}
	defer stopTracing()
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
	var checks []httpapi.Check
	var exporter *lag.Exporter
	if list := config.Brokers(*brokers); len(list) > 0 {
		kc, err := kgo.NewClient(kgo.SeedBrokers(list...), kafkaLogOpt(log))
		if err != nil {
			return fmt.Errorf("creating the Kafka client: %w", err)
		}
		defer kc.Close()
		cfg.LagGroup = *group
		cfg.Lag = func(ctx context.Context, g string) (lag.Report, error) { return lag.Measure(ctx, kc, g) }
		cfg.LagGroups = exported // GET /v1/lag/groups reports these, and the others the brokers know on the topic
		cfg.TopicGroups = func(ctx context.Context, topic string) ([]string, error) { return lag.TopicGroups(ctx, kc, topic) }
		cfg.ResetGroupOffsets = func(ctx context.Context, g, topic string, to lag.ResetTo, apply bool) (lag.ResetPlan, error) {
			return lag.ResetOffsets(ctx, kc, g, topic, to, apply)
		}
		cfg.DeleteGroup = func(ctx context.Context, g string) error { return lag.DeleteGroup(ctx, kc, g) }
		checks = append(checks, httpapi.Check{Name: "kafka", Fn: kc.Ping})
		if exporter, err = lag.NewExporter(kc, exported, 10*time.Second, reg, log); err != nil {
			return err
		}
		cfg.LagHistory = lag.NewHistory()
		exporter.KeepHistory(cfg.LagHistory)
		if err := exporter.WatchOutbox(st.Outbox().HeadAge, reg); err != nil {
			return err
		}
	}
	srv, err := httpapi.New(cfg, st, rdb, checks...)
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	if exporter != nil {
		g.Go(func() error { return exporter.Run(gctx) })
	}
	g.Go(func() error { return srv.Run(gctx, nil) })
	g.Go(func() error { warnNoAuth(gctx, log, cfg, noAuthWarnEvery); return nil })
	g.Go(func() error { return st.RunOutboxNotifier(gctx) })
	return g.Wait()
}
