package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/runstream/runstream/internal/bench/appendbench"
	"github.com/runstream/runstream/internal/bench/etlbench"
	"github.com/runstream/runstream/internal/bench/exportbench"
	"github.com/runstream/runstream/internal/bench/harness"
	"github.com/runstream/runstream/internal/bench/lakebench"
	"github.com/runstream/runstream/internal/bench/listbench"
	"github.com/runstream/runstream/internal/bench/projectbench"
	"github.com/runstream/runstream/internal/bench/readbench"
	"github.com/runstream/runstream/internal/bench/relaybench"
	"github.com/runstream/runstream/internal/config"
	"github.com/runstream/runstream/internal/relay"
	"github.com/runstream/runstream/snapshots"
)

// benchCommands are the subcommands of `runstream bench`: one entry of
// the table each, run by benchTarget.run.
func benchCommands() []command {
	return []command{
		benchAppend.command(),
		benchRelay.command(),
		benchProject.command(),
		benchETL.command(),
		benchLake.command(),
		benchRead.command(),
		benchExport.command(),
		benchList.command(),
		benchSteady.command(),
		benchArchive.command(),
	}
}

func runBench(ctx context.Context, env *environment, args []string) error {
	subs := benchCommands()
	if len(args) > 0 && args[0] == readWatchersCommand {
		return readbench.WatchersMain(ctx, os.Stdin, env.stdout)
	}
	if len(args) > 1 && args[0] == "help" { // bench help <benchmark>
		args = append(slices.Clone(args[1:]), "--help")
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		benchUsage(env.stderr, subs)
		if len(args) == 0 {
			return usageError{errors.New("bench: no benchmark given")}
		}
		return nil
	}
	for _, c := range subs {
		if c.name == args[0] {
			// The benchmarks that run components in this process (the
			// API of bench append, the projector of bench project) trace
			// as those would when OTEL_EXPORTER_OTLP_ENDPOINT is set: to
			// measure what tracing costs.
			stop, err := startTracing(ctx, env, "bench", nil, slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
			if err != nil {
				return err
			}
			defer stop()
			return c.run(ctx, env, args[1:])
		}
	}
	benchUsage(env.stderr, subs)
	return usageError{fmt.Errorf("bench: unknown benchmark %q", args[0])}
}

func benchUsage(w io.Writer, subs []command) {
	var b strings.Builder
	b.WriteString("Usage: runstream bench <benchmark> [flags]\n\nLoad generators and reports, with baselines measured in the same run.\n\nBenchmarks:\n")
	for _, c := range subs {
		fmt.Fprintf(&b, "  %-9s %s\n", c.name, c.summary)
	}
	b.WriteString("\nRun 'runstream bench <benchmark> --help' for its flags.\n")
	fmt.Fprint(w, b.String())
}

// benchTarget is one `runstream bench` subcommand, an entry of the table:
// what is its own. C holds its flags' values (its package's Config, and
// beside it the flags that do not map onto the Config one to one), R is
// its report. run does what every target does alike: the flag set with
// --json, --json-file and the profile flags, the usage error (exit status
// 2) for a mistaken flag, progress and warnings on stderr, the profile
// files, the report on stdout.
type benchTarget[C any, R benchReport] struct {
	name, summary string
	// about is --help's text under the synopsis.
	about string
	// flags defines the target's own flags on fs, into cli.
	flags func(fs *flag.FlagSet, cli *C)
	// check runs after parsing: it completes the Config from the other
	// flags and reports mistakes, as usageError (see benchFlagErrors).
	check func(cli *C) error
	// profiles are the target's profile flags, in the order their files
	// are created.
	profiles []benchProfile[C]
	// jsonUsage is --json's help when not the usual; noJSONFile leaves
	// --json-file out.
	jsonUsage  string
	noJSONFile bool
	// wire points the progress reports and the logger at stderr.
	wire func(cli *C, stderr io.Writer)
	// measure runs the benchmark.
	measure func(ctx context.Context, cli C) (R, error)
}

// benchReport is what every target's report does.
type benchReport interface {
	WriteText(io.Writer) error
}

// benchProfile is a profile flag: the file it names receives what the
// Config's writer (to) gets, and with base also the file named by the
// flag plus ".base" what base's writer gets.
type benchProfile[C any] struct {
	flag, usage string
	to, base    func(cli *C) *io.Writer
}

func (t benchTarget[C, R]) command() command {
	return command{name: t.name, summary: t.summary, run: t.run}
}

func (t benchTarget[C, R]) run(ctx context.Context, env *environment, args []string) error {
	fs := flag.NewFlagSet("bench "+t.name, flag.ContinueOnError)
	var cli C
	t.flags(fs, &cli)
	asJSON := fs.Bool("json", false, cmp.Or(t.jsonUsage, "print the report as JSON instead of text"))
	jsonFile := new(string)
	if !t.noJSONFile {
		fs.StringVar(jsonFile, "json-file", "", "also write the JSON report to this file")
	}
	paths := make([]*string, len(t.profiles))
	for i, p := range t.profiles {
		paths[i] = fs.String(p.flag, "", p.usage)
	}
	if err := parseFlags(fs, env, args, "runstream bench "+t.name+" [flags]", t.about); err != nil {
		return err
	}
	if err := t.check(&cli); err != nil {
		return err
	}
	t.wire(&cli, env.stderr)
	var files []profileFlag
	for i, p := range t.profiles {
		files = append(files, profileFlag{"--" + p.flag, *paths[i], p.to(&cli)})
		if p.base != nil {
			files = append(files, profileFlag{"--" + p.flag, suffixed(*paths[i], ".base"), p.base(&cli)})
		}
	}
	closeProfiles, err := openProfiles(files...)
	defer closeProfiles()
	if err != nil {
		return err
	}
	rep, err := t.measure(ctx, cli)
	if err != nil {
		return err
	}
	if *jsonFile != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*jsonFile, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("writing the JSON report (--json-file): %w", err)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return rep.WriteText(env.stdout)
}

// benchFlagErrors turns the flags' mistakes and the Config's own
// validation into one usage error (exit status 2), nil when there are
// none.
func benchFlagErrors(errs []error, validate error) error {
	if err := errors.Join(append(errs, validate)...); err != nil {
		return usageError{err}
	}
	return nil
}

// benchPositive reports each setting that is not above 0: zero values mean
// "default" to the bench packages, but on the command line a 0 is a
// mistake.
func benchPositive(settings ...harness.Setting) []error {
	var errs []error
	for _, s := range settings {
		if s.Value <= 0 {
			errs = append(errs, fmt.Errorf("--%s must be > 0", s.Flag))
		}
	}
	return errs
}

// benchPartitions checks --partitions and returns it as the Config takes
// it.
func benchPartitions(partitions int, errs *[]error) int32 {
	if partitions < 1 || partitions > 100000 {
		*errs = append(*errs, fmt.Errorf("--partitions must be 1..100000, got %d", partitions))
	}
	return int32(min(partitions, 1<<20))
}

// benchLogger is the bench components' logger: warnings and errors, as
// text on stderr.
func benchLogger(stderr io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// benchPhaseLine prints a running phase (relay, project, etl) as a line
// of stderr: phase padded to width, its time, done of total and the rate,
// with extra after the counts.
func benchPhaseLine(stderr io.Writer, width int, unit string, extra func(harness.PhaseProgress) string) func(harness.PhaseProgress) {
	return func(p harness.PhaseProgress) {
		line := fmt.Sprintf("bench: %-*s %4.0fs  %9d/%d", width, p.Phase, p.Elapsed.Seconds(), p.Done, p.Total)
		if extra != nil {
			line += extra(p)
		}
		fmt.Fprintln(stderr, line+fmt.Sprintf("  %8.0f%s", p.Rate, unit))
	}
}

var benchAppend = benchTarget[appendbench.Config, *appendbench.Report]{
	name:    "append",
	summary: "append load over HTTP (single events or batches), with a pgbench baseline",
	about: "Drives the append path over real HTTP with keep-alive: --clients clients post pre-generated\n" +
		"valid events (StepCompleted, ~200-byte payload, random runs among --runs) for --duration\n" +
		"after --warmup, and reports events/s, requests/s, per-request latency p50/p95/p99/max and\n" +
		"errors by status. With --baseline it then runs pgbench on the same three SQL statements\n" +
		"(counter upsert, event insert, outbox insert; bench/append_single.sql or\n" +
		"bench/append_batch100.sql) with the same clients and duration against a fresh schema, and\n" +
		"reports our events/s as a fraction of pgbench's next to the target (60% single, 70% batched).\n" +
		"With --client go it measures, against the same API with the same workload, the raw posts and\n" +
		"the Go producer client (package client: key, validation, encoding, budget; Append or\n" +
		"AppendBatch) in --rounds alternated rounds each, and reports the client's median events/s as\n" +
		"a fraction of raw's (target 90%); the other lines are then raw's median round. --client ts\n" +
		"does the same with the TypeScript client (Node.js runs clients/typescript/bench/append.mjs,\n" +
		"reported beside raw, no target), --client all with raw, go and ts.\n" +
		"Progress goes to stderr every second. See bench/README.md.",
	flags: func(fs *flag.FlagSet, cfg *appendbench.Config) {
		fs.StringVar(&cfg.URL, "url", "", "base URL of a running API; empty: start one in this process against a fresh schema bench_<random> (dropped at the end)")
		fs.StringVar(&cfg.PostgresURL, "postgres-url", defaultPostgresURL, "PostgreSQL URL for the in-process API and the pgbench baseline (pgx pool settings such as pool_max_conns apply to the API)")
		fs.IntVar(&cfg.Clients, "clients", 16, "concurrent HTTP clients (and pgbench clients)")
		fs.IntVar(&cfg.Batch, "batch", 1, "events per request: 1 posts /v1/events, more posts /v1/events:batch (the baseline exists for 1 and 100)")
		fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "measured window (and pgbench -T)")
		fs.DurationVar(&cfg.Warmup, "warmup", 2*time.Second, "load before the window, not measured")
		fs.IntVar(&cfg.Runs, "runs", 10000, "distinct runIds the events are spread over")
		fs.StringVar(&cfg.RunIDs, "run-ids", appendbench.RunIDsOrdered, "how run ids are made: ordered (UUID v7, as the producer clients make them) or random (UUID v4, as an engine passing random ids of its own; each new run lands on a random page of the store's run index)")
		fs.BoolVar(&cfg.Baseline, "baseline", false, "also run pgbench on the same three SQL statements (bench/*.sql) and report our ratio to it")
		fs.StringVar(&cfg.Token, "token", "", "bearer token to send; with the in-process API it also turns authentication on")
		fs.StringVar(&cfg.Tenant, "tenant", "tenant_bench", "tenantId of the generated events (the token's tenant when the API checks tokens)")
		fs.BoolVar(&cfg.KeepSchema, "keep-schema", false, "keep the bench_<random> schemas for inspection")
		fs.StringVar(&cfg.StoreSchema, "store-schema", "", "append into this existing schema (kept; one bench read --source store --keep-schema loaded) instead of a fresh one: appends and their WAL per event at that size; not with --url or --baseline")
		fs.StringVar(&cfg.Pgbench, "pgbench", "", "pgbench executable; empty: /usr/bin/pgbench, else pgbench on PATH")
		fs.StringVar(&cfg.Client, "client", appendbench.ClientRaw, "producer client: raw (pre-encoded bodies over net/http); go to also measure the Go client (package client) against raw, alternated rounds; ts the TypeScript client (Node.js, clients/typescript); all for raw, go and ts")
		fs.StringVar(&cfg.TSDir, "ts-dir", "clients/typescript", "with --client ts or all: the TypeScript client's directory, built (npm ci && npm run build)")
		fs.IntVar(&cfg.Rounds, "rounds", 3, "with --client go: rounds of each client (each a --warmup and a --duration window); the median counts")
	},
	check: func(cfg *appendbench.Config) error {
		return benchFlagErrors(benchPositive(harness.Flag("clients", cfg.Clients), harness.Flag("batch", cfg.Batch),
			harness.Flag("runs", cfg.Runs), harness.Flag("duration", cfg.Duration), harness.Flag("warmup", cfg.Warmup),
			harness.Flag("rounds", cfg.Rounds)), cfg.Validate())
	},
	profiles: []benchProfile[appendbench.Config]{{flag: "cpuprofile",
		usage: "write a CPU profile of this process, covering the measured window only, to this file (go tool pprof)",
		to:    func(cfg *appendbench.Config) *io.Writer { return &cfg.CPUProfile }}},
	wire: func(cfg *appendbench.Config, stderr io.Writer) {
		cfg.Logger = benchLogger(stderr)
		cfg.Progress = func(p appendbench.Progress) {
			line := fmt.Sprintf("bench: %-14s %3.0fs/%.0fs", p.Phase, p.Elapsed.Seconds(), p.Total.Seconds())
			if p.Requests > 0 || p.Errors > 0 {
				line += fmt.Sprintf("  %9d events  %8.0f events/s  %d errors", p.Events, float64(p.Events)/p.Elapsed.Seconds(), p.Errors)
			}
			fmt.Fprintln(stderr, line)
		}
	},
	measure: appendbench.Run,
}

// relayCLI is bench relay's flags.
type relayCLI struct {
	relaybench.Config
	brokers        string
	partitions     int
	drain, latency bool
}

var benchRelay = benchTarget[relayCLI, *relaybench.Report]{
	name:    "relay",
	summary: "outbox relay: backlog drain rate and commit-to-ack latency at a fixed rate",
	about: "Measures the outbox relay against real Postgres and a Kafka-protocol broker, in two phases.\n" +
		"Drain: fills the outbox of a fresh schema with --events events over --runs runs by SQL (not\n" +
		"timed), starts the relay on a fresh topic and times it until the outbox is empty and the\n" +
		"topic's end offsets hold every event; then reads the topic back to check every run is\n" +
		"complete and in runSeq order (duplicates are counted). Target: >= 50,000 events/s.\n" +
		"Latency: with the relay running, appends through the store at --rate events/s for\n" +
		"--duration (open loop, outbox NOTIFY on) while a consumer reads the topic, and reports\n" +
		"commit-to-consume per event (consume time minus the record's persistedAt) p50/p95/p99/max,\n" +
		"after waiting --settle with the relay idle once the drain is done (its writes reach disk).\n" +
		"Target: p99 < 20ms at 2,000 events/s. Progress goes to stderr every second. See bench/README.md.",
	flags: func(fs *flag.FlagSet, cli *relayCLI) {
		fs.StringVar(&cli.PostgresURL, "postgres-url", defaultPostgresURL, "PostgreSQL URL; the bench works in a fresh schema bench_<random> (dropped at the end)")
		fs.StringVar(&cli.brokers, "brokers", "", "Kafka bootstrap brokers, comma-separated; empty: franz-go's kfake in this process on 127.0.0.1:0, in memory")
		fs.IntVar(&cli.partitions, "partitions", 12, "partitions of the fresh topic bench-relay-<random>")
		fs.IntVar(&cli.RelayBatch, "relay-batch", 5000, "the relay's outbox rows per round")
		fs.IntVar(&cli.Relays, "relays", 1, "relays to run, each with its own pool and Kafka client as separate processes; they split the outbox's shards")
		fs.StringVar(&cli.Compression, "compression", relay.DefaultCompression, "the relays' produce codec: "+strings.Join(relay.Compressions, ", ")+" (the drain reports bytes per event produced)")
		fs.BoolVar(&cli.drain, "drain", true, "run the drain phase (--drain=false skips it)")
		fs.IntVar(&cli.Events, "events", 1_000_000, "events pre-filled into the outbox for the drain (with --drain=false: the event log, without outbox rows, the latency phase runs over)")
		fs.IntVar(&cli.Runs, "runs", 10000, "distinct runIds the events are spread over")
		fs.BoolVar(&cli.latency, "latency", true, "run the latency phase (--latency=false skips it)")
		fs.IntVar(&cli.Rate, "rate", 2000, "offered append rate of the latency phase, events/s")
		fs.DurationVar(&cli.Duration, "duration", 10*time.Second, "how long the latency phase appends")
		fs.DurationVar(&cli.Warmup, "warmup", 2*time.Second, "how long the latency phase appends at --rate before its window, unmeasured (0: none)")
		fs.DurationVar(&cli.Settle, "settle", 40*time.Second, "how long to wait, the relay idle, between the drain and the latency phase, so that the drain's writes are on disk and the latency phase sees the steady state (0: none)")
		fs.IntVar(&cli.Appenders, "appenders", 16, "goroutines appending in the latency phase (concurrent API requests)")
		fs.IntVar(&cli.AppendConns, "append-conns", 0, "connections of the appenders' store pool; appends beyond them share transactions (0: what runstream api opens, pgxpool's default max(4, cores) or the URL's pool_max_conns)")
		fs.BoolVar(&cli.KeepSchema, "keep-schema", false, "keep the bench_<random> schema (and the topic on --brokers) for inspection")
	},
	check: func(cli *relayCLI) error {
		cli.Brokers = config.Brokers(cli.brokers)
		cli.DisableDrain, cli.DisableLatency = !cli.drain, !cli.latency
		errs := benchPositive(harness.Flag("events", cli.Events), harness.Flag("runs", cli.Runs), harness.Flag("rate", cli.Rate),
			harness.Flag("duration", cli.Duration), harness.Flag("appenders", cli.Appenders),
			harness.Flag("relay-batch", cli.RelayBatch), harness.Flag("relays", cli.Relays))
		if cli.AppendConns < 0 {
			errs = append(errs, fmt.Errorf("--append-conns must be >= 0 (0: as runstream api), got %d", cli.AppendConns))
		}
		cli.Partitions = benchPartitions(cli.partitions, &errs)
		if cli.Warmup < 0 {
			errs = append(errs, fmt.Errorf("--warmup must be >= 0, got %s", cli.Warmup))
		}
		if cli.Settle < 0 {
			errs = append(errs, fmt.Errorf("--settle must be >= 0, got %s", cli.Settle))
		}
		return benchFlagErrors(errs, cli.Validate())
	},
	profiles: []benchProfile[relayCLI]{
		{flag: "cpuprofile", usage: "write a CPU profile of this process covering the drain window only to this file (go tool pprof)",
			to: func(cli *relayCLI) *io.Writer { return &cli.DrainCPUProfile }},
		{flag: "latency-cpuprofile", usage: "write a CPU profile covering the latency window only to this file",
			to: func(cli *relayCLI) *io.Writer { return &cli.LatencyCPUProfile }},
	},
	wire: func(cli *relayCLI, stderr io.Writer) {
		cli.Logger = benchLogger(stderr)
		cli.Progress = benchPhaseLine(stderr, 8, " events/s", func(p harness.PhaseProgress) string {
			if p.Phase == "drain" {
				return fmt.Sprintf("  %9d rows left", max(p.Total-p.Done, 0))
			}
			return ""
		})
	},
	measure: func(ctx context.Context, cli relayCLI) (*relaybench.Report, error) {
		// 0 in the Config is the default; on the command line it is none.
		if cli.Warmup == 0 {
			cli.Warmup = -1
		}
		if cli.Settle == 0 {
			cli.Settle = -1
		}
		return relaybench.Run(ctx, cli.Config)
	},
}

// projectCLI is bench project's flags.
type projectCLI struct {
	projectbench.Config
	partitions                                  int
	catchUp, converge, latency, memory, process bool
}

var benchProject = benchTarget[projectCLI, *projectbench.Report]{
	name:    "project",
	summary: "projector: catch-up rate vs the guarded script alone, end-to-end latency, memory",
	about: "Measures the projector against real Redis and an in-process Kafka-protocol broker, in three\n" +
		"phases. Memory (first, so the process is fresh): a topic of --memory-events events of\n" +
		"--memory-runs runs that stay active, caught up by a projector in this process (VmRSS and heap\n" +
		"before, at the peak and after) and by `runstream projector` as a process of its own (its peak\n" +
		"RSS). Target: < 300 MB. Catch-up: a fresh topic pre-filled with --events events over --runs\n" +
		"runs (runs interleaved, runSeq contiguous), timed from the projector's start until its group\n" +
		"committed every offset; its writes are recorded from their notifications and every snapshot\n" +
		"is checked. Baseline, same run, same Redis: the same writes (runs, watermarks, snapshot sizes,\n" +
		"order) by the projector's guarded Lua script alone, pipelined like the projector's batches.\n" +
		"Target: catch-up >= 50% of the baseline's rate. End to end: store appends at --rate for\n" +
		"--duration (outbox NOTIFY on), relay and projector in this process; per event, from the\n" +
		"append's return (commit) until SUBSCRIBE runstream:updates shows the run's lastEventSeq at\n" +
		"or past its runSeq. Target: p99 < 50ms at 1,000 events/s. Progress goes to stderr every\n" +
		"second. See bench/README.md.",
	flags: func(fs *flag.FlagSet, cli *projectCLI) {
		fs.StringVar(&cli.RedisURL, "redis-url", defaultRedisURL, "Redis URL of the snapshots (redis://h1:p?addr=h2:p&addr=h3:p for a cluster); the bench deletes the keys it wrote")
		fs.StringVar(&cli.PostgresURL, "postgres-url", defaultPostgresURL, "PostgreSQL URL of the latency phase; it works in a fresh schema bench_<random> (dropped at the end)")
		fs.IntVar(&cli.partitions, "partitions", 12, "partitions of each phase's fresh topic (in-process kfake)")
		fs.IntVar(&cli.Batch, "batch", 5000, "the projector's max poll records, and the baseline's pipeline length")
		fs.BoolVar(&cli.catchUp, "catch-up", true, "run the catch-up phase and its baseline (--catch-up=false skips it)")
		fs.IntVar(&cli.RepairRuns, "repair-runs", 100000, "finished runs of the repair phase, in the store and not in Redis, timed until convergence rebuilt them (0 skips it)")
		fs.IntVar(&cli.BacklogEvents, "backlog-events", 100000, "records of the backlog phase: published a minute late, caught up in alternated rounds for runs Redis holds and for runs it lacks (0 skips it)")
		fs.IntVar(&cli.BacklogRounds, "backlog-rounds", 3, "rounds of each kind of the backlog phase")
		fs.IntVar(&cli.TracedEvery, "traced-every", 0, "put a sampled traceparent on one record in this many of the catch-up and memory topics (10: the records of a 10% sampler), to measure tracing's cost with OTEL_EXPORTER_OTLP_ENDPOINT set (0: none)")
		fs.BoolVar(&cli.converge, "converge", true, "run the projectors with convergence passes, as in production (--converge=false measures without them)")
		fs.DurationVar(&cli.SnapshotTTL, "snapshot-ttl", snapshots.DefaultTTL, "the projectors' --snapshot-ttl, as in production (0 measures without the expiry of terminal runs)")
		fs.IntVar(&cli.Events, "events", 1_000_000, "events pre-filled into the catch-up topic")
		fs.IntVar(&cli.Runs, "runs", 10000, "runs the catch-up's events are spread over")
		fs.BoolVar(&cli.latency, "latency", true, "run the end-to-end latency phase (--latency=false skips it)")
		fs.IntVar(&cli.Rate, "rate", 1000, "offered append rate of the latency phase, events/s")
		fs.DurationVar(&cli.Duration, "duration", 10*time.Second, "how long the latency phase appends")
		fs.IntVar(&cli.Appenders, "appenders", 16, "goroutines appending in the latency phase (and their pool's connections)")
		fs.IntVar(&cli.LatencyRuns, "latency-runs", 1000, "runs the latency phase's events are spread over")
		fs.BoolVar(&cli.memory, "memory", true, "run the memory phase (--memory=false skips it)")
		fs.IntVar(&cli.MemoryRuns, "memory-runs", 100000, "active runs of the memory phase")
		fs.IntVar(&cli.MemoryEvents, "memory-events", 300000, "events of the memory phase's runs")
		fs.BoolVar(&cli.process, "memory-process", true, "in the memory phase, also run this executable's `projector` command as a process of its own and hold its RSS to the target")
	},
	check: func(cli *projectCLI) error {
		cli.DisableConvergence = !cli.converge
		cli.DisableCatchUp, cli.DisableLatency, cli.DisableMemory = !cli.catchUp, !cli.latency, !cli.memory
		if cli.process && cli.memory {
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("finding this executable for the projector process (--memory-process=false skips it): %w", err)
			}
			cli.ProjectorCommand = []string{exe, "projector"}
		}
		errs := benchPositive(harness.Flag("batch", cli.Batch), harness.Flag("events", cli.Events), harness.Flag("runs", cli.Runs),
			harness.Flag("rate", cli.Rate), harness.Flag("duration", cli.Duration), harness.Flag("appenders", cli.Appenders),
			harness.Flag("latency-runs", cli.LatencyRuns), harness.Flag("memory-runs", cli.MemoryRuns),
			harness.Flag("memory-events", cli.MemoryEvents))
		cli.Partitions = benchPartitions(cli.partitions, &errs)
		return benchFlagErrors(errs, cli.Validate())
	},
	profiles: []benchProfile[projectCLI]{{flag: "cpuprofile",
		usage: "write a CPU profile of this process covering the catch-up window only to this file (go tool pprof)",
		to:    func(cli *projectCLI) *io.Writer { return &cli.CatchUpCPUProfile }}},
	wire: func(cli *projectCLI, stderr io.Writer) {
		cli.Logger = benchLogger(stderr)
		cli.Progress = benchPhaseLine(stderr, 11, "/s", nil)
	},
	measure: func(ctx context.Context, cli projectCLI) (*projectbench.Report, error) {
		return projectbench.Run(ctx, cli.Config)
	},
}

// etlCLI is bench etl's flags.
type etlCLI struct {
	etlbench.Config
	partitions int
	perEvent   bool
}

var benchETL = benchTarget[etlCLI, *etlbench.Report]{
	name:    "etl",
	summary: "analytics ETL: records/s into the Postgres sink vs a plain batched INSERT of the same rows",
	about: "Measures the analytics ETL (runstream etl) against real Postgres and an in-process\n" +
		"Kafka-protocol broker. Fill (not timed): a fresh topic of --partitions partitions gets --events\n" +
		"records of realistic runs (retries, failures, skips, pauses, unknown types), --active-runs\n" +
		"in flight at once, produced as the relay produces them. Sink: the ETL in a fresh schema,\n" +
		"timed from its start until its group committed every offset (kadm); every run's row is then\n" +
		"checked against reduce. Baseline, same run, same Postgres: the sink's final rows\n" +
		"inserted into a fresh copy of the tables with plain --insert-batch-row INSERTs on\n" +
		"--baseline-conns connections. Reports both in records/s and the ratio. Target: >= 50%.\n" +
		"All of it runs --rounds times; the report is the round with the median ratio (a round takes\n" +
		"about half a minute at a million records; --rounds 1 for a quick look).\n" +
		"Progress goes to stderr every second. See bench/README.md.",
	flags: func(fs *flag.FlagSet, cli *etlCLI) {
		fs.StringVar(&cli.PostgresURL, "postgres-url", defaultPostgresURL, "PostgreSQL URL; the sink and the baseline work in fresh schemas bench_etl_<random> (dropped at the end)")
		fs.IntVar(&cli.partitions, "partitions", 12, "partitions of the fresh topic (in-process kfake)")
		fs.IntVar(&cli.Events, "events", 1_000_000, "records pre-filled into the topic")
		fs.IntVar(&cli.Rounds, "rounds", 3, "repeat the whole measurement this many times (fresh runs, topic and schemas each) and report the round with the median ratio")
		fs.IntVar(&cli.ActiveRuns, "active-runs", 2000, "runs in flight at once while the topic is filled (each record belongs to one of them at random)")
		fs.IntVar(&cli.Batch, "batch", 20000, "the ETL's max poll records")
		fs.IntVar(&cli.MaxQueued, "max-queued", 0, "the ETL's max queued records per partition (all of a partition's queued records go into its next transaction); 0: half of --batch, as runstream etl")
		fs.IntVar(&cli.PoolConns, "pool-conns", 0, "the sink's Postgres connections; 0: what runstream etl gets by default (pgxpool's max(4, cores))")
		fs.BoolVar(&cli.perEvent, "per-event", false, "write each event as the handler gets it instead of once per partition batch (for comparison)")
		fs.IntVar(&cli.InsertBatch, "insert-batch", 1000, "rows per INSERT of the baseline")
		fs.IntVar(&cli.BaselineConns, "baseline-conns", 0, "connections of the baseline, inserting batches in parallel; 0: one per CPU")
		fs.BoolVar(&cli.KeepSchema, "keep-schema", false, "keep the bench_etl_<random> schemas for inspection")
	},
	check: func(cli *etlCLI) error {
		cli.DisableBatching = cli.perEvent
		errs := benchPositive(harness.Flag("events", cli.Events), harness.Flag("rounds", cli.Rounds),
			harness.Flag("active-runs", cli.ActiveRuns), harness.Flag("batch", cli.Batch), harness.Flag("insert-batch", cli.InsertBatch))
		cli.Partitions = benchPartitions(cli.partitions, &errs)
		return benchFlagErrors(errs, cli.Validate())
	},
	profiles: []benchProfile[etlCLI]{
		{flag: "cpuprofile", usage: "write a CPU profile of this process covering the first round's sink window only to this file (go tool pprof)",
			to: func(cli *etlCLI) *io.Writer { return &cli.CPUProfile }},
		{flag: "memprofile", usage: "write the allocation profile of this process at the end of the first round's sink window to this file, and at its start to this file + .base (go tool pprof -sample_index=alloc_space -base FILE.base FILE)",
			to:   func(cli *etlCLI) *io.Writer { return &cli.AllocProfile },
			base: func(cli *etlCLI) *io.Writer { return &cli.AllocProfileBase }},
	},
	wire: func(cli *etlCLI, stderr io.Writer) {
		cli.Logger = benchLogger(stderr)
		cli.Progress = benchPhaseLine(stderr, 8, "/s", nil)
	},
	measure: func(ctx context.Context, cli etlCLI) (*etlbench.Report, error) {
		return etlbench.Run(ctx, cli.Config)
	},
}

// lakeCLI is bench lake's flags.
type lakeCLI struct {
	lakebench.Config
	partitions int
}

var benchLake = benchTarget[lakeCLI, *lakebench.Report]{
	name:    "lake",
	summary: "lake sink: events/s into Parquet files vs the ETL's Postgres sink on the same topic; file sizes, bytes per event",
	about: "Measures the lake sink (runstream lake) against the analytics ETL (runstream etl) on the same\n" +
		"topic in the same run. Each round fills a fresh topic (in-process kfake, --partitions partitions)\n" +
		"with --events records of realistic runs, then runs both sinks on it, each in a group and a schema\n" +
		"of its own, timed from its start until its group committed every offset; the sinks take turns\n" +
		"going first. The lake writes to a local directory (its windows closed by --rotate-records, by\n" +
		"default the whole partition, and by a 200 ms quiet spell at the end) and its files are checked:\n" +
		"every event exactly once, byte for byte. Reports both rates and their ratio (target: the lake at\n" +
		"least 50% of the ETL's), the files' mean size, and Parquet bytes per event beside the topic's\n" +
		"record value and the store's run_events row (measured once on --store-sample appended events).\n" +
		"The report is the round with the median ratio, every round listed.",
	flags: func(fs *flag.FlagSet, cli *lakeCLI) {
		fs.StringVar(&cli.PostgresURL, "postgres-url", defaultPostgresURL, "PostgreSQL URL; the ETL's tables, the lake's state and the store sample go in fresh schemas (dropped at the end)")
		fs.IntVar(&cli.partitions, "partitions", 6, "partitions of the fresh topic (in-process kfake)")
		fs.IntVar(&cli.Events, "events", 300_000, "records pre-filled into the topic")
		fs.IntVar(&cli.Rounds, "rounds", 3, "rounds (fresh topic, lake and tables each); the report is the round with the median ratio")
		fs.IntVar(&cli.ActiveRuns, "active-runs", 2000, "runs in flight at once while the topic is filled")
		fs.Int64Var(&cli.RotateRecords, "rotate-records", 0, "the lake's --rotate-records; 0: --events (each partition's records in one window)")
		fs.IntVar(&cli.StoreSample, "store-sample", 20_000, "events appended to a fresh store to measure its bytes per event")
		fs.StringVar(&cli.Dir, "dir", "", "directory of the lake and its spool (empty: a temporary one, removed at the end)")
	},
	check: func(cli *lakeCLI) error {
		errs := benchPositive(harness.Flag("events", cli.Events), harness.Flag("rounds", cli.Rounds),
			harness.Flag("active-runs", cli.ActiveRuns), harness.Flag("store-sample", cli.StoreSample))
		cli.Partitions = benchPartitions(cli.partitions, &errs)
		return benchFlagErrors(errs, cli.Validate())
	},
	wire: func(cli *lakeCLI, stderr io.Writer) {
		cli.Logger = benchLogger(stderr)
		cli.Progress = benchPhaseLine(stderr, 8, "/s", nil)
	},
	measure: func(ctx context.Context, cli lakeCLI) (*lakebench.Report, error) {
		return lakebench.Run(ctx, cli.Config)
	},
}

// readCLI is bench read's flags.
type readCLI struct {
	readbench.Config
	gets           bool
	shape          string
	fanout, spread readbench.Shape
}

var benchRead = benchTarget[readCLI, *readbench.Report]{
	name:    "read",
	summary: "read side: snapshot GETs/s vs redis-benchmark; SSE change -> client p99 vs a raw Go fan-out",
	about: "Read side, in two phases. GETs: snapshot GETs per second through an in-process API with\n" +
		"--clients clients, against redis-benchmark's GET of the same keys in the same run (target: at\n" +
		"least 50%). SSE: the time from a snapshot change in Redis (SET + PUBLISH, as the projector\n" +
		"writes) to a watcher having read its event, the API's against a baseline in the same run: a\n" +
		"plain net/http server subscribed to the same channel that writes the same SSE frame bytes to\n" +
		"the same number of connections. The watchers run in a process of their own\n" +
		"(this executable's hidden `bench read-watchers`). Two shapes: fanout (--fanout-watchers\n" +
		"watchers of one run) and spread (--spread-watchers over --spread-runs runs); each shape runs\n" +
		"--rounds rounds, the two arms alternating which goes first. Reported per shape and arm: p50\n" +
		"and p99 (median of the rounds), the p99 ratio API / baseline (median of the rounds' ratios;\n" +
		"target <= 1.5x), the server's heap+stacks and RSS per connected watcher and its CPU per\n" +
		"change, with each round and its load average. About 3 minutes with the defaults; it needs\n" +
		"about --spread-watchers + 300 open files in each process. See bench/README.md.\n\n" +
		"--source store measures instead the snapshot GETs of runs Redis does not hold (terminal runs\n" +
		"past --snapshot-ttl), which the API projects from the store: it loads --store-events events\n" +
		"(runs of --store-events-per-run) into a fresh schema, or reads a schema kept by an earlier\n" +
		"run (--keep-schema, then --store-schema), and reports p50/p99 and the 503s and other errors\n" +
		"of --clients readers (default 100) over --duration (target: p99 < 20 ms at 100 readers on a\n" +
		"store of 10 million events).",
	flags: func(fs *flag.FlagSet, cli *readCLI) {
		fs.StringVar(&cli.RedisURL, "redis-url", defaultRedisURL, "Redis the in-process API reads (bench keys runstream:run:{bench-...} are written and deleted); on a Redis others use, give the bench a database of its own (redis://host:port/N): the SSE phase's update channel must carry only its changes")
		fs.StringVar(&cli.PostgresURL, "postgres-url", defaultPostgresURL, "Postgres (readiness only; with --source store, where the bench schema is created and read)")
		fs.BoolVar(&cli.gets, "gets", true, "run the GET phase and redis-benchmark (--gets=false: the SSE phase only)")
		fs.IntVar(&cli.Clients, "clients", 0, "concurrent snapshot GET clients (and redis-benchmark clients); 0: 64, or 100 with --source store")
		fs.StringVar(&cli.Source, "source", readbench.SourceRedis, "what the GETs read: redis (snapshots in Redis; then the SSE phase) or store (runs Redis does not hold, projected from the store; nothing else is measured)")
		fs.IntVar(&cli.Store.Events, "store-events", 400000, "--source store: events loaded into a fresh schema (at size: 10000000)")
		fs.IntVar(&cli.Store.EventsPerRun, "store-events-per-run", 20, "--source store: events per run (RunStarted, steps started and completed, RunCompleted)")
		fs.IntVar(&cli.Store.MaxConsistentReads, "max-consistent-reads", 8, "--source store: the API's limit of concurrent projections from the store (as runstream api's flag)")
		fs.StringVar(&cli.Store.Schema, "store-schema", "", "--source store: read the runs of this schema, loaded and kept by an earlier run, instead of loading")
		fs.BoolVar(&cli.Store.KeepSchema, "keep-schema", false, "--source store: keep the loaded schema (its name is in the report) for --store-schema")
		fs.DurationVar(&cli.Duration, "duration", 10*time.Second, "GET phase length")
		fs.IntVar(&cli.Runs, "runs", 1000, "runs with a snapshot, read at random by the GETs")
		fs.StringVar(&cli.shape, "shape", "all", "SSE shapes to measure: all, fanout, spread or none")
		fs.IntVar(&cli.Rounds, "rounds", 3, "rounds per SSE shape, each with both arms (the figures are the medians)")
		def := readbench.DefaultShapes()
		cli.fanout, cli.spread = def[0], def[1]
		fs.IntVar(&cli.fanout.Watchers, "fanout-watchers", def[0].Watchers, "fanout shape: watchers, all of one run")
		fs.IntVar(&cli.fanout.Changes, "fanout-changes", def[0].Changes, "fanout shape: changes per arm and round")
		fs.DurationVar(&cli.fanout.Every, "fanout-every", def[0].Every, "fanout shape: pause between changes")
		fs.IntVar(&cli.spread.Watchers, "spread-watchers", def[1].Watchers, "spread shape: watchers (watcher i watches run i mod --spread-runs)")
		fs.IntVar(&cli.spread.Runs, "spread-runs", def[1].Runs, "spread shape: runs the watchers spread over, and the changes take turns on")
		fs.IntVar(&cli.spread.Changes, "spread-changes", def[1].Changes, "spread shape: changes per arm and round")
		fs.DurationVar(&cli.spread.Every, "spread-every", def[1].Every, "spread shape: pause between changes")
	},
	check: func(cli *readCLI) error {
		cli.SkipGets = !cli.gets
		if cli.Clients == 0 {
			cli.Clients = 64
			if cli.Source == readbench.SourceStore {
				cli.Clients = 100
			}
		}
		if cli.Source == readbench.SourceStore {
			cli.Shapes = []readbench.Shape{} // no SSE phase
			return benchFlagErrors(benchPositive(harness.Flag("clients", cli.Clients), harness.Flag("duration", cli.Duration),
				harness.Flag("store-events", cli.Store.Events), harness.Flag("store-events-per-run", cli.Store.EventsPerRun),
				harness.Flag("max-consistent-reads", cli.Store.MaxConsistentReads)), cli.Validate())
		}
		switch cli.shape {
		case "all":
			cli.Shapes = []readbench.Shape{cli.fanout, cli.spread}
		case readbench.ShapeFanout:
			cli.Shapes = []readbench.Shape{cli.fanout}
		case readbench.ShapeSpread:
			cli.Shapes = []readbench.Shape{cli.spread}
		case "none":
			cli.Shapes = []readbench.Shape{}
		default:
			return usageError{fmt.Errorf("--shape must be all, fanout, spread or none, got %q", cli.shape)}
		}
		errs := benchPositive(harness.Flag("clients", cli.Clients), harness.Flag("duration", cli.Duration), harness.Flag("runs", cli.Runs),
			harness.Flag("rounds", cli.Rounds), harness.Flag("fanout-watchers", cli.fanout.Watchers), harness.Flag("fanout-changes", cli.fanout.Changes),
			harness.Flag("fanout-every", cli.fanout.Every), harness.Flag("spread-watchers", cli.spread.Watchers), harness.Flag("spread-runs", cli.spread.Runs),
			harness.Flag("spread-changes", cli.spread.Changes), harness.Flag("spread-every", cli.spread.Every))
		if cli.spread.Runs > cli.spread.Watchers {
			errs = append(errs, fmt.Errorf("--spread-runs (%d) must be at most --spread-watchers (%d)", cli.spread.Runs, cli.spread.Watchers))
		}
		if len(errs) > 0 { // named by flag; Validate would name the same by shape
			return benchFlagErrors(errs, nil)
		}
		if len(cli.Shapes) > 0 {
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("finding this executable for the SSE watcher process: %w", err)
			}
			cli.WatcherCommand = []string{exe, "bench", readWatchersCommand}
		}
		return benchFlagErrors(errs, cli.Validate())
	},
	profiles: []benchProfile[readCLI]{
		{flag: "cpuprofile", usage: "write a CPU profile of this process (API and GET clients), covering the GET window only, to this file (go tool pprof)",
			to: func(cli *readCLI) *io.Writer { return &cli.CPUProfile }},
		{flag: "sse-cpuprofile", usage: "write a CPU profile of this process (the API and its hub; the watchers are another process), covering the first runstream arm's changes only, to this file",
			to: func(cli *readCLI) *io.Writer { return &cli.SSECPUProfile }},
	},
	jsonUsage:  "print the report as JSON",
	noJSONFile: true,
	wire:       func(cli *readCLI, stderr io.Writer) { cli.Progress = stderr },
	measure: func(ctx context.Context, cli readCLI) (*readbench.Report, error) {
		return readbench.Run(ctx, cli.Config)
	},
}

// readWatchersCommand is bench read's watcher process, `runstream bench
// read-watchers`: not listed, it speaks the protocol of
// readbench.WatchersMain on its stdin and stdout.
const readWatchersCommand = "read-watchers"

var benchExport = benchTarget[exportbench.Config, *exportbench.Report]{
	name:    "export",
	summary: "runstream export's events/s vs a plain COPY (SELECT ...) TO STDOUT of the same rows",
	about: "Loads --events events across --tenants tenants into a fresh schema, then exports each tenant's\n" +
		"window per round as runstream export does (NDJSON to a counting writer), against a plain\n" +
		"COPY (SELECT the same columns ... ORDER BY the same keys) TO STDOUT of the same rows, the two\n" +
		"alternating tenant by tenant which goes first (target: at least 50% of COPY's events/s, median\n" + "of --rounds).",
	flags: func(fs *flag.FlagSet, cfg *exportbench.Config) {
		fs.StringVar(&cfg.PostgresURL, "postgres-url", defaultPostgresURL, "Postgres to load and read (a fresh schema, dropped after)")
		fs.IntVar(&cfg.Events, "events", 300000, "events loaded")
		fs.IntVar(&cfg.Tenants, "tenants", 6, "tenants the events are spread over; a round exports each tenant's window in turn")
		fs.IntVar(&cfg.Rounds, "rounds", 3, "rounds (the median round is the figure)")
		fs.IntVar(&cfg.PageSize, "page-size", 10000, "the export's events per query")
		fs.BoolVar(&cfg.KeepSchema, "keep-schema", false, "leave the bench schema for inspection")
	},
	check: func(cfg *exportbench.Config) error {
		if cfg.Events < 1 || cfg.Tenants < 1 || cfg.Rounds < 1 || cfg.PageSize < 1 {
			return usageError{fmt.Errorf("--events, --tenants, --rounds and --page-size must be positive")}
		}
		return nil
	},
	profiles: []benchProfile[exportbench.Config]{
		{flag: "cpuprofile", usage: "write a CPU profile of this process covering the first round's export to this file (go tool pprof)",
			to: func(cfg *exportbench.Config) *io.Writer { return &cfg.CPUProfile }},
	},
	wire:    func(cfg *exportbench.Config, stderr io.Writer) { cfg.Progress = stderr },
	measure: exportbench.Run,
}

var benchList = benchTarget[listbench.Config, *listbench.Report]{
	name:    "list",
	summary: "runs list (GET /v1/runs) over a tenant of --runs runs: p50/p99 per page kind",
	about: "Writes --runs snapshots of one tenant through the projector's write path (snapshot and runs\n" +
		"catalog), counts as many runs into a fresh store schema (storeRuns), serves the API on loopback\n" +
		"and times --requests requests of each page kind the console asks for: first page, page 100 via\n" +
		"cursors, a rare status, runIdPrefix searches, engineRunRef, planId, startedAt sort with a time\n" +
		"range, and a filter no single index answers (target: every p99 < 100 ms). The bench deletes its\n" +
		"keys and schema. See bench/README.md.",
	flags: func(fs *flag.FlagSet, cfg *listbench.Config) {
		fs.StringVar(&cfg.RedisURL, "redis-url", defaultRedisURL, "Redis of the catalog (bench keys runstream:runs:{tenant_listbench_...} and runstream:run:{lb-...} are written and deleted)")
		fs.StringVar(&cfg.PostgresURL, "postgres-url", defaultPostgresURL, "PostgreSQL URL for storeRuns (a fresh schema bench_<random>, dropped at the end); empty: no store")
		fs.IntVar(&cfg.Runs, "runs", 100000, "runs of the tenant")
		fs.IntVar(&cfg.Requests, "requests", 200, "requests timed per page kind")
	},
	check: func(cfg *listbench.Config) error {
		return benchFlagErrors(benchPositive(harness.Flag("runs", cfg.Runs), harness.Flag("requests", cfg.Requests)), nil)
	},
	wire:    func(cfg *listbench.Config, stderr io.Writer) { cfg.Progress = stderr },
	measure: listbench.Run,
}

// profileFlag is a profile flag: its name, the path given, and the
// bench config's writer to point at the file.
type profileFlag struct {
	flag, path string
	w          *io.Writer
}

// suffixed is path+suffix, or "" for no path.
func suffixed(path, suffix string) string {
	if path == "" {
		return ""
	}
	return path + suffix
}

// openProfiles creates the file of each profile flag given a path and
// points its writer at it. closeAll closes those files; it is usable (and
// to be deferred) even when err is set.
func openProfiles(flags ...profileFlag) (closeAll func(), err error) {
	var files []*os.File
	closeAll = func() {
		for _, f := range files {
			_ = f.Close()
		}
	}
	for _, p := range flags {
		if p.path == "" {
			continue
		}
		f, err := os.Create(p.path)
		if err != nil {
			return closeAll, fmt.Errorf("creating the profile file (%s): %w", p.flag, err)
		}
		files = append(files, f)
		*p.w = f
	}
	return closeAll, nil
}
