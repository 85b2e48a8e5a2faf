package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

func TestRun_HelpOnEveryCommand(t *testing.T) {
	for _, c := range commands() {
		if c.name == "version" || c.name == "help" {
			continue // no flags; TestRun_HelpCommand, TestRun_Version
		}
		var out testenv.Buffer
		err := run(context.Background(), []string{c.name, "--help"}, func(string) string { return "" }, &out, &out)
		if c.name == "bench" {
			err = run(context.Background(), []string{"bench", "append", "--help"}, func(string) string { return "" }, &out, &out)
		}
		if !errors.Is(err, flag.ErrHelp) {
			t.Errorf("%s --help: err = %v, want flag.ErrHelp (exit 0)", c.name, err)
		}
		if !strings.Contains(out.String(), "env RUNSTREAM_") {
			t.Errorf("%s --help does not name its environment variables:\n%s", c.name, out.String())
		}
	}
}

func TestRun_UsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"frobnicate"}, nil, `unknown command "frobnicate"`},
		{nil, nil, "no command"},
		{[]string{"api"}, map[string]string{"RUNSTREAM_MAX_BODY_BYTES": "lots"}, "RUNSTREAM_MAX_BODY_BYTES"},
		{[]string{"api", "--auth-tokens", "nocolon"}, nil, "token:tenant"},
		{[]string{"api", "--http-addr", "8080"}, nil, "host:port"},
		{[]string{"api", "--log-level", "loud"}, nil, "--log-level"},
		{[]string{"api", "--lag-groups", "runstream-etl,,runstream-projector"}, nil, "--lag-groups (RUNSTREAM_LAG_GROUPS): an empty group name"},
		{[]string{"dev"}, map[string]string{"RUNSTREAM_LAG_GROUPS": "etl group"}, "outside printable ASCII (or a space)"},
		{[]string{"relay"}, nil, "RUNSTREAM_KAFKA_BROKERS"},
		{[]string{"relay", "dlq", "retry"}, nil, "--id N"},
		{[]string{"relay", "--compression", "brotli"}, map[string]string{"RUNSTREAM_KAFKA_BROKERS": "127.0.0.1:1"}, "none, gzip, snappy, lz4, zstd"},
		{[]string{"dev"}, map[string]string{"RUNSTREAM_COMPRESSION": "lz5"}, `RUNSTREAM_COMPRESSION): unknown compression "lz5"`},
		{[]string{"bench", "relay", "--compression", "xz"}, nil, "--compression: unknown compression"},
		{[]string{"relay", "dlq", "frob"}, nil, "list or retry"},
		{[]string{"relay", "--topic-retention", "30s"}, map[string]string{"RUNSTREAM_KAFKA_BROKERS": "127.0.0.1:1"}, "--topic-retention (RUNSTREAM_TOPIC_RETENTION) must be at least 1m0s, got 30s"},
		{[]string{"dev"}, map[string]string{"RUNSTREAM_TOPIC_RETENTION": "-168h"}, "--topic-retention (RUNSTREAM_TOPIC_RETENTION) must be at least 1m0s"},
		{[]string{"projector", "--snapshot-cache-mb", "-1"}, map[string]string{"RUNSTREAM_KAFKA_BROKERS": "127.0.0.1:1"}, "--snapshot-cache-mb"},
		{[]string{"bench", "relay", "--settle", "-1s"}, nil, "--settle must be >= 0"},
		{[]string{"etl", "--max-queued-records", "-5"}, map[string]string{"RUNSTREAM_KAFKA_BROKERS": "127.0.0.1:1", "RUNSTREAM_POSTGRES_URL": "postgres://x"}, "--max-queued-records"},
		{[]string{"bench", "etl", "--max-queued", "-1"}, nil, "--max-queued must be"},
		{[]string{"projector", "--snapshot-ttl", "30s"}, map[string]string{"RUNSTREAM_KAFKA_BROKERS": "127.0.0.1:1"}, "--snapshot-ttl (RUNSTREAM_SNAPSHOT_TTL) must be 0 (keep every snapshot) or at least 1m0s, got 30s"},
		{[]string{"api"}, map[string]string{"RUNSTREAM_SNAPSHOT_TTL": "-1h"}, "--snapshot-ttl (RUNSTREAM_SNAPSHOT_TTL) must be 0"},
		{[]string{"rebuild", "--all", "--snapshot-ttl", "59s"}, nil, "at least 1m0s, got 59s"},
		{[]string{"etl", "--etl-retention", "240h"}, map[string]string{"RUNSTREAM_KAFKA_BROKERS": "127.0.0.1:1", "RUNSTREAM_POSTGRES_URL": "postgres://x"}, "--etl-retention"},
		{[]string{"lake"}, nil, "--lake-url (RUNSTREAM_LAKE_URL) is required"},
		{[]string{"lake", "--lake-url", "lake"}, map[string]string{"RUNSTREAM_KAFKA_BROKERS": "127.0.0.1:1", "RUNSTREAM_POSTGRES_URL": "postgres://x"}, "is a relative path"},
		{[]string{"lake", "--lake-url", "/tmp"}, map[string]string{"RUNSTREAM_KAFKA_BROKERS": "127.0.0.1:1", "RUNSTREAM_ROTATE_RECORDS": "0"}, "--postgres-url (RUNSTREAM_POSTGRES_URL) is required"},
		{[]string{"lake", "--lake-url", "/tmp", "--rotate-records", "0"}, map[string]string{"RUNSTREAM_KAFKA_BROKERS": "127.0.0.1:1", "RUNSTREAM_POSTGRES_URL": "postgres://x"}, "--rotate-records (RUNSTREAM_ROTATE_RECORDS) must be >= 1"},
		{[]string{"lake", "--lake-url", "/tmp", "--current-retention", "30s"}, map[string]string{"RUNSTREAM_KAFKA_BROKERS": "127.0.0.1:1", "RUNSTREAM_POSTGRES_URL": "postgres://x"}, "--current-retention (RUNSTREAM_CURRENT_RETENTION) must be at least 1m, or 0 to keep every run, got 30s"},
		{[]string{"lake", "--lake-url", "/tmp"}, map[string]string{"RUNSTREAM_KAFKA_BROKERS": "127.0.0.1:1", "RUNSTREAM_POSTGRES_URL": "postgres://x", "RUNSTREAM_CURRENT_RETENTION": "-1h"}, "--current-retention (RUNSTREAM_CURRENT_RETENTION) must be at least 1m"},
		{[]string{"lake", "--lake-url", "/tmp", "--checkpoint-retention", "5s"}, map[string]string{"RUNSTREAM_KAFKA_BROKERS": "127.0.0.1:1", "RUNSTREAM_POSTGRES_URL": "postgres://x"}, "--checkpoint-retention (RUNSTREAM_CHECKPOINT_RETENTION) must be at least 1m, or 0 to keep every run's checkpoint, got 5s"},
		{[]string{"lake", "--lake-url", "/tmp"}, map[string]string{"RUNSTREAM_KAFKA_BROKERS": "127.0.0.1:1", "RUNSTREAM_POSTGRES_URL": "postgres://x", "RUNSTREAM_LAKE_SCHEMA": "Lake"}, "--lake-schema (RUNSTREAM_LAKE_SCHEMA)"},
		{[]string{"dev", "--snapshot-encoding", "zstd"}, nil, `--snapshot-encoding must be json or gzip, got "zstd" (RUNSTREAM_SNAPSHOT_ENCODING)`},
	} {
		var out testenv.Buffer
		err := run(context.Background(), tc.args, func(k string) string { return tc.env[k] }, &out, &out)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run %v: err = %v, want it to mention %q", tc.args, err, tc.want)
		}
	}
}

// TestRun_DevEndToEnd runs `runstream dev` in-process (real Postgres and
// Redis, the embedded broker): an append over HTTP reaches the topic, the
// process stops cleanly on cancel, and a restart with the same data dir
// still has the topic's records.
func TestRun_DevEndToEnd(t *testing.T) {
	_, schema := testenv.Postgres(t, 5)
	testenv.Redis(t)
	dir := t.TempDir()
	env := map[string]string{
		"RUNSTREAM_POSTGRES_URL": testenv.PostgresURLWithSchema(t, schema),
		"RUNSTREAM_REDIS_URL":    redisURL(t),
		"RUNSTREAM_HTTP_ADDR":    "127.0.0.1:0",
		"RUNSTREAM_BROKER_ADDR":  "127.0.0.1:0",
		"RUNSTREAM_DATA_DIR":     dir,
		"RUNSTREAM_LOG_LEVEL":    "warn",
	}
	id := workload.NewIdentity("tenant_a")

	base, broker, stop := startDev(t, env)
	ev := workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil)
	body, _ := json.Marshal(ev)
	resp, err := http.Post(base+"/v1/events", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("append through dev: %d", resp.StatusCode)
	}
	if got := readTopic(t, broker, 1); got[0] != id.RunID {
		t.Fatalf("topic has key %q, want %q", got[0], id.RunID)
	}
	// The projector inside dev writes the Redis snapshot the API serves.
	testenv.WaitUntil(t, 20*time.Second, func() error {
		r, err := http.Get(base + "/v1/runs/" + id.RunID + "/snapshot")
		if err != nil {
			return err
		}
		defer r.Body.Close()
		var s store.RunSnapshot
		if err := json.NewDecoder(r.Body).Decode(&s); err != nil || r.StatusCode != 200 {
			return fmt.Errorf("snapshot: %d %v", r.StatusCode, err)
		}
		// From Redis: the store would answer before the projector did.
		if src := r.Header.Get("X-Runstream-Snapshot-Source"); src != "redis" {
			return fmt.Errorf("snapshot answered from %q, want redis (the projector's)", src)
		}
		if s.LastEventSeq != 1 || s.Status != store.RunRunning {
			return fmt.Errorf("snapshot %+v, want RUNNING at 1", s)
		}
		return nil
	})
	// Lag, from the CLI and the API, for the projector's group.
	testenv.WaitUntil(t, 20*time.Second, func() error {
		var out testenv.Buffer
		if err := run(context.Background(), []string{"lag", "--kafka-brokers", broker, "--json"}, func(string) string { return "" }, &out, &out); err != nil {
			return err
		}
		var rep struct {
			Group      string
			State      string
			Partitions []struct{ Committed, End, Lag int64 }
		}
		if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
			return fmt.Errorf("lag --json: %v: %s", err, out.String())
		}
		committed := int64(0)
		for _, p := range rep.Partitions {
			committed += max(p.Committed, 0)
		}
		if rep.Group != "runstream-projector" || committed != 1 {
			return fmt.Errorf("lag report %+v; want the projector group with its 1 record committed", rep)
		}
		r, err := http.Get(base + "/v1/lag")
		if err != nil {
			return err
		}
		defer r.Body.Close()
		if r.StatusCode != 200 {
			return fmt.Errorf("GET /v1/lag: %d", r.StatusCode)
		}
		return nil
	})
	ready, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	ready.Body.Close()
	if ready.StatusCode != 200 {
		t.Fatalf("readyz of dev: %d", ready.StatusCode)
	}
	checkETL(t, broker, env["RUNSTREAM_POSTGRES_URL"], id.RunID)
	stop()

	_, broker, stop = startDev(t, env)
	defer stop()
	if got := readTopic(t, broker, 1); got[0] != id.RunID {
		t.Fatalf("after a restart with the same --data-dir the topic has %v; the record is lost", got)
	}
}

// TestRun_DevStopEndsTheDemoRuns: stopping `runstream dev --demo` (Ctrl-C,
// SIGTERM: its ctx ends) ends the demo's runs in flight with a
// RunCancelled before the API, relay and projector stop, so no run is
// left RUNNING, in the store or in its Redis snapshot.
func TestRun_DevStopEndsTheDemoRuns(t *testing.T) {
	pool, schema := testenv.Postgres(t, 5)
	rdb := testenv.Redis(t)
	env := map[string]string{
		"RUNSTREAM_POSTGRES_URL":     testenv.PostgresURLWithSchema(t, schema),
		"RUNSTREAM_REDIS_URL":        redisURL(t),
		"RUNSTREAM_HTTP_ADDR":        "127.0.0.1:0",
		"RUNSTREAM_BROKER_ADDR":      "127.0.0.1:0",
		"RUNSTREAM_DATA_DIR":         t.TempDir(),
		"RUNSTREAM_LOG_LEVEL":        "warn",
		"RUNSTREAM_DEMO":             "true",
		"RUNSTREAM_DEMO_RUNS":        "4",
		"RUNSTREAM_DEMO_EVENT_DELAY": "100ms",
	}
	ctx := context.Background()
	_, _, stop := startDev(t, env)
	runIDs := func() []string {
		rows, err := pool.Query(ctx, `SELECT run_id FROM runs`)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	testenv.WaitFor(t, 30*time.Second, "the demo's 4 runs in flight to be in the store", func() bool { return len(runIDs()) >= 4 })
	stop()

	st, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ids := runIDs()
	inRedis, _, err := snapshots.Load(ctx, rdb, ids)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, id := range ids {
			rdb.Del(context.Background(), snapshots.Key(id))
		}
	})
	ended := map[string]bool{store.RunCompleted: true, store.RunFailed: true, store.RunCancelled: true}
	cancelled := 0
	for _, id := range ids {
		s, err := st.ProjectSnapshot(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !ended[s.Status] {
			t.Errorf("run %s is %s in the store after dev stopped, want it ended", id, s.Status)
		}
		if s.Status == store.RunCancelled {
			cancelled++
		}
		if r, ok := inRedis[id]; !ok || r.Status != s.Status {
			t.Errorf("run %s: Redis snapshot %q (held: %v), want %s as in the store", id, r.Status, ok, s.Status)
		}
	}
	if cancelled == 0 {
		t.Errorf("none of the %d runs was cancelled: the stop found no run in flight?", len(ids))
	}
}

// checkETL runs `runstream etl` as a user would, against dev's broker and
// store: the run's row reaches its table (RUNNING, runSeq 1), and the
// command stops cleanly when cancelled.
func checkETL(t *testing.T, broker, storeURL, runID string) {
	t.Helper()
	etlPool, etlSchema := testenv.Postgres(t, 2)
	args := []string{"etl", "--kafka-brokers", broker, "--postgres-url", storeURL,
		"--etl-database-url", testenv.PostgresURL(t), "--etl-schema", etlSchema,
		"--group", "etl-" + etlSchema, "--http-addr", "127.0.0.1:0", "--log-level", "warn"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut testenv.Buffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, func(string) string { return "" }, &out, &errOut) }()
	testenv.WaitUntil(t, 30*time.Second, func() error {
		select {
		case err := <-done:
			t.Fatalf("etl exited early: %v\n%s", err, errOut.String())
		default:
		}
		var status string
		var seq int64
		err := etlPool.QueryRow(context.Background(), `SELECT status, last_event_seq FROM runs WHERE run_id = $1`, runID).Scan(&status, &seq)
		if err != nil {
			return fmt.Errorf("the ETL's runs row: %w", err)
		}
		if status != store.RunRunning || seq != 1 {
			return fmt.Errorf("the ETL's runs row: %s at %d, want RUNNING at 1", status, seq)
		}
		return nil
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("etl returned %v when stopped\n%s", err, errOut.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("etl did not stop within 20s of cancellation")
	}
}

func redisURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("RUNSTREAM_TEST_REDIS_URL")
	if u == "" {
		testenv.Missing(t, "RUNSTREAM_TEST_REDIS_URL")
	}
	return u
}

var addrRE = regexp.MustCompile(`HTTP API\s+(http://[0-9.:]+)`)
var brokerRE = regexp.MustCompile(`embedded \(kfake\) ([0-9.:]+)`)

// startDev runs `runstream dev` until stop is called; stop fails the test
// if run does not return nil within 20s.
func startDev(t *testing.T, env map[string]string) (base, broker string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut testenv.Buffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"dev"}, func(k string) string { return env[k] }, &out, &errOut) }()
	testenv.WaitFor(t, 30*time.Second, "dev to print where it listens", func() bool {
		select {
		case err := <-done:
			t.Fatalf("dev exited early: %v\n%s", err, errOut.String())
		default:
		}
		return addrRE.MatchString(out.String()) && brokerRE.MatchString(out.String())
	})
	base = addrRE.FindStringSubmatch(out.String())[1]
	broker = brokerRE.FindStringSubmatch(out.String())[1]
	var once sync.Once
	return base, broker, func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("dev returned %v on shutdown\n%s", err, errOut.String())
				}
			case <-time.After(20 * time.Second):
				t.Fatal("dev did not stop within 20s of cancellation")
			}
		})
	}
}

func readTopic(t *testing.T, broker string, n int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ConsumeTopics("run-events"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var keys []string
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for len(keys) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records from the topic", len(keys), n)
		}
		fs.EachRecord(func(r *kgo.Record) { keys = append(keys, string(r.Key)) })
	}
	return keys
}

func TestRun_RelayDLQListAndRetry(t *testing.T) {
	pool, schema := testenv.Postgres(t, 3)
	env := map[string]string{"RUNSTREAM_POSTGRES_URL": testenv.PostgresURLWithSchema(t, schema)}
	getenv := func(k string) string { return env[k] }
	var out testenv.Buffer
	if err := run(context.Background(), []string{"relay", "dlq", "list"}, getenv, &out, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "no dead letters") {
		t.Fatalf("empty list printed %q", out.String())
	}
	// Dead-letter one stored event by hand, as the relay would.
	ctx := context.Background()
	ev := workload.Event(workload.NewIdentity("tenant_a"), store.EventRunStarted, "", 1, 1, time.Now(), nil)
	if _, err := pool.Exec(ctx, `SELECT runstream_append($1,$2,$3,$4,$5,$6,$7,$8,$9,NULL,1,1,$10,NULL,0)`,
		ev.RunID, ev.TenantID, ev.ProjectID, ev.EnvironmentID, ev.PlanID, ev.PlanVersion, ev.EventID,
		ev.EventType, ev.IdempotencyKey, ev.EmittedAt); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `WITH m AS (DELETE FROM outbox RETURNING id, shard, run_id, run_seq, created_at)
		INSERT INTO outbox_dead_letters (id, shard, run_id, run_seq, created_at, attempts, last_error)
		SELECT id, shard, run_id, run_seq, created_at, 8, 'INVALID_RECORD' FROM m`); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := run(ctx, []string{"relay", "dlq", "list", "--json"}, getenv, &out, &out); err != nil {
		t.Fatal(err)
	}
	var dls []struct {
		ID        int64  `json:"id"`
		RunID     string `json:"runId"`
		EventType string `json:"eventType"`
		LastError string `json:"lastError"`
	}
	if err := json.Unmarshal([]byte(out.String()), &dls); err != nil || len(dls) != 1 || dls[0].RunID != ev.RunID || dls[0].EventType != "RunStarted" {
		t.Fatalf("dlq list --json = %s (%v)", out.String(), err)
	}
	out.Reset()
	if err := run(ctx, []string{"relay", "dlq", "retry", "--all", "--error-code", "INVALID_RECORD"}, getenv, &out, &out); err == nil {
		t.Fatal("dlq retry with two selections was accepted")
	}
	out.Reset()
	if err := run(ctx, []string{"relay", "dlq", "retry", "--error-code", "INVALID_RECORD", "--reason", "schema fixed"}, getenv, &out, &out); err != nil || !strings.Contains(out.String(), "moved 1") {
		t.Fatalf("dlq retry --error-code: %v %s", err, out.String())
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE run_id = $1`, ev.RunID).Scan(&n); err != nil || n != 1 {
		t.Fatalf("outbox rows after retry: %d, %v", n, err)
	}
	// The retry is in the audit log, by the OS user and host.
	var actor, action, target, reason string
	var count int64
	if err := pool.QueryRow(ctx, `SELECT actor, action, target, count, reason FROM operator_actions ORDER BY id DESC LIMIT 1`).Scan(&actor, &action, &target, &count, &reason); err != nil ||
		!strings.HasPrefix(actor, "cli ") || action != "dead-letters.retry" || target != "dead letters with error INVALID_RECORD" || count != 1 || reason != "schema fixed" {
		t.Fatalf("the audit log after a CLI retry: %q %q %q %d %q (%v)", actor, action, target, count, reason, err)
	}
}

func TestRun_Rebuild(t *testing.T) {
	pool, schema := testenv.Postgres(t, 5)
	rdb := testenv.Redis(t)
	env := map[string]string{"RUNSTREAM_POSTGRES_URL": testenv.PostgresURLWithSchema(t, schema), "RUNSTREAM_REDIS_URL": redisURL(t)}
	getenv := func(k string) string { return env[k] }
	ctx := context.Background()
	var out testenv.Buffer
	if err := run(ctx, []string{"migrate"}, getenv, &out, &out); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 3 {
		id := workload.NewIdentity("tenant_a")
		ev := workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil)
		if _, err := pool.Exec(ctx, `SELECT runstream_append($1,$2,$3,$4,$5,$6,$7,$8,$9,NULL,1,1,$10,NULL,0)`,
			ev.RunID, ev.TenantID, ev.ProjectID, ev.EnvironmentID, ev.PlanID, ev.PlanVersion, ev.EventID,
			ev.EventType, ev.IdempotencyKey, ev.EmittedAt); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id.RunID)
	}
	if err := run(ctx, []string{"rebuild", "--run", ids[0]}, getenv, &out, &out); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.Exists(ctx, "runstream:run:{"+ids[0]+"}", "runstream:run:{"+ids[1]+"}").Result(); n != 1 {
		t.Fatalf("rebuild --run wrote %d snapshots, want 1", n)
	}
	out.Reset()
	if err := run(ctx, []string{"rebuild", "--all"}, getenv, &out, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "rebuilt 2 of 3 runs; skipped: 1 already current in Redis\n") || !strings.Contains(out.String(), "100%") {
		t.Fatalf("rebuild --all printed %q; want a progress bar and 2 of 3 rebuilt, 1 skipped as current", out.String())
	}
	// Nothing to write: it says so, and why.
	out.Reset()
	if err := run(ctx, []string{"rebuild", "--all"}, getenv, &out, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "rebuilt 0 of 3 runs; skipped: 3 already current in Redis\n") {
		t.Fatalf("rebuild --all again printed %q; want 0 of 3 rebuilt, 3 skipped as current", out.String())
	}
	// Each rebuild is in the audit log of operator actions.
	var rebuilds, resyncs int
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE action = 'rebuild.start' AND count = 3 AND actor LIKE 'cli %'),
		count(*) FILTER (WHERE action = 'run.resync') FROM operator_actions`).Scan(&rebuilds, &resyncs); err != nil || rebuilds != 2 || resyncs != 1 {
		t.Fatalf("the audit log after two rebuilds --all and one --run: %d rebuilds, %d resyncs (%v)", rebuilds, resyncs, err)
	}
	out.Reset()
	if err := run(ctx, []string{"rebuild", "--run", ids[0]}, getenv, &out, &out); err != nil || !strings.Contains(out.String(), "not written: Redis already holds a snapshot as new") {
		t.Fatalf("rebuild --run of a current run: %v, printed %q; want exit 0 saying Redis holds it", err, out.String())
	}
	err := run(ctx, []string{"rebuild", "--run", "no-such-run"}, getenv, &out, &out)
	if err == nil || exitCode(err) == 0 || !strings.Contains(err.Error(), `run "no-such-run": the store has no events of it`) {
		t.Fatalf("rebuild --run of an unknown run: %v; want a non-zero exit naming the run", err)
	}
	if err := run(ctx, []string{"rebuild"}, getenv, &out, &out); err == nil {
		t.Fatal("rebuild without --run or --all must fail")
	}
}

// TestAPI_RefusesAnOpenAddressWithoutTokens: without tokens the API is a
// development server; listening beyond loopback needs --insecure-no-auth.
func TestAPI_RefusesAnOpenAddressWithoutTokens(t *testing.T) {
	for _, cmd := range []string{"api", "dev"} {
		for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.10:8080"} {
			var out testenv.Buffer
			err := run(context.Background(), []string{cmd, "--http-addr", addr, "--postgres-url", "postgres://nobody@127.0.0.1:1/x"},
				func(string) string { return "" }, &out, &out)
			if err == nil || !strings.Contains(err.Error(), "--insecure-no-auth") || !strings.Contains(err.Error(), "RUNSTREAM_AUTH_TOKENS") {
				t.Errorf("%s --http-addr %s without tokens: %v, want a refusal naming --insecure-no-auth and RUNSTREAM_AUTH_TOKENS", cmd, addr, err)
			}
		}
	}
	// With the override, or tokens, or a loopback address, the address is
	// accepted (and the start fails later, on the unreachable Postgres).
	for _, args := range [][]string{
		{"api", "--http-addr", "0.0.0.0:0", "--insecure-no-auth"},
		{"api", "--http-addr", "0.0.0.0:0", "--auth-tokens", "t:tenant_a"},
		{"api", "--http-addr", "127.0.0.1:0"},
		{"api", "--http-addr", "localhost:0"},
	} {
		var out testenv.Buffer
		err := run(context.Background(), append(args, "--postgres-url", "postgres://nobody@127.0.0.1:1/x"),
			func(string) string { return "" }, &out, &out)
		if err == nil || strings.Contains(err.Error(), "--insecure-no-auth") {
			t.Errorf("%v: %v, want the start to get past the address check", args, err)
		}
	}
}

// TestWarnNoAuth_RepeatsUntilStopped: without tokens the API says so at
// start and again every interval; with tokens it says nothing.
func TestWarnNoAuth_RepeatsUntilStopped(t *testing.T) {
	var buf testenv.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 130*time.Millisecond)
	defer cancel()
	warnNoAuth(ctx, log, httpapi.Config{Addr: "127.0.0.1:8080"}, 50*time.Millisecond)
	if n := strings.Count(buf.String(), "level=WARN msg=\"authentication is off"); n < 2 {
		t.Fatalf("%d warnings in 130 ms at one per 50 ms:\n%s", n, buf.String())
	}
	buf.Reset()
	warnNoAuth(context.Background(), log, httpapi.Config{AuthTokens: map[string]string{"t": "a"}}, time.Millisecond)
	if buf.String() != "" {
		t.Fatalf("a warning with tokens configured: %s", buf.String())
	}
}
