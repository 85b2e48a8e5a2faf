package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	benchsql "github.com/runstream/runstream/bench"
	"github.com/runstream/runstream/store/postgres"
)

// ErrNoPgbench is returned when --baseline is asked for and no pgbench
// executable is found.
var ErrNoPgbench = errors.New("pgbench not found (looked for /usr/bin/pgbench, pgbench on PATH and /usr/lib/postgresql/*/bin/pgbench): " +
	"install the Debian package postgresql-contrib (apt-get install postgresql-contrib), or pass its path with --pgbench")

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

// findPgbench returns the pgbench to run: explicit, /usr/bin/pgbench,
// pgbench on PATH, or the newest /usr/lib/postgresql/*/bin/pgbench.
func findPgbench(explicit string) (string, error) {
	if explicit != "" {
		p, err := exec.LookPath(explicit)
		if err != nil {
			return "", fmt.Errorf("pgbench %q (--pgbench): %w", explicit, err)
		}
		return p, nil
	}
	if st, err := os.Stat("/usr/bin/pgbench"); err == nil && !st.IsDir() {
		return "/usr/bin/pgbench", nil
	}
	if p, err := exec.LookPath("pgbench"); err == nil {
		return p, nil
	}
	if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pgbench"); len(m) > 0 {
		return m[len(m)-1], nil
	}
	return "", ErrNoPgbench
}

// pgbenchRun is one pgbench invocation.
type pgbenchRun struct {
	exe      string
	script   string // path of the script file
	conninfo string
	env      []string // PGOPTIONS, PGPASSWORD, ...
	clients  int
	threads  int
	duration time.Duration
}

// pgbenchSeconds is pgbench's -T for d: whole seconds, at least 1.
func pgbenchSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// run executes pgbench and parses its summary. The CPU is pgbench's own
// (from its rusage) and the machine's.
func (p pgbenchRun) run(ctx context.Context) (tps float64, failed int64, cpu CPU, err error) {
	args := []string{"-n", "-M", "prepared",
		"-c", strconv.Itoa(p.clients), "-j", strconv.Itoa(p.threads),
		"-T", strconv.Itoa(pgbenchSeconds(p.duration)),
		"-f", p.script, p.conninfo}
	cmd := exec.CommandContext(ctx, p.exe, args...)
	cmd.Env = append(os.Environ(), p.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	before := sampleCPU()
	runErr := cmd.Run()
	after := sampleCPU()
	if runErr != nil {
		return 0, 0, CPU{}, fmt.Errorf("running %s %s: %w\n%s", p.exe, strings.Join(args[:len(args)-1], " "), runErr, tail(stderr.String(), 20))
	}
	tps, failed, err = parsePgbench(stdout.String())
	if err != nil {
		return 0, 0, CPU{}, fmt.Errorf("%w\n%s", err, tail(stderr.String(), 20))
	}
	cpu = cpuSince(before, after)
	if st := cmd.ProcessState; st != nil && cpu.Machine > 0 {
		wall := after.at.Sub(before.at).Seconds()
		cpu.Process = round((st.UserTime()+st.SystemTime()).Seconds()/wall, 2)
	}
	return tps, failed, cpu, nil
}

var (
	tpsLine    = regexp.MustCompile(`(?m)^tps = ([0-9.]+)`)
	failedLine = regexp.MustCompile(`(?m)^number of failed transactions: ([0-9]+)`)
)

// parsePgbench reads "tps = N" and (pgbench 15+) "number of failed
// transactions: N" from pgbench's output.
func parsePgbench(out string) (tps float64, failed int64, err error) {
	m := tpsLine.FindStringSubmatch(out)
	if m == nil {
		return 0, 0, fmt.Errorf("pgbench printed no \"tps = \" line; its output:\n%s", tail(out, 20))
	}
	tps, err = strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, 0, fmt.Errorf("parsing pgbench's tps %q: %w", m[1], err)
	}
	if m := failedLine.FindStringSubmatch(out); m != nil {
		failed, _ = strconv.ParseInt(m[1], 10, 64)
	}
	return tps, failed, nil
}

// libpqTarget turns a pgx connection string into what libpq (pgbench)
// accepts: pgx-only URL parameters (pool_*) and search_path (set through
// PGOPTIONS instead) are removed, and a password moves to PGPASSWORD so it
// does not show in the process list. A keyword/value string is passed as is.
func libpqTarget(pgURL, schema string) (conninfo string, env []string, err error) {
	env = []string{"PGOPTIONS=-c search_path=" + schema}
	if !strings.Contains(pgURL, "://") {
		return pgURL, env, nil
	}
	u, err := url.Parse(pgURL)
	if err != nil {
		return "", nil, fmt.Errorf("parsing the Postgres URL (--postgres-url): %w", err)
	}
	q := u.Query()
	for k := range q {
		if strings.HasPrefix(k, "pool_") || k == "search_path" {
			q.Del(k)
		}
	}
	u.RawQuery = q.Encode()
	if u.User != nil {
		if pw, ok := u.User.Password(); ok {
			env = append(env, "PGPASSWORD="+pw)
			u.User = url.User(u.User.Username())
		}
	}
	return u.String(), env, nil
}

// runBaseline runs pgbench with the script matching cfg.Batch against a
// fresh migrated schema: a warmup of cfg.Warmup (not measured), then
// cfg.Duration measured, with cfg.Clients clients.
func runBaseline(ctx context.Context, cfg Config) (_ *Baseline, err error) {
	name, perTx, err := pgbenchScript(cfg.Batch)
	if err != nil {
		return nil, err
	}
	exe, err := findPgbench(cfg.Pgbench)
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

	sc, err := newSchema(ctx, cfg.PostgresURL, cfg.KeepSchema)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, sc.drop(ctx)) }()
	pool, err := postgres.Connect(ctx, withSearchPath(cfg.PostgresURL, sc.name))
	if err != nil {
		return nil, err
	}
	_, err = postgres.Migrate(ctx, pool)
	pool.Close()
	if err != nil {
		return nil, fmt.Errorf("migrating the pgbench schema %s: %w", sc.name, err)
	}

	conninfo, env, err := libpqTarget(cfg.PostgresURL, sc.name)
	if err != nil {
		return nil, err
	}
	p := pgbenchRun{exe: exe, script: script, conninfo: conninfo, env: env,
		clients: cfg.Clients, threads: min(cfg.Clients, runtime.NumCPU()), duration: cfg.Warmup}
	stop := pgbenchProgress(cfg.Progress, "pgbench warmup", p.duration)
	_, _, _, err = p.run(ctx)
	stop()
	if err != nil {
		return nil, fmt.Errorf("pgbench warmup: %w", err)
	}
	p.duration = cfg.Duration
	stop = pgbenchProgress(cfg.Progress, "pgbench", p.duration)
	tps, failed, cpu, err := p.run(ctx)
	stop()
	if err != nil {
		return nil, err
	}
	return &Baseline{Script: "bench/" + name, Clients: p.clients, Threads: p.threads,
		Duration: time.Duration(pgbenchSeconds(p.duration)) * time.Second,
		TPS:      tps, EventsPerTx: perTx, Failed: failed, CPU: cpu, Target: TargetRatio(cfg.Batch)}, nil
}

// pgbenchProgress reports a pgbench phase's elapsed time every second.
func pgbenchProgress(report func(Progress), phase string, d time.Duration) (stop func()) {
	start := time.Now()
	total := time.Duration(pgbenchSeconds(d)) * time.Second
	return everySecond(report, func() Progress {
		return Progress{Phase: phase, Elapsed: time.Since(start), Total: total}
	})
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
