package appendbench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	benchsql "github.com/runstream/runstream/bench"
	"github.com/runstream/runstream/internal/bench/harness"
)

// pgbenchScript returns the embedded script matching a batch size and the
// events one of its transactions appends.
func pgbenchScript(batch int) (name string, eventsPerTx int, err error) {
	switch batch {
	case 1:
		return benchsql.AppendSingle, 1, nil
	case 100:
		return benchsql.AppendBatch100, 100, nil
	}
	return "", 0, fmt.Errorf("a pgbench baseline exists for batch 1 (%s) and batch 100 (%s), not %d: use --batch 1 or --batch 100, or drop --baseline",
		benchsql.AppendSingle, benchsql.AppendBatch100, batch)
}

// runBaseline runs pgbench with the script matching cfg.Batch against a
// fresh migrated schema: a warmup of cfg.Warmup (not measured), then
// cfg.Duration measured, with cfg.Clients clients.
func runBaseline(ctx context.Context, cfg Config) (_ *Baseline, err error) {
	name, perTx, err := pgbenchScript(cfg.Batch)
	if err != nil {
		return nil, err
	}
	exe, err := harness.FindPgbench(cfg.Pgbench)
	if err != nil {
		return nil, err
	}
	text, err := benchsql.Script(name)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "runstream-pgbench-")
	if err != nil {
		return nil, fmt.Errorf("creating a directory for the pgbench script: %w", err)
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, name)
	if err := os.WriteFile(script, text, 0o600); err != nil {
		return nil, fmt.Errorf("writing the pgbench script: %w", err)
	}

	sc, pool, err := harness.MigratedSchema(ctx, cfg.PostgresURL, cfg.KeepSchema)
	if err != nil {
		return nil, err
	}
	pool.Close()
	defer func() { err = errors.Join(err, sc.Drop(ctx)) }()

	conninfo, env, err := harness.LibpqTarget(cfg.PostgresURL, sc.Name)
	if err != nil {
		return nil, err
	}
	p := harness.Pgbench{Exe: exe, Script: script, Conninfo: conninfo, Env: env,
		Clients: cfg.Clients, Threads: min(cfg.Clients, runtime.NumCPU()), Duration: cfg.Warmup}
	stop := pgbenchProgress(cfg.Progress, "pgbench warmup", p.Duration)
	_, _, _, err = p.Run(ctx)
	stop()
	if err != nil {
		return nil, fmt.Errorf("pgbench warmup: %w", err)
	}
	p.Duration = cfg.Duration
	stop = pgbenchProgress(cfg.Progress, "pgbench", p.Duration)
	tps, failed, cpu, err := p.Run(ctx)
	stop()
	if err != nil {
		return nil, err
	}
	return &Baseline{Script: "bench/" + name, Clients: p.Clients, Threads: p.Threads,
		Duration: time.Duration(harness.PgbenchSeconds(p.Duration)) * time.Second,
		TPS:      tps, EventsPerTx: perTx, Failed: failed, CPU: cpu, Target: TargetRatio(cfg.Batch)}, nil
}

// pgbenchProgress reports a pgbench phase's elapsed time every second.
func pgbenchProgress(report func(Progress), phase string, d time.Duration) (stop func()) {
	start := time.Now()
	total := time.Duration(harness.PgbenchSeconds(d)) * time.Second
	return harness.EverySecond(report, func() Progress {
		return Progress{Phase: phase, Elapsed: time.Since(start), Total: total}
	})
}
