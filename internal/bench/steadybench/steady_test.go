package steadybench

import (
	"bytes"
	"context"
	"encoding/csv"
	"image/png"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/testenv"
)

// TestRun_Short runs the whole bench for 20 s at 200 events/s with a 3 s
// TTL against the real Postgres and a private redis-server: terminal runs
// leave Redis (none that ended more than the TTL ago is left, and the runs
// catalogued stay far below the runs started), and the CSV and the PNG
// are written.
func TestRun_Short(t *testing.T) {
	pgURL := testenv.PostgresURL(t)
	if _, err := exec.LookPath("redis-server"); err != nil {
		testenv.Missing(t, "the redis-server binary (scripts/up.sh installs it)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	cfg := Config{PostgresURL: pgURL, Rate: 200, Duration: 20 * time.Second, SnapshotTTL: 3 * time.Second,
		Sample: time.Second, ConcurrentRuns: 40, Out: t.TempDir(), Progress: &progress}
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run: %v\nprogress:\n%s", err, progress.String())
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	t.Logf("report:\n%s", text.String())

	if rep.Shared || !strings.Contains(rep.Redis, "127.0.0.1:") {
		t.Fatalf("Redis %q, shared %v; want the private server", rep.Redis, rep.Shared)
	}
	if rep.Appended < 3000 || rep.Failed != 0 || !rep.CaughtUp {
		t.Fatalf("appended %d, failed %d, caught up %v; want about 4,000 appended, none failed, caught up", rep.Appended, rep.Failed, rep.CaughtUp)
	}
	if rep.RunsEnded < 100 || rep.FirstTTL < cfg.SnapshotTTL || rep.SteadyFrom <= rep.FirstTTL {
		t.Fatalf("%d runs ended, first TTL %v, steady from %v", rep.RunsEnded, rep.FirstTTL, rep.SteadyFrom)
	}
	// Terminal runs leave Redis.
	if rep.PastTTL < 50 || rep.LeftInRedis != 0 {
		t.Fatalf("%d of %d runs ended more than the TTL ago still in Redis; want 0 of at least 50", rep.LeftInRedis, rep.PastTTL)
	}
	if rep.Final.Catalogued == 0 || rep.Final.Catalogued > rep.RunsStarted/2 || rep.PeakCatalogued > rep.RunsStarted/2 {
		t.Fatalf("runs catalogued %d at the end (peak %d) of %d started; want them bounded by the open runs and the TTL's",
			rep.Final.Catalogued, rep.PeakCatalogued, rep.RunsStarted)
	}
	if rep.BytesPerRun <= 0 || rep.EmptyUsedMemory <= 0 {
		t.Fatalf("bytes per run %v, empty %d", rep.BytesPerRun, rep.EmptyUsedMemory)
	}
	if !rep.Verdict.Decided || rep.Verdict.Samples < minWindowSamples {
		t.Fatalf("verdict %+v; want one over at least 3 samples", rep.Verdict)
	}

	// The CSV: a header and a line per sample.
	f, err := os.Open(rep.CSV)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("reading the CSV: %v", err)
	}
	if len(recs) != rep.Samples+1 || rep.Samples < 15 || strings.Join(recs[0], ",") != strings.Join(csvHeader, ",") {
		t.Fatalf("CSV of %d lines for %d samples, header %v", len(recs), rep.Samples, recs[0])
	}
	if strings.Count(progress.String(), "bench: steady") != rep.Samples {
		t.Fatalf("%d progress lines for %d samples", strings.Count(progress.String(), "bench: steady"), rep.Samples)
	}
	b, err := os.ReadFile(rep.PNG)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(bytes.NewReader(b)); err != nil {
		t.Fatalf("decoding the PNG: %v", err)
	}

	// The private server is gone.
	addr := rep.Redis[strings.LastIndex(rep.Redis, " ")+1:]
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("the private Redis on %s still accepts connections", addr)
	}
}
