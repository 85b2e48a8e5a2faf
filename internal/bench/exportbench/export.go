// Package exportbench is `runstream bench export`: how fast `runstream
// export` streams a tenant's window of events as NDJSON, against a plain
// `COPY (SELECT <the same columns> ... ORDER BY ...) TO STDOUT` of the same
// rows in the same run (issue 21: at least half of COPY's rate). The two
// alternate tenant by tenant which goes first; the figure is the median
// round's ratio (bench/README.md, "What each one measures, and its target").
package exportbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runstream/runstream/internal/bench/harness"
	"github.com/runstream/runstream/internal/export"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// TargetRatio is the target: export's events per second over COPY's.
const TargetRatio = 0.50

// Config configures [Run]. Zero values take the defaults noted.
type Config struct {
	// PostgresURL is the server; the bench works in a fresh schema.
	PostgresURL string
	// Events are loaded across Tenants; 0 means 300,000 and 6. Each
	// round exports (and copies) each tenant's window in turn.
	Events, Tenants int
	// Rounds; 0 means 3.
	Rounds int
	// PageSize is the export's events per query; 0 means export's
	// default (10,000).
	PageSize int
	// KeepSchema leaves the schema for inspection.
	KeepSchema bool
	// CPUProfile, when set, receives a CPU profile of the first round's
	// export.
	CPUProfile io.Writer
	// Progress, when set, receives a line per phase.
	Progress io.Writer
}

// Validate reports a mistake in the configuration.
func (c Config) Validate() error {
	return errors.Join(harness.Negative(harness.Flag("--events", c.Events), harness.Flag("--tenants", c.Tenants),
		harness.Flag("--rounds", c.Rounds), harness.Flag("--page-size", c.PageSize))...)
}

func (c *Config) setDefaults() {
	harness.Default(&c.Events, 300000)
	harness.Default(&c.Tenants, 6)
	harness.Default(&c.Rounds, 3)
}

// Round is one round's figures: every tenant's window exported and
// copied, the two alternating which goes first tenant by tenant (and round
// by round).
type Round struct {
	Events             int64   `json:"events"`
	ExportEventsPerSec float64 `json:"exportEventsPerSec"`
	ExportBytes        int64   `json:"exportBytes"`
	CopyEventsPerSec   float64 `json:"copyEventsPerSec"`
	CopyBytes          int64   `json:"copyBytes"`
	// CPU covers the whole round, both sides.
	CPU   harness.CPU `json:"cpu"`
	Ratio float64     `json:"ratio"`
}

// Report is the bench's outcome: the median round and every round.
type Report struct {
	Events   int     `json:"events"`
	Tenants  int     `json:"tenants"`
	PageSize int     `json:"pageSize"`
	LoadSecs float64 `json:"loadSeconds"`
	Median   Round   `json:"median"`
	Rounds   []Round `json:"rounds"`
	Target   float64 `json:"target"`
	Met      bool    `json:"met"`
}

// WriteText writes the report for people.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "export: %d events loaded across %d tenants in %.1fs; each round exports and copies every tenant's window, alternating which goes first (page size %d)\n",
		r.Events, r.Tenants, r.LoadSecs, r.PageSize)
	for i, rd := range r.Rounds {
		fmt.Fprintf(&b, "  round %d (%d events a side; %.2f cores here, %.2f machine): export %.0f events/s (%.1f MB of NDJSON), COPY %.0f events/s (%.1f MB of text): ratio %.2f\n",
			i+1, rd.Events, rd.CPU.Process, rd.CPU.Machine, rd.ExportEventsPerSec, float64(rd.ExportBytes)/1e6,
			rd.CopyEventsPerSec, float64(rd.CopyBytes)/1e6, rd.Ratio)
	}
	fmt.Fprintf(&b, "median of %d rounds: export %.0f events/s vs COPY %.0f events/s: ratio %.2f (target >= %.2f) %s\n",
		len(r.Rounds), r.Median.ExportEventsPerSec, r.Median.CopyEventsPerSec, r.Median.Ratio, r.Target, harness.Verdict(r.Met))
	_, err := io.WriteString(w, b.String())
	return err
}

// window is the persistedAt span the loaded events cover: an hour ending
// an hour ago, so the audit horizon is far past it.
func window() (from, to time.Time) {
	to = time.Now().Add(-time.Hour).Truncate(time.Second).UTC()
	return to.Add(-time.Hour), to
}

// Run loads the events and measures the rounds.
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
	from, to := window()
	progress("loading %d events across %d tenants into %s", cfg.Events, cfg.Tenants, sc.Name)
	start := time.Now()
	if err := load(ctx, pool, cfg.Events, cfg.Tenants, from, to); err != nil {
		return nil, err
	}
	rep = &Report{Events: cfg.Events, Tenants: cfg.Tenants, PageSize: cmpOr(cfg.PageSize, 10000),
		LoadSecs: harness.Round(time.Since(start).Seconds(), 1), Target: TargetRatio}
	st, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		return nil, err
	}
	// Warm the cache: both sides then read from shared buffers or the
	// OS cache alike.
	for t := range cfg.Tenants {
		if _, _, err := copyOut(ctx, pool, tenantName(t), from, to); err != nil {
			return nil, err
		}
	}
	median, all, err := harness.Median(cfg.Rounds, func(i int) (Round, error) {
		var rd Round
		// The two sides alternate tenant by tenant, so what else the
		// machine does weighs on both alike.
		var expD, copyD time.Duration
		var expRows, copyRows int64
		var cw countingWriter
		exp := func(tenant string) error {
			t0 := time.Now()
			res, err := export.Run(ctx, st, export.Config{Window: store.AuditWindow{TenantID: tenant, From: from, To: to},
				PageSize: cfg.PageSize}, &cw)
			expD += time.Since(t0)
			if err != nil {
				return err
			}
			if !res.Finished {
				return fmt.Errorf("the export of %s did not finish", tenant)
			}
			expRows += res.Events
			return nil
		}
		cp := func(tenant string) error {
			t0 := time.Now()
			n, b, err := copyOut(ctx, pool, tenant, from, to)
			copyD += time.Since(t0)
			copyRows, rd.CopyBytes = copyRows+n, rd.CopyBytes+b
			return err
		}
		w, err := harness.StartWindow(cfg.CPUProfile)
		if err != nil {
			return rd, err
		}
		cfg.CPUProfile = nil // the first round only
		for t := range cfg.Tenants {
			first, second := exp, cp
			if (i+t)%2 == 1 {
				first, second = cp, exp
			}
			if err := first(tenantName(t)); err != nil {
				w.Stop()
				return rd, err
			}
			if err := second(tenantName(t)); err != nil {
				w.Stop()
				return rd, err
			}
		}
		rd.CPU = w.Stop()
		rd.Events, rd.ExportBytes = expRows, cw.n
		rd.ExportEventsPerSec = harness.Round(harness.PerSec(expRows, expD), 1)
		rd.CopyEventsPerSec = harness.Round(harness.PerSec(copyRows, copyD), 1)
		rd.Ratio = harness.Round(harness.Ratio(rd.ExportEventsPerSec, rd.CopyEventsPerSec), 3)
		progress("round %d/%d: export %.0f events/s, COPY %.0f events/s, ratio %.2f", i+1, cfg.Rounds, rd.ExportEventsPerSec, rd.CopyEventsPerSec, rd.Ratio)
		return rd, nil
	}, func(r Round) float64 { return r.Ratio })
	if err != nil {
		return nil, err
	}
	rep.Median, rep.Rounds = median, all
	rep.Met = median.Ratio >= TargetRatio
	return rep, nil
}

func cmpOr(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}

func tenantName(i int) string { return fmt.Sprintf("bench_tenant_%d", i) }

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

// copySQL is the baseline: the rows and columns the export reads
// (postgres' auditSQL), in its order and through the same index (the
// tenant's hash leads the audit index of partitions made since migration
// 0024), as COPY's text.
const copySQL = `COPY (SELECT run_id, run_seq, event_id::text, event_type, idempotency_key, tenant_id,
	project_id, environment_id, plan_id, plan_version, coalesce(step_id, ''),
	engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload::text
FROM run_events WHERE tenant_id = '%[1]s' AND hashtextextended(tenant_id, 0) = hashtextextended('%[1]s', 0)
	AND persisted_at >= '%[2]s' AND persisted_at < '%[3]s'
ORDER BY tenant_id, persisted_at, run_id COLLATE "C", run_seq) TO STDOUT`

// copyOut runs the baseline for tenant's window and returns its rows and
// bytes.
func copyOut(ctx context.Context, pool *pgxpool.Pool, tenant string, from, to time.Time) (rows, bytes int64, err error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Release()
	// Left to itself the planner answers this COPY with a parallel
	// sequential scan and an external sort (it knows the window holds a
	// third of the table), twice as slow as the export's ordered range of
	// the 0006 index: a baseline that weak flatters the export, so the
	// COPY reads the same range too.
	if _, err := conn.Exec(ctx, `SET enable_sort = off; SET enable_seqscan = off`); err != nil {
		return 0, 0, err
	}
	defer func() {
		if _, rerr := conn.Exec(context.WithoutCancel(ctx), `RESET enable_sort; RESET enable_seqscan`); rerr != nil {
			conn.Conn().Close(context.WithoutCancel(ctx)) //nolint:errcheck // the pool drops a closed connection
		}
	}()
	var cw countingWriter
	tag, err := conn.Conn().PgConn().CopyTo(ctx, &cw, fmt.Sprintf(copySQL, tenant, from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano)))
	if err != nil {
		return 0, 0, fmt.Errorf("COPY of %s's window: %w", tenant, err)
	}
	return tag.RowsAffected(), cw.n, nil
}

// load inserts events events across tenants, persisted evenly over [from,
// to), in runs of 20 events, with a payload like a step's: server-side,
// in chunks (the append path has its own bench; this one needs the rows).
func load(ctx context.Context, pool *pgxpool.Pool, events, tenants int, from, to time.Time) error {
	const chunk = 50000
	span := to.Sub(from).Microseconds()
	for lo := 0; lo < events; lo += chunk {
		hi := min(events, lo+chunk)
		_, err := pool.Exec(ctx, `INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
				tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
				engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
			SELECT 'run-' || md5((i / 20)::text), i % 20 + 1, md5(i::text)::uuid,
				CASE WHEN i % 20 = 0 THEN 'RunStarted' ELSE 'StepCompleted' END,
				md5(i::text) || md5((i + 1)::text),
				'bench_tenant_' || ((i / 20) % $3), 'proj_analytics', 'prod', 'plan_daily_etl', '3',
				CASE WHEN i % 20 = 0 THEN NULL ELSE 'model.step_' || (i % 20) END,
				1, 1, to_char($4::timestamptz + (i * $5 / $6) * interval '1 microsecond' - interval '3 ms', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
				$4::timestamptz + (i * $5 / $6) * interval '1 microsecond',
				CASE WHEN i % 20 = 0 THEN NULL ELSE json_build_object('result', json_build_object('rows', i % 9973,
					'bytes', i * 7 % 1000003, 'note', 'materialized model.step_' || (i % 20) || ' <ok> & done'),
					'artifacts', json_build_array('s3://bucket/runs/' || md5((i / 20)::text) || '/out.parquet')) END
			FROM generate_series($1::bigint, $2::bigint - 1) AS i`,
			lo, hi, tenants, from, span, events)
		if err != nil {
			return fmt.Errorf("loading events %d-%d: %w", lo, hi, err)
		}
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE run_events`); err != nil {
		return fmt.Errorf("vacuuming the loaded events: %w", err)
	}
	return nil
}
