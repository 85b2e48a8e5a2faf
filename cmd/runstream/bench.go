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

	"github.com/runstream/runstream/internal/bench"
)

// benchCommands are the subcommands of `runstream bench`.
func benchCommands() []command {
	return []command{
		{"append", "append load over HTTP (single events or batches), with a pgbench baseline", runBenchAppend},
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
	var cfg bench.Config
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
	cfg.Progress = func(p bench.Progress) {
		line := fmt.Sprintf("bench: %-14s %3.0fs/%.0fs", p.Phase, p.Elapsed.Seconds(), p.Total.Seconds())
		if p.Requests > 0 || p.Errors > 0 {
			line += fmt.Sprintf("  %9d events  %8.0f events/s  %d errors", p.Events, float64(p.Events)/p.Elapsed.Seconds(), p.Errors)
		}
		fmt.Fprintln(env.stderr, line)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("creating the CPU profile file (--cpuprofile): %w", err)
		}
		defer f.Close()
		cfg.CPUProfile = f
	}

	rep, err := bench.RunAppend(ctx, cfg)
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
func checkBenchFlags(cfg bench.Config) error {
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
