// Package archivebench is `runstream bench archive`: the speed of the
// store's retention (issue 31). It loads --events events of ended runs
// into a partition that began before the current one, and while appends
// run through the store all along it measures:
//
//   - archiving: a tenant's events written to a Parquet file, uploaded to
//     a local archive directory and read back and verified, as a
//     retention pass does, against a plain `COPY (SELECT <the same
//     columns> ... ORDER BY <the archive's order>) TO STDOUT` of the same
//     rows, alternating tenant by tenant which goes first; the figure is
//     the median round's ratio (target: at least 50% of COPY's rate);
//   - the detach (DETACH PARTITION CONCURRENTLY) and the drop of the
//     partition: how long each takes (target for the drop: under a
//     second) and the appends' p99 and slowest latency while each runs,
//     next to their p99 before (target: they are not blocked).
package archivebench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runstream/runstream/internal/archive"
	"github.com/runstream/runstream/internal/bench/harness"
	"github.com/runstream/runstream/internal/retention"
	"github.com/runstream/runstream/internal/retry"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// Targets.
const (
	TargetRatio = 0.50
	TargetDrop  = time.Second
)

// partitionName is the loaded partition.
const partitionName = "run_events_bench_archive"

// Config configures [Run]. Zero values take the defaults noted.
type Config struct {
	// PostgresURL is the server; the bench works in a fresh schema.
	PostgresURL string
	// Events are loaded across Tenants; 0 means 500,000 and 3.
	Events, Tenants int
	// Rounds; 0 means 3.
	Rounds int
	// Appenders append through the store all along; 0 means 4.
	Appenders int
	// KeepSchema leaves the schema for inspection.
	KeepSchema bool
	// CPUProfile, when set, receives a CPU profile of the first round.
	CPUProfile io.Writer
	// Progress, when set, receives a line per phase.
	Progress io.Writer
}

// Validate reports a mistake in the configuration.
func (c Config) Validate() error {
	return errors.Join(harness.Negative(harness.Flag("--events", c.Events), harness.Flag("--tenants", c.Tenants),
		harness.Flag("--rounds", c.Rounds), harness.Flag("--appenders", c.Appenders))...)
}

func (c *Config) setDefaults() {
	harness.Default(&c.Events, 500000)
	harness.Default(&c.Tenants, 3)
	harness.Default(&c.Rounds, 3)
	harness.Default(&c.Appenders, 4)
}

// Round is one round: every tenant's events archived and copied.
type Round struct {
	Events              int64       `json:"events"`
	ArchiveEventsPerSec float64     `json:"archiveEventsPerSec"`
	ArchiveBytes        int64       `json:"archiveBytes"`
	CopyEventsPerSec    float64     `json:"copyEventsPerSec"`
	CopyBytes           int64       `json:"copyBytes"`
	CPU                 harness.CPU `json:"cpu"`
	Ratio               float64     `json:"ratio"`
}

// Appends are the appends' latencies over a span of time.
type Appends struct {
	Count  int     `json:"count"`
	P99Ms  float64 `json:"p99Ms"`
	MaxMs  float64 `json:"maxMs"`
	Errors int     `json:"errors"`
}

// Step is one removal step: how long it took, and the appends meanwhile.
type Step struct {
	Seconds float64 `json:"seconds"`
	Appends Appends `json:"appends"`
}

// Report is the bench's outcome.
type Report struct {
	Events      int     `json:"events"`
	Tenants     int     `json:"tenants"`
	Bytes       int64   `json:"partitionBytes"`
	LoadSecs    float64 `json:"loadSeconds"`
	Median      Round   `json:"median"`
	Rounds      []Round `json:"rounds"`
	Target      float64 `json:"target"`
	Before      Appends `json:"appendsBefore"`
	Detach      Step    `json:"detach"`
	Drop        Step    `json:"drop"`
	RatioMet    bool    `json:"ratioMet"`
	DropMet     bool    `json:"dropMet"`
	NotBlocked  bool    `json:"appendsNotBlocked"`
	AppendEvery float64 `json:"appendsPerSecond"`
}

// WriteText writes the report for people.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "archive: %d events of ended runs across %d tenants loaded in %.1fs into %s (%.1f MB on disk); %.0f appends/s through the store all along\n",
		r.Events, r.Tenants, r.LoadSecs, partitionName, float64(r.Bytes)/1e6, r.AppendEvery)
	for i, rd := range r.Rounds {
		fmt.Fprintf(&b, "  round %d (%d events a side; %.2f cores here, %.2f machine): archive %.0f events/s (%.1f MB of Parquet, written, uploaded, read back), COPY %.0f events/s (%.1f MB of text): ratio %.2f\n",
			i+1, rd.Events, rd.CPU.Process, rd.CPU.Machine, rd.ArchiveEventsPerSec, float64(rd.ArchiveBytes)/1e6,
			rd.CopyEventsPerSec, float64(rd.CopyBytes)/1e6, rd.Ratio)
	}
	fmt.Fprintf(&b, "median of %d rounds: archive %.0f events/s vs COPY %.0f events/s: ratio %.2f (target >= %.2f) %s\n",
		len(r.Rounds), r.Median.ArchiveEventsPerSec, r.Median.CopyEventsPerSec, r.Median.Ratio, r.Target, harness.Verdict(r.RatioMet))
	app := func(a Appends) string {
		return fmt.Sprintf("%d appends, p99 %.1f ms, slowest %.1f ms, %d errors", a.Count, a.P99Ms, a.MaxMs, a.Errors)
	}
	fmt.Fprintf(&b, "appends before the removal: %s\n", app(r.Before))
	fmt.Fprintf(&b, "detach (CONCURRENTLY): %.3fs; meanwhile %s\n", r.Detach.Seconds, app(r.Detach.Appends))
	fmt.Fprintf(&b, "drop: %.3fs (target < %v) %s; meanwhile %s\n", r.Drop.Seconds, TargetDrop, harness.Verdict(r.DropMet), app(r.Drop.Appends))
	fmt.Fprintf(&b, "appends not blocked (none failed, none slower than 1 s, during the detach and the drop): %s\n", harness.Verdict(r.NotBlocked))
	_, err := io.WriteString(w, b.String())
	return err
}

// Run loads the partition and measures.
func Run(ctx context.Context, cfg Config) (rep *Report, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	progress := func(format string, args ...any) {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, format+"\n", args...)
		}
	}
	sc, pool, err := harness.MigratedSchema(ctx, cfg.PostgresURL, cfg.KeepSchema)
	if err != nil {
		return nil, err
	}
	defer func() {
		pool.Close()
		err = errors.Join(err, sc.Drop(context.WithoutCancel(ctx)))
	}()
	progress("loading %d events across %d tenants into %s.%s", cfg.Events, cfg.Tenants, sc.Name, partitionName)
	start := time.Now()
	if err := load(ctx, pool, cfg.Events, cfg.Tenants); err != nil {
		return nil, err
	}
	rep = &Report{Events: cfg.Events, Tenants: cfg.Tenants, LoadSecs: harness.Round(time.Since(start).Seconds(), 1), Target: TargetRatio}
	st, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "runstream-bench-archive-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	storage, err := archive.NewDir(dir)
	if err != nil {
		return nil, err
	}
	// Each step's time, as the keeper reports it.
	var stepMu sync.Mutex
	stepAt := map[string]time.Time{}
	stop := errors.New("stop here")
	stopAfter := "detached"
	kcfg := retention.Config{Retention: time.Minute, PartitionWidth: time.Hour, RoutingGrace: time.Nanosecond, Archive: storage, TempDir: dir,
		OnStep: func(step, partition string) error {
			if partition != partitionName {
				return nil
			}
			stepMu.Lock()
			defer stepMu.Unlock()
			if _, ok := stepAt[step]; !ok {
				stepAt[step] = time.Now()
			}
			if step == stopAfter {
				return stop
			}
			return nil
		}}
	keeper, err := retention.New(st, kcfg)
	if err != nil {
		return nil, err
	}

	ap := startAppends(ctx, st, cfg.Appenders)
	defer ap.stop()
	if !retry.Sleep(ctx, 5*time.Second) {
		return nil, ctx.Err()
	}
	progress("appends before the removal: %+v", ap.between(time.Time{}, time.Now()))

	// Retire and detach, under the appends.
	detachFrom := time.Now()
	if _, err := keeper.Pass(ctx); !errors.Is(err, stop) {
		return nil, fmt.Errorf("the pass that retires and detaches %s: %v", partitionName, err)
	}
	rep.Before = ap.between(time.Time{}, detachFrom)
	detached := stepAt["detached"]
	rep.Detach = Step{Seconds: harness.Round(detached.Sub(stepAt["retired"]).Seconds(), 3), Appends: ap.between(stepAt["retired"], detached)}
	progress("retired and detached in %.3fs", rep.Detach.Seconds)
	if err := pool.QueryRow(ctx, `SELECT pg_total_relation_size($1::regclass)`, partitionName).Scan(&rep.Bytes); err != nil {
		return nil, err
	}

	tenants := make([]string, cfg.Tenants)
	for t := range tenants {
		tenants[t] = tenantName(t)
	}
	median, all, err := harness.Median(cfg.Rounds, func(i int) (Round, error) {
		var rd Round
		var arcD, copyD time.Duration
		var arcRows, copyRows int64
		arc := func(tenant string) error {
			t0 := time.Now()
			f, err := keeper.WriteArchive(ctx, partitionName, tenant)
			arcD += time.Since(t0)
			arcRows, rd.ArchiveBytes = arcRows+f.Events, rd.ArchiveBytes+f.Bytes
			return err
		}
		cp := func(tenant string) error {
			t0 := time.Now()
			n, b, err := copyOut(ctx, pool, tenant)
			copyD += time.Since(t0)
			copyRows, rd.CopyBytes = copyRows+n, rd.CopyBytes+b
			return err
		}
		w, err := harness.StartWindow(cfg.CPUProfile)
		if err != nil {
			return rd, err
		}
		cfg.CPUProfile = nil // the first round only
		for t, tenant := range tenants {
			first, second := arc, cp
			if (i+t)%2 == 1 {
				first, second = cp, arc
			}
			if err := errors.Join(first(tenant), second(tenant)); err != nil {
				w.Stop()
				return rd, err
			}
		}
		rd.CPU = w.Stop()
		rd.Events = arcRows
		rd.ArchiveEventsPerSec = harness.Round(harness.PerSec(arcRows, arcD), 1)
		rd.CopyEventsPerSec = harness.Round(harness.PerSec(copyRows, copyD), 1)
		rd.Ratio = harness.Round(harness.Ratio(rd.ArchiveEventsPerSec, rd.CopyEventsPerSec), 3)
		progress("round %d/%d: archive %.0f events/s, COPY %.0f events/s, ratio %.2f", i+1, cfg.Rounds, rd.ArchiveEventsPerSec, rd.CopyEventsPerSec, rd.Ratio)
		return rd, nil
	}, func(r Round) float64 { return r.Ratio })
	if err != nil {
		return nil, err
	}
	rep.Median, rep.Rounds = median, all
	rep.RatioMet = median.Ratio >= TargetRatio

	// The rest of the pass: the manifest's files, then the drop.
	stopAfter = ""
	if _, err := keeper.Pass(ctx); err != nil {
		return nil, fmt.Errorf("the pass that archives and drops %s: %w", partitionName, err)
	}
	end := time.Now()
	retry.Sleep(ctx, time.Second) // appends that began during the drop end
	ap.stop()
	dropped, ok := stepAt["dropped"]
	if !ok {
		return nil, fmt.Errorf("the pass did not drop %s", partitionName)
	}
	rep.Drop = Step{Seconds: harness.Round(dropped.Sub(stepAt["archived"]).Seconds(), 3), Appends: ap.between(stepAt["archived"], dropped)}
	rep.DropMet = rep.Drop.Seconds < TargetDrop.Seconds()
	rep.NotBlocked = rep.Detach.Appends.Errors == 0 && rep.Drop.Appends.Errors == 0 &&
		rep.Detach.Appends.MaxMs < 1000 && rep.Drop.Appends.MaxMs < 1000
	total := ap.between(time.Time{}, end)
	rep.AppendEvery = harness.Round(float64(total.Count)/end.Sub(ap.began).Seconds(), 1)
	return rep, nil
}

func tenantName(i int) string { return fmt.Sprintf("bench_tenant_%d", i) }

// appends appends events through the store from its goroutines and keeps
// each one's start, latency and outcome.
type appends struct {
	began  time.Time
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	done   []appendDone
	once   sync.Once
}

type appendDone struct {
	at      time.Time
	latency time.Duration
	failed  bool
}

func startAppends(ctx context.Context, st *postgres.Store, n int) *appends {
	ctx, cancel := context.WithCancel(ctx)
	a := &appends{began: time.Now(), cancel: cancel}
	for range n {
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			for ctx.Err() == nil {
				id := workload.NewIdentity("bench_live")
				evs := []store.RunEventWrite{workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil)}
				for s := range 6 {
					step := fmt.Sprintf("step-%d", s)
					evs = append(evs, workload.Event(id, store.EventStepStarted, step, 1, 1, time.Now(), nil),
						workload.Event(id, store.EventStepCompleted, step, 1, 1, time.Now(), map[string]any{"rows": s}))
				}
				for _, ev := range evs {
					t0 := time.Now()
					_, err := st.AppendEvent(ctx, ev)
					if ctx.Err() != nil {
						return
					}
					a.mu.Lock()
					a.done = append(a.done, appendDone{at: t0, latency: time.Since(t0), failed: err != nil})
					a.mu.Unlock()
				}
			}
		}()
	}
	return a
}

func (a *appends) stop() {
	a.once.Do(func() {
		a.cancel()
		a.wg.Wait()
	})
}

// between summarises the appends that began in [from, to) or were still
// running at from (zero from: since the start).
func (a *appends) between(from, to time.Time) Appends {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out Appends
	var lat []time.Duration
	for _, d := range a.done {
		end := d.at.Add(d.latency)
		if end.Before(from) || !d.at.Before(to) {
			continue
		}
		out.Count++
		if d.failed {
			out.Errors++
		}
		lat = append(lat, d.latency)
	}
	if len(lat) == 0 {
		return out
	}
	slices.Sort(lat)
	out.P99Ms = harness.Round(float64(lat[(len(lat)*99)/100].Microseconds())/1000, 2)
	out.MaxMs = harness.Round(float64(lat[len(lat)-1].Microseconds())/1000, 2)
	return out
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

// copySQL is the baseline: the columns a retention pass reads
// (postgres.Store.ScanPartition) from the detached partition, in the
// archive's order, as COPY's text.
const copySQL = `COPY (SELECT run_id, run_seq, event_id::text, event_type, idempotency_key, tenant_id,
	project_id, environment_id, plan_id, plan_version, coalesce(step_id, ''),
	engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload::text
FROM ` + partitionName + ` WHERE tenant_id = '%s'
ORDER BY persisted_at, run_id COLLATE "C", run_seq) TO STDOUT`

func copyOut(ctx context.Context, pool *pgxpool.Pool, tenant string) (rows, bytes int64, err error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Release()
	var cw countingWriter
	tag, err := conn.Conn().PgConn().CopyTo(ctx, &cw, fmt.Sprintf(copySQL, tenant))
	if err != nil {
		return 0, 0, fmt.Errorf("COPY of %s's events: %w", tenant, err)
	}
	return tag.RowsAffected(), cw.n, nil
}

// load makes partitionName, begun two hours ago and ended an hour ago,
// fills it with events events of ended runs of 20 events across tenants
// (a payload like a step's), makes today's partitions, and leaves every
// run ended an hour ago with nothing waiting in the outbox: the partition
// is ready to leave.
func load(ctx context.Context, pool *pgxpool.Pool, events, tenants int) error {
	stmts := []string{
		`DO $$
		DECLARE p record;
		BEGIN
			FOR p IN SELECT name FROM run_event_partitions WHERE epoch > '-infinity' LOOP
				EXECUTE format('DROP TABLE %I', p.name);
			END LOOP;
			DELETE FROM run_event_partitions WHERE epoch > '-infinity';
		END $$`,
		`CREATE TABLE ` + partitionName + ` (LIKE run_events INCLUDING DEFAULTS)`,
		`SELECT runstream_index_partition('` + partitionName + `')`,
		`DO $$
		DECLARE v_from timestamptz := date_trunc('hour', clock_timestamp()) - interval '2 hours';
		BEGIN
			EXECUTE format('ALTER TABLE run_events ATTACH PARTITION ` + partitionName + ` FOR VALUES FROM (%L) TO (%L)', v_from, v_from + interval '1 hour');
			INSERT INTO run_event_partitions (epoch, until, name) VALUES (v_from, v_from + interval '1 hour', '` + partitionName + `');
		END $$`,
	}
	for _, s := range stmts {
		if _, err := pool.Exec(ctx, s); err != nil {
			return fmt.Errorf("making the bench partition: %w", err)
		}
	}
	var epoch time.Time
	if err := pool.QueryRow(ctx, `SELECT epoch FROM run_event_partitions WHERE name = $1`, partitionName).Scan(&epoch); err != nil {
		return err
	}
	const chunk = 50000
	for lo := 0; lo < events; lo += chunk {
		hi := min(events, lo+chunk)
		_, err := pool.Exec(ctx, `INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
				tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
				engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload, run_epoch, run_no)
			SELECT 'run-' || md5((i / 20)::text), i % 20 + 1, md5(i::text)::uuid,
				CASE WHEN i % 20 = 0 THEN 'RunStarted' WHEN i % 20 = 19 THEN 'RunCompleted' ELSE 'StepCompleted' END,
				md5(i::text) || md5((i + 1)::text),
				'bench_tenant_' || ((i / 20) % $3), 'proj_analytics', 'prod', 'plan_daily_etl', '3',
				CASE WHEN i % 20 IN (0, 19) THEN NULL ELSE 'model.step_' || (i % 20) END,
				1, 1, to_char($4::timestamptz + (i * 3600000000::bigint / $5) * interval '1 microsecond' - interval '3 ms', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
				$4::timestamptz + (i * 3600000000::bigint / $5) * interval '1 microsecond',
				CASE WHEN i % 20 IN (0, 19) THEN NULL ELSE json_build_object('result', json_build_object('rows', i % 9973,
					'bytes', i * 7 % 1000003, 'note', 'materialized model.step_' || (i % 20) || ' <ok> & done'),
					'artifacts', json_build_array('s3://bucket/runs/' || md5((i / 20)::text) || '/out.parquet')) END,
				$4::timestamptz, i / 20 + 1
			FROM generate_series($1::bigint, $2::bigint - 1) AS i`,
			lo, hi, tenants, epoch, events)
		if err != nil {
			return fmt.Errorf("loading events %d-%d: %w", lo, hi, err)
		}
	}
	for _, s := range []string{
		`INSERT INTO runs (run_id, tenant_id, last_seq, run_epoch, run_no, terminal_at)
			SELECT run_id, min(tenant_id), max(run_seq), min(run_epoch), min(run_no), now() - interval '1 hour'
			FROM ` + partitionName + ` GROUP BY run_id`,
		`SELECT setval('runs_run_no', (SELECT max(run_no) FROM runs))`,
		`SELECT runstream_ensure_partitions(interval '1 hour', interval '1 hour')`,
		`VACUUM ANALYZE ` + partitionName,
	} {
		if _, err := pool.Exec(ctx, s); err != nil {
			return fmt.Errorf("preparing the bench partition: %w", err)
		}
	}
	return nil
}
