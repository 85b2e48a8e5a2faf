package harness

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
	"strconv"
	"strings"
	"time"
)

// ErrNoPgbench is returned when a pgbench baseline is asked for and no
// pgbench executable is found.
var ErrNoPgbench = errors.New("pgbench not found (looked for /usr/bin/pgbench, pgbench on PATH and /usr/lib/postgresql/*/bin/pgbench): " +
	"install the Debian package postgresql-contrib (apt-get install postgresql-contrib), or pass its path with --pgbench")

// FindPgbench returns the pgbench to run: explicit, /usr/bin/pgbench,
// pgbench on PATH, or the newest /usr/lib/postgresql/*/bin/pgbench.
func FindPgbench(explicit string) (string, error) {
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

// Pgbench is one pgbench invocation.
type Pgbench struct {
	Exe      string
	Script   string // path of the script file
	Conninfo string
	Env      []string // PGOPTIONS, PGPASSWORD, ...
	Clients  int
	Threads  int
	Duration time.Duration
}

// PgbenchSeconds is pgbench's -T for d: whole seconds, at least 1.
func PgbenchSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// Run executes pgbench and parses its summary. The CPU is pgbench's own
// (from its rusage) and the machine's.
func (p Pgbench) Run(ctx context.Context) (tps float64, failed int64, cpu CPU, err error) {
	args := []string{"-n", "-M", "prepared",
		"-c", strconv.Itoa(p.Clients), "-j", strconv.Itoa(p.Threads),
		"-T", strconv.Itoa(PgbenchSeconds(p.Duration)),
		"-f", p.Script, p.Conninfo}
	cmd := exec.CommandContext(ctx, p.Exe, args...)
	cmd.Env = append(os.Environ(), p.Env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	before := sampleCPU()
	runErr := cmd.Run()
	after := sampleCPU()
	if runErr != nil {
		return 0, 0, CPU{}, fmt.Errorf("running %s %s: %w\n%s", p.Exe, strings.Join(args[:len(args)-1], " "), runErr, tail(stderr.String(), 20))
	}
	tps, failed, err = ParsePgbench(stdout.String())
	if err != nil {
		return 0, 0, CPU{}, fmt.Errorf("%w\n%s", err, tail(stderr.String(), 20))
	}
	cpu = cpuSince(before, after)
	if st := cmd.ProcessState; st != nil && cpu.Machine > 0 {
		wall := after.at.Sub(before.at).Seconds()
		cpu.Process = Round((st.UserTime()+st.SystemTime()).Seconds()/wall, 2)
	}
	return tps, failed, cpu, nil
}

var (
	tpsLine    = regexp.MustCompile(`(?m)^tps = ([0-9.]+)`)
	failedLine = regexp.MustCompile(`(?m)^number of failed transactions: ([0-9]+)`)
)

// ParsePgbench reads "tps = N" and (pgbench 15+) "number of failed
// transactions: N" from pgbench's output.
func ParsePgbench(out string) (tps float64, failed int64, err error) {
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

// LibpqTarget turns a pgx connection string into what libpq (pgbench)
// accepts: pgx-only URL parameters (pool_*) and search_path (set through
// PGOPTIONS instead) are removed, and a password moves to PGPASSWORD so it
// does not show in the process list. A keyword/value string is passed as is.
func LibpqTarget(pgURL, schema string) (conninfo string, env []string, err error) {
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

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
