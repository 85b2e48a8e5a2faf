package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"github.com/jackc/pgx/v5/pgxpool"
	"log/slog"
	"os"
	"os/user"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/config"
	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/internal/relay"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// relayFlags are the relay's settings, shared by relay and dev.
type relayFlags struct {
	topic             string
	partitions        int
	replicationFactor int
	topicRetention    time.Duration
	batch             int
	maxAttempts       int
	retryWindow       time.Duration
	compression       string
}

func (f *relayFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.topic, "topic", store.DefaultTopic, "Kafka topic of run events")
	fs.IntVar(&f.partitions, "partitions", 12, "partitions when the relay creates the topic")
	fs.IntVar(&f.replicationFactor, "replication-factor", 0, "replication factor when the relay creates the topic (0: the broker's default)")
	fs.DurationVar(&f.topicRetention, "topic-retention", relay.DefaultTopicRetention, "retention.ms when the relay creates the topic: how long a stopped or slow consumer group can still resume where it was (past it, it restarts at the earliest record and convergence repairs the runs it missed from the store). An existing topic is never altered; the relay warns when its retention.ms differs. A Go duration, at least 1m")
	fs.IntVar(&f.batch, "relay-batch", 5000, "most outbox rows published per round")
	fs.IntVar(&f.maxAttempts, "relay-max-attempts", 8, "fewest broker refusals of one event before it is dead-lettered (EVENT_BUS_DELIVERY_FAILED), which also waits for --retry-window")
	fs.StringVar(&f.compression, "compression", relay.DefaultCompression, "codec of the produce batches: "+strings.Join(relay.Compressions, ", ")+"; the default is one every consumer reads without extra codecs (KafkaJS ships only gzip), see docs/CONSUMERS.md")
	fs.DurationVar(&f.retryWindow, "retry-window", relay.DefaultRetryWindow, "how long an event the broker refuses is retried from its first refusal (backoff up to 30s) before it is dead-lettered, once it also reached --relay-max-attempts; outlast a broker rolling restart (the run's later events wait meanwhile, other runs flow). A Go duration such as 5m; 1ms retries by count only")
}

func (f *relayFlags) config(log *slog.Logger, reg prometheus.Registerer) (relay.Config, error) {
	if f.partitions < 1 || f.partitions > 100000 {
		return relay.Config{}, usageError{fmt.Errorf("--partitions (RUNSTREAM_PARTITIONS) must be 1..100000, got %d", f.partitions)}
	}
	if f.replicationFactor < 0 || f.replicationFactor > 32767 {
		return relay.Config{}, usageError{fmt.Errorf("--replication-factor (RUNSTREAM_REPLICATION_FACTOR) must be >= 0, got %d", f.replicationFactor)}
	}
	if f.topicRetention < relay.MinTopicRetention {
		return relay.Config{}, usageError{fmt.Errorf("--topic-retention (RUNSTREAM_TOPIC_RETENTION) must be at least %v, got %v", relay.MinTopicRetention, f.topicRetention)}
	}
	if f.batch < 1 || f.maxAttempts < 1 {
		return relay.Config{}, usageError{fmt.Errorf("--relay-batch and --relay-max-attempts must be >= 1")}
	}
	if f.retryWindow <= 0 {
		return relay.Config{}, usageError{fmt.Errorf("--retry-window (RUNSTREAM_RETRY_WINDOW) must be > 0, got %v (1ms dead-letters after --relay-max-attempts refusals)", f.retryWindow)}
	}
	if strings.TrimSpace(f.topic) == "" {
		return relay.Config{}, usageError{fmt.Errorf("--topic (RUNSTREAM_TOPIC) must not be empty")}
	}
	if _, err := relay.CompressionOption(f.compression); err != nil {
		return relay.Config{}, usageError{fmt.Errorf("--compression (RUNSTREAM_COMPRESSION): %w", err)}
	}
	cfg := relay.Config{Topic: f.topic, Partitions: int32(f.partitions), ReplicationFactor: int16(f.replicationFactor),
		TopicRetention: f.topicRetention, BatchSize: f.batch, MaxAttempts: f.maxAttempts, RetryWindow: f.retryWindow, Registerer: reg, Logger: log}
	return cfg, cfg.Validate()
}

// newKafkaClient builds the producer client the relay expects, compressing
// with the named codec (relay.Compressions).
func newKafkaClient(brokers []string, compression string, log *slog.Logger) (*kgo.Client, error) {
	if len(brokers) == 0 {
		return nil, usageError{fmt.Errorf("no Kafka brokers: set --kafka-brokers (RUNSTREAM_KAFKA_BROKERS), e.g. 127.0.0.1:9092")}
	}
	compress, err := relay.CompressionOption(compression)
	if err != nil {
		return nil, usageError{fmt.Errorf("--compression (RUNSTREAM_COMPRESSION): %w", err)}
	}
	opts := append(relay.ClientOptions(brokers), compress, kafkaLogOpt(log))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("creating the Kafka client for %v: %w", brokers, err)
	}
	return cl, nil
}

func runRelay(ctx context.Context, env *environment, args []string) error {
	if len(args) > 0 && args[0] == "dlq" {
		return runDLQ(ctx, env, args[1:])
	}
	fs := flag.NewFlagSet("relay", flag.ContinueOnError)
	pgURL := fs.String("postgres-url", defaultPostgresURL, "PostgreSQL URL of the Append Authority")
	brokers := fs.String("kafka-brokers", "", "Kafka bootstrap brokers, comma-separated (required)")
	metricsAddr := fs.String("http-addr", "127.0.0.1:9464", "address of /metrics, /healthz and /readyz")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	logFormat := fs.String("log-format", "json", "json or text")
	var rf relayFlags
	rf.register(fs)
	if err := parseFlags(fs, env, args, "runstream relay [flags]\n       runstream relay dlq list|retry [flags]",
		"Publishes the transactional outbox to Kafka: keyed by runId, per-run order, at least once.\nRun several for availability: they split the outbox's shards between them.\n'runstream relay dlq --help' shows the dead-letter commands."); err != nil {
		return err
	}
	log, err := newLogger(env.stderr, *logLevel, *logFormat)
	if err != nil {
		return err
	}
	reg := newRegistry()
	cfg, err := rf.config(log, reg)
	if err != nil {
		return err
	}
	stopTracing, err := startTracing(ctx, env, "relay", reg, log)
	if err != nil {
		return err
	}
	defer stopTracing()
	client, err := newKafkaClient(config.Brokers(*brokers), rf.compression, log)
	if err != nil {
		return err
	}
	defer client.Close()
	pool, err := openPostgres(ctx, log, *pgURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	r, err := relay.New(cfg, pool, client)
	if err != nil {
		return err
	}
	log.Info("starting runstream relay", "brokers", *brokers, "topic", rf.topic, "compression", rf.compression, "postgresUrl", config.RedactURL(*pgURL))
	// Ready when it can read the outbox and reach a broker: a relay cut
	// off from the brokers publishes nothing, and says so.
	ready := func(ctx context.Context) error {
		if err := pool.Ping(ctx); err != nil {
			return fmt.Errorf("postgres: %w", err)
		}
		if err := client.Ping(ctx); err != nil {
			return fmt.Errorf("kafka: %w", err)
		}
		return nil
	}
	return runWithOpsServer(ctx, log, reg, *metricsAddr, ready, r.Run)
}

func runDLQ(ctx context.Context, env *environment, args []string) error {
	if len(args) == 0 || (args[0] != "list" && args[0] != "retry") {
		fmt.Fprint(env.stderr, "Usage: runstream relay dlq list [--run ID] [--limit N] [--json]\n       runstream relay dlq retry (--id N[,N...] | --error-code CODE | --run ID | --all) [--reason TEXT]\n\nDead letters are events the relay gave up publishing after repeated broker refusals\n(alert EVENT_BUS_DELIVERY_FAILED). They are still in the store; retry moves them\nback to the outbox so the relay publishes them again, and records it in the audit\nlog of operator actions (GET /v1/operator-actions).\n")
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return flag.ErrHelp
		}
		return usageError{fmt.Errorf("dlq needs a subcommand: list or retry")}
	}
	sub := args[0]
	fs := flag.NewFlagSet("relay dlq "+sub, flag.ContinueOnError)
	pgURL := fs.String("postgres-url", defaultPostgresURL, "PostgreSQL URL of the Append Authority")
	runID := fs.String("run", "", "only this run's dead letters (list), or retry every dead letter of this run (retry)")
	errorCode := fs.String("error-code", "", "retry every dead letter of this error code, as GET /v1/dead-letters/groups?by=error names it (retry)")
	reason := fs.String("reason", "", "why, for the audit log (retry; at most 500 bytes)")
	limit := fs.Int("limit", 100, "most dead letters listed")
	asJSON := fs.Bool("json", false, "print JSON (list)")
	ids := fs.String("id", "", "dead-letter ids to retry, comma-separated (retry)")
	all := fs.Bool("all", false, "retry every dead letter (retry)")
	if err := parseFlags(fs, env, args[1:], "runstream relay dlq "+sub+" [flags]", "Lists or retries the relay's dead letters."); err != nil {
		return err
	}
	var list []int64
	if sub == "retry" {
		for _, s := range config.Brokers(*ids) {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return usageError{fmt.Errorf("--id: %q is not a dead-letter id (see 'runstream relay dlq list')", s)}
			}
			list = append(list, n)
		}
		given := 0
		for _, g := range []bool{len(list) > 0, *all, *errorCode != "", *runID != ""} {
			if g {
				given++
			}
		}
		if given != 1 {
			return usageError{fmt.Errorf("say which dead letters to retry, one way: --id N[,N...], --error-code CODE, --run ID or --all")}
		}
		if err := checkReasonFlag(*reason); err != nil {
			return err
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	pool, err := postgres.Connect(cctx, *pgURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := postgres.Migrate(cctx, pool); err != nil {
		return err
	}
	if sub == "retry" {
		sel := postgres.DeadLetterSelection{IDs: list, All: *all, ErrorCode: *errorCode, RunID: *runID}
		n, err := postgres.NewOutbox(pool).RetrySelected(cctx, sel)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.stdout, "moved %d dead letter(s) back to the outbox; the relay publishes them next\n", n)
		return recordCLIAction(cctx, env, pool, "dead-letters.retry", dlqTarget(sel), n, *reason)
	}
	dls, err := postgres.NewOutbox(pool).ListDeadLetters(cctx, *runID, *limit)
	if err != nil {
		return err
	}
	if *asJSON {
		if dls == nil {
			dls = []postgres.DeadLetter{}
		}
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(dls)
	}
	if len(dls) == 0 {
		fmt.Fprintln(env.stdout, "no dead letters")
		return nil
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tRUN\tSEQ\tTYPE\tATTEMPTS\tFAILED AT\tLAST ERROR")
	for _, d := range dls {
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%d\t%s\t%s\n", d.ID, d.RunID, d.RunSeq, d.EventType, d.Attempts,
			d.FailedAt.UTC().Format(time.RFC3339), d.LastError)
	}
	return tw.Flush()
}

// minLevel is a slog handler that drops records below a level.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(as), h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.min}
}

// dlqTarget says which dead letters a retry named, for the audit log.
func dlqTarget(sel postgres.DeadLetterSelection) string {
	switch {
	case sel.All:
		return "all dead letters"
	case sel.ErrorCode != "":
		return "dead letters with error " + sel.ErrorCode
	case sel.RunID != "":
		return "dead letters of run " + sel.RunID
	}
	return fmt.Sprintf("%d dead letters by id", len(sel.IDs))
}

// checkReasonFlag refuses a --reason longer than the audit log takes.
func checkReasonFlag(reason string) error {
	if len(reason) > httpapi.MaxReasonBytes {
		return usageError{fmt.Errorf("--reason: at most %d bytes, got %d", httpapi.MaxReasonBytes, len(reason))}
	}
	return nil
}

// recordCLIAction writes an operator action done from the command line to
// the audit log, naming the OS user and host as its actor. The action is
// done: a failure to record it is reported on stderr and exits 1.
func recordCLIAction(ctx context.Context, env *environment, pool *pgxpool.Pool, action, target string, count int64, reason string) error {
	st, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		return err
	}
	who := "unknown"
	if u, err := user.Current(); err == nil {
		who = u.Username
	}
	host, _ := os.Hostname()
	a := postgres.OperatorAction{Actor: fmt.Sprintf("cli %s@%s", who, host), Action: action, Target: target, Count: count, Reason: reason}
	if err := st.RecordOperatorAction(ctx, a); err != nil {
		return fmt.Errorf("the action is done, but the audit log did not take it: %w", err)
	}
	return nil
}
