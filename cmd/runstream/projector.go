package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/plugin/kslog"

	"github.com/runstream/runstream/internal/config"
	"github.com/runstream/runstream/internal/tracing"
	"github.com/runstream/runstream/projector"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// projectorFlags are the projector's settings, shared by projector and dev.
type projectorFlags struct {
	group     string
	maxPoll   int
	lagHighMs int
	cacheMB   int
	trace     string
	converge  convergeFlags
	member    memberFlags
}

func (f *projectorFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.group, "group", store.DefaultProjectorGroup, "Kafka consumer group of the projectors")
	fs.IntVar(&f.maxPoll, "max-poll-records", 5000, "most records reduced per batch")
	fs.IntVar(&f.lagHighMs, "lag-high-ms", 5000, "projection lag that raises PROJECTOR_LAG_HIGH")
	fs.IntVar(&f.cacheMB, "snapshot-cache-mb", projector.DefaultSnapshotCacheBytes>>20,
		"MiB of decoded snapshots the projector keeps to skip reading them back from Redis (0 disables the cache)")
	traceConsumerFlag(fs, &f.trace)
	f.converge.register(fs)
	f.member.register(fs)
}

func (f *projectorFlags) config(brokers []string, topic string, log *slog.Logger, reg prometheus.Registerer) (projector.Config, error) {
	if strings.TrimSpace(f.group) == "" {
		return projector.Config{}, usageError{fmt.Errorf("--group (RUNSTREAM_GROUP) must not be empty")}
	}
	if f.maxPoll < 1 || f.lagHighMs < 1 {
		return projector.Config{}, usageError{fmt.Errorf("--max-poll-records and --lag-high-ms must be >= 1")}
	}
	if f.cacheMB < 0 {
		return projector.Config{}, usageError{fmt.Errorf("--snapshot-cache-mb must be >= 0 (0 disables the cache)")}
	}
	traceMode, err := tracing.ParseConsumerMode(f.trace)
	if err != nil {
		return projector.Config{}, usageError{err}
	}
	convInterval, convGrace, convOff, err := f.converge.values()
	if err != nil {
		return projector.Config{}, err
	}
	session, instanceID, err := f.member.values()
	if err != nil {
		return projector.Config{}, err
	}
	// --snapshot-cache-mb 0 turns the cache off (its documented meaning);
	// in the config, 0 means the default.
	cfg := projector.Config{Brokers: brokers, Topic: topic, Group: f.group, MaxPollRecords: f.maxPoll,
		LagHighThreshold:   time.Duration(f.lagHighMs) * time.Millisecond,
		SnapshotCacheBytes: int64(f.cacheMB) << 20, DisableSnapshotCache: f.cacheMB == 0,
		ConvergeInterval: convInterval, ConvergeGrace: convGrace, DisableConvergence: convOff,
		SessionTimeout: session, InstanceID: instanceID, TraceConsumer: traceMode,
		Registerer: reg, Logger: log}
	if err := cfg.Validate(); err != nil {
		return cfg, usageError{err}
	}
	return cfg, nil
}

// kafkaLogOpt bridges franz-go's logs to slog. Its info level narrates every
// metadata refresh: keep its warnings and errors unless we run at debug.
func kafkaLogOpt(log *slog.Logger) kgo.Opt {
	klog := slog.New(minLevel{log.Handler(), slog.LevelWarn}).With("component", "kafka")
	if log.Enabled(context.Background(), slog.LevelDebug) {
		klog = log.With("component", "kafka")
	}
	return kgo.WithLogger(kslog.New(klog))
}

func runProjector(ctx context.Context, env *environment, args []string) error {
	fs := flag.NewFlagSet("projector", flag.ContinueOnError)
	pgURL := fs.String("postgres-url", defaultPostgresURL, "PostgreSQL URL of the Append Authority (for resyncs)")
	redisURL := fs.String("redis-url", defaultRedisURL, "Redis URL of the snapshots (redis://h1:p?addr=h2:p&addr=h3:p for a cluster)")
	brokers := fs.String("kafka-brokers", "", "Kafka bootstrap brokers, comma-separated (required)")
	topic := fs.String("topic", store.DefaultTopic, "Kafka topic of run events")
	metricsAddr := fs.String("http-addr", "127.0.0.1:9465", "address of /metrics, /healthz and /readyz")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	logFormat := fs.String("log-format", "json", "json or text")
	var pf projectorFlags
	pf.register(fs)
	pf.member.getenv = env.getenv
	var sf snapshotFlags
	sf.register(fs)
	if err := parseFlags(fs, env, args, "runstream projector [flags]",
		"Reduces the run-event topic into Redis snapshots, in a consumer group: run up to one\nper partition. Resyncs runs from Postgres when it sees a gap. Stops gracefully on SIGTERM."); err != nil {
		return err
	}
	log, err := newLogger(env.stderr, *logLevel, *logFormat)
	if err != nil {
		return err
	}
	reg := newRegistry()
	cfg, err := pf.config(config.Brokers(*brokers), *topic, log, reg)
	if err != nil {
		return err
	}
	stopTracing, err := startTracing(ctx, env, "projector", reg, log)
	if err != nil {
		return err
	}
	defer stopTracing()
	policy, err := sf.policy()
	if err != nil {
		return err
	}
	cfg.SnapshotTTL, cfg.SnapshotEncoding = policy.TTL, policy.Encoding
	pool, err := openPostgres(ctx, log, *pgURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	rdb, err := openRedis(ctx, *redisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	st, err := postgres.New(pool, postgres.Config{Logger: log})
	if err != nil {
		return err
	}
	p, err := projector.New(cfg, rdb, st, kafkaLogOpt(log))
	if err != nil {
		return err
	}
	ready := func(ctx context.Context) error {
		if err := pool.Ping(ctx); err != nil {
			return fmt.Errorf("postgres: %w", err)
		}
		return rdb.Ping(ctx).Err()
	}
	log.Info("starting runstream projector", "brokers", *brokers, "topic", *topic, "group", pf.group,
		"sessionTimeout", cfg.SessionTimeout.String(), "instanceId", cfg.InstanceID)
	return runWithOpsServer(ctx, log, reg, *metricsAddr, ready, p.Run)
}

func runRebuild(ctx context.Context, env *environment, args []string) error {
	fs := flag.NewFlagSet("rebuild", flag.ContinueOnError)
	pgURL := fs.String("postgres-url", defaultPostgresURL, "PostgreSQL URL of the Append Authority")
	redisURL := fs.String("redis-url", defaultRedisURL, "Redis URL of the snapshots")
	runID := fs.String("run", "", "rebuild this run's snapshot")
	all := fs.Bool("all", false, "rebuild every run's snapshot")
	batch := fs.Int("batch", 200, "runs per Redis pipeline with --all")
	reason := fs.String("reason", "", "why, for the audit log of operator actions (at most 500 bytes)")
	var sf snapshotFlags
	sf.register(fs)
	if err := parseFlags(fs, env, args, "runstream rebuild (--run ID | --all) [flags]",
		"Rebuilds Redis snapshots from the store (projectSnapshot). Safe while projectors run:\na snapshot is only written when Redis does not hold a newer one."); err != nil {
		return err
	}
	if (*runID == "") == !*all {
		return usageError{fmt.Errorf("say what to rebuild: --run ID or --all")}
	}
	if *batch < 1 {
		return usageError{fmt.Errorf("--batch must be >= 1")}
	}
	if err := checkReasonFlag(*reason); err != nil {
		return err
	}
	policy, err := sf.policy()
	if err != nil {
		return err
	}
	log := slogDiscard()
	pool, err := openPostgres(ctx, log, *pgURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	rdb, err := openRedis(ctx, *redisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	st, err := postgres.New(pool, postgres.Config{DisableSnapshotCheckpoints: false})
	if err != nil {
		return err
	}
	if *runID != "" {
		res, err := snapshots.RebuildRuns(ctx, rdb, st, []string{*runID}, 1, policy)
		switch {
		case err != nil:
			return err
		case res.Unknown == 1:
			return fmt.Errorf("run %q: the store has no events of it; check the id (GET /v1/runs lists them)", *runID)
		case res.Expired == 1:
			fmt.Fprintf(env.stdout, "run %q: not written: it ended longer ago than --snapshot-ttl (%s), so Redis keeps it no more; the API serves it from the store\n", *runID, policy.TTL)
		case res.Current == 1:
			fmt.Fprintf(env.stdout, "run %q: not written: Redis already holds a snapshot as new as the store's\n", *runID)
		default:
			fmt.Fprintf(env.stdout, "rebuilt run %q\n", *runID)
		}
		return recordCLIAction(ctx, env, pool, "run.resync", "run "+*runID, 1, *reason)
	}
	total, err := st.CountRuns(ctx)
	if err != nil {
		return err
	}
	bar := newProgress(env.stderr, total, "runs")
	var sum snapshots.RebuildResult
	after, seen := "", int64(0)
	for {
		ids, err := st.ListRuns(ctx, after, *batch)
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			break
		}
		res, err := snapshots.RebuildRuns(ctx, rdb, st, ids, 4, policy)
		if err != nil {
			return err
		}
		sum = sum.Add(res)
		seen += int64(len(ids))
		after = ids[len(ids)-1]
		bar.set(seen)
	}
	bar.done()
	fmt.Fprintln(env.stdout, rebuildSummary(sum, seen, policy.TTL))
	return recordCLIAction(ctx, env, pool, "rebuild.start", "runstream rebuild --all: every run", seen, *reason)
}

// rebuildSummary is rebuild --all's last line: how many of the runs seen
// were written, and why the others were skipped.
func rebuildSummary(res snapshots.RebuildResult, seen int64, ttl time.Duration) string {
	line := fmt.Sprintf("rebuilt %d of %d runs", res.Written, seen)
	var why []string
	if res.Current > 0 {
		why = append(why, fmt.Sprintf("%d already current in Redis", res.Current))
	}
	if res.Expired > 0 {
		why = append(why, fmt.Sprintf("%d ended longer ago than --snapshot-ttl (%s), which Redis keeps no more", res.Expired, ttl))
	}
	if res.Unknown > 0 {
		why = append(why, fmt.Sprintf("%d with no events in the store", res.Unknown))
	}
	if len(why) > 0 {
		line += "; skipped: " + strings.Join(why, ", ")
	}
	return line
}
