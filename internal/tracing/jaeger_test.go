package tracing_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runstream/runstream/internal/devbroker"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
)

// The traces of one append, end to end, through the real binaries and a
// real Jaeger: the API's server span continues the caller's traceparent;
// the relay's send span links to it; the projector (run with
// --trace-consumer=parent) processes the record inside the append's
// trace, with its Redis write as a child; the ETL (the default, link)
// processes it in a trace of its own linked to the append, with its
// Postgres transaction as a child. Everything is read back from Jaeger's
// query API, as an operator's UI would.
func TestTracing_OneAppendThroughEveryHop(t *testing.T) {
	if testing.Short() {
		t.Skip("runs five processes")
	}
	j := testenv.StartJaeger(t)
	bin, pgURL, redisURL := components(t)
	broker, err := devbroker.Start(devbroker.Config{Addr: testenv.FreeAddr(t), Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(broker.Close)
	brokers := strings.Join(broker.Addrs(), ",")
	topic := "traced-" + testenv.RandomID(4)
	etlSchema := "t_etl_" + testenv.RandomID(4)
	t.Cleanup(func() { dropSchema(t, etlSchema) })

	env := append(childEnv(), "OTEL_EXPORTER_OTLP_ENDPOINT="+j.OTLPEndpoint(), "OTEL_BSP_SCHEDULE_DELAY=100")
	apiAddr := testenv.FreeAddr(t)
	start(t, bin, "api", env, apiAddr, "--postgres-url="+pgURL, "--redis-url="+redisURL)
	start(t, bin, "relay", env, testenv.FreeAddr(t), "--postgres-url="+pgURL, "--kafka-brokers="+brokers, "--topic="+topic, "--partitions=2")
	start(t, bin, "projector", env, testenv.FreeAddr(t), "--postgres-url="+pgURL, "--redis-url="+redisURL, "--kafka-brokers="+brokers,
		"--topic="+topic, "--group=traced-projector", "--trace-consumer=parent")
	start(t, bin, "etl", env, testenv.FreeAddr(t), "--postgres-url="+pgURL, "--etl-database-url="+testenv.PostgresURL(t), "--etl-schema="+etlSchema,
		"--kafka-brokers="+brokers, "--topic="+topic, "--group=traced-etl")

	// The engine's own span: the append continues it.
	traceID, clientSpan := randomHex(16), randomHex(8)
	ev := workload.Event(workload.NewIdentity("tenant_traced"), store.EventRunStarted, "", 1, 1, time.Now(), nil)
	body, _ := json.Marshal(ev)
	req, _ := http.NewRequest("POST", "http://"+apiAddr+"/v1/events", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-"+clientSpan+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("append: %d %s", resp.StatusCode, answer)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	find := func(tr testenv.Trace, service, name string) *testenv.Span {
		for i := range tr.Spans {
			if s := &tr.Spans[i]; s.Service == service && s.Name == name {
				return s
			}
		}
		return nil
	}
	// The append's trace: its server span and the projector's work.
	tr, err := j.WaitTrace(ctx, traceID, func(tr testenv.Trace) bool {
		return find(tr, "runstream-api", "POST /v1/events") != nil && find(tr, "runstream-projector", "write snapshots") != nil
	})
	if err != nil {
		t.Fatalf("the append's trace in Jaeger: %v\nspans: %s", err, describe(tr))
	}
	server := find(tr, "runstream-api", "POST /v1/events")
	if server.Parent != clientSpan || server.Kind != "server" {
		t.Errorf("server span: parent %q kind %q, want the caller's span %s and server", server.Parent, server.Kind, clientSpan)
	}
	for k, v := range map[string]string{"runstream.run_id": ev.RunID, "http.response.status_code": "201", "http.route": "/v1/events", "runstream.run_seq": "1"} {
		if server.Attrs[k] != v {
			t.Errorf("server span attribute %s = %q, want %q", k, server.Attrs[k], v)
		}
	}
	process := find(tr, "runstream-projector", "process "+topic)
	write := find(tr, "runstream-projector", "write snapshots")
	switch {
	case process == nil:
		t.Errorf("no projector process span in the append's trace (--trace-consumer=parent)\nspans: %s", describe(tr))
	case process.Parent != server.SpanID || process.Kind != "consumer":
		t.Errorf("projector process span: parent %q kind %q, want the server span %s and consumer", process.Parent, process.Kind, server.SpanID)
	case write.Parent != process.SpanID || write.Attrs["db.system.name"] != "redis":
		t.Errorf("write snapshots: parent %q, db %q; want the process span's child on redis", write.Parent, write.Attrs["db.system.name"])
	}
	if process != nil {
		for k, v := range map[string]string{"messaging.system": "kafka", "messaging.operation.type": "process", "messaging.destination.name": topic,
			"messaging.consumer.group.name": "traced-projector", "messaging.kafka.message.key": ev.RunID, "messaging.message.id": ev.EventID} {
			if process.Attrs[k] != v {
				t.Errorf("projector process span attribute %s = %q, want %q", k, process.Attrs[k], v)
			}
		}
	}
	appendRef := testenv.SpanRef{TraceID: traceID, SpanID: server.SpanID}
	// The relay's send span, in a trace of its own, links to the append.
	linked := func(service, operation string) (testenv.Trace, *testenv.Span) {
		t.Helper()
		var seen []testenv.Trace
		for ctx.Err() == nil {
			trs, err := j.FindTraces(ctx, service, operation, nil, 50)
			if err != nil {
				t.Fatalf("finding %s's %q traces: %v", service, operation, err)
			}
			seen = trs
			for _, tr := range trs {
				for i := range tr.Spans {
					s := &tr.Spans[i]
					if s.Service == service && s.Name == operation && containsRef(s.Links, appendRef) {
						return tr, s
					}
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Fatalf("no %s span %q linked to the append's server span %v; traces seen: %d", service, operation, appendRef, len(seen))
		return testenv.Trace{}, nil
	}
	_, send := linked("runstream-relay", "send "+topic)
	if send.Kind != "producer" || send.Parent != "" || send.Attrs["messaging.operation.type"] != "send" {
		t.Errorf("relay send span: kind %q parent %q attributes %v", send.Kind, send.Parent, send.Attrs)
	}
	etlTrace, etlProcess := linked("runstream-etl", "process "+topic)
	if etlProcess.TraceID == traceID || etlProcess.Parent != "" {
		t.Errorf("etl process span: trace %s parent %q, want a trace of its own (link mode)", etlProcess.TraceID, etlProcess.Parent)
	}
	var tx *testenv.Span
	for i := range etlTrace.Spans {
		if s := &etlTrace.Spans[i]; s.Name == "checkpoint transaction" && s.Parent == etlProcess.SpanID {
			tx = s
		}
	}
	if tx == nil || tx.Attrs["db.system.name"] != "postgresql" {
		t.Errorf("etl: no Postgres checkpoint transaction under its process span: %s", describe(etlTrace))
	}
	t.Logf("the append's trace:%s\nthe relay's send span %s links to the server span; the ETL's trace:%s", describe(tr), send.SpanID, describe(etlTrace))
}

// A collector that never answers costs appends nothing: every append
// succeeds, and the spans that do not fit the queue are counted as
// dropped.
func TestTracing_AStuckCollectorNeverFailsAppends(t *testing.T) {
	bin, pgURL, redisURL := components(t)
	// Accepts connections and never answers them.
	stuck, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stuck.Close() })
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := stuck.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	env := append(childEnv(), "OTEL_EXPORTER_OTLP_ENDPOINT=http://"+stuck.Addr().String(),
		"OTEL_BSP_MAX_QUEUE_SIZE=8", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE=4", "OTEL_BSP_SCHEDULE_DELAY=50", "OTEL_BSP_EXPORT_TIMEOUT=600000")
	addr := testenv.FreeAddr(t)
	start(t, bin, "api", env, addr, "--postgres-url="+pgURL, "--redis-url="+redisURL)
	for i := range 40 {
		ev := workload.Event(workload.NewIdentity("tenant_stuck"), store.EventRunStarted, "", 1, 1, time.Now(), nil)
		body, _ := json.Marshal(ev)
		resp, err := http.Post("http://"+addr+"/v1/events", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("append %d with the collector stuck: %d %s", i, resp.StatusCode, answer)
		}
	}
	// 40 server spans; the exporter holds one batch of 4, the queue 8.
	dropped := regexp.MustCompile(`(?m)^runstream_tracing_spans_total\{outcome="dropped"\} (\d+)`)
	testenv.WaitUntil(t, 10*time.Second, func() error {
		m := dropped.FindStringSubmatch(get(t, "http://"+addr+"/metrics"))
		if m == nil {
			return fmt.Errorf("no runstream_tracing_spans_total{outcome=\"dropped\"} in /metrics")
		}
		if n, _ := strconv.Atoi(m[1]); n < 40-12 {
			return fmt.Errorf("%d spans counted as dropped, want at least %d", n, 40-12)
		}
		return nil
	})
}

// components returns the runstream binary, a Postgres URL of a fresh
// schema and the test Redis URL, for the components a test starts.
func components(t *testing.T) (bin, pgURL, redisURL string) {
	t.Helper()
	bin = testenv.BuildRunstream(t, t.TempDir())
	_, schema := testenv.Postgres(t, 2)
	pgURL = testenv.PostgresURLWithSchema(t, schema)
	if redisURL = os.Getenv("RUNSTREAM_TEST_REDIS_URL"); redisURL == "" {
		testenv.Missing(t, "RUNSTREAM_TEST_REDIS_URL")
	}
	return bin, pgURL, redisURL
}

func containsRef(refs []testenv.SpanRef, r testenv.SpanRef) bool {
	for _, x := range refs {
		if x == r {
			return true
		}
	}
	return false
}

func describe(tr testenv.Trace) string {
	var b strings.Builder
	for _, s := range tr.Spans {
		fmt.Fprintf(&b, "\n  %s %q span %s parent %q links %v", s.Service, s.Name, s.SpanID, s.Parent, s.Links)
	}
	return b.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// childEnv is the test's environment without RUNSTREAM_* and OTEL_*
// variables: the children are configured by their flags and what the
// test adds.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RUNSTREAM_") && !strings.HasPrefix(kv, "OTEL_") {
			env = append(env, kv)
		}
	}
	return env
}

// start runs `runstream <command> --http-addr=addr args...` until the test
// ends, and waits for its /readyz; its log is printed if the test fails.
func start(t *testing.T, bin, command string, env []string, addr string, args ...string) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), command+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{command, "--http-addr=" + addr, "--log-format=text"}, args...)...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		logFile.Close()
		if t.Failed() {
			t.Logf("%s's log:\n%s", command, testenv.Tail(logPath, 40))
		}
	})
	testenv.WaitUntil(t, 60*time.Second, func() error {
		select {
		case <-exited:
			t.Fatalf("%s exited while starting:\n%s", command, testenv.Tail(logPath, 40))
		default:
		}
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s /readyz: %d", command, resp.StatusCode)
		}
		return nil
	})
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func dropSchema(t *testing.T, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, testenv.PostgresURL(t))
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	_, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
}
