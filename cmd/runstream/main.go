// Command runstream is the one binary of runstream: the Append Authority's
// HTTP API, migrations, the all-in-one dev mode and the benchmarks. Each
// subcommand has --help. main only wires flags, signals and components;
// the logic lives in the packages.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal, restore default handling so a second
		// Ctrl-C kills the process at once.
		<-ctx.Done()
		stop()
	}()
	os.Exit(runProcess(ctx, os.Args[1:]))
}

// runProcess runs a command as the process and returns its exit status.
// The error it stops with goes through the command's logger when it built
// one (so in its --log-format), else to stderr as text (flag errors, and
// commands that do not log).
func runProcess(ctx context.Context, args []string) int {
	err := run(ctx, args, os.Getenv, os.Stdout, os.Stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0 // --help printed the usage
	}
	if log := processLog.Load(); log != nil {
		log.Error("runstream stopped", "err", err.Error())
	} else {
		fmt.Fprintf(os.Stderr, "runstream: %v\n", err)
	}
	return exitCode(err)
}

func exitCode(err error) int {
	var u usageError
	if errors.As(err, &u) {
		return 2
	}
	return 1
}

// usageError marks a command-line mistake (exit status 2).
type usageError struct{ error }

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *environment, args []string) error
}

// environment is what a command may touch of the outside world, injected
// so tests call run directly.
type environment struct {
	getenv func(string) string
	stdout io.Writer
	stderr io.Writer
}

func commands() []command {
	return []command{
		{"dev", "everything in one process for a laptop: migrate, embedded Kafka broker, API, relay (and --demo workload)", runDev},
		{"api", "the HTTP API of the Append Authority (production: run as many as needed)", runAPI},
		{"relay", "publish the outbox to Kafka (production: run as many as needed); relay dlq list|retry", runRelay},
		{"projector", "reduce the topic into Redis snapshots, in a consumer group (run up to one per partition)", runProjector},
		{"lag", "consumer-group lag per partition, in records and seconds (--json, --watch)", runLag},
		{"rebuild", "rebuild Redis snapshots from the store: --run ID or --all", runRebuild},
		{"export", "one tenant's events by persistedAt as NDJSON: --tenant T --from T0 [--to T1] [--follow] [--out FILE]", runExport},
		{"migrate", "apply the Postgres schema (idempotent)", runMigrate},
		{"retention", "keep the store bounded: retention run|status (partitions ahead; old runs archived to Parquet, verified, then dropped)", runStoreRetention},
		{"etl", "analytics sink: the topic into Postgres tables runs and step_attempts, effectively once", runEtl},
		{"lake", "lake sink: the topic as Parquet files in a directory or S3 bucket, exactly once, plus a current-state table", runLake},
		{"bench", "load generators and reports, each with its baseline: bench " + benchNames(), runBench},
		{"version", "version, commit and Go version of this binary (also --version, -v)", runVersion},
		{"help", "help for a command: help <command> [subcommand]; help alone (or help help) prints this list", nil},
	}
}

// benchNames lists the benchmarks for the top-level help: "append|relay|...".
func benchNames() string {
	var names []string
	for _, c := range benchCommands() {
		names = append(names, c.name)
	}
	return strings.Join(names, "|")
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	env := &environment{getenv: getenv, stdout: stdout, stderr: stderr}
	cmds := commands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" ||
		(args[0] == "help" && (len(args) == 1 || args[1] == "-h" || args[1] == "--help" || args[1] == "help")) {
		usage(stderr, cmds)
		if len(args) == 0 {
			return usageError{errors.New("no command given")}
		}
		return nil
	}
	if args[0] == "--version" || args[0] == "-version" || args[0] == "-v" {
		return runVersion(ctx, env, args[1:])
	}
	// help <command> [subcommand...] is <command> [subcommand...] --help.
	name, rest := args[0], args[1:]
	if name == "help" {
		name, rest = args[1], append(slices.Clone(args[2:]), "--help")
	}
	for _, c := range cmds {
		if c.name == name && c.run != nil {
			return c.run(ctx, env, rest)
		}
	}
	usage(stderr, cmds)
	return usageError{fmt.Errorf("unknown command %q", name)}
}

func usage(w io.Writer, cmds []command) {
	var b strings.Builder
	b.WriteString("runstream: the read side of a workflow platform's run-event log.\n\nUsage: runstream <command> [flags]\n\nCommands:\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "  %-9s %s\n", c.name, c.summary)
		if c.name == "bench" {
			for _, s := range benchCommands() {
				fmt.Fprintf(&b, "    %-9s %s\n", s.name, s.summary)
			}
		}
	}
	b.WriteString("\nThe web console is served at the API's / (http://127.0.0.1:8080/ under 'runstream dev').\n")
	b.WriteString("\nEvery flag can also be set as an environment variable RUNSTREAM_<FLAG_NAME>.\n" +
		"Run 'runstream help <command>' (or 'runstream <command> --help') for its flags; 'runstream --version' (or -v) for the build.\n")
	fmt.Fprint(w, b.String())
}

// newLogger builds the process's one logger, which also takes what
// logs by itself (useProcessLogger).
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, usageError{fmt.Errorf("--log-level (RUNSTREAM_LOG_LEVEL) must be debug, info, warn or error, got %q", level)}
	}
	opts := &slog.HandlerOptions{Level: lv}
	var log *slog.Logger
	switch format {
	case "json":
		jopts := *opts
		jopts.ReplaceAttr = readableDuration
		log = slog.New(slog.NewJSONHandler(w, &jopts))
	case "text":
		log = slog.New(slog.NewTextHandler(w, opts))
	default:
		return nil, usageError{fmt.Errorf("--log-format (RUNSTREAM_LOG_FORMAT) must be json or text, got %q", format)}
	}
	useProcessLogger(log)
	return log, nil
}

// readableDuration writes a duration in JSON logs as the text handler
// does ("1.5s"), not as slog's JSON default, integer nanoseconds.
func readableDuration(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}
