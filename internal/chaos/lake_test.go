package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/runstream/runstream/internal/archive"
	"github.com/runstream/runstream/internal/lake/laketest"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/testenv/testkafka"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// TestChaos_LakeKill: `runstream lake` killed with SIGKILL at every step
// that makes its files durable (the process kills itself exactly there
// when RUNSTREAM_KILL_AFTER_LAKE_STEP names the step): in the middle of a
// window's files ("written"), after a file's upload and before the
// window's commit ("uploaded"), after the commit and before the Kafka
// offset ("committed"), after a current-state generation's files and
// before its manifest ("current-written"), and after the manifest swap
// ("current-swapped"), each time restarted, with more runs published
// between kills. After every kill every event file reads back whole, no
// (runId, runSeq) is in two files, and the manifest names only whole
// files; at the end every run's events are in the lake exactly once, byte
// for byte the store's records, the current-state table equals the
// reducer's projection of every run, and DuckDB's answers to
// docs/LAKE.md's queries equal the store's (when scripts/test-duckdb.sh
// installed DuckDB's Node API).
func TestChaos_LakeKill(t *testing.T) {
	if os.Getenv("RUNSTREAM_CHAOS") == "" && !testenv.Require() && os.Getenv("RUNSTREAM_TEST_POSTGRES_URL") == "" {
		t.Skip("the lake kill cases run under make test or make chaos (RUNSTREAM_CHAOS=short|full, or RUNSTREAM_TEST_REQUIRE=1)")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	pool, schema := testenv.Postgres(t, 10)
	pgURL := testenv.PostgresURLWithSchema(t, schema)
	if _, err := postgres.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	st, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	lakeSchema := "lake_chaos_" + testenv.RandomID(6)
	t.Cleanup(func() {
		admin, err := pgxpool.New(context.Background(), testenv.PostgresURL(t))
		if err != nil {
			return
		}
		defer admin.Close()
		_, _ = admin.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+lakeSchema+" CASCADE")
	})
	const topic = "lake-chaos"
	k := testkafka.Start(t, kfake.SeedTopics(3, topic), kfake.AllowAutoTopicCreation())
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 41))
	var runs [][]store.RunEventRecord
	publish := func(n int) {
		t.Helper()
		var batch []store.RunEventRecord
		for i := range n {
			tenant := []string{"tenant_lake_a", "tenant lake b"}[i%2]
			evs := workload.Run(rng, tenant, workload.Options{})
			for _, r := range st.AppendBatch(ctx, evs) {
				if r.Err != nil {
					t.Fatal(r.Err)
				}
			}
			recs, err := st.FetchEvents(ctx, evs[0].RunID, store.FetchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			runs = append(runs, recs)
			batch = append(batch, recs...)
			// Some records twice, as a relay retrying a publish does.
			if rng.IntN(4) == 0 {
				batch = append(batch, recs[rng.IntN(len(recs))])
			}
		}
		rng.Shuffle(len(batch), func(i, j int) { batch[i], batch[j] = batch[j], batch[i] })
		sortRuns(batch)
		k.Publish(t, topic, batch)
	}

	bin := testenv.BuildRunstream(t, t.TempDir())
	lakeDir, spoolDir, logDir := t.TempDir(), t.TempDir(), t.TempDir()
	storage, err := archive.NewDir(lakeDir)
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
		cmd := exec.Command(bin, "lake", "--kafka-brokers", strings.Join(k.Brokers, ","), "--topic", topic,
			"--lake-url", "file://"+lakeDir, "--lake-schema", lakeSchema, "--spool-dir", spoolDir,
			"--rotate-records", "25", "--flush-idle", "500ms", "--current-interval", "1s", "--http-addr", "127.0.0.1:0",
			"--instance-id", "lake-0", "--log-level", "debug")
		cmd.Env = append(os.Environ(), "RUNSTREAM_POSTGRES_URL="+pgURL, "RUNSTREAM_KILL_AFTER_LAKE_STEP="+killAfter)
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	logOf := func(label string) string {
		b, _ := os.ReadFile(filepath.Join(logDir, label+".log"))
		return testenv.Tail(string(b), 40)
	}
	killedBy := func(cmd *exec.Cmd, label string) {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var err error
		select {
		case err = <-done:
		case <-time.After(90 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("%s: the step never came within 90s\n%s", label, logOf(label))
		}
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("%s: the process ended with %v, want killed by SIGKILL\n%s", label, err, logOf(label))
		}
	}
	// What a reader may see at any time, even right after a kill.
	consistent := func(label string) {
		t.Helper()
		got, _, err := laketest.Read(ctx, storage)
		if err == nil {
			err = laketest.NoDuplicates(got)
		}
		if err == nil {
			_, _, err = laketest.ReadCurrent(ctx, storage)
		}
		if err != nil {
			t.Fatalf("after %s: %v\n%s", label, err, logOf(label))
		}
	}

	publish(20)
	steps := []string{"written:150", "uploaded:2", "committed:1", "written:40", "current-written:1", "current-swapped:1", "uploaded:4", "committed:3"}
	for i, step := range steps {
		label := fmt.Sprintf("kill-%d-%s", i, strings.ReplaceAll(step, ":", "-"))
		cmd := start(label, step)
		killedBy(cmd, label)
		consistent(label)
		t.Logf("%s: killed and consistent", label)
		publish(8)
	}
	final := start("final", "")
	testenv.WaitUntil(t, 3*time.Minute, func() error {
		if err := laketest.ExactlyOnce(ctx, storage, runs); err != nil {
			return err
		}
		return laketest.CurrentAgrees(ctx, storage, runs)
	})
	if err := final.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := final.Wait(); err != nil {
		t.Fatalf("lake after SIGTERM: %v\n%s", err, logOf("final"))
	}
	// DuckDB's answers to docs/LAKE.md's queries, after the faults.
	if root := testenv.ModuleRoot(t); laketest.DuckDBReady(root) {
		if err := laketest.DuckDB(ctx, root, lakeDir, pool, runs, t.Logf); err != nil {
			t.Fatal(err)
		}
	} else if os.Getenv("RUNSTREAM_CHAOS") == "full" {
		t.Fatal("DuckDB's Node API is not installed: make chaos installs it (scripts/duckdb-deps.sh) to run docs/LAKE.md's queries after the faults")
	} else {
		t.Log("DuckDB's Node API is not installed (scripts/duckdb-deps.sh installs it): the DuckDB queries were not run")
	}
	if left, _ := os.ReadDir(spoolDir); len(left) != 0 {
		t.Fatalf("the spool directory holds %d entries after the lake stopped (the first: %s)", len(left), left[0].Name())
	}
	events := 0
	for _, r := range runs {
		events += len(r)
	}
	t.Logf("lake kill: PASS kills=%d runs=%d events=%d", len(steps), len(runs), events)
}

// sortRuns restores each run's runSeq order in a shuffled batch, leaving
// the runs interleaved.
func sortRuns(batch []store.RunEventRecord) {
	pos := map[string][]int{}
	for i, r := range batch {
		pos[r.RunID] = append(pos[r.RunID], i)
	}
	for _, idx := range pos {
		recs := make([]store.RunEventRecord, len(idx))
		for j, i := range idx {
			recs[j] = batch[i]
		}
		// By runSeq, a duplicate beside its first copy.
		for a := 1; a < len(recs); a++ {
			for b := a; b > 0 && recs[b].RunSeq < recs[b-1].RunSeq; b-- {
				recs[b], recs[b-1] = recs[b-1], recs[b]
			}
		}
		for j, i := range idx {
			batch[i] = recs[j]
		}
	}
}
