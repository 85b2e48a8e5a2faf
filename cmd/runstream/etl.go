package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/consumer"
	"github.com/runstream/runstream/internal/config"
	"github.com/runstream/runstream/internal/etl"
	"github.com/runstream/runstream/internal/tracing"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// etlFlags are the settings of `runstream etl`.
type etlFlags struct {
	brokers, topic, group   string
	etlURL, schema          string
	apiURL, apiToken, pgURL string
	maxPoll, maxQueued      int
	retention               time.Duration
	trace                   string
	httpAddr                string
	logLevel, logFormat     string
	member                  memberFlags
	converge                convergeFlags
}

// LogValue redacts secrets when the effective config is logged.
func (f *etlFlags) LogValue() slog.Value {
	gaps := "api " + f.apiURL
	if f.apiURL == "" {
		gaps = "postgres " + config.RedactURL(f.pgURL)
	}
	return slog.GroupValue(
		slog.String("brokers", f.brokers), slog.String("topic", f.topic), slog.String("group", f.group),
		slog.String("etlDatabaseUrl", config.RedactURL(f.etlURL)), slog.String("etlSchema", f.schema),
		slog.String("gapsFrom", gaps), slog.Bool("apiToken", f.apiToken != ""),
		slog.Int("maxPollRecords", f.maxPoll), slog.Int("maxQueuedRecords", f.maxQueued), slog.String("etlRetention", f.retention.String()),
		slog.String("httpAddr", f.httpAddr),
		slog.String("sessionTimeout", f.member.sessionTimeout.String()), slog.String("instanceId", f.member.instanceID),
	)
}

func runEtl(ctx context.Context, env *environment, args []string) error {
	fs := flag.NewFlagSet("etl", flag.ContinueOnError)
	var f etlFlags
	fs.StringVar(&f.brokers, "kafka-brokers", "", "Kafka bootstrap brokers, comma-separated (required)")
	fs.StringVar(&f.topic, "topic", store.DefaultTopic, "Kafka topic of run events")
	fs.StringVar(&f.group, "group", etl.DefaultGroup, "Kafka consumer group of the ETL (its lag: runstream lag --group)")
	fs.StringVar(&f.etlURL, "etl-database-url", defaultPostgresURL, "PostgreSQL URL of the analytics database the tables are kept in")
	fs.StringVar(&f.schema, "etl-schema", etl.DefaultSchema, "schema of the tables and the consumer checkpoints (created when absent)")
	fs.StringVar(&f.apiURL, "api-url", "", "runstream API to fill gaps from (GET /v1/runs/{runId}/events); wins over --postgres-url")
	fs.StringVar(&f.apiToken, "api-token", "", "bearer token for --api-url")
	fs.StringVar(&f.pgURL, "postgres-url", "", "PostgreSQL URL of the Append Authority to fill gaps from, when --api-url is empty")
	fs.IntVar(&f.maxPoll, "max-poll-records", 20000, "most records per poll")
	fs.IntVar(&f.maxQueued, "max-queued-records", 0, "most records of a partition that wait while its previous transaction is written; they all go into its next one (0: half of --max-poll-records)")
	fs.DurationVar(&f.retention, "etl-retention", 0, "how long a run's rows are kept after its first event: a month's partitions are dropped once all its runs started longer ago than this and have ended "+
		"(0 keeps every run; at least 744h, 31 days). A Go duration, e.g. 2208h for 92 days")
	fs.StringVar(&f.httpAddr, "http-addr", "127.0.0.1:9466", "address of /metrics, /healthz and /readyz")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", "json", "json or text")
	f.member.register(fs)
	f.member.getenv = env.getenv
	traceConsumerFlag(fs, &f.trace)
	f.converge.register(fs)
	if err := parseFlags(fs, env, args, "runstream etl [flags]",
		"Analytics sink: consumes the run-event topic into Postgres tables runs and step_attempts\n"+
			"(schema --etl-schema of --etl-database-url, migrated on start), effectively once: the rows\n"+
			"commit with the consumer checkpoints. Gaps are filled from the store through --api-url or\n"+
			"--postgres-url. Stops gracefully on SIGTERM. See docs/ETL.md for the tables and queries."); err != nil {
		return err
	}
	var errs []error
	brokers := config.Brokers(f.brokers)
	if len(brokers) == 0 {
		errs = append(errs, errors.New("--kafka-brokers (RUNSTREAM_KAFKA_BROKERS) is required"))
	}
	if f.apiURL == "" && f.pgURL == "" {
		errs = append(errs, errors.New("set --api-url (RUNSTREAM_API_URL) or --postgres-url (RUNSTREAM_POSTGRES_URL): gaps are filled from the store, never skipped"))
	}
	if f.apiURL != "" && !strings.HasPrefix(f.apiURL, "http://") && !strings.HasPrefix(f.apiURL, "https://") {
		errs = append(errs, fmt.Errorf("--api-url (RUNSTREAM_API_URL) must start with http:// or https://, got %q", f.apiURL))
	}
	if err := etl.CheckSchema(f.schema); err != nil {
		errs = append(errs, fmt.Errorf("--etl-schema (RUNSTREAM_ETL_SCHEMA): %w", err))
	}
	if f.maxPoll < 1 {
		errs = append(errs, fmt.Errorf("--max-poll-records (RUNSTREAM_MAX_POLL_RECORDS) must be >= 1, got %d", f.maxPoll))
	}
	if f.maxQueued < 0 {
		errs = append(errs, fmt.Errorf("--max-queued-records (RUNSTREAM_MAX_QUEUED_RECORDS) must be >= 0, got %d", f.maxQueued))
	}
	if f.retention < 0 || (f.retention > 0 && f.retention < etl.MinRetention) {
		errs = append(errs, fmt.Errorf("--etl-retention (RUNSTREAM_ETL_RETENTION) must be 0 (keep every run) or at least %v (31 days, the longest month: the tables are dropped a month at a time), got %v",
			etl.MinRetention, f.retention))
	}
	if strings.TrimSpace(f.group) == "" {
		errs = append(errs, errors.New("--group (RUNSTREAM_GROUP) must not be empty"))
	}
	if err := config.CheckAddr("http-addr", f.httpAddr); err != nil {
		errs = append(errs, err)
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
	log.Info("starting runstream etl", "config", &f)

	var fetcher consumer.Fetcher
	var heads consumer.RunHeads
	if f.pgURL != "" {
		storePool, err := postgres.Connect(ctx, f.pgURL)
		if err != nil {
			return err
		}
		defer storePool.Close()
		st, err := postgres.New(storePool, postgres.Config{DisableSnapshotCheckpoints: true, Logger: log})
		if err != nil {
			return err
		}
		fetcher, heads = st, st
	}
	if f.apiURL != "" {
		fetcher = &consumer.HTTPFetcher{BaseURL: strings.TrimRight(f.apiURL, "/"), Token: f.apiToken}
	}
	if heads == nil && !convOff {
		log.Warn("convergence is off: it compares the ETL with the store's runs table, so it needs --postgres-url (RUNSTREAM_POSTGRES_URL); " +
			"a dead-lettered tail stays missing until a later event of its run arrives")
	}
	pool, err := etl.Connect(ctx, f.etlURL, f.schema)
	if err != nil {
		return fmt.Errorf("%w (--etl-database-url, --etl-schema)", err)
	}
	defer pool.Close()
	traceMode, err := tracing.ParseConsumerMode(f.trace)
	if err != nil {
		return usageError{err}
	}
	reg := newRegistry()
	stopTracing, err := startTracing(ctx, env, "etl", reg, log)
	if err != nil {
		return err
	}
	defer stopTracing()
	e, err := etl.New(etl.Config{Brokers: brokers, Topic: f.topic, Group: f.group, Fetcher: fetcher,
		TraceConsumer: traceMode, MaxPollRecords: f.maxPoll, MaxQueuedRecords: f.maxQueued, Retention: f.retention, SessionTimeout: session, InstanceID: instanceID,
		Heads: heads, ConvergeInterval: convInterval, ConvergeGrace: convGrace, DisableConvergence: convOff, ClientOptions: []kgo.Opt{kafkaLogOpt(log)}, Registerer: reg, Logger: log}, pool)
	if err != nil {
		return usageError{err}
	}
	return runWithOpsServer(ctx, log, reg, f.httpAddr, e.Ready, e.Run)
}
