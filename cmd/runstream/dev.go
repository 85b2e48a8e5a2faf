package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/runstream/runstream/internal/config"
	"github.com/runstream/runstream/internal/devbroker"
	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/internal/lag"
	"github.com/runstream/runstream/internal/relay"
	"github.com/runstream/runstream/internal/retention"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/projector"
	"github.com/runstream/runstream/store/postgres"
)

func runDev(ctx context.Context, env *environment, args []string) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	var f serverFlags
	f.register(fs, "text", "tenant_demo")
	var rf relayFlags
	rf.register(fs)
	var pf projectorFlags
	pf.register(fs)
	var lagGroups lagGroupsFlag
	lagGroups.register(fs)
	brokers := fs.String("kafka-brokers", "", "Kafka brokers to use; empty: start the embedded broker")
	brokerAddr := fs.String("broker-addr", "127.0.0.1:9092", "listen address of the embedded broker")
	dataDir := fs.String("data-dir", ".runstream", "where the embedded broker keeps topics and committed offsets across restarts")
	demo := fs.Bool("demo", false, "also drive a workload of realistic runs through the API")
	demoRuns := fs.Int("demo-runs", 4, "runs in flight at once with --demo")
	demoDelay := fs.Duration("demo-event-delay", 300*time.Millisecond, "pause between a demo run's events")
	if err := parseFlags(fs, env, args, "runstream dev [flags]",
		"Everything in one process for a laptop: migrates Postgres, starts an embedded Kafka-protocol\nbroker (franz-go's kfake) unless --kafka-brokers is given, serves the HTTP API, relays the\noutbox to Kafka, projects the topic into Redis snapshots, and with --demo drives realistic runs through the API. Needs Postgres and\nRedis (scripts/up.sh starts both). Ctrl-C stops it, cancelling the demo's runs in flight first\n(a RunCancelled each) so none is left RUNNING."); err != nil {
		return err
	}
	log, err := newLogger(env.stderr, f.logLevel, f.logFormat)
	if err != nil {
		return err
	}
	reg := newRegistry()
	stopTracing, err := startTracing(ctx, env, "dev", reg, log)
	if err != nil {
		return err
	}
	defer stopTracing()
	apiCfg, err := f.apiConfig(log, reg)
	if err != nil {
		return err
	}
	relayCfg, err := rf.config(log, reg)
	if err != nil {
		return err
	}
	if *demoRuns < 1 {
		return usageError{fmt.Errorf("--demo-runs must be >= 1, got %d", *demoRuns)}
	}
	exported, err := lagGroups.groups(pf.group)
	if err != nil {
		return usageError{err}
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

	brokerList := config.Brokers(*brokers)
	brokerDesc := "external " + strings.Join(brokerList, ",")
	if len(brokerList) == 0 {
		b, err := devbroker.Start(devbroker.Config{Addr: *brokerAddr, DataDir: filepath.Join(*dataDir, "kafka"), Partitions: int32(rf.partitions)})
		if err != nil {
			return err
		}
		defer b.Close()
		brokerList = b.Addrs()
		brokerDesc = fmt.Sprintf("embedded (kfake) %s, data in %s", strings.Join(brokerList, ","), filepath.Join(*dataDir, "kafka"))
	}
	client, err := newKafkaClient(brokerList, rf.compression, log)
	if err != nil {
		return err
	}
	defer client.Close()

	st, err := postgres.New(pool, postgres.Config{Registerer: reg, Logger: log})
	if err != nil {
		return err
	}
	apiCfg.LagGroup = pf.group
	apiCfg.Lag = func(ctx context.Context, group string) (lag.Report, error) { return lag.Measure(ctx, client, group) }
	apiCfg.LagGroups, apiCfg.LagTopic = exported, rf.topic
	apiCfg.TopicGroups = func(ctx context.Context, topic string) ([]string, error) { return lag.TopicGroups(ctx, client, topic) }
	apiCfg.ResetGroupOffsets = func(ctx context.Context, g, topic string, to lag.ResetTo, apply bool) (lag.ResetPlan, error) {
		return lag.ResetOffsets(ctx, client, g, topic, to, apply)
	}
	apiCfg.DeleteGroup = func(ctx context.Context, g string) error { return lag.DeleteGroup(ctx, client, g) }
	lagExp, err := lag.NewExporter(client, exported, 5*time.Second, reg, log)
	if err != nil {
		return err
	}
	apiCfg.LagHistory = lag.NewHistory()
	lagExp.KeepHistory(apiCfg.LagHistory)
	if err := lagExp.WatchOutbox(st.Outbox().HeadAge, reg); err != nil {
		return err
	}
	srv, err := httpapi.New(apiCfg, st, rdb, httpapi.Check{Name: "kafka", Fn: client.Ping})
	if err != nil {
		return err
	}
	rl, err := relay.New(relayCfg, pool, client)
	if err != nil {
		return err
	}
	projCfg, err := pf.config(brokerList, rf.topic, log, reg)
	if err != nil {
		return err
	}
	projCfg.SnapshotTTL, projCfg.SnapshotEncoding = apiCfg.SnapshotTTL, apiCfg.SnapshotEncoding
	proj, err := projector.New(projCfg, rdb, st, kafkaLogOpt(log))
	if err != nil {
		return err
	}
	// Partitions of run_events made ahead, as `runstream retention run`
	// does in production; nothing is removed (no retention).
	keeper, err := retention.New(st, retention.Config{Log: log.With("component", "retention")})
	if err != nil {
		return err
	}
	// The components outlive ctx until the demo, if any, has ended its
	// runs in flight through them (workload.Driver): a stop never leaves
	// a demo run RUNNING.
	cctx, stopComponents := context.WithCancel(context.WithoutCancel(ctx))
	defer stopComponents()
	g, gctx := errgroup.WithContext(cctx)
	demoDone := make(chan struct{})
	var demoOnce sync.Once
	demoEnded := func() { demoOnce.Do(func() { close(demoDone) }) }
	defer demoEnded()
	go func() {
		select {
		case <-ctx.Done():
		case <-gctx.Done():
		}
		<-demoDone
		stopComponents()
	}()
	started := make(chan string, 1)
	g.Go(func() error { return srv.Run(gctx, started) })
	g.Go(func() error { warnNoAuth(gctx, log, apiCfg, noAuthWarnEvery); return nil })
	g.Go(func() error { return st.RunOutboxNotifier(gctx) })
	g.Go(func() error { return rl.Run(gctx) })
	g.Go(func() error { return proj.Run(gctx) })
	g.Go(func() error { return lagExp.Run(gctx) })
	g.Go(func() error {
		if err := keeper.Run(gctx); gctx.Err() == nil {
			return err
		}
		return nil
	})
	var addr string
	select {
	case addr = <-started:
	case <-gctx.Done():
		demoEnded()
		return g.Wait()
	case <-ctx.Done():
		demoEnded()
		return g.Wait()
	}
	base := "http://" + addr
	fmt.Fprintf(env.stdout, "runstream dev is up:\n"+
		"  HTTP API   %s  (curl %s/v1/runs/<runId>/events)\n"+
		"  console    %s/  (web console: runs, run pages; lag, dead letters, rebuilds, retention, audit log for operators)\n"+
		"  metrics    %s/metrics\n"+
		"  Kafka      %s, topic %q\n"+
		"  projector  group %q -> Redis snapshots (curl %s/v1/runs/<runId>/snapshot)\n"+
		"  Postgres   %s\n"+
		"  Redis      %s\n",
		base, base, base, base, brokerDesc, rf.topic, pf.group, base, config.RedactURL(f.postgresURL), config.RedactURL(f.redisURL))
	if *demo {
		token, tenant := "", ""
		for tok, ten := range apiCfg.AuthTokens {
			if ten != httpapi.OperatorTenant { // operators do not append
				token, tenant = tok, ten
				break
			}
		}
		d := &workload.Driver{BaseURL: base, Token: token, Tenant: tenant, Concurrency: *demoRuns,
			EventDelay: *demoDelay, Logger: log.With("component", "demo")}
		fmt.Fprintf(env.stdout, "  demo       %d runs in flight, posting through the API; a stop cancels them\n", *demoRuns)
		// The demo stops with ctx (or a failed component), then ends its
		// runs while the components still run.
		dctx, cancelDemo := context.WithCancel(gctx)
		defer context.AfterFunc(ctx, cancelDemo)()
		g.Go(func() error {
			defer demoEnded()
			defer cancelDemo()
			return d.Run(dctx)
		})
	} else {
		demoEnded()
	}
	fmt.Fprintln(env.stdout, "Ctrl-C stops it.")
	return g.Wait()
}
