package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/runstream/runstream/internal/bench/appendbench"
	"github.com/runstream/runstream/internal/bench/etlbench"
	"github.com/runstream/runstream/internal/bench/harness"
	"github.com/runstream/runstream/internal/bench/projectbench"
	"github.com/runstream/runstream/internal/bench/relaybench"
	"github.com/runstream/runstream/internal/config"
)

// benchCommands are the subcommands of `runstream bench`.
func benchCommands() []command {
	return []command{
		{"append", "append load over HTTP (single events or batches), with a pgbench baseline", runBenchAppend},
		{"relay", "outbox relay: backlog drain rate and commit-to-ack latency at a fixed rate", runBenchRelay},
		{"project", "projector: catch-up rate vs the guarded script alone, end-to-end latency, memory", runBenchProject},
		{"etl", "analytics ETL: records/s into the Postgres sink vs a plain batched INSERT of the same rows", runBenchEtl},
		{"read", "read side: snapshot GETs/s vs redis-benchmark, snapshot change -> SSE watcher latency", runBenchRead},
	}
}

func runBench(ctx context.Context, env *environment, args []string) error {
	subs := benchCommands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		benchUsage(env.stderr, subs)
		if len(args) == 0 {
			return usageError{errors.New("bench: no benchmark given")}
		}
		return nil
	}
	for _, c := range subs {
		if c.name == args[0] {
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

func runBenchAppend(ctx context.Context, env *environment, args []string) error {
	fs := flag.NewFlagSet("bench append", flag.ContinueOnError)
	var cfg appendbench.Config
	fs.StringVar(&cfg.URL, "url", "", "base URL of a running API; empty: start one in this process against a fresh schema bench_<random> (dropped at the end)")
	fs.StringVar(&cfg.PostgresURL, "postgres-url", defaultPostgresURL, "PostgreSQL URL for the in-process API and the pgbench baseline (pgx pool settings such as pool_max_conns apply to the API)")
	fs.IntVar(&cfg.Clients, "clients", 16, "concurrent HTTP clients (and pgbench clients)")
	fs.IntVar(&cfg.Batch, "batch", 1, "events per request: 1 posts /v1/events, more posts /v1/events:batch (the baseline exists for 1 and 100)")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "measured window (and pgbench -T)")
	fs.DurationVar(&cfg.Warmup, "warmup", 2*time.Second, "load before the window, not measured")
	fs.IntVar(&cfg.Runs, "runs", 10000, "distinct runIds the events are spread over")
	fs.BoolVar(&cfg.Baseline, "baseline", false, "also run pgbench on the same three SQL statements (bench/*.sql) and report our ratio to it")
	fs.StringVar(&cfg.Token, "token", "", "bearer token to send; with the in-process API it also turns authentication on")
	fs.StringVar(&cfg.Tenant, "tenant", "tenant_bench", "tenantId of the generated events (the token's tenant when the API checks tokens)")
	fs.BoolVar(&cfg.KeepSchema, "keep-schema", false, "keep the bench_<random> schemas for inspection")
	fs.StringVar(&cfg.Pgbench, "pgbench", "", "pgbench executable; empty: /usr/bin/pgbench, else pgbench on PATH")
	asJSON := fs.Bool("json", false, "print the report as JSON instead of text")
	jsonFile := fs.String("json-file", "", "also write the JSON report to this file")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of this process, covering the measured window only, to this file (go tool pprof)")
	if err := parseFlags(fs, env, args, "runstream bench append [flags]",
		"Drives the append path over real HTTP with keep-alive: --clients clients post pre-generated\n"+
			"valid events (StepCompleted, ~200-byte payload, random runs among --runs) for --duration\n"+
			"after --warmup, and reports events/s, requests/s, per-request latency p50/p95/p99/max and\n"+
			"errors by status. With --baseline it then runs pgbench on the same three SQL statements\n"+
			"(counter upsert, event insert, outbox insert; bench/append_single.sql or\n"+
			"bench/append_batch100.sql) with the same clients and duration against a fresh schema, and\n"+
			"reports our events/s as a fraction of pgbench's next to the target (60% single, 70% batched).\n"+
			"Progress goes to stderr every second. See bench/README.md."); err != nil {
		return err
	}
	if err := checkBenchFlags(cfg); err != nil {
		return err
	}
	cfg.Logger = slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg.Progress = func(p appendbench.Progress) {
		line := fmt.Sprintf("bench: %-14s %3.0fs/%.0fs", p.Phase, p.Elapsed.Seconds(), p.Total.Seconds())
		if p.Requests > 0 || p.Errors > 0 {
			line += fmt.Sprintf("  %9d events  %8.0f events/s  %d errors", p.Events, float64(p.Events)/p.Elapsed.Seconds(), p.Errors)
		}
		fmt.Fprintln(env.stderr, line)
	}
	closeProfiles, err := openProfiles(profileFlag{"--cpuprofile", *cpuProfile, &cfg.CPUProfile})
	defer closeProfiles()
	if err != nil {
		return err
	}

	rep, err := appendbench.Run(ctx, cfg)
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

// checkBenchFlags turns a config error into a usage error (exit status 2);
// zero values mean "default" to the package, but on the command line a 0 is
// a mistake.
func checkBenchFlags(cfg appendbench.Config) error {
	var errs []error
	for _, f := range []struct {
		name string
		v    int64
	}{{"clients", int64(cfg.Clients)}, {"batch", int64(cfg.Batch)}, {"runs", int64(cfg.Runs)},
		{"duration", int64(cfg.Duration)}, {"warmup", int64(cfg.Warmup)}} {
		if f.v <= 0 {
			errs = append(errs, fmt.Errorf("--%s must be > 0", f.name))
		}
	}
	if err := errors.Join(append(errs, cfg.Validate())...); err != nil {
		return usageError{err}
	}
	return nil
}

func runBenchRelay(ctx context.Context, env *environment, args []string) error {
	fs := flag.NewFlagSet("bench relay", flag.ContinueOnError)
	var cfg relaybench.Config
	fs.StringVar(&cfg.PostgresURL, "postgres-url", defaultPostgresURL, "PostgreSQL URL; the bench works in a fresh schema bench_<random> (dropped at the end)")
	brokers := fs.String("brokers", "", "Kafka bootstrap brokers, comma-separated; empty: franz-go's kfake in this process on 127.0.0.1:0, in memory")
	partitions := fs.Int("partitions", 12, "partitions of the fresh topic bench-relay-<random>")
	fs.IntVar(&cfg.RelayBatch, "relay-batch", 5000, "the relay's outbox rows per round")
	fs.IntVar(&cfg.Relays, "relays", 1, "relays to run, each with its own pool and Kafka client as separate processes; they split the outbox's shards")
	drain := fs.Bool("drain", true, "run the drain phase (--drain=false skips it)")
	fs.IntVar(&cfg.Events, "events", 1_000_000, "events pre-filled into the outbox for the drain (with --drain=false: the event log, without outbox rows, the latency phase runs over)")
	fs.IntVar(&cfg.Runs, "runs", 10000, "distinct runIds the events are spread over")
	latency := fs.Bool("latency", true, "run the latency phase (--latency=false skips it)")
	fs.IntVar(&cfg.Rate, "rate", 2000, "offered append rate of the latency phase, events/s")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "how long the latency phase appends")
	fs.DurationVar(&cfg.Warmup, "warmup", 2*time.Second, "how long the latency phase appends at --rate before its window, unmeasured (0: none)")
	fs.DurationVar(&cfg.Settle, "settle", 40*time.Second, "how long to wait, the relay idle, between the drain and the latency phase, so that the drain's writes are on disk and the latency phase sees the steady state (0: none)")
	fs.IntVar(&cfg.Appenders, "appenders", 16, "goroutines appending in the latency phase (concurrent API requests)")
	fs.IntVar(&cfg.AppendConns, "append-conns", 0, "connections of the appenders' store pool; appends beyond them share transactions (0: what runstream api opens, pgxpool's default max(4, cores) or the URL's pool_max_conns)")
	fs.BoolVar(&cfg.KeepSchema, "keep-schema", false, "keep the bench_<random> schema (and the topic on --brokers) for inspection")
	asJSON := fs.Bool("json", false, "print the report as JSON instead of text")
	jsonFile := fs.String("json-file", "", "also write the JSON report to this file")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of this process covering the drain window only to this file (go tool pprof)")
	latencyProfile := fs.String("latency-cpuprofile", "", "write a CPU profile covering the latency window only to this file")
	if err := parseFlags(fs, env, args, "runstream bench relay [flags]",
		"Measures the outbox relay against real Postgres and a Kafka-protocol broker, in two phases.\n"+
			"Drain: fills the outbox of a fresh schema with --events events over --runs runs by SQL (not\n"+
			"timed), starts the relay on a fresh topic and times it until the outbox is empty and the\n"+
			"topic's end offsets hold every event; then reads the topic back to check every run is\n"+
			"complete and in runSeq order (duplicates are counted). Target: >= 50,000 events/s.\n"+
			"Latency: with the relay running, appends through the store at --rate events/s for\n"+
			"--duration (open loop, outbox NOTIFY on) while a consumer reads the topic, and reports\n"+
			"commit-to-consume per event (consume time minus the record's persistedAt) p50/p95/p99/max,\n"+
			"after waiting --settle with the relay idle once the drain is done (its writes reach disk).\n"+
			"Target: p99 < 20ms at 2,000 events/s. Progress goes to stderr every second. See bench/README.md."); err != nil {
		return err
	}
	cfg.Brokers = config.Brokers(*brokers)
	cfg.Partitions = int32(min(*partitions, 1<<20))
	cfg.DisableDrain, cfg.DisableLatency = !*drain, !*latency
	if err := checkBenchRelayFlags(cfg, *partitions); err != nil {
		return err
	}
	if cfg.Warmup == 0 {
		cfg.Warmup = -1 // --warmup 0: none (0 in RelayConfig is the default)
	}
	if cfg.Settle == 0 {
		cfg.Settle = -1 // --settle 0: none
	}
	cfg.Logger = slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg.Progress = func(p harness.PhaseProgress) {
		line := fmt.Sprintf("bench: %-8s %4.0fs  %9d/%d", p.Phase, p.Elapsed.Seconds(), p.Done, p.Total)
		if p.Phase == "drain" {
			line += fmt.Sprintf("  %9d rows left", max(p.Total-p.Done, 0))
		}
		line += fmt.Sprintf("  %8.0f events/s", p.Rate)
		fmt.Fprintln(env.stderr, line)
	}
	closeProfiles, err := openProfiles(profileFlag{"--cpuprofile", *cpuProfile, &cfg.DrainCPUProfile},
		profileFlag{"--latency-cpuprofile", *latencyProfile, &cfg.LatencyCPUProfile})
	defer closeProfiles()
	if err != nil {
		return err
	}

	rep, err := relaybench.Run(ctx, cfg)
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

// checkBenchRelayFlags is checkBenchFlags for bench relay.
func checkBenchRelayFlags(cfg relaybench.Config, partitions int) error {
	var errs []error
	for _, f := range []struct {
		name string
		v    int64
	}{{"events", int64(cfg.Events)}, {"runs", int64(cfg.Runs)}, {"rate", int64(cfg.Rate)},
		{"duration", int64(cfg.Duration)}, {"appenders", int64(cfg.Appenders)},
		{"relay-batch", int64(cfg.RelayBatch)}, {"relays", int64(cfg.Relays)}} {
		if f.v <= 0 {
			errs = append(errs, fmt.Errorf("--%s must be > 0", f.name))
		}
	}
	if cfg.AppendConns < 0 {
		errs = append(errs, fmt.Errorf("--append-conns must be >= 0 (0: as runstream api), got %d", cfg.AppendConns))
	}
	if partitions < 1 || partitions > 100000 {
		errs = append(errs, fmt.Errorf("--partitions must be 1..100000, got %d", partitions))
	}
	if cfg.Warmup < 0 {
		errs = append(errs, fmt.Errorf("--warmup must be >= 0, got %s", cfg.Warmup))
	}
	if cfg.Settle < 0 {
		errs = append(errs, fmt.Errorf("--settle must be >= 0, got %s", cfg.Settle))
	}
	if err := errors.Join(append(errs, cfg.Validate())...); err != nil {
		return usageError{err}
	}
	return nil
}

func runBenchProject(ctx context.Context, env *environment, args []string) error {
	fs := flag.NewFlagSet("bench project", flag.ContinueOnError)
	var cfg projectbench.Config
	fs.StringVar(&cfg.RedisURL, "redis-url", defaultRedisURL, "Redis URL of the snapshots (redis://h1:p?addr=h2:p&addr=h3:p for a cluster); the bench deletes the keys it wrote")
	fs.StringVar(&cfg.PostgresURL, "postgres-url", defaultPostgresURL, "PostgreSQL URL of the latency phase; it works in a fresh schema bench_<random> (dropped at the end)")
	partitions := fs.Int("partitions", 12, "partitions of each phase's fresh topic (in-process kfake)")
	fs.IntVar(&cfg.Batch, "batch", 5000, "the projector's max poll records, and the baseline's pipeline length")
	catchUp := fs.Bool("catch-up", true, "run the catch-up phase and its baseline (--catch-up=false skips it)")
	fs.IntVar(&cfg.RepairRuns, "repair-runs", 100000, "finished runs of the repair phase, in the store and not in Redis, timed until convergence rebuilt them (0 skips it)")
	converge := fs.Bool("converge", true, "run the projectors with convergence passes, as in production (--converge=false measures without them)")
	fs.IntVar(&cfg.Events, "events", 1_000_000, "events pre-filled into the catch-up topic")
	fs.IntVar(&cfg.Runs, "runs", 10000, "runs the catch-up's events are spread over")
	latency := fs.Bool("latency", true, "run the end-to-end latency phase (--latency=false skips it)")
	fs.IntVar(&cfg.Rate, "rate", 1000, "offered append rate of the latency phase, events/s")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "how long the latency phase appends")
	fs.IntVar(&cfg.Appenders, "appenders", 16, "goroutines appending in the latency phase (and their pool's connections)")
	fs.IntVar(&cfg.LatencyRuns, "latency-runs", 1000, "runs the latency phase's events are spread over")
	memory := fs.Bool("memory", true, "run the memory phase (--memory=false skips it)")
	fs.IntVar(&cfg.MemoryRuns, "memory-runs", 100000, "active runs of the memory phase")
	fs.IntVar(&cfg.MemoryEvents, "memory-events", 300000, "events of the memory phase's runs")
	process := fs.Bool("memory-process", true, "in the memory phase, also run this executable's `projector` command as a process of its own and hold its RSS to the target")
	asJSON := fs.Bool("json", false, "print the report as JSON instead of text")
	jsonFile := fs.String("json-file", "", "also write the JSON report to this file")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of this process covering the catch-up window only to this file (go tool pprof)")
	if err := parseFlags(fs, env, args, "runstream bench project [flags]",
		"Measures the projector against real Redis and an in-process Kafka-protocol broker, in three\n"+
			"phases. Memory (first, so the process is fresh): a topic of --memory-events events of\n"+
			"--memory-runs runs that stay active, caught up by a projector in this process (VmRSS and heap\n"+
			"before, at the peak and after) and by `runstream projector` as a process of its own (its peak\n"+
			"RSS). Target: < 300 MB. Catch-up: a fresh topic pre-filled with --events events over --runs\n"+
			"runs (runs interleaved, runSeq contiguous), timed from the projector's start until its group\n"+
			"committed every offset; its writes are recorded from their notifications and every snapshot\n"+
			"is checked. Baseline, same run, same Redis: the same writes (runs, watermarks, snapshot sizes,\n"+
			"order) by the projector's guarded Lua script alone, pipelined like the projector's batches.\n"+
			"Target: catch-up >= 50% of the baseline's rate. End to end: store appends at --rate for\n"+
			"--duration (outbox NOTIFY on), relay and projector in this process; per event, from the\n"+
			"append's return (commit) until SUBSCRIBE runstream:updates shows the run's lastEventSeq at\n"+
			"or past its runSeq. Target: p99 < 50ms at 1,000 events/s. Progress goes to stderr every\n"+
			"second. See bench/README.md."); err != nil {
		return err
	}
	cfg.DisableConvergence = !*converge
	cfg.Partitions = int32(min(*partitions, 1<<20))
	cfg.DisableCatchUp, cfg.DisableLatency, cfg.DisableMemory = !*catchUp, !*latency, !*memory
	if *process && *memory {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("finding this executable for the projector process (--memory-process=false skips it): %w", err)
		}
		cfg.ProjectorCommand = []string{exe, "projector"}
	}
	if err := checkBenchProjectFlags(cfg, *partitions); err != nil {
		return err
	}
	cfg.Logger = slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg.Progress = func(p harness.PhaseProgress) {
		fmt.Fprintf(env.stderr, "bench: %-11s %4.0fs  %9d/%d  %8.0f/s\n", p.Phase, p.Elapsed.Seconds(), p.Done, p.Total, p.Rate)
	}
	closeProfiles, err := openProfiles(profileFlag{"--cpuprofile", *cpuProfile, &cfg.CatchUpCPUProfile})
	defer closeProfiles()
	if err != nil {
		return err
	}

	rep, err := projectbench.Run(ctx, cfg)
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

// checkBenchProjectFlags is checkBenchFlags for bench project.
func checkBenchProjectFlags(cfg projectbench.Config, partitions int) error {
	var errs []error
	for _, f := range []struct {
		name string
		v    int64
	}{{"batch", int64(cfg.Batch)}, {"events", int64(cfg.Events)}, {"runs", int64(cfg.Runs)},
		{"rate", int64(cfg.Rate)}, {"duration", int64(cfg.Duration)}, {"appenders", int64(cfg.Appenders)},
		{"latency-runs", int64(cfg.LatencyRuns)}, {"memory-runs", int64(cfg.MemoryRuns)},
		{"memory-events", int64(cfg.MemoryEvents)}} {
		if f.v <= 0 {
			errs = append(errs, fmt.Errorf("--%s must be > 0", f.name))
		}
	}
	if partitions < 1 || partitions > 100000 {
		errs = append(errs, fmt.Errorf("--partitions must be 1..100000, got %d", partitions))
	}
	if err := errors.Join(append(errs, cfg.Validate())...); err != nil {
		return usageError{err}
	}
	return nil
}

func runBenchEtl(ctx context.Context, env *environment, args []string) error {
	fs := flag.NewFlagSet("bench etl", flag.ContinueOnError)
	var cfg etlbench.Config
	fs.StringVar(&cfg.PostgresURL, "postgres-url", defaultPostgresURL, "PostgreSQL URL; the sink and the baseline work in fresh schemas bench_etl_<random> (dropped at the end)")
	partitions := fs.Int("partitions", 12, "partitions of the fresh topic (in-process kfake)")
	fs.IntVar(&cfg.Events, "events", 1_000_000, "records pre-filled into the topic")
	fs.IntVar(&cfg.Rounds, "rounds", 3, "repeat the whole measurement this many times (fresh runs, topic and schemas each) and report the round with the median ratio")
	fs.IntVar(&cfg.ActiveRuns, "active-runs", 2000, "runs in flight at once while the topic is filled (each record belongs to one of them at random)")
	fs.IntVar(&cfg.Batch, "batch", 20000, "the ETL's max poll records")
	fs.IntVar(&cfg.MaxQueued, "max-queued", 0, "the ETL's max queued records per partition (all of a partition's queued records go into its next transaction); 0: half of --batch, as runstream etl")
	fs.IntVar(&cfg.PoolConns, "pool-conns", 0, "the sink's Postgres connections; 0: what runstream etl gets by default (pgxpool's max(4, cores))")
	perEvent := fs.Bool("per-event", false, "write each event as the handler gets it instead of once per partition batch (for comparison)")
	fs.IntVar(&cfg.InsertBatch, "insert-batch", 1000, "rows per INSERT of the baseline")
	fs.IntVar(&cfg.BaselineConns, "baseline-conns", 0, "connections of the baseline, inserting batches in parallel; 0: one per CPU")
	fs.BoolVar(&cfg.KeepSchema, "keep-schema", false, "keep the bench_etl_<random> schemas for inspection")
	asJSON := fs.Bool("json", false, "print the report as JSON instead of text")
	jsonFile := fs.String("json-file", "", "also write the JSON report to this file")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of this process covering the first round's sink window only to this file (go tool pprof)")
	allocProfile := fs.String("memprofile", "", "write the allocation profile of this process at the end of the first round's sink window to this file, and at its start to this file + .base (go tool pprof -sample_index=alloc_space -base FILE.base FILE)")
	if err := parseFlags(fs, env, args, "runstream bench etl [flags]",
		"Measures the analytics ETL (runstream etl) against real Postgres and an in-process\n"+
			"Kafka-protocol broker. Fill (not timed): a fresh topic of --partitions partitions gets --events\n"+
			"records of realistic runs (retries, failures, skips, pauses, unknown types), --active-runs\n"+
			"in flight at once, produced as the relay produces them. Sink: the ETL in a fresh schema,\n"+
			"timed from its start until its group committed every offset (kadm); every run's row is then\n"+
			"checked against reduce. Baseline, same run, same Postgres: the sink's final rows\n"+
			"inserted into a fresh copy of the tables with plain --insert-batch-row INSERTs on\n"+
			"--baseline-conns connections. Reports both in records/s and the ratio. Target: >= 50%.\n"+
			"All of it runs --rounds times; the report is the round with the median ratio (a round takes\n"+
			"about half a minute at a million records; --rounds 1 for a quick look).\n"+
			"Progress goes to stderr every second. See bench/README.md."); err != nil {
		return err
	}
	cfg.Partitions = int32(min(*partitions, 1<<20))
	cfg.DisableBatching = *perEvent
	var errs []error
	for _, f := range []struct {
		name string
		v    int64
	}{{"events", int64(cfg.Events)}, {"rounds", int64(cfg.Rounds)}, {"active-runs", int64(cfg.ActiveRuns)}, {"batch", int64(cfg.Batch)},
		{"insert-batch", int64(cfg.InsertBatch)}} {
		if f.v <= 0 {
			errs = append(errs, fmt.Errorf("--%s must be > 0", f.name))
		}
	}
	if *partitions < 1 || *partitions > 100000 {
		errs = append(errs, fmt.Errorf("--partitions must be 1..100000, got %d", *partitions))
	}
	if err := errors.Join(append(errs, cfg.Validate())...); err != nil {
		return usageError{err}
	}
	cfg.Logger = slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg.Progress = func(p harness.PhaseProgress) {
		fmt.Fprintf(env.stderr, "bench: %-8s %4.0fs  %9d/%d  %8.0f/s\n", p.Phase, p.Elapsed.Seconds(), p.Done, p.Total, p.Rate)
	}
	closeProfiles, err := openProfiles(profileFlag{"--cpuprofile", *cpuProfile, &cfg.CPUProfile},
		profileFlag{"--memprofile", *allocProfile, &cfg.AllocProfile},
		profileFlag{"--memprofile", suffixed(*allocProfile, ".base"), &cfg.AllocProfileBase})
	defer closeProfiles()
	if err != nil {
		return err
	}
	rep, err := etlbench.Run(ctx, cfg)
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

// profileFlag is a CPU-profile flag: its name, the path given, and the
// bench config's writer to point at the file.
// suffixed is path+suffix, or "" for no path.
func suffixed(path, suffix string) string {
	if path == "" {
		return ""
	}
	return path + suffix
}

type profileFlag struct {
	flag, path string
	w          *io.Writer
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
