package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runstream/runstream/internal/archive"
	"github.com/runstream/runstream/internal/export"
	"github.com/runstream/runstream/internal/retention"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// retentionTenants are the tenants of TestChaos_RetentionKill's runs.
var retentionTenants = []string{"tenant_keep_a", "tenant_keep_b", "tenant_keep_c"}

// TestChaos_RetentionKill: `runstream retention run` killed with SIGKILL
// after every step of a partition's removal (the process kills itself
// exactly there: RUNSTREAM_KILL_AFTER_RETENTION_STEP), and once while its
// DROP waits for a lock, each time restarted. After every kill: nothing
// is dropped that the manifest does not cover, no file under a final name
// in the archive is partial, every file the manifest names reads back with
// its count and checksum, and every event is still readable, from the
// store or the archive, as export printed it before. At the end the
// partition is gone, export prints byte for byte what it printed before,
// and no local file of a killed pass is left behind.
func TestChaos_RetentionKill(t *testing.T) {
	if os.Getenv("RUNSTREAM_CHAOS") == "" && !testenv.Require() && os.Getenv("RUNSTREAM_TEST_POSTGRES_URL") == "" {
		t.Skip("the retention kill cases run under make test or make chaos (RUNSTREAM_CHAOS=short|full, or RUNSTREAM_TEST_REQUIRE=1)")
	}
	t.Parallel()
	pool, schema := testenv.Postgres(t, 10)
	pgURL := testenv.PostgresURLWithSchema(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := postgres.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	st, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	testenv.BackdatePartitions(t, pool)
	from := time.Now().Add(-time.Minute)
	events := 0
	for i := range 24 {
		id := workload.NewIdentity(retentionTenants[i%len(retentionTenants)])
		at := time.Now()
		evs := []store.RunEventWrite{workload.Event(id, store.EventRunStarted, "", 1, 1, at, map[string]any{"engineRunRef": "r/" + id.RunID})}
		for s := range 1 + i%4 {
			step := fmt.Sprintf("step-%d", s)
			evs = append(evs, workload.Event(id, store.EventStepStarted, step, 1, 1, at, nil),
				workload.Event(id, store.EventStepCompleted, step, 1, 1, at, map[string]any{"rows": s, "note": "ünïcode ✓"}))
		}
		evs = append(evs, workload.Event(id, store.EventRunCompleted, "", 1, 1, at, nil))
		for _, ev := range evs {
			if _, err := st.AppendEvent(ctx, ev); err != nil {
				t.Fatal(err)
			}
		}
		events += len(evs)
	}
	to := time.Now()
	testenv.PretendRelayedAndAged(t, pool)
	testenv.SupersedeBackdated(t, pool)
	exportAll := func() (map[string][]byte, error) {
		out := map[string][]byte{}
		for _, tenant := range retentionTenants {
			var b bytes.Buffer
			win := store.AuditWindow{TenantID: tenant, From: store.AuditTime(from), To: store.AuditTime(to)}
			res, err := export.Run(ctx, st, export.Config{Window: win, PageSize: 50, Archive: retention.NewFileReader(os.Getenv)}, &b)
			if err != nil {
				return nil, err
			}
			if !res.Finished {
				return nil, fmt.Errorf("tenant %s: export did not finish: %+v", tenant, res)
			}
			out[tenant] = b.Bytes()
		}
		return out, nil
	}
	before, err := exportAll()
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(bytes.Join([][]byte{before[retentionTenants[0]], before[retentionTenants[1]], before[retentionTenants[2]]}, nil), []byte("\n")); n != events {
		t.Fatalf("export before retention: %d lines, want the %d events", n, events)
	}

	bin := testenv.BuildRunstream(t, t.TempDir())
	archiveDir, tempDir, logDir := t.TempDir(), t.TempDir(), t.TempDir()
	storage, err := archive.NewDir(archiveDir)
	if err != nil {
		t.Fatal(err)
	}
	start := func(label, killAfter string) *exec.Cmd {
		t.Helper()
		logf, err := os.Create(filepath.Join(logDir, label+".log"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { logf.Close() })
		cmd := exec.Command(bin, "retention", "run", "--once", "--retention", "1m", "--partition-interval", "1m",
			"--archive-url", "file://"+archiveDir, "--temp-dir", tempDir, "--log-level", "debug")
		cmd.Env = append(os.Environ(), "RUNSTREAM_POSTGRES_URL="+pgURL, "RUNSTREAM_KILL_AFTER_RETENTION_STEP="+killAfter)
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	logOf := func(label string) string {
		b, _ := os.ReadFile(filepath.Join(logDir, label+".log"))
		return string(b)
	}
	killedBy := func(cmd *exec.Cmd, label string) {
		t.Helper()
		err := cmd.Wait()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("%s: the process ended with %v, want killed by SIGKILL\n%s", label, err, logOf(label))
		}
	}

	// The partition goes through every step; each run of the process
	// resumes where the one before was killed. "written", "uploaded" and
	// "file" are the first tenant's; the run killed after "archived" does
	// the other tenants' files.
	for _, step := range []string{"retired", "detached", "written", "uploaded", "file", "archived"} {
		label := "kill-after-" + step
		cmd := start(label, step)
		killedBy(cmd, label)
		if !strings.Contains(logOf(label), `"step":"`+step+`"`) {
			t.Fatalf("%s: the log does not show the step\n%s", label, logOf(label))
		}
		checkRetentionInvariants(ctx, t, pool, storage, label, exportAll, before)
	}

	// Killed while its DROP waits: a reader holds the detached table.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE run_events_backdated IN ACCESS SHARE MODE`); err != nil {
		t.Fatal(err)
	}
	cmd := start("kill-during-drop", "")
	testenv.WaitFor(t, 30*time.Second, "the retention process's DROP to wait for the lock", func() bool {
		var waiting bool
		_ = pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock'
			AND query LIKE 'DROP TABLE%run_events_backdated%')`).Scan(&waiting)
		return waiting
	})
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killedBy(cmd, "kill-during-drop")
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// The server aborts the killed client's transaction once its DROP
	// gets the lock and the connection is found closed.
	testenv.WaitFor(t, 30*time.Second, "the killed process's backend to end", func() bool {
		var n int
		_ = pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'DROP TABLE%run_events_backdated%' AND state <> 'idle'`).Scan(&n)
		return n == 0
	})
	checkRetentionInvariants(ctx, t, pool, storage, "kill-during-drop", exportAll, before)

	cmd = start("kill-after-dropped", "dropped")
	killedBy(cmd, "kill-after-dropped")
	checkRetentionInvariants(ctx, t, pool, storage, "kill-after-dropped", exportAll, before)

	cmd = start("final", "")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the last pass: %v\n%s", err, logOf("final"))
	}
	var dropped bool
	if err := pool.QueryRow(ctx, `SELECT dropped_at IS NOT NULL FROM run_event_partitions WHERE name = 'run_events_backdated'`).Scan(&dropped); err != nil || !dropped {
		t.Fatalf("run_events_backdated dropped: %v, %v; want dropped", dropped, err)
	}
	after, err := exportAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, tenant := range retentionTenants {
		if !bytes.Equal(after[tenant], before[tenant]) {
			t.Fatalf("tenant %s: export after retention differs from before (%d bytes, was %d)", tenant, len(after[tenant]), len(before[tenant]))
		}
	}
	if left, _ := filepath.Glob(filepath.Join(tempDir, "*")); len(left) != 0 {
		t.Fatalf("local files left behind by the killed passes: %v", left)
	}
}

// checkRetentionInvariants checks, after a kill, that nothing was dropped
// unverified, that the archive shows no partial file under a final name,
// that each manifest row's file reads back as recorded, and that every
// event is still readable (export prints what it printed before), unless
// the partition is caught between detach and the manifest's completion,
// when export refuses and the detached table must hold every row.
func checkRetentionInvariants(ctx context.Context, t *testing.T, pool *pgxpool.Pool, storage *archive.Dir, label string,
	exportAll func() (map[string][]byte, error), before map[string][]byte) {
	t.Helper()
	var attached, archived, dropped bool
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
			WHERE i.inhparent = 'run_events'::regclass AND c.relname = 'run_events_backdated'),
			archived_at IS NOT NULL, dropped_at IS NOT NULL
		FROM run_event_partitions WHERE name = 'run_events_backdated'`).Scan(&attached, &archived, &dropped); err != nil {
		t.Fatalf("%s: %v", label, err)
	}
	manifest := map[string]postgres.ArchiveFile{}
	rows, err := pool.Query(ctx, `SELECT tenant_id, location, events, checksum FROM run_event_archives`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var f postgres.ArchiveFile
		if err := rows.Scan(&f.TenantID, &f.Location, &f.Events, &f.Checksum); err != nil {
			t.Fatal(err)
		}
		manifest[f.Location] = f
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if dropped && (!archived || len(manifest) != len(retentionTenants)) {
		t.Fatalf("%s: the partition is dropped with archived=%v and %d manifest rows", label, archived, len(manifest))
	}
	objs, err := storage.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		obj, err := storage.Open(ctx, o.Key)
		if err != nil {
			t.Fatalf("%s: %s: %v", label, o.Key, err)
		}
		sum, err := archive.Read(obj, obj.Size(), func(store.RunEventRecord) error { return nil })
		obj.Close()
		if err != nil {
			t.Fatalf("%s: archive file %s under its final name is not whole: %v", label, o.Key, err)
		}
		if f, ok := manifest[retention.Location(storage, o.Key)]; ok && (f.Events != sum.Rows || f.Checksum != sum.Checksum) {
			t.Fatalf("%s: %s holds %d events (%s), the manifest says %d (%s)", label, o.Key, sum.Rows, sum.Checksum, f.Events, f.Checksum)
		}
	}
	for loc := range manifest {
		if _, key, err := retention.SplitLocation(loc); err != nil || !containsKey(objs, key) {
			t.Fatalf("%s: the manifest names %s, which the archive does not hold (%v)", label, loc, err)
		}
	}
	if !attached && !archived {
		// Detached and being archived: the table still holds every row.
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM run_events_backdated`).Scan(&n); err != nil {
			t.Fatalf("%s: the detached partition: %v", label, err)
		}
		want := 0
		for _, b := range before {
			want += bytes.Count(b, []byte("\n"))
		}
		if n != want {
			t.Fatalf("%s: the detached partition holds %d events, want %d", label, n, want)
		}
		return
	}
	got, err := exportAll()
	if err != nil {
		t.Fatalf("%s: export: %v", label, err)
	}
	for tenant, b := range before {
		if !bytes.Equal(got[tenant], b) {
			t.Fatalf("%s: tenant %s's export differs from before retention", label, tenant)
		}
	}
}

func containsKey(objs []archive.ObjectInfo, key string) bool {
	for _, o := range objs {
		if o.Key == key {
			return true
		}
	}
	return false
}
