package steadybench

import (
	"bytes"
	"context"
	"encoding/csv"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runstream/runstream/internal/archive"
	"github.com/runstream/runstream/internal/retention"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// acked is an append and the store's answer, to build ledgers from.
type acked struct {
	w   store.RunEventWrite
	res store.AppendResult
}

func ledgerOf(appends []acked) *ledger {
	l := newLedger()
	for _, a := range appends {
		l.ack(a.w, a.res)
	}
	return l
}

// TestChecks_FindWhatIsMissing: runs appended into a partition that
// retention then drops: the archive check reads the file back and finds
// every run whole, and the export check finds every acknowledged event
// printed exactly (from the archive). Then each check is shown the
// fault it exists for: an event the store did not print as acknowledged
// (a different emittedAt) is missing and different; an event the bench
// was not told about is unacknowledged and not an error; an archive file
// replaced by one with an event fewer fails its manifest row, and its
// runs are no longer whole.
func TestChecks_FindWhatIsMissing(t *testing.T) {
	t.Parallel()
	pool, _ := testenv.Postgres(t, 10)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := postgres.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	st, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	testenv.BackdatePartitions(t, pool)
	start := time.Now()
	const tenant = "tenant_checks"
	rng := rand.New(rand.NewPCG(1, 2))
	var appends []acked
	for range 5 {
		for _, w := range workload.Run(rng, tenant, workload.Options{}) {
			res, err := st.AppendEvent(ctx, w)
			if err != nil {
				t.Fatal(err)
			}
			appends = append(appends, acked{w, res})
		}
	}
	testenv.SupersedeBackdated(t, pool)
	testenv.PretendRelayedAndAged(t, pool)
	dir, err := archive.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	k, err := retention.New(st, retention.Config{Retention: time.Minute, PartitionWidth: time.Minute, Archive: dir, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := k.Pass(ctx)
	if err != nil || !slices.Contains(rep.Dropped, "run_events_backdated") {
		t.Fatalf("pass: %+v, %v; want run_events_backdated dropped", rep, err)
	}

	ac, dropped, err := checkArchive(ctx, st, pool, dir, start, nil, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	if !ac.OK() || ac.Files != 1 || ac.Runs != 5 || ac.Whole != 5 || ac.Events != rep.Events {
		t.Fatalf("archive check %+v; want 1 file verified, 5 runs whole, %d events", ac, rep.Events)
	}
	i := slices.IndexFunc(dropped, func(d DroppedPartition) bool { return d.Name == "run_events_backdated" })
	if i < 0 || dropped[i].Runs != 5 || dropped[i].Files != 1 || dropped[i].Dropped <= 0 || dropped[i].Archived < dropped[i].Retired {
		t.Fatalf("dropped %+v; want run_events_backdated with its 5 runs and one file, its steps in order", dropped)
	}

	// With the tombstones deleted (--tombstone-retention), each run is
	// checked against what the bench saw acknowledged; with nothing to
	// check it against, the check fails.
	if _, err := st.PruneTombstones(ctx, time.Now().Add(time.Hour), 100); err != nil {
		t.Fatal(err)
	}
	if ac, _, err := checkArchive(ctx, st, pool, dir, start, ledgerOf(appends), os.Getenv); err != nil || !ac.OK() || ac.Runs != 5 || ac.Whole != 5 {
		t.Fatalf("archive check without tombstones, against the acknowledgements: %+v, %v; want 5 runs whole", ac, err)
	}
	if ac, _, err := checkArchive(ctx, st, pool, dir, start, nil, os.Getenv); err != nil || ac.OK() || ac.Whole != 0 ||
		!strings.Contains(strings.Join(ac.Problems, "\n"), "neither in the runs table nor acknowledged") {
		t.Fatalf("archive check without tombstones or acknowledgements: %+v, %v; want it failed", ac, err)
	}

	from, to := start.Add(-time.Minute), time.Now()
	persisted := int64(0)
	for _, a := range appends {
		if a.res.Persisted {
			persisted++
		}
	}
	if c := checkExport(ctx, st, ledgerOf(appends), tenant, from, to, os.Getenv); !c.OK() || c.Matched != persisted || c.Exported != persisted {
		t.Fatalf("export check %+v (%s); want all %d persisted events matched", c, c.Line(), persisted)
	}
	// The last event unknown to the bench: printed, unacknowledged, fine.
	if c := checkExport(ctx, st, ledgerOf(appends[:len(appends)-1]), tenant, from, to, os.Getenv); !c.OK() || c.Unacknowledged != 1 || c.Matched != persisted-1 {
		t.Fatalf("export check without the last acknowledgement %+v; want it unacknowledged and the rest matched", c)
	}
	// One event acknowledged as other than the store keeps it.
	altered := slices.Clone(appends)
	altered[3].w.EmittedAt = "2001-01-01T00:00:00Z"
	c := checkExport(ctx, st, ledgerOf(altered), tenant, from, to, os.Getenv)
	if c.OK() || c.Different != 1 || c.Missing != 1 || c.Matched != persisted-1 || len(c.Problems) != 2 ||
		!strings.Contains(c.Problems[0], "differs") || !strings.Contains(c.Line(), "FAILED") {
		t.Fatalf("export check with an altered event %+v; want it different and missing, the check failed", c)
	}

	// The archive file replaced by one holding an event fewer.
	files, err := st.Archives(ctx, postgres.Partition{Name: "run_events_backdated", Epoch: epochOf(t, pool, "run_events_backdated")})
	if err != nil || len(files) != 1 {
		t.Fatalf("manifest %+v, %v; want one file", files, err)
	}
	_, key, err := retention.SplitLocation(files[0].Location)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := dir.Open(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	var recs []store.RunEventRecord
	if _, err := archive.Read(obj, obj.Size(), func(r store.RunEventRecord) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatal(err)
	}
	obj.Close()
	var buf bytes.Buffer
	aw := archive.NewWriter(&buf)
	for _, r := range recs[:len(recs)-1] {
		if err := aw.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := aw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := dir.Put(ctx, key, bytes.NewReader(buf.Bytes()), int64(buf.Len())); err != nil {
		t.Fatal(err)
	}
	ac, _, err = checkArchive(ctx, st, pool, dir, start, ledgerOf(appends), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	if ac.OK() || ac.Verified != 0 || ac.Files != 1 || ac.Whole != 0 || len(ac.Problems) == 0 ||
		!strings.Contains(ac.Problems[0], "the manifest says") || !strings.Contains(ac.Line(), "FAILED") {
		t.Fatalf("archive check of a file with an event fewer %+v; want it failed against the manifest", ac)
	}
}

// epochOf is the epoch of the partition named name.
func epochOf(t *testing.T, pool *pgxpool.Pool, name string) time.Time {
	t.Helper()
	var at time.Time
	if err := pool.QueryRow(context.Background(), `SELECT epoch FROM run_event_partitions WHERE name = $1`, name).Scan(&at); err != nil {
		t.Fatal(err)
	}
	return at
}

// hookCall hands the bench's pool to the test goroutine and waits until
// it is done with it (testenv's helpers may call t.Fatal only there).
type hookCall struct {
	pool *pgxpool.Pool
	done chan struct{}
}

func handOver(ch chan<- hookCall) func(context.Context, *pgxpool.Pool) error {
	return func(ctx context.Context, pool *pgxpool.Pool) error {
		c := hookCall{pool: pool, done: make(chan struct{})}
		select {
		case ch <- c:
		case <-ctx.Done():
			return ctx.Err()
		}
		select {
		case <-c.done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// TestRun_Retention runs the bench with the store's retention for 5 s,
// its first runs in a backdated partition that a later one supersedes
// while the appends go on (so that partition may leave at once): the
// last pass drops it, the archive check finds its runs whole in the
// verified file, the export of the whole window prints every
// acknowledged event exactly, and the CSV carries the store's size. The
// size's verdict is left undecided: the drop came after the last sample.
func TestRun_Retention(t *testing.T) {
	pgURL := testenv.PostgresURL(t)
	if _, err := exec.LookPath("redis-server"); err != nil {
		testenv.Missing(t, "the redis-server binary (scripts/up.sh installs it)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prepared, final := make(chan hookCall), make(chan hookCall)
	var progress bytes.Buffer
	cfg := Config{PostgresURL: pgURL, Rate: 300, Duration: 5 * time.Second, SnapshotTTL: 3 * time.Second,
		Sample: time.Second, ConcurrentRuns: 8, Out: t.TempDir(), Progress: &progress,
		Retention: time.Minute, PartitionInterval: time.Minute, RetentionEvery: time.Hour,
		hooks: &testHooks{prepare: handOver(prepared), beforeFinalPass: handOver(final)}}
	type result struct {
		rep *Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := Run(ctx, cfg)
		done <- result{rep, err}
	}()
	wait := func(ch <-chan hookCall) hookCall {
		select {
		case c := <-ch:
			return c
		case r := <-done:
			t.Fatalf("Run ended early: %v\nprogress:\n%s", r.err, progress.String())
		}
		return hookCall{}
	}
	c := wait(prepared)
	testenv.BackdatePartitions(t, c.pool)
	close(c.done)
	// Runs go to the backdated partition until a later one begins.
	testenv.WaitFor(t, 30*time.Second, "20 runs in the backdated partition", func() bool {
		var n int
		err := c.pool.QueryRow(ctx, runsOfPartitionCountSQL, "run_events_backdated").Scan(&n)
		return err == nil && n >= 20
	})
	testenv.SupersedeBackdated(t, c.pool)
	c = wait(final)
	testenv.PretendRelayedAndAged(t, c.pool)
	close(c.done)
	r := <-done
	if r.err != nil {
		t.Fatalf("Run: %v\nprogress:\n%s", r.err, progress.String())
	}
	rep := r.rep
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	t.Logf("report:\n%s", text.String())

	rs := rep.Store
	if rs.Keeper.Passes != 1 || rs.Keeper.Failed != 0 {
		t.Fatalf("keeper %+v; want the one last pass, not failed", rs.Keeper)
	}
	i := slices.IndexFunc(rs.Dropped, func(d DroppedPartition) bool { return d.Name == "run_events_backdated" })
	if i < 0 || rs.Dropped[i].Runs < 20 || rs.Dropped[i].Files != 1 || rs.FirstDrop != rs.Dropped[i].Dropped {
		t.Fatalf("dropped %+v, first drop %v; want run_events_backdated with at least 20 runs in one file, the first drop", rs.Dropped, rs.FirstDrop)
	}
	if !rs.ArchiveCheck.OK() || rs.ArchiveCheck.Whole < 20 || rs.ArchiveCheck.Verified != rs.ArchiveCheck.Files {
		t.Fatalf("archive check %+v; want every file verified, every run whole", rs.ArchiveCheck)
	}
	ex := rs.Export
	if !ex.OK() || rep.Failed != 0 || ex.Matched != rep.Appended || ex.Exported != rep.Appended || ex.Unacknowledged != 0 {
		t.Fatalf("export %+v (%s), appended %d, failed %d; want every appended event exported exactly", ex, ex.Line(), rep.Appended, rep.Failed)
	}
	if rs.Verdict.Decided || !strings.Contains(rs.Verdict.Why, "raise --duration") || rs.Pass {
		t.Fatalf("Postgres verdict %+v, pass %v; want none (the drop came after the last sample), no pass", rs.Verdict, rs.Pass)
	}
	if !strings.Contains(text.String(), "export: "+strconv.FormatInt(ex.Matched, 10)+" of "+strconv.FormatInt(ex.Matched, 10)+" acknowledged events") {
		t.Fatalf("the report does not say the export's N of N")
	}
	if rs.Start <= 0 || rs.Peak < rs.Start || rs.Final <= 0 || rs.FinalRunEvents <= 0 || rs.FinalRuns <= 0 {
		t.Fatalf("store sizes %+v", rs)
	}
	matches, _ := filepath.Glob(filepath.Join(cfg.Out, "archive", "tenant=*", "date=*", "run_events_backdated.parquet"))
	if len(matches) != 1 {
		t.Fatalf("archive files %v; want the backdated partition's under --out", matches)
	}

	// The CSV carries the store's size.
	f, err := os.Open(rep.CSV)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := slices.Index(recs[0], "pg_bytes")
	if col < 0 || len(recs) != rep.Samples+1 {
		t.Fatalf("CSV header %v, %d lines for %d samples", recs[0], len(recs), rep.Samples)
	}
	for _, rec := range recs[1:] {
		if n, err := strconv.ParseInt(rec[col], 10, 64); err != nil || n <= 0 {
			t.Fatalf("pg_bytes %q in %v", rec[col], rec)
		}
	}
}

// runsOfPartitionCountSQL counts the runs of the partition named $1.
const runsOfPartitionCountSQL = `SELECT count(*) FROM runs
WHERE run_epoch = (SELECT epoch FROM run_event_partitions WHERE name = $1)`
