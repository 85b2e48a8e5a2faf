package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
)

// TestAPI_RebuildOfAKilledProcessReadsAbandoned: two `runstream api`
// processes share Postgres and Redis, as replicas behind a load balancer
// do. A rebuild started on one is reported by the other while it runs;
// after kill -9 of the process running it, the other reports it failed,
// abandoned, naming the dead process, once its lease expires (15s). The
// rebuild is held still by a lock the test takes on run_snapshots, which
// it reads first for every run, so it is mid-rebuild when killed.
func TestAPI_RebuildOfAKilledProcessReadsAbandoned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, schema := testenv.Postgres(t, 5)
	pgURL := testenv.PostgresURLWithSchema(t, schema)
	var out testenv.Buffer
	if err := run(ctx, []string{"migrate"}, func(k string) string {
		return map[string]string{"RUNSTREAM_POSTGRES_URL": pgURL}[k]
	}, &out, &out); err != nil {
		t.Fatal(err)
	}
	tenant := "tenant_kill_" + testenv.RandomID(3)
	for range 5 {
		id := workload.NewIdentity(tenant)
		ev := workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil)
		if _, err := pool.Exec(ctx, `SELECT runstream_append($1,$2,$3,$4,$5,$6,$7,$8,$9,NULL,1,1,$10,NULL,0)`,
			ev.RunID, ev.TenantID, ev.ProjectID, ev.EnvironmentID, ev.PlanID, ev.PlanVersion, ev.EventID,
			ev.EventType, ev.IdempotencyKey, ev.EmittedAt); err != nil {
			t.Fatal(err)
		}
	}
	// The lock: every run's rebuild reads run_snapshots first, and waits.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `LOCK TABLE run_snapshots IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}

	runner, runnerCmd := startAPIProcess(t, pgURL)
	other, _ := startAPIProcess(t, pgURL)
	var started struct{ Rebuild rebuildAnswer }
	postJSON(t, runner+"/v1/rebuilds", `{"tenantId":"`+tenant+`"}`, http.StatusAccepted, &started)
	rb := started.Rebuild
	if rb.State != "running" || rb.Total != 5 || rb.Process == "" {
		t.Fatalf("started: %+v, want running with 5 runs", rb)
	}
	var seen struct{ Rebuild rebuildAnswer }
	getJSON(t, other+"/v1/rebuilds/"+rb.ID, &seen)
	if seen.Rebuild.State != "running" || seen.Rebuild.Process != rb.Process {
		t.Fatalf("the other replica while the rebuild runs: %+v, want running in %s", seen.Rebuild, rb.Process)
	}

	if err := runnerCmd.Process.Kill(); err != nil { // SIGKILL: no shutdown, no final state
		t.Fatal(err)
	}
	_ = runnerCmd.Wait()
	killed := time.Now()
	testenv.WaitFor(t, 30*time.Second, "the other replica to report the killed process's rebuild abandoned", func() bool {
		seen.Rebuild = rebuildAnswer{}
		getJSON(t, other+"/v1/rebuilds/"+rb.ID, &seen)
		return seen.Rebuild.State != "running"
	})
	got := seen.Rebuild
	if got.State != "failed" || got.Error == nil || !strings.HasPrefix(*got.Error, "abandoned") || !strings.Contains(*got.Error, rb.Process) || got.Done != 0 {
		t.Fatalf("after kill -9 of %s: %+v, want failed, abandoned, naming it, at 0 of 5 runs", rb.Process, got)
	}
	t.Logf("reported abandoned %v after kill -9: %s", time.Since(killed).Round(100*time.Millisecond), *got.Error)
}

// rebuildAnswer is the part of a rebuild's state the test reads.
type rebuildAnswer struct {
	ID      string  `json:"id"`
	State   string  `json:"state"`
	Total   int64   `json:"total"`
	Done    int64   `json:"done"`
	Process string  `json:"process"`
	Error   *string `json:"error"`
}

// startAPIProcess runs `runstream api` on a free loopback port as a child
// process (this test binary, as runHelperProcess does) until the test
// ends, and returns its base URL once /readyz answers.
func startAPIProcess(t *testing.T, pgURL string) (string, *exec.Cmd) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	enc, _ := json.Marshal([]string{"api", "--http-addr=" + addr, "--postgres-url=" + pgURL, "--redis-url=" + redisURL(t)})
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperRunstreamProcess$")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RUNSTREAM_") || strings.HasPrefix(kv, "RUNSTREAM_TEST_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "RUNSTREAM_HELPER_ARGS="+string(enc))
	var logs testenv.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	base := "http://" + addr
	testenv.WaitFor(t, 30*time.Second, "runstream api at "+addr+" to be ready", func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return base, cmd
}

func postJSON(t *testing.T, url, body string, want int, into any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	decodeAnswer(t, resp, want, into)
}

func getJSON(t *testing.T, url string, into any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	decodeAnswer(t, resp, http.StatusOK, into)
}

func decodeAnswer(t *testing.T, resp *http.Response, want int, into any) {
	t.Helper()
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s, want %d", resp.Request.Method, resp.Request.URL, resp.StatusCode, raw, want)
	}
	if err := json.Unmarshal(raw, into); err != nil {
		t.Fatalf("%s: %v: %s", resp.Request.URL, err, raw)
	}
}
