package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/runstream/runstream/internal/archive"
	"github.com/runstream/runstream/internal/config"
	"github.com/runstream/runstream/internal/lag"
	"github.com/runstream/runstream/internal/lake"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// lakeFlags are the settings of `runstream lake`.
type lakeFlags struct {
	brokers, topic, group string
	lakeURL, pgURL        string
	schema, spoolDir      string
	rotateRecords         int64
	rotateInterval        time.Duration
	flushIdle             time.Duration
	currentInterval       time.Duration
	currentRetention      time.Duration
	checkpointRetention   time.Duration
	maxPoll, maxOpenFiles int
	httpAddr              string
	logLevel, logFormat   string
	member                memberFlags
	converge              convergeFlags
}

// LogValue redacts secrets when the effective config is logged.
func (f *lakeFlags) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("brokers", f.brokers), slog.String("topic", f.topic), slog.String("group", f.group),
		slog.String("lakeUrl", f.lakeURL), slog.String("postgresUrl", config.RedactURL(f.pgURL)), slog.String("lakeSchema", f.schema),
		slog.Int64("rotateRecords", f.rotateRecords), slog.String("rotateInterval", f.rotateInterval.String()),
		slog.String("flushIdle", f.flushIdle.String()), slog.String("currentInterval", f.currentInterval.String()),
		slog.String("currentRetention", f.currentRetention.String()), slog.String("checkpointRetention", f.checkpointRetention.String()),
		slog.String("spoolDir", f.spoolDir), slog.Int("maxPollRecords", f.maxPoll), slog.Int("maxOpenFiles", f.maxOpenFiles), slog.String("httpAddr", f.httpAddr),
		slog.String("sessionTimeout", f.member.sessionTimeout.String()), slog.String("instanceId", f.member.instanceID),
	)
}

func runLake(ctx context.Context, env *environment, args []string) error {
	fs := flag.NewFlagSet("lake", flag.ContinueOnError)
	var f lakeFlags
	fs.StringVar(&f.brokers, "kafka-brokers", "", "Kafka bootstrap brokers, comma-separated (required)")
	fs.StringVar(&f.topic, "topic", store.DefaultTopic, "Kafka topic of run events")
	fs.StringVar(&f.group, "group", lake.DefaultGroup, "Kafka consumer group of the lake (its lag: runstream lag --group)")
	fs.StringVar(&f.lakeURL, "lake-url", "", "where the files go (required): an absolute directory (file:///var/lib/runstream/lake) or s3://bucket/prefix?endpoint=host:port "+
		"(credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY); see docs/ARCHIVE.md")
	fs.StringVar(&f.pgURL, "postgres-url", "", "PostgreSQL URL of the Append Authority (required): gaps and convergence read the store, and the lake keeps its state (offsets, checkpoints, snapshots) in --lake-schema there")
	fs.StringVar(&f.schema, "lake-schema", lake.DefaultSchema, "schema of the lake's state in --postgres-url (created when absent)")
	fs.Int64Var(&f.rotateRecords, "rotate-records", lake.DefaultRotateRecords, "close a partition's window (its files) before the record this many offsets past its first")
	fs.DurationVar(&f.rotateInterval, "rotate-interval", lake.DefaultRotateInterval, "close a window before the first record whose persistedAt is this much after the window's first record's (record time, not the wall clock)")
	fs.DurationVar(&f.flushIdle, "flush-idle", lake.DefaultFlushIdle, "close a window that got no record for this long (wall clock), so a quiet partition's last records reach the lake (0: never)")
	fs.DurationVar(&f.currentInterval, "current-interval", lake.DefaultCurrentInterval, "how often the current-state table (one row per run, current/manifest.json) is published (0: never)")
	fs.DurationVar(&f.checkpointRetention, "checkpoint-retention", 0, "forget a run (delete its checkpoint row) left with no snapshot and untouched this long; its late records are then written again, so pick it longer than the topic's retention and any dead-letter retry (at least 1m; 0: keep every row)")
	fs.DurationVar(&f.currentRetention, "current-retention", lake.DefaultCurrentRetention, "a run ended longer ago than this leaves the current-state table and the lake's state keeps only its checkpoint (at least 1m; 0: keep every run)")
	fs.StringVar(&f.spoolDir, "spool-dir", "", "local directory of the open windows' files (empty: the system's temporary directory); needs room for a window")
	fs.IntVar(&f.maxPoll, "max-poll-records", 10000, "most records per poll")
	fs.IntVar(&f.maxOpenFiles, "max-open-files", 64, "close a window before a record that would open one more file (tenant and date) than this; bounds a window's memory to about this many row groups of 8 MiB")
	fs.StringVar(&f.httpAddr, "http-addr", "127.0.0.1:9467", "address of /metrics, /healthz and /readyz")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", "json", "json or text")
	f.member.register(fs)
	f.member.getenv = env.getenv
	f.converge.register(fs)
	if err := parseFlags(fs, env, args, "runstream lake [flags]",
		"Lake sink: writes the run-event topic as Parquet files to a directory or an S3-compatible bucket,\n"+
			"tenant=<t>/date=<persistedAt date>/<topic>.<partition>.<first offset>.parquet, in the retention\n"+
			"archive's schema, exactly once: a window's files are uploaded and read back before its offsets\n"+
			"commit, and a redo after a crash rewrites the same objects. Also publishes a current-state table\n"+
			"(one row per run, current/manifest.json). Gaps and convergence read the store (--postgres-url).\n"+
			"Stops gracefully on SIGTERM. See docs/LAKE.md for the files and DuckDB queries."); err != nil {
		return err
	}
	var errs []error
	brokers := config.Brokers(f.brokers)
	if len(brokers) == 0 {
		errs = append(errs, errors.New("--kafka-brokers (RUNSTREAM_KAFKA_BROKERS) is required"))
	}
	if f.lakeURL == "" {
		errs = append(errs, errors.New("--lake-url (RUNSTREAM_LAKE_URL) is required: an absolute directory or s3://bucket/prefix?endpoint=host:port"))
	}
	if f.pgURL == "" {
		errs = append(errs, errors.New("--postgres-url (RUNSTREAM_POSTGRES_URL) is required: gaps are filled from the store, never skipped, and the lake's state lives there"))
	}
	if err := lake.CheckSchema(f.schema); err != nil {
		errs = append(errs, fmt.Errorf("--lake-schema (RUNSTREAM_LAKE_SCHEMA): %w", err))
	}
	if f.rotateRecords < 1 {
		errs = append(errs, fmt.Errorf("--rotate-records (RUNSTREAM_ROTATE_RECORDS) must be >= 1, got %d", f.rotateRecords))
	}
	if f.rotateInterval <= 0 {
		errs = append(errs, fmt.Errorf("--rotate-interval (RUNSTREAM_ROTATE_INTERVAL) must be > 0, got %v", f.rotateInterval))
	}
	if f.flushIdle < 0 || f.currentInterval < 0 {
		errs = append(errs, fmt.Errorf("--flush-idle (RUNSTREAM_FLUSH_IDLE) and --current-interval (RUNSTREAM_CURRENT_INTERVAL) must be >= 0 (0 turns them off), got %v and %v", f.flushIdle, f.currentInterval))
	}
	if f.currentRetention < 0 || (f.currentRetention > 0 && f.currentRetention < time.Minute) {
		errs = append(errs, fmt.Errorf("--current-retention (RUNSTREAM_CURRENT_RETENTION) must be at least 1m, or 0 to keep every run, got %v", f.currentRetention))
	}
	if f.checkpointRetention < 0 || (f.checkpointRetention > 0 && f.checkpointRetention < time.Minute) {
		errs = append(errs, fmt.Errorf("--checkpoint-retention (RUNSTREAM_CHECKPOINT_RETENTION) must be at least 1m, or 0 to keep every run's checkpoint, got %v", f.checkpointRetention))
	}
	if f.maxOpenFiles < 1 {
		errs = append(errs, fmt.Errorf("--max-open-files (RUNSTREAM_MAX_OPEN_FILES) must be >= 1, got %d", f.maxOpenFiles))
	}
	if f.maxPoll < 1 {
		errs = append(errs, fmt.Errorf("--max-poll-records (RUNSTREAM_MAX_POLL_RECORDS) must be >= 1, got %d", f.maxPoll))
	}
	if strings.TrimSpace(f.group) == "" {
		errs = append(errs, errors.New("--group (RUNSTREAM_GROUP) must not be empty"))
	}
	if err := config.CheckAddr("http-addr", f.httpAddr); err != nil {
		errs = append(errs, err)
	}
	st, err := archive.OpenStorage(f.lakeURL, env.getenv)
	if err != nil {
		errs = append(errs, fmt.Errorf("--lake-url (RUNSTREAM_LAKE_URL): %w", err))
	}
	session, instanceID, err := f.member.values()
	if err != nil {
		errs = append(errs, err)
	}
	convInterval, convGrace, convOff, err := f.converge.values()
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return usageError{err}
	}
	log, err := newLogger(env.stderr, f.logLevel, f.logFormat)
	if err != nil {
		return err
	}
	log.Info("starting runstream lake", "config", &f)

	storePool, err := postgres.Connect(ctx, f.pgURL)
	if err != nil {
		return err
	}
	defer storePool.Close()
	stor, err := postgres.New(storePool, postgres.Config{DisableSnapshotCheckpoints: true, Logger: log})
	if err != nil {
		return err
	}
	pool, err := lake.Connect(ctx, f.pgURL, f.schema)
	if err != nil {
		return fmt.Errorf("%w (--postgres-url, --lake-schema)", err)
	}
	defer pool.Close()
	reg := newRegistry()
	stopTracing, err := startTracing(ctx, env, "lake", reg, log)
	if err != nil {
		return err
	}
	defer stopTracing()
	l, err := lake.New(lake.Config{Brokers: brokers, Topic: f.topic, Group: f.group, Fetcher: stor, Heads: stor,
		ConvergeInterval: convInterval, ConvergeGrace: convGrace, DisableConvergence: convOff,
		RotateRecords: f.rotateRecords, RotateInterval: f.rotateInterval,
		FlushIdle: f.flushIdle, DisableFlushIdle: f.flushIdle == 0,
		CurrentInterval: f.currentInterval, DisableCurrent: f.currentInterval == 0,
		CurrentRetention: f.currentRetention, DisableCurrentRetention: f.currentRetention == 0, CheckpointRetention: f.checkpointRetention,
		SpoolDir: f.spoolDir, MaxPollRecords: f.maxPoll, MaxOpenFiles: f.maxOpenFiles, SessionTimeout: session, InstanceID: instanceID,
		OnStep:        lakeStepper(log, env.getenv(killAfterLakeStepEnv)),
		ClientOptions: []kgo.Opt{kafkaLogOpt(log)}, Registerer: reg, Logger: log}, st, pool)
	if err != nil {
		return usageError{err}
	}
	// The group's lag on this process's /metrics: a lake that cannot
	// upload stops committing, and its lag grows.
	kc, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kafkaLogOpt(log))
	if err != nil {
		return fmt.Errorf("creating the Kafka client for lag: %w", err)
	}
	defer kc.Close()
	exp, err := lag.NewExporter(kc, []string{f.group}, 10*time.Second, reg, log)
	if err != nil {
		return err
	}
	return runWithOpsServer(ctx, log, reg, f.httpAddr, l.Ready, func(ctx context.Context) error {
		g, gctx := errgroup.WithContext(ctx)
		lctx, stopLag := context.WithCancel(gctx)
		g.Go(func() error { return exp.Run(lctx) })
		g.Go(func() error { defer stopLag(); return l.Run(gctx) })
		return g.Wait()
	})
}

// killAfterLakeStepEnv names a step of the lake (lake.Config.OnStep),
// optionally with how many times it must happen first ("uploaded:3"),
// after which the process kills itself with SIGKILL: the fault suite's way
// to stop it exactly there (internal/chaos TestChaos_LakeKill). Unset in
// production.
const killAfterLakeStepEnv = "RUNSTREAM_KILL_AFTER_LAKE_STEP"

// lakeStepper kills the process after the step killAfter names has
// happened its count of times; nil when killAfter is empty.
func lakeStepper(log *slog.Logger, killAfter string) func(step string) {
	if killAfter == "" {
		return nil
	}
	step, count, _ := strings.Cut(killAfter, ":")
	n, err := strconv.Atoi(count)
	if err != nil || n < 1 {
		n = 1
	}
	var seen atomic.Int64
	return func(s string) {
		if s != step || seen.Add(1) != int64(n) {
			return
		}
		log.Warn("lake: killing this process after the step, as "+killAfterLakeStepEnv+" asks", "step", step, "count", n)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // SIGKILL is not handled: this never returns
	}
}
