package projectbench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/internal/bench/harness"
	"github.com/runstream/runstream/projector"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store/postgres"
)

// RepairReport is the repair phase's outcome: how long convergence took
// to bring back the snapshots of RepairRuns idle runs that Redis lost
// (as after Redis restarted empty).
type RepairReport struct {
	// Runs in the store, each with EventsPerRun events, none in Redis.
	Runs         int `json:"runs"`
	EventsPerRun int `json:"eventsPerRun"`
	// Window is from the projector's start until every run's snapshot was
	// back (the full pass done); RunsPerSecond follows.
	Window        time.Duration `json:"-"`
	WindowSeconds float64       `json:"windowSeconds"`
	RunsPerSecond float64       `json:"runsPerSecond"`
	// Repaired is what the projector counted (runstream_converge_runs_total).
	Repaired int64 `json:"repaired"`
}

// repairEvents are the events of each of the repair phase's runs, in
// order: a started run with one step done, finished.
var repairEvents = []string{"RunStarted", "StepStarted", "StepCompleted", "RunCompleted"}

// repair fills a fresh schema with cfg.RepairRuns finished runs (written
// by SQL, as if appended long ago and their snapshots then lost), starts a
// projector on an empty topic, and times its first convergence pass: with
// no cursor in Redis it checks every run and rebuilds every snapshot.
func (b *bench) repair(ctx context.Context) (_ *RepairReport, err error) {
	cfg := b.cfg
	rep := &RepairReport{Runs: cfg.RepairRuns, EventsPerRun: len(repairEvents)}
	tenant := b.prefix + "_repair"
	sc, pool, err := harness.MigratedSchema(ctx, cfg.PostgresURL, false)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, sc.Drop(ctx)) }()
	defer pool.Close()
	st, err := postgres.New(pool, postgres.Config{Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	prefix := "repair-" + harness.RandomHex(6) + "-"
	// The runs, as the store would hold them (runSeq 1..n, persisted a
	// minute ago, a valid idempotency key is not needed: nothing appends).
	if _, err := pool.Exec(ctx, `
		INSERT INTO runs (run_id, tenant_id, last_seq)
		SELECT $1 || g, $2, cardinality($4::text[]) FROM generate_series(1, $3) g;
		`, prefix, tenant, cfg.RepairRuns, repairEvents); err != nil {
		return nil, fmt.Errorf("writing the repair phase's runs: %w", err)
	}
	if _, err := pool.Exec(ctx, `
		INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key, tenant_id, project_id,
			environment_id, plan_id, plan_version, step_id, engine_attempt_id, logical_attempt_id, emitted_at, persisted_at)
		SELECT $1 || g, s, gen_random_uuid(), ($4::text[])[s], md5($1 || g || s), $2, 'proj', 'prod', 'plan', '1',
			CASE WHEN ($4::text[])[s] LIKE 'Step%' THEN 'step-1' END, 1, 1,
			to_char((now() - interval '1 minute' + s * interval '1 millisecond') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
			now() - interval '1 minute' + s * interval '1 millisecond'
		FROM generate_series(1, $3) g, generate_series(1, cardinality($4::text[])) s`,
		prefix, tenant, cfg.RepairRuns, repairEvents); err != nil {
		return nil, fmt.Errorf("writing the repair phase's events: %w", err)
	}
	for i := 1; i <= cfg.RepairRuns; i++ {
		b.track("", fmt.Sprintf("%s%d", prefix, i))
	}
	b.track(tenant)
	kafka, err := b.openBroker(ctx)
	if err != nil {
		return nil, err
	}
	defer kafka.Close(ctx)
	group := "bench-repair-" + harness.RandomHex(6)
	b.keys = append(b.keys, snapshots.ConvergeCursorKey(group), snapshots.ConvergeLeaseKey(group))
	reg := prometheus.NewRegistry()
	p, err := projector.New(projector.Config{Brokers: kafka.Addrs, Topic: kafka.Topic, Group: group,
		ConvergeInterval: 100 * time.Millisecond, SnapshotTTL: cfg.SnapshotTTL, Registerer: reg, Logger: cfg.Logger}, b.rdb, st)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- p.Run(rctx) }()
	defer func() { cancel(); <-done }()
	stop := b.progress("repair", int64(cfg.RepairRuns), func() int64 { return int64(gatherSum(reg, "runstream_converge_checked_total")) })
	defer stop()
	for {
		v, err := b.rdb.Get(ctx, snapshots.ConvergeCursorKey(group)).Result()
		if err == nil && len(v) > 0 && v[len(v)-1] != '|' {
			break // a cursor: the full pass is done
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case err := <-done:
			done <- err
			return nil, fmt.Errorf("the projector stopped during the repair phase: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	rep.Window = time.Since(start)
	rep.WindowSeconds = rep.Window.Seconds()
	rep.RunsPerSecond = float64(cfg.RepairRuns) / rep.Window.Seconds()
	rep.Repaired = int64(gatherSum(reg, "runstream_converge_runs_total"))
	if rep.Repaired != int64(cfg.RepairRuns) {
		return rep, fmt.Errorf("the projector repaired %d runs, want %d", rep.Repaired, cfg.RepairRuns)
	}
	// Every snapshot is back, at its last event.
	for lo := 1; lo <= cfg.RepairRuns; lo += 1000 {
		pipe := b.rdb.Pipeline()
		var cmds []*redis.IntCmd
		for i := lo; i < lo+1000 && i <= cfg.RepairRuns; i++ {
			cmds = append(cmds, pipe.Exists(ctx, snapshots.Key(fmt.Sprintf("%s%d", prefix, i))))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return rep, fmt.Errorf("checking the repaired snapshots: %w", err)
		}
		for _, c := range cmds {
			if c.Val() != 1 {
				return rep, fmt.Errorf("a snapshot is still missing after the repair (%v)", c.Args()[1])
			}
		}
	}
	return rep, nil
}

// gatherSum sums every series of a counter or gauge in reg.
func gatherSum(reg *prometheus.Registry, name string) float64 {
	mfs, err := reg.Gather()
	if err != nil {
		return 0
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}
