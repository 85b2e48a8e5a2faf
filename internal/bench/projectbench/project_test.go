package projectbench

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/bench/harness"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/reduce"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/validate"
)

func projectRedisURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("RUNSTREAM_TEST_REDIS_URL")
	if u == "" {
		testenv.Missing(t, "RUNSTREAM_TEST_REDIS_URL")
	}
	return u
}

func TestBenchProject_AllPhasesConsistent(t *testing.T) {
	redisURL, pgURL := projectRedisURL(t), testenv.PostgresURL(t)
	bin := testenv.BuildRunstream(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	phases := map[string]bool{}
	rep, err := Run(ctx, Config{RedisURL: redisURL, PostgresURL: pgURL, Batch: 1000,
		Events: 20000, Runs: 400, Rate: 200, Duration: 2 * time.Second, Appenders: 4, LatencyRuns: 40,
		MemoryRuns: 2000, MemoryEvents: 6000, ProjectorCommand: []string{bin, "projector"},
		Progress: func(p harness.PhaseProgress) { phases[p.Phase] = true }})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}

	c := rep.CatchUp
	if c == nil {
		t.Fatal("no catch-up in the report")
	}
	if !c.Consistent() {
		t.Errorf("catch-up not consistent: %+v", c)
	}
	if c.Committed != 20000 || c.Applied != 20000 || c.Verified != 400 {
		t.Errorf("catch-up: %d committed, %d applied, %d runs verified; want 20000, 20000, 400", c.Committed, c.Applied, c.Verified)
	}
	if c.Duplicates != 0 || c.Conflicts != 0 || c.StoreCalls != 0 || c.Regressions != 0 || c.UnnotifiedRuns != 0 {
		t.Errorf("catch-up: %d duplicates, %d conflicts, %d store calls, %d regressions, %d runs unnotified; want none",
			c.Duplicates, c.Conflicts, c.StoreCalls, c.Regressions, c.UnnotifiedRuns)
	}
	// A batch writes each of its runs once: at least one write per run,
	// at most one per event.
	if c.Writes < 400 || c.Writes > 20000 {
		t.Errorf("catch-up: %d writes, want 400..20000", c.Writes)
	}
	if c.Window <= 0 || c.Batches < 1 || c.BatchTime <= 0 || c.BatchTime > c.Window {
		t.Errorf("catch-up: window %v, %d batches taking %v; want consistent", c.Window, c.Batches, c.BatchTime)
	}
	if c.RecordBytes < 400 || c.RecordBytes > 1500 {
		t.Errorf("record value = %v bytes, want a realistic 400..1500", c.RecordBytes)
	}
	bl := c.Baseline
	if bl == nil || bl.Writes != c.Writes || bl.Events != 20000 || bl.Lost != 0 || bl.Window <= 0 ||
		bl.Pipeline != int(math.Round(float64(c.Writes)/float64(c.Batches))) {
		t.Fatalf("baseline = %+v; want the projector's %d writes in pipelines of its %d batches, none lost", bl, c.Writes, c.Batches)
	}
	// 50 events per run: the mean snapshot is a few kilobytes.
	if bl.SnapshotBytes < 1000 {
		t.Errorf("baseline snapshot = %v bytes, want the projector's size (> 1000)", bl.SnapshotBytes)
	}
	if c.Ratio <= 0 || c.Ratio != c.EventsPerSec()/bl.EventsPerSec() {
		t.Errorf("ratio = %v, want the rates' ratio %v", c.Ratio, c.EventsPerSec()/bl.EventsPerSec())
	}

	e := rep.EndToEnd
	if e == nil {
		t.Fatal("no latency in the report")
	}
	if e.Offered != 400 || e.Appended != 400 || e.Errors != 0 {
		t.Errorf("latency: %d offered, %d appended, %d errors; want 400, 400, 0", e.Offered, e.Appended, e.Errors)
	}
	if e.Visible != e.Appended || e.Missing != 0 || e.Wrong != 0 || e.Verified < 1 || e.BadUpdates != 0 {
		t.Errorf("latency: %d visible of %d, %d missing, %d wrong, %d verified, %d bad updates (%s)",
			e.Visible, e.Appended, e.Missing, e.Wrong, e.Verified, e.BadUpdates, e.FirstProblem)
	}
	if l := e.CommitToVisible; !(0 <= l.P50 && l.P50 <= l.P95 && l.P95 <= l.P99 && l.P99 <= l.Max && l.Max > 0) {
		t.Errorf("commit-to-visible = %+v, want ordered percentiles", l)
	}
	// The plain consumer read the records: the relay's part is measured.
	if l := e.CommitToTopic; !(0 <= l.P50 && l.P50 <= l.P99 && l.P99 <= l.Max && l.Max > 0) {
		t.Errorf("commit-to-topic = %+v, want ordered percentiles", l)
	}
	if e.Window < 1900*time.Millisecond {
		t.Errorf("latency window = %v, want about the 2s duration", e.Window)
	}

	m := rep.Memory
	if m == nil {
		t.Fatal("no memory in the report")
	}
	if m.Verified != 2000 || m.Wrong != 0 || m.Missing != 0 || m.StoreCalls != 0 {
		t.Errorf("memory: %d verified, %d wrong, %d missing, %d store calls (%s); want 2000 right", m.Verified, m.Wrong, m.Missing, m.StoreCalls, m.FirstProblem)
	}
	if m.RSSBefore == 0 || m.RSSPeak < m.RSSBefore || m.HeapBefore == 0 || m.HeapLive == 0 {
		t.Errorf("memory readings = %+v, want RSS and heap read (Linux)", m)
	}
	if s := m.Standalone; s == nil || s.Verified != 2000 || s.Wrong != 0 || s.Missing != 0 {
		t.Errorf("standalone projector = %+v; want every snapshot right", s)
	} else if s.RSSPeak < s.RSSAfter || s.RSSAfter == 0 || s.HeapInuse == 0 || m.ProjectorRSS() != s.RSSPeak {
		t.Errorf("standalone projector memory = %+v; want peak >= after > 0, a heap, and its peak as the projector's RSS", s)
	}

	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"catch-up: 20000 events over 400 runs", "target 50%", "target p99 < 50.00ms at 1000 events/s",
		"memory: 2000 active runs", " projector: peak RSS"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		CatchUp struct {
			EventsPerSec float64 `json:"eventsPerSec"`
			Consistent   *bool   `json:"consistent"`
			Baseline     struct {
				WritesPerSec float64 `json:"writesPerSec"`
			} `json:"baseline"`
		} `json:"catchUp"`
		EndToEnd struct {
			P99 struct {
				P99 *float64 `json:"p99"`
			} `json:"commitToVisibleMs"`
			Met *bool `json:"met"`
		} `json:"endToEnd"`
		Memory struct {
			ProjectorRSS *uint64 `json:"projectorRssBytes"`
		} `json:"memory"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("decoding the JSON report: %v\n%s", err, b)
	}
	if got.CatchUp.EventsPerSec <= 0 || got.CatchUp.Baseline.WritesPerSec <= 0 || got.CatchUp.Consistent == nil ||
		!*got.CatchUp.Consistent || got.EndToEnd.P99.P99 == nil || got.EndToEnd.Met == nil || got.Memory.ProjectorRSS == nil {
		t.Errorf("JSON report lacks rates or verdicts: %s", b)
	}
	for p := range phases {
		if !strings.Contains(",memory fill,memory,standalone,fill,catch-up,verify,baseline,warmup,latency,visible,", ","+p+",") {
			t.Errorf("progress reported phase %q", p)
		}
	}
	t.Logf("report:\n%s", text.String())
}

// TestBenchProject_Plans checks the generator against the store's
// validation and the reducer: every write is valid, runSeq is contiguous,
// and a complete run reduces to COMPLETED with no causal violation.
func TestBenchProject_Plans(t *testing.T) {
	plans := newPlans("tenant_bench", 3, 300, true, time.Now())
	for _, p := range plans {
		var cur store.RunSnapshot
		for seq := int64(1); seq <= int64(p.events); seq++ {
			rec := p.nextRecord()
			if rec.RunSeq != seq {
				t.Fatalf("run %s: runSeq %d, want %d", p.id.RunID, rec.RunSeq, seq)
			}
			if err := validate.Check(&rec.RunEventWrite); err != nil {
				t.Fatalf("run %s seq %d (%s): invalid write: %v", p.id.RunID, seq, rec.EventType, err)
			}
			var res reduce.Result
			cur, res = reduce.Apply(cur, rec)
			if res.CausalViolation {
				t.Fatalf("run %s seq %d (%s): causal violation %s", p.id.RunID, seq, rec.EventType, res.Reason)
			}
		}
		if cur.Status != store.RunCompleted || cur.LastEventSeq != int64(p.events) || len(cur.Steps) < 30 {
			t.Errorf("run %s: status %s, watermark %d, %d steps; want COMPLETED at %d with 30+ steps",
				p.id.RunID, cur.Status, cur.LastEventSeq, len(cur.Steps), p.events)
		}
	}
	if got := newPlans("t", 3, 10, false, time.Now()); got[0].events != 4 || got[1].events != 3 || got[2].events != 3 {
		t.Errorf("10 events over 3 runs = %d, %d, %d; want 4, 3, 3", got[0].events, got[1].events, got[2].events)
	}
}

func TestBenchProject_Validate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string // substring of the error; empty means valid
	}{
		{"defaults", Config{RedisURL: "redis://x", PostgresURL: "postgres://x"}, ""},
		{"no redis", Config{PostgresURL: "postgres://x"}, "--redis-url"},
		{"no postgres for latency", Config{RedisURL: "redis://x"}, "--postgres-url"},
		{"no postgres without latency", Config{RedisURL: "redis://x", DisableLatency: true}, ""},
		{"no phase", Config{RedisURL: "redis://x", DisableCatchUp: true, DisableLatency: true, DisableMemory: true}, "nothing to measure"},
		{"negative events", Config{RedisURL: "redis://x", DisableLatency: true, Events: -1}, "--events"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate() = %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
}

// TestBenchProject_Backlog: the backlog phase alternates rounds of runs
// present in Redis and absent from it, every snapshot is right after each,
// the absent rounds resync through batched store queries only, and no
// round counts a gap.
func TestBenchProject_Backlog(t *testing.T) {
	redisURL, pgURL := projectRedisURL(t), testenv.PostgresURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{RedisURL: redisURL, PostgresURL: pgURL, Batch: 1000, DisableCatchUp: true,
		DisableLatency: true, DisableMemory: true, BacklogEvents: 4000, BacklogRounds: 2})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	bl := rep.Backlog
	if bl == nil || len(bl.Rounds) != 4 {
		t.Fatalf("backlog report %+v, want 4 rounds", bl)
	}
	if !bl.Consistent() {
		t.Errorf("backlog not consistent: %+v (%s)", bl.Rounds, bl.FirstProblem)
	}
	for _, r := range bl.Rounds {
		switch r.Mode {
		case "present":
			if r.BatchQueries != 0 || r.RunQueries != 0 {
				t.Errorf("present round asked the store: %+v", r)
			}
		case "absent":
			if r.RunQueries != 0 || r.BatchQueries == 0 || r.BatchRuns != int64(bl.Runs) || r.Missing != int64(bl.Runs) {
				t.Errorf("absent round: %+v; want every run in batched queries, each counted missing, no one-run query", r)
			}
		}
	}
	var out strings.Builder
	if err := rep.WriteText(&out); err != nil || !strings.Contains(out.String(), "runs absent from Redis at") {
		t.Errorf("text report: %v\n%s", err, out.String())
	}
}
