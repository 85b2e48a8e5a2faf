package main

import (
	"flag"
	"io"

	"github.com/runstream/runstream/internal/bench/archivebench"
	"github.com/runstream/runstream/internal/bench/harness"
)

var benchArchive = benchTarget[archivebench.Config, *archivebench.Report]{
	name:    "archive",
	summary: "retention's speed: archiving vs a plain COPY of the same rows; detach and drop under appends",
	about: "Loads --events events of ended runs across --tenants tenants into a partition of run_events\n" +
		"that began before the current one (a fresh schema), and, while --appenders goroutines append\n" +
		"through the store all along: retires and detaches it (DETACH PARTITION CONCURRENTLY), then per\n" +
		"round archives each tenant's events as a retention pass does (Parquet to a local file, uploaded\n" +
		"to a local archive directory, read back and verified) against a plain COPY (SELECT the same\n" +
		"columns ... ORDER BY the archive's order) TO STDOUT of the same rows, alternating tenant by\n" +
		"tenant which goes first (target: at least 50% of COPY's events/s, median of --rounds); then\n" +
		"lets the pass finish and drops it. Reports how long the detach and the drop took (target for\n" +
		"the drop: under 1 s) and the appends' p99 and slowest latency before and during each (target:\n" +
		"not blocked). See bench/README.md.",
	flags: func(fs *flag.FlagSet, cfg *archivebench.Config) {
		fs.StringVar(&cfg.PostgresURL, "postgres-url", defaultPostgresURL, "Postgres to load and read (a fresh schema, dropped after)")
		fs.IntVar(&cfg.Events, "events", 500000, "events loaded into the partition that leaves")
		fs.IntVar(&cfg.Tenants, "tenants", 3, "tenants the events are spread over: one archive file each")
		fs.IntVar(&cfg.Rounds, "rounds", 3, "rounds (the median round is the figure)")
		fs.IntVar(&cfg.Appenders, "appenders", 4, "goroutines appending through the store all along")
		fs.BoolVar(&cfg.KeepSchema, "keep-schema", false, "leave the bench schema for inspection")
	},
	check: func(cfg *archivebench.Config) error {
		errs := benchPositive(harness.Flag("events", cfg.Events), harness.Flag("tenants", cfg.Tenants),
			harness.Flag("rounds", cfg.Rounds), harness.Flag("appenders", cfg.Appenders))
		return benchFlagErrors(errs, cfg.Validate())
	},
	profiles: []benchProfile[archivebench.Config]{
		{flag: "cpuprofile", usage: "write a CPU profile of this process covering the first round to this file (go tool pprof)",
			to: func(cfg *archivebench.Config) *io.Writer { return &cfg.CPUProfile }},
	},
	wire:    func(cfg *archivebench.Config, stderr io.Writer) { cfg.Progress = stderr },
	measure: archivebench.Run,
}
