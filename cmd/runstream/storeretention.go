package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/runstream/runstream/internal/archive"
	"github.com/runstream/runstream/internal/retention"
	"github.com/runstream/runstream/store/postgres"
)

// storeRetentionFlags are the store's retention settings (issue 31).
type storeRetentionFlags struct {
	postgresURL string
	retention   time.Duration
	width       time.Duration
	archiveURL  string
	tempDir     string
	every       time.Duration
	tombstones  time.Duration
}

func (f *storeRetentionFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.postgresURL, "postgres-url", defaultPostgresURL, "PostgreSQL URL of the Append Authority")
	fs.DurationVar(&f.retention, "retention", 0, "a partition of run_events leaves the store once every run in it ended at least this long ago, archived and verified first (0: never)")
	fs.DurationVar(&f.width, "partition-interval", retention.DefaultPartitionWidth, "span of each new run_events partition (at least 1m); runs leave the store a partition at a time")
	fs.StringVar(&f.archiveURL, "archive-url", "", "where removed runs' events are archived as Parquet: file:///dir or s3://bucket/prefix?endpoint=host:port (required with --retention); none: removed runs need no archive, their events are dropped")
	fs.StringVar(&f.tempDir, "temp-dir", "", "local directory each archive file is written in before its upload (default: the system's)")
	fs.DurationVar(&f.every, "every", retention.DefaultEvery, "time between retention passes")
	fs.DurationVar(&f.tombstones, "tombstone-retention", 0, "delete the runs rows a dropped partition leaves (they answer late appends 409 RUN_ARCHIVED and point reads at the archive) this long after the drop; after it, a removed run's id is unknown: a late duplicate would start it anew (0: keep them for ever, about 280 bytes a run)")
}

func runStoreRetention(ctx context.Context, env *environment, args []string) error {
	const usage = "Usage: runstream retention status [flags]\n       runstream retention run [--once] [flags]\n\n" +
		"Keeps the store bounded. run_events is partitioned by the time each run began; a pass makes\n" +
		"partitions ahead of need and, with --retention, takes out of Postgres every partition whose\n" +
		"runs all ended at least that long ago: appends to its runs are refused (409 RUN_ARCHIVED),\n" +
		"it is detached, each tenant's events are written to --archive-url as Parquet, read back and\n" +
		"verified, recorded in the manifest, and only then is the partition dropped. An interrupted\n" +
		"pass resumes where it stopped. status shows the partitions, their sizes, what holds each\n" +
		"back, the archive files and the next removal.\n"
	sub, rest := "", args
	switch {
	case len(args) > 0 && (args[0] == "-h" || args[0] == "--help"):
		// The flags are the subcommands' own: show them.
		sub = "run|status"
	case len(args) == 0 || (args[0] != "status" && args[0] != "run"):
		fmt.Fprint(env.stderr, usage)
		return usageError{errors.New("retention needs a subcommand: status or run")}
	default:
		sub, rest = args[0], args[1:]
	}
	fs := flag.NewFlagSet("retention "+sub, flag.ContinueOnError)
	var rf storeRetentionFlags
	rf.register(fs)
	asJSON := fs.Bool("json", false, "status: print JSON")
	once := fs.Bool("once", false, "run: one pass, then exit (for a scheduled job)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	logFormat := fs.String("log-format", "json", "json or text")
	if err := parseFlags(fs, env, rest, "runstream retention "+sub+" [flags]", usage); err != nil {
		return err
	}
	log, err := newLogger(env.stderr, *logLevel, *logFormat)
	if err != nil {
		return err
	}
	cfg := retention.Config{Retention: rf.retention, PartitionWidth: rf.width, Every: rf.every, TempDir: rf.tempDir, Log: log,
		TombstoneRetention: rf.tombstones,
		OnStep:             retentionStepper(log, env.getenv(killAfterStepEnv))}
	switch rf.archiveURL {
	case "":
	case postgres.NoArchive:
		cfg.NoArchive = true
	default:
		if cfg.Archive, err = archive.OpenStorage(rf.archiveURL, env.getenv); err != nil {
			return usageError{err}
		}
	}
	if sub == "run" {
		if err := cfg.Validate(); err != nil {
			return usageError{err}
		}
		if cfg.Archive != nil {
			// Refuse to start rather than retire partitions it cannot archive.
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			err := cfg.Archive.Check(cctx)
			cancel()
			if err != nil {
				return err
			}
		}
	}
	pool, err := postgres.Connect(ctx, rf.postgresURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	st, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		return err
	}
	if sub == "status" {
		return retentionStatus(ctx, env, st, rf.retention, *asJSON)
	}
	k, err := retention.New(st, cfg)
	if err != nil {
		return usageError{err}
	}
	if !*once {
		log.Info("retention running", "retention", rf.retention, "partitionInterval", rf.width, "archive", rf.archiveURL, "every", rf.every)
		if err := k.Run(ctx); err != nil && ctx.Err() == nil {
			return err
		}
		return nil
	}
	rep, err := k.Pass(ctx)
	if err != nil {
		return err
	}
	if rep.Skipped {
		fmt.Fprintln(env.stdout, "another retention pass holds the lock; nothing done")
		return nil
	}
	fmt.Fprintf(env.stdout, "partitions made ahead: %d; dropped: %d %v; archived %d files, %d events, %d bytes\n",
		rep.PartitionsMade, len(rep.Dropped), rep.Dropped, rep.Files, rep.Events, rep.Bytes)
	for _, h := range rep.Held {
		fmt.Fprintf(env.stdout, "  %s stays: %s\n", h.Partition, h.Hold)
	}
	return nil
}

func retentionStatus(ctx context.Context, env *environment, st *postgres.Store, keep time.Duration, asJSON bool) error {
	status, err := retention.StatusOf(ctx, st, keep)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(status)
	}
	switch lp := status.LastPass; {
	case lp == nil:
		fmt.Fprintln(env.stdout, "no retention process ever ran on this store: nothing keeps partitions ahead (run `runstream retention run`)")
	case lp.Error != "":
		fmt.Fprintf(env.stdout, "last retention pass %s: FAILED: %s\n", lp.At.UTC().Format(time.RFC3339), lp.Error)
	default:
		fmt.Fprintf(env.stdout, "last retention pass %s (retention %v, partitions of %v, archive %s): dropped %v\n", lp.At.UTC().Format(time.RFC3339),
			time.Duration(lp.RetentionSeconds)*time.Second, time.Duration(lp.PartitionIntervalSeconds)*time.Second, orNone(lp.ArchiveURL), lp.Dropped)
	}
	tw := tabwriter.NewWriter(env.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tFROM\tUNTIL\tSTATE\tSIZE\tRUNS\tOPEN\tARCHIVE\tHELD BY")
	for _, ps := range status.Partitions {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d files, %s\t%s\n", ps.Name, ps.From, ps.Until, ps.State,
			humanBytes(ps.Bytes), ps.Runs, ps.OpenRuns, ps.ArchiveFiles, humanBytes(ps.ArchiveBytes), ps.Hold)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	switch next := status.Next; {
	case status.RetentionSeconds == 0:
		fmt.Fprintln(env.stdout, "retention is off: no partition leaves the store; give --retention to see what holds each back")
	case next == nil:
		fmt.Fprintln(env.stdout, "next removal: none yet (every older partition has open runs or still takes new runs)")
	case next.At == nil:
		fmt.Fprintf(env.stdout, "next removal: %s, at the next pass\n", next.Partition)
	default:
		fmt.Fprintf(env.stdout, "next removal: %s, from %s\n", next.Partition, next.At.UTC().Format(time.RFC3339))
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// humanBytes is n in B, KB, MB or GB (powers of 1024).
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 2; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "KMG"[exp])
}

// killAfterStepEnv names a step of retention (retention.Steps) after
// which the process kills itself with SIGKILL: the fault suite's way to
// stop a pass exactly there (internal/chaos TestChaos_RetentionKill).
// Unset in production.
const killAfterStepEnv = "RUNSTREAM_KILL_AFTER_RETENTION_STEP"

// retentionStepper logs each step of a partition's removal at debug
// level and, when killAfter names it, kills the process right after it.
func retentionStepper(log *slog.Logger, killAfter string) func(step, partition string) error {
	return func(step, partition string) error {
		log.Debug("retention step done", "step", step, "partition", partition)
		if step == killAfter {
			log.Warn("retention: killing this process after the step, as "+killAfterStepEnv+" asks", "step", step, "partition", partition)
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // SIGKILL is not handled: this never returns
		}
		return nil
	}
}
