package etl

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/store"
)

// TestCopyRows_SameRowsAsInsert writes seeded random rows, with the values
// that are easy to get wrong in a binary format (NUL characters, non-ASCII
// text, empty and NULL strings, times with nanoseconds, offsets, before
// 2000 and far ahead, NULL and negative durations, large integers, months
// on both sides of 2000-01-01 for run_month), once
// through the binary COPY and once through the INSERT of column arrays,
// and checks that Postgres holds the same rows both times.
func TestCopyRows_SameRowsAsInsert(t *testing.T) {
	t.Parallel()
	s := uint64(time.Now().UnixNano())
	if v := os.Getenv("ETL_SEED"); v != "" {
		s, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (rerun with ETL_SEED=%d)", s, s)
	rng := rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15))

	// Months on both sides of 2000-01-01, where the binary date counts
	// its days from.
	months := []time.Time{
		time.Date(1999, 12, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2031, 7, 1, 0, 0, 0, 0, time.UTC),
	}
	var ins newRows
	for i := range 300 {
		sn := randomSnapshot(rng, i)
		m := months[rng.IntN(len(months))]
		ins.runs = append(ins.runs, newRun{sn, m})
		for j := range sn.Steps {
			st := &sn.Steps[j]
			ins.attempts = append(ins.attempts, newAttempt{sn.RunID, st.StepID, &st.StepAttempt, m})
			for k := range st.Attempts {
				ins.attempts = append(ins.attempts, newAttempt{sn.RunID, st.StepID, &st.Attempts[k], m})
			}
		}
	}

	ctx := context.Background()
	url := testenv.PostgresURL(t)
	schema := "etl_copy_" + testenv.RandomID(5)
	pool, err := Connect(ctx, url, schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = pool.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		pool.Close()
	})
	if _, err := Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	for _, m := range months {
		if _, err := pool.Exec(ctx, `SELECT etl_add_month($1::date)`, m); err != nil {
			t.Fatal(err)
		}
	}

	write := func(copied bool) []string {
		t.Helper()
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "TRUNCATE runs, step_attempts"); err != nil {
				return err
			}
			if copied {
				if err := copyRuns(ctx, tx, ins.runs); err != nil {
					return err
				}
				return copyAttempts(ctx, tx, ins.attempts)
			}
			b := &pgx.Batch{}
			cols := ins.columns()
			cols.queueRuns(b, insertRuns)
			cols.queueAttempts(b, insertAttempts)
			return tx.SendBatch(ctx, b).Close()
		})
		if err != nil {
			t.Fatalf("writing (copy %v): %v", copied, err)
		}
		var out []string
		for _, q := range []string{
			`SELECT r::text FROM runs r ORDER BY run_id`,
			`SELECT a::text FROM step_attempts a ORDER BY run_id, step_id, logical_attempt_id`,
		} {
			rs, err := pool.Query(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := pgx.CollectRows(rs, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, rows...)
		}
		return out
	}
	inserted, copied := write(false), write(true)
	if len(inserted) != len(ins.runs)+len(ins.attempts) {
		t.Fatalf("INSERT wrote %d rows, want %d", len(inserted), len(ins.runs)+len(ins.attempts))
	}
	if len(copied) != len(inserted) {
		t.Fatalf("COPY wrote %d rows, INSERT %d", len(copied), len(inserted))
	}
	for i := range inserted {
		if copied[i] != inserted[i] {
			t.Fatalf("row %d differs:\n  COPY   %s\n  INSERT %s", i, copied[i], inserted[i])
		}
	}
}

// randomSnapshot is a run with random values in every column the tables
// keep; run i's ID is unique.
func randomSnapshot(rng *rand.Rand, i int) *store.RunSnapshot {
	text := func() string {
		parts := []string{"", "a", "plan-7", "é", "日本", "🙂", "x\x00y", "\x00", "'\"\\", "tab\there", strings.Repeat("z", 300)}
		var b strings.Builder
		for range rng.IntN(3) {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		return b.String()
	}
	when := func() string {
		forms := []string{
			"",
			"not a time",
			"2026-11-22T19:01:31Z",
			"2026-11-22T19:01:31.123456789Z",
			"2026-11-22T19:01:31.1234567+02:00",
			"1999-12-31T23:59:59.999999Z",
			"1969-07-20T20:17:40.5-05:30",
			"9999-12-31T23:59:59.999999999Z",
			"0001-01-01T00:00:00Z",
		}
		if rng.IntN(3) == 0 {
			return time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)).UTC().Format(time.RFC3339Nano)
		}
		return forms[rng.IntN(len(forms))]
	}
	ms := func() *int64 {
		switch rng.IntN(4) {
		case 0:
			return nil
		case 1:
			v := -rng.Int64N(1e6)
			return &v
		default:
			v := rng.Int64()
			return &v
		}
	}
	attempt := func(logical int64) store.StepAttempt {
		a := store.StepAttempt{
			LogicalAttemptID: logical, EngineAttemptID: rng.Int64() - rng.Int64(), Status: text(),
			StartedAt: when(), CompletedAt: when(), DurationMs: ms(),
			Artifacts: make([]store.ArtifactRef, rng.IntN(4)),
		}
		if rng.IntN(2) == 0 {
			a.Error = &store.ErrorInfo{Code: text(), Message: text(), Category: text()}
		}
		return a
	}
	s := &store.RunSnapshot{
		RunID: fmt.Sprintf("run-%d-%s", i, text()), TenantID: text(), ProjectID: text(), EnvironmentID: text(),
		PlanID: text(), PlanVersion: text(), Status: text(),
		StartedAt: when(), CompletedAt: when(), TotalDurationMs: ms(), UpdatedAt: when(),
		FailedSteps: rng.IntN(5), LastEventSeq: rng.Int64(),
	}
	for j := range rng.IntN(4) {
		st := store.StepSnapshot{StepID: fmt.Sprintf("step-%d-%s", j, text())}
		n := int64(rng.IntN(3))
		for k := range n {
			st.Attempts = append(st.Attempts, attempt(k+1))
		}
		st.StepAttempt = attempt(n + 1)
		s.Steps = append(s.Steps, st)
	}
	return s
}

// TestCopyReader_ChunksAnySize reads the same rows through reads of
// different sizes: the bytes are the same, and end with the trailer.
func TestCopyReader_ChunksAnySize(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var runs []*store.RunSnapshot
	for i := range 50 {
		runs = append(runs, randomSnapshot(rng, i))
	}
	read := func(size int) []byte {
		r := newCopyReader(len(runs), func(e *copyEncoder, i int) { e.run(runs[i], time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)) })
		var out []byte
		buf := make([]byte, size)
		for {
			n, err := r.Read(buf)
			out = append(out, buf[:n]...)
			if err == io.EOF {
				return out
			}
			if err != nil || n == 0 {
				t.Fatalf("read %d: %d, %v", size, n, err)
			}
		}
	}
	want := read(1 << 20)
	if !strings.HasPrefix(string(want), copySignature) || !strings.HasSuffix(string(want), "\xff\xff") {
		t.Fatalf("no header or trailer: %q...%q", want[:20], want[len(want)-4:])
	}
	for _, size := range []int{1, 7, 100, 4096} {
		if got := read(size); string(got) != string(want) {
			t.Fatalf("reads of %d bytes gave %d bytes, reads of 1 MiB %d", size, len(got), len(want))
		}
	}
}
