package etl

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/store"
)

func TestMonths(t *testing.T) {
	t.Parallel()
	tokyo := time.FixedZone("JST", 9*3600)
	for _, c := range []struct {
		at         time.Time
		month, hot string
	}{
		{time.Date(2026, 3, 15, 12, 0, 0, 0, time.UTC), "2026-03", "2026-02"},
		{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), "2026-01", "2025-12"},
		{time.Date(2025, 12, 31, 23, 59, 59, 999999999, time.UTC), "2025-12", "2025-11"},
		// The UTC month, whatever the zone: 2026-04-01 08:00 in Tokyo is
		// still March in UTC.
		{time.Date(2026, 4, 1, 8, 0, 0, 0, tokyo), "2026-03", "2026-02"},
		{time.Date(2026, 3, 31, 8, 0, 0, 0, tokyo), "2026-03", "2026-02"},
	} {
		m := monthOf(c.at)
		if got := m.Format("2006-01"); got != c.month || m.Location() != time.UTC || m.Day() != 1 || m.Hour() != 0 {
			t.Errorf("monthOf(%v) = %v, want the first instant of %s UTC", c.at, m, c.month)
		}
		if got := hotFrom(c.at).Format("2006-01"); got != c.hot {
			t.Errorf("hotFrom(%v) = %s, want %s", c.at, got, c.hot)
		}
		for _, table := range []string{"runs", "step_attempts"} {
			name := partitionName(table, m)
			if back, ok := monthOfPartition(table, name); !ok || !back.Equal(m) {
				t.Errorf("monthOfPartition(%q, %q) = %v, %v; want %v", table, name, back, ok, m)
			}
		}
	}
	for _, name := range []string{"runs", "runs_2026", "runs_2026_13", "runs_2026_00", "runs_2026-03", "runs_2026_03_old", "step_attempts_2026_03", "runs_abcd_03"} {
		if m, ok := monthOfPartition("runs", name); ok {
			t.Errorf("monthOfPartition(runs, %q) = %v: not a partition the ETL names", name, m)
		}
	}
}

// TestRecordsOwnCheckpoint: only a run of the current month leaves its
// checkpoint to its row alone; a run of the previous month writes the
// checkpoint table too, so that it has a checkpoint there when the month
// turns and its row leaves the months the checkpoint read looks in.
func TestRecordsOwnCheckpoint(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 20, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		month string
		want  bool
	}{{"2026-06", true}, {"2026-05", true}, {"2026-04", false}, {"2025-05", false}} {
		m, _ := time.Parse("2006-01", c.month)
		if got := recordsOwnCheckpoint(m, now); got != c.want {
			t.Errorf("recordsOwnCheckpoint(%s) = %v, want %v", c.month, got, c.want)
		}
	}
}

// pagedHeads serves heads a page at a time, in runId order.
type pagedHeads struct{ heads []store.RunHead }

func (p *pagedHeads) ConvergenceHorizon(context.Context, time.Duration) (time.Time, error) {
	return time.Now(), nil
}

func (p *pagedHeads) ChangedRuns(context.Context, time.Time, time.Time) ([]store.RunHead, error) {
	return p.heads, nil
}

func (p *pagedHeads) RunsBefore(_ context.Context, after string, _ time.Time, limit int) ([]store.RunHead, error) {
	var out []store.RunHead
	for _, h := range p.heads {
		if h.RunID > after && len(out) < limit {
			out = append(out, h)
		}
	}
	return out, nil
}

// TestConvergeHeads_LeavesOutExpiredAndUpToDateRuns: convergence is not
// given the runs that ended longer than the retention ago, nor those whose
// row holds the head's runSeq already; and a full pass, which ends at the
// first empty page, still sees every other run when whole pages are left
// out.
func TestConvergeHeads_LeavesOutExpiredAndUpToDateRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := "etl_heads_" + testenv.RandomID(5)
	pool, err := Connect(ctx, testenv.PostgresURL(t), schema)
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
	now := time.Now()
	m := monthOf(now)
	if _, err := pool.Exec(ctx, `SELECT etl_add_month($1::date)`, m.AddDate(0, -3, 0)); err != nil {
		t.Fatal(err)
	}
	var heads []store.RunHead
	var want []string
	for i := range 40 {
		h := store.RunHead{RunID: fmt.Sprintf("run-%02d", i), LastSeq: 10, LastPersistedAt: now.Add(-time.Hour)}
		row := int64(-1) // no row
		switch {
		case i < 12: // a page and more: ended long ago
			h.TerminalAt = now.Add(-40 * 24 * time.Hour)
		case i < 24: // up to date, a row in an older month
			row = 10
		case i%2 == 0: // behind
			row = 7
		case i%3 == 0: // ended within the retention, no row
			h.TerminalAt = now.Add(-time.Hour)
		}
		if row >= 0 {
			month := m
			if i < 24 {
				month = m.AddDate(0, -3, 0)
			}
			if _, err := pool.Exec(ctx, `INSERT INTO runs (run_id, tenant_id, project_id, environment_id, plan_id, plan_version,
				status, steps, failed_steps, attempts_total, last_event_seq, run_month) VALUES ($1, 't', 'p', 'e', 'plan', '1', 'RUNNING', 0, 0, 0, $2, $3)`,
				h.RunID, row, month); err != nil {
				t.Fatal(err)
			}
		}
		if i >= 24 {
			want = append(want, h.RunID)
		}
		heads = append(heads, h)
	}
	h := &convergeHeads{inner: &pagedHeads{heads}, pool: pool, keep: MinRetention, now: func() time.Time { return now }}
	var got []string
	after := ""
	for {
		page, err := h.RunsBefore(ctx, after, now, 5)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, p := range page {
			got = append(got, p.RunID)
		}
		after = page[len(page)-1].RunID
	}
	if !slices.Equal(got, want) {
		t.Fatalf("a full pass got %v, want %v", got, want)
	}
	changed, err := h.ChangedRuns(ctx, now.Add(-2*time.Hour), now)
	if err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for _, c := range changed {
		got = append(got, c.RunID)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("a window got %v, want %v", got, want)
	}
	// Without a retention, the runs that ended long ago are checked too.
	h.keep = 0
	changed, err = h.ChangedRuns(ctx, now.Add(-2*time.Hour), now)
	if err != nil {
		t.Fatal(err)
	}
	if len(changed) != len(want)+12 {
		t.Fatalf("without a retention a window got %d runs, want %d", len(changed), len(want)+12)
	}
}
