package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"time"

	"github.com/runstream/runstream/internal/bench/readbench"
)

func runBenchRead(ctx context.Context, env *environment, args []string) error {
	fs := flag.NewFlagSet("bench read", flag.ContinueOnError)
	var cfg readbench.Config
	fs.StringVar(&cfg.RedisURL, "redis-url", defaultRedisURL, "Redis the in-process API reads (bench keys runstream:run:{bench-...} are written and deleted)")
	fs.StringVar(&cfg.PostgresURL, "postgres-url", defaultPostgresURL, "Postgres (readiness only)")
	fs.IntVar(&cfg.Clients, "clients", 64, "concurrent snapshot GET clients (and redis-benchmark clients)")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "GET phase length")
	fs.IntVar(&cfg.Runs, "runs", 1000, "runs with a snapshot, read at random")
	fs.IntVar(&cfg.Watchers, "watchers", 1000, "SSE watchers")
	fs.IntVar(&cfg.WatchedRuns, "watched-runs", 1, "runs the watchers spread over (watcher i watches run i mod N) and the changes take turns on: 1 fans every change out to all watchers, --watchers gives each watcher a run of its own")
	fs.IntVar(&cfg.Changes, "changes", 200, "snapshot changes published to the watchers")
	fs.DurationVar(&cfg.ChangeEvery, "change-every", 100*time.Millisecond, "pause between changes")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	sseProfile := fs.String("sse-cpuprofile", "", "write a CPU profile of this process (API, hub and SSE watchers), covering the SSE changes only, to this file")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of this process (API and GET clients), covering the GET window only, to this file (go tool pprof)")
	if err := parseFlags(fs, env, args, "runstream bench read [flags]",
		"Read side: snapshot GETs per second through the API with N clients, against redis-benchmark's\nGET of the same keys in the same run (target: at least 50%), then the time from a snapshot\nchange in Redis to SSE watchers receiving it (target: p99 under 10 ms with 1,000 watchers)."); err != nil {
		return err
	}
	if cfg.Clients < 1 || cfg.Runs < 1 || cfg.Watchers < 1 || cfg.WatchedRuns < 1 || cfg.Changes < 1 || cfg.Duration <= 0 {
		return usageError{fmt.Errorf("--clients, --runs, --watchers, --watched-runs, --changes and --duration must be positive")}
	}
	if cfg.WatchedRuns > cfg.Runs || cfg.WatchedRuns > cfg.Watchers {
		return usageError{fmt.Errorf("--watched-runs (%d) must be at most --runs (%d) and --watchers (%d)", cfg.WatchedRuns, cfg.Runs, cfg.Watchers)}
	}
	cfg.Progress = env.stderr
	closeProfiles, err := openProfiles(profileFlag{"--cpuprofile", *cpuProfile, &cfg.CPUProfile},
		profileFlag{"--sse-cpuprofile", *sseProfile, &cfg.SSECPUProfile})
	defer closeProfiles()
	if err != nil {
		return err
	}
	rep, err := readbench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return rep.WriteText(env.stdout)
}
