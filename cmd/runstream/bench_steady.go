package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/runstream/runstream/internal/bench/harness"
	"github.com/runstream/runstream/internal/bench/steadybench"
)

// steadyCLI is bench steady's flags.
type steadyCLI struct {
	steadybench.Config
	partitions int
}

var benchSteady = benchTarget[steadyCLI, *steadybench.Report]{
	name:    "steady",
	summary: "steady state: Redis used_memory (--snapshot-ttl) and the store's size (--retention) over time",
	about: "Runs the write path in this process as runstream dev wires it (a fresh store schema, an\n" +
		"in-process kfake broker with a fresh topic, the relay, one projector with --snapshot-ttl) and\n" +
		"appends realistic runs through the store at --rate events/s for --duration, open loop,\n" +
		"interleaved so that --concurrent-runs runs are open at any time (each run's events in order).\n" +
		"Every --sample it records Redis's used_memory and used_memory_rss, DBSIZE, the runs catalogued\n" +
		"(the tenant's run index), open runs, events appended and the projector's lag to a CSV, with a\n" +
		"line on stderr. The verdict: used_memory over the last 10 minutes (the last third of a shorter\n" +
		"run), after the first TTL and a warm-up, is flat when within +-10% of its mean. Also reported:\n" +
		"bytes per retained run at the end, and whether every run that ended more than the TTL ago left\n" +
		"Redis. A PNG plots used_memory and the runs catalogued over time. Redis is a private\n" +
		"redis-server started for the bench (no persistence, stopped at the end) unless --redis-url is\n" +
		"given; RUNSTREAM_REDIS_URL in the environment counts as --redis-url.\n" +
		"Every sample also reads the store's size (every table of the bench's schema with its indexes,\n" +
		"and run_events' partitions alone). With --retention the store's retention runs in the process\n" +
		"too, as runstream retention run would: partitions of --partition-interval, a pass every\n" +
		"--retention-every, removed runs archived to --archive-url. Then the store's size is judged like\n" +
		"used_memory (from the first partition's removal on), and at the end every dropped partition's\n" +
		"archive files are read back against the manifest and the runs table, and an export of the\n" +
		"tenant's whole window (store and archive) is compared with every event the store acknowledged.\n" +
		"Each sample also times the projector's convergence window statements (the BRIN summary and the\n" +
		"changed-runs query); --store-schema appends into a schema loaded with millions of events to\n" +
		"see them at size.\n" +
		"See bench/README.md.",
	flags: func(fs *flag.FlagSet, cli *steadyCLI) {
		fs.StringVar(&cli.PostgresURL, "postgres-url", defaultPostgresURL, "PostgreSQL URL; the bench works in a fresh schema bench_<random> (dropped at the end)")
		fs.StringVar(&cli.RedisURL, "redis-url", "", "Redis to measure; empty: a private redis-server on a free loopback port, so used_memory is the bench's keys only (with a given one it is the whole server's; the bench deletes its keys at the end)")
		fs.IntVar(&cli.Rate, "rate", steadybench.DefaultRate, "events appended per second (open loop)")
		fs.DurationVar(&cli.Duration, "duration", steadybench.DefaultDuration, "how long the appends run")
		fs.DurationVar(&cli.SnapshotTTL, "snapshot-ttl", steadybench.DefaultSnapshotTTL, "the projector's --snapshot-ttl: how long a terminal run stays in Redis after its terminal event; at least 1m")
		fs.DurationVar(&cli.Sample, "sample", steadybench.DefaultSample, "time between two samples")
		fs.StringVar(&cli.Out, "out", "", "directory of steady.csv and steady.png; empty: bench/results/steady-<timestamp>")
		fs.IntVar(&cli.partitions, "partitions", steadybench.DefaultPartitions, "partitions of the fresh topic")
		fs.IntVar(&cli.ConcurrentRuns, "concurrent-runs", 0, "runs open at once; 0: --rate x 2 (a run's events 2 s apart, so a run of the workload, about 16 events, lasts about 30 s)")
		fs.IntVar(&cli.Appenders, "appenders", steadybench.DefaultAppenders, "goroutines appending through the store")
		fs.StringVar(&cli.RedisServer, "redis-server", "redis-server", "redis-server executable of the private Redis")
		fs.DurationVar(&cli.Retention, "retention", 0, "the store's retention (as runstream retention run's): a run_events partition leaves the store once every run in it ended this long ago, archived and verified first; 0: off (the store grows); at least 1m")
		fs.DurationVar(&cli.PartitionInterval, "partition-interval", 0, "span of each run_events partition with --retention (at least 1m); 0: "+steadybench.DefaultPartitionInterval.String())
		fs.StringVar(&cli.ArchiveURL, "archive-url", "", "archive of the removed runs with --retention (an absolute directory, file:///dir or s3://bucket/prefix?endpoint=host:port); empty: the directory archive under --out")
		fs.DurationVar(&cli.RetentionEvery, "retention-every", 0, "time between two retention passes with --retention; 0: "+steadybench.DefaultRetentionEvery.String())
		fs.StringVar(&cli.StoreSchema, "store-schema", "", "append into this existing schema (one bench read --source store --keep-schema loaded) instead of a fresh one, and keep it: the convergence window's statements at size; not with --retention")
		fs.DurationVar(&cli.TombstoneRetention, "tombstone-retention", 0, "with --retention: delete the runs rows a dropped partition leaves this long after the drop (as runstream retention's); 0 keeps them, and the store grows by a row per run ended")
	},
	check: func(cli *steadyCLI) error {
		errs := benchPositive(harness.Flag("rate", cli.Rate), harness.Flag("duration", cli.Duration),
			harness.Flag("sample", cli.Sample), harness.Flag("appenders", cli.Appenders))
		if cli.SnapshotTTL < time.Minute {
			errs = append(errs, fmt.Errorf("--snapshot-ttl must be at least 1m (as runstream projector's), got %v", cli.SnapshotTTL))
		}
		if cli.ConcurrentRuns < 0 {
			errs = append(errs, fmt.Errorf("--concurrent-runs must be >= 0 (0: --rate x 2), got %d", cli.ConcurrentRuns))
		}
		cli.Partitions = benchPartitions(cli.partitions, &errs)
		return benchFlagErrors(errs, cli.Validate())
	},
	wire: func(cli *steadyCLI, stderr io.Writer) {
		cli.Logger = benchLogger(stderr)
		cli.Progress = stderr
	},
	measure: func(ctx context.Context, cli steadyCLI) (*steadybench.Report, error) {
		return steadybench.Run(ctx, cli.Config)
	},
}
