package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

type env struct {
	url   string
	reg   *prometheus.Registry
	redis *redis.Client
	srv   *httpapi.Server
}

func newEnv(t *testing.T, cfg httpapi.Config) *env {
	t.Helper()
	pool := migratedPool(t, 20)
	return newEnvOn(t, cfg, pool, testenv.Redis(t))
}

// migratedPool is a test schema of its own (testenv.Postgres) with
// runstream's migrations applied.
func migratedPool(t *testing.T, conns int32) *pgxpool.Pool {
	t.Helper()
	pool, _ := testenv.Postgres(t, conns)
	if _, err := postgres.Migrate(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	return pool
}

func newEnvOn(t *testing.T, cfg httpapi.Config, pool *pgxpool.Pool, rdb *redis.Client) *env {
	t.Helper()
	reg := prometheus.NewRegistry()
	st, err := postgres.New(pool, postgres.Config{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Registerer, cfg.Gatherer = reg, reg
	var rc redis.UniversalClient
	if rdb != nil {
		rc = rdb
	}
	srv, err := httpapi.New(cfg, st, rc)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(srv.Close) // runs after ts.Close: ends streams, stops the hub
	t.Cleanup(ts.Close)
	return &env{url: ts.URL, reg: reg, redis: rdb, srv: srv}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) errBody(t *testing.T) (code, field, msg string) {
	t.Helper()
	var b struct {
		Error struct{ Code, Field, Message string } `json:"error"`
	}
	if err := json.Unmarshal(r.body, &b); err != nil {
		t.Fatalf("error body %q is not JSON: %v", r.body, err)
	}
	return b.Error.Code, b.Error.Field, b.Error.Message
}

func do(t *testing.T, method, url, token string, body []byte) response {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, b}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestAppend_CreatedThenDuplicate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{})
	ev := workload.Event(workload.NewIdentity("tenant_a"), store.EventRunStarted, "", 1, 1, time.Now(), nil)
	r := do(t, "POST", e.url+"/v1/events", "", mustJSON(t, ev))
	if r.status != 201 {
		t.Fatalf("first append: %d %s, want 201", r.status, r.body)
	}
	var first store.AppendResult
	_ = json.Unmarshal(r.body, &first)
	if !first.Persisted || first.Idempotent || first.RunSeq != 1 || first.EventID != ev.EventID {
		t.Fatalf("first append result %+v", first)
	}
	ev2 := ev
	ev2.EventID = workload.Event(workload.NewIdentity("x"), "X", "", 1, 1, time.Now(), nil).EventID
	r = do(t, "POST", e.url+"/v1/events", "", mustJSON(t, ev2))
	var dup store.AppendResult
	_ = json.Unmarshal(r.body, &dup)
	if r.status != 200 || !dup.Idempotent || dup.Persisted || dup.EventID != first.EventID || dup.RunSeq != 1 || dup.PersistedAt != first.PersistedAt {
		t.Fatalf("duplicate append: %d %+v; want 200 with the first row's metadata %+v", r.status, dup, first)
	}
	if got := counterValue(t, e.reg, "runstream_store_appends_total", "duplicate_differs"); got != 1 {
		t.Fatalf("duplicate_differs counter = %v, want 1 (the duplicate carried another eventId)", got)
	}
}

// counterValue sums the series of counter name in reg whose labels
// include labelValue ("" for all).
func counterValue(t *testing.T, reg *prometheus.Registry, name, labelValue string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := labelValue == ""
			for _, lp := range m.GetLabel() {
				match = match || lp.GetValue() == labelValue
			}
			if match {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// TestAppend_BadInput checks every kind of bad input gets 400
// SCHEMA_VALIDATION_FAILED naming the field, and stores nothing.
func TestAppend_BadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{MaxBodyBytes: 4096})
	id := workload.NewIdentity("tenant_a")
	valid := func() map[string]any {
		var m map[string]any
		_ = json.Unmarshal(mustJSON(t, workload.Event(id, store.EventStepStarted, "s1", 1, 1, time.Now(), nil)), &m)
		return m
	}
	with := func(k string, v any) []byte {
		m := valid()
		m[k] = v
		return mustJSON(t, m)
	}
	without := func(k string) []byte {
		m := valid()
		delete(m, k)
		return mustJSON(t, m)
	}
	runEv := func(mut func(*store.RunEventWrite)) []byte {
		w := workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil)
		mut(&w)
		return mustJSON(t, w)
	}
	for _, tc := range []struct {
		name      string
		body      []byte
		status    int
		code      string
		field     string
		msgSubstr string
	}{
		{"malformed JSON", []byte(`{"eventId": `), 400, "SCHEMA_VALIDATION_FAILED", "", ""},
		{"not an object", []byte(`[1,2]`), 400, "SCHEMA_VALIDATION_FAILED", "", ""},
		{"missing runId", without("runId"), 400, "SCHEMA_VALIDATION_FAILED", "runId", ""},
		{"mistyped attempt", with("engineAttemptId", "1"), 400, "SCHEMA_VALIDATION_FAILED", "engineAttemptId", ""},
		{"attempt zero", with("logicalAttemptId", 0), 400, "SCHEMA_VALIDATION_FAILED", "logicalAttemptId", ""},
		{"attempt fractional", with("engineAttemptId", 1.5), 400, "SCHEMA_VALIDATION_FAILED", "engineAttemptId", ""},
		{"eventId not v4", with("eventId", "6ba7b810-9dad-11d1-80b4-00c04fd430c8"), 400, "SCHEMA_VALIDATION_FAILED", "eventId", ""},
		{"emittedAt not RFC 3339", with("emittedAt", "16/02/2026 10:00"), 400, "SCHEMA_VALIDATION_FAILED", "emittedAt", ""},
		{"pipe in an identifier", with("projectId", "a|b"), 400, "SCHEMA_VALIDATION_FAILED", "projectId", "|"},
		{"stepId on a run event", runEv(func(w *store.RunEventWrite) { w.StepID = "s1" }), 400, "SCHEMA_VALIDATION_FAILED", "stepId", ""},
		{"step event without stepId", without("stepId"), 400, "SCHEMA_VALIDATION_FAILED", "stepId", ""},
		{"camelCase on prefix", runEv(func(w *store.RunEventWrite) { w.EventType = "onRunStarted" }), 400, "SCHEMA_VALIDATION_FAILED", "eventType", "RunStarted"},
		{"wrong key", with("idempotencyKey", strings.Repeat("ab", 32)), 400, "SCHEMA_VALIDATION_FAILED", "idempotencyKey", "SHA256"},
		{"payload over the limit", with("payload", map[string]any{"blob": strings.Repeat("x", 5000)}), 413, "PAYLOAD_TOO_LARGE", "", "bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, "POST", e.url+"/v1/events", "", tc.body)
			code, field, msg := r.errBody(t)
			if r.status != tc.status || code != tc.code || (tc.field != "" && field != tc.field) || !strings.Contains(msg, tc.msgSubstr) {
				t.Fatalf("got %d %s field=%q msg=%q; want %d %s field=%q msg containing %q", r.status, code, field, msg, tc.status, tc.code, tc.field, tc.msgSubstr)
			}
			if msg == "" {
				t.Fatal("an error must carry a message a producer can act on")
			}
		})
	}
	if key := "wrong key"; true {
		r := do(t, "POST", e.url+"/v1/events", "", with("idempotencyKey", strings.Repeat("ab", 32)))
		_, _, msg := r.errBody(t)
		want := workload.Event(id, store.EventStepStarted, "s1", 1, 1, time.Now(), nil).IdempotencyKey
		if !strings.Contains(msg, want) {
			t.Fatalf("%s: message %q does not name the expected key %s", key, msg, want)
		}
	}
	r := do(t, "GET", e.url+"/v1/runs/"+id.RunID+"/events", "", nil)
	if r.status != 404 {
		t.Fatalf("after only bad appends the run must not exist; GET events = %d %s", r.status, r.body)
	}
}

func TestAppend_UnknownFieldsIgnoredAndCounted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{})
	id := workload.NewIdentity("tenant_a")
	var m map[string]any
	_ = json.Unmarshal(mustJSON(t, workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil)), &m)
	m["occurredAt"] = "2026-02-16T10:00:00Z"
	m["producerVersion"] = "9.9"
	r := do(t, "POST", e.url+"/v1/events", "", mustJSON(t, m))
	if r.status != 201 {
		t.Fatalf("append with unknown fields: %d %s; want 201 (ignored, not refused)", r.status, r.body)
	}
	r = do(t, "GET", e.url+"/v1/runs/"+id.RunID+"/events", "", nil)
	if bytes.Contains(r.body, []byte("occurredAt")) || bytes.Contains(r.body, []byte("producerVersion")) {
		t.Fatalf("unknown fields were stored: %s", r.body)
	}
	if got := counterValue(t, e.reg, "runstream_api_ignored_fields_total", ""); got != 2 {
		t.Fatalf("ignored fields counter = %v, want 2", got)
	}
}

func TestAuth_TenantScoping(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{AuthTokens: map[string]string{"tok-a": "tenant_a", "tok-b": "tenant_b"}})
	a := workload.NewIdentity("tenant_a")
	ev := mustJSON(t, workload.Event(a, store.EventRunStarted, "", 1, 1, time.Now(), nil))

	if r := do(t, "POST", e.url+"/v1/events", "", ev); r.status != 401 {
		t.Fatalf("no token: %d, want 401", r.status)
	} else if r.header.Get("WWW-Authenticate") == "" {
		t.Fatal("401 without WWW-Authenticate")
	}
	if r := do(t, "POST", e.url+"/v1/events", "nope", ev); r.status != 401 {
		t.Fatalf("unknown token: %d, want 401", r.status)
	}
	if r := do(t, "POST", e.url+"/v1/events", "tok-b", ev); r.status != 403 {
		t.Fatalf("tenant_b appending for tenant_a: %d %s, want 403", r.status, r.body)
	} else if code, field, _ := r.errBody(t); code != "FORBIDDEN" || field != "tenantId" {
		t.Fatalf("got %s/%s, want FORBIDDEN/tenantId", code, field)
	}
	if r := do(t, "POST", e.url+"/v1/events", "tok-a", ev); r.status != 201 {
		t.Fatalf("tenant_a appending its own: %d %s", r.status, r.body)
	}
	for _, path := range []string{"/events", "/snapshot?consistent=true"} {
		if r := do(t, "GET", e.url+"/v1/runs/"+a.RunID+path, "tok-b", nil); r.status != 404 {
			t.Fatalf("tenant_b reading tenant_a's run %s: %d, want 404 as if it did not exist", path, r.status)
		}
		if r := do(t, "GET", e.url+"/v1/runs/"+a.RunID+path, "tok-a", nil); r.status != 200 {
			t.Fatalf("tenant_a reading its run %s: %d %s", path, r.status, r.body)
		}
	}
	// A Redis snapshot of tenant_a's run is not shown to tenant_b either.
	e.redis.Set(context.Background(), snapshots.Key(a.RunID), `{"runId":"`+a.RunID+`","tenantId":"tenant_a","lastEventSeq":1}`, time.Minute)
	if r := do(t, "GET", e.url+"/v1/runs/"+a.RunID+"/snapshot", "tok-b", nil); r.status != 404 {
		t.Fatalf("tenant_b reading tenant_a's Redis snapshot: %d, want 404", r.status)
	}
	// Health and metrics need no token.
	if r := do(t, "GET", e.url+"/healthz", "", nil); r.status != 200 {
		t.Fatalf("healthz: %d", r.status)
	}
}

func TestBatch_PerItemResults(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{})
	id := workload.NewIdentity("tenant_a")
	bad := workload.Event(id, store.EventStepStarted, "s1", 1, 1, time.Now(), nil)
	bad.IdempotencyKey = strings.Repeat("0", 64)
	body := mustJSON(t, map[string]any{"events": []any{
		workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil),
		bad,
		workload.Event(id, store.EventStepStarted, "s1", 1, 1, time.Now(), nil),
		json.RawMessage(`{"eventId": 5}`),
	}})
	r := do(t, "POST", e.url+"/v1/events:batch", "", body)
	if r.status != 200 {
		t.Fatalf("batch: %d %s", r.status, r.body)
	}
	var out struct {
		Results []struct {
			RunSeq     int64 `json:"runSeq"`
			Idempotent bool  `json:"idempotent"`
			Error      *struct{ Code, Field string }
		} `json:"results"`
	}
	if err := json.Unmarshal(r.body, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Results) != 4 {
		t.Fatalf("%d results for 4 events: %s", len(out.Results), r.body)
	}
	if out.Results[0].Error != nil || out.Results[0].RunSeq != 1 || out.Results[2].Error != nil || out.Results[2].RunSeq != 2 {
		t.Fatalf("valid items: %s", r.body)
	}
	if out.Results[1].Error == nil || out.Results[1].Error.Field != "events[1].idempotencyKey" {
		t.Fatalf("bad key item: %s; want an error on events[1].idempotencyKey", r.body)
	}
	if out.Results[3].Error == nil || !strings.HasPrefix(out.Results[3].Error.Field, "events[3]") {
		t.Fatalf("malformed item: %s", r.body)
	}
	for _, tc := range []struct{ body, field string }{
		{`{"events": []}`, "events"},
		{`{}`, "events"},
		{`nope`, "body"},
	} {
		r := do(t, "POST", e.url+"/v1/events:batch", "", []byte(tc.body))
		if code, field, _ := r.errBody(t); r.status != 400 || code != "SCHEMA_VALIDATION_FAILED" || field != tc.field {
			t.Errorf("batch %s: %d %s/%s", tc.body, r.status, code, field)
		}
	}
}

func TestFetchEvents_PagingAndParams(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{})
	id := workload.NewIdentity("tenant_a")
	var evs []any
	for i := range 12 {
		evs = append(evs, workload.Event(id, store.EventStepStarted, fmt.Sprintf("s%02d", i), 1, 1, time.Now(), nil))
	}
	if r := do(t, "POST", e.url+"/v1/events:batch", "", mustJSON(t, map[string]any{"events": evs})); r.status != 200 {
		t.Fatal(r.status)
	}
	r := do(t, "GET", e.url+"/v1/runs/"+id.RunID+"/events?afterSeq=5&limit=4", "", nil)
	var out struct{ Events []store.RunEventRecord }
	if err := json.Unmarshal(r.body, &out); err != nil || r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if len(out.Events) != 4 || out.Events[0].RunSeq != 6 || out.Events[3].RunSeq != 9 {
		t.Fatalf("afterSeq=5&limit=4 returned %+v", out.Events)
	}
	r = do(t, "GET", e.url+"/v1/runs/"+id.RunID+"/events?afterSeq=12", "", nil)
	if r.status != 200 || !bytes.Contains(r.body, []byte(`"events":[]`)) {
		t.Fatalf("past the end: %d %s; want 200 with an empty list", r.status, r.body)
	}
	for _, q := range []string{"afterSeq=-1", "limit=0", "limit=abc", "limit=5000", "afterSeq=1.5"} {
		r := do(t, "GET", e.url+"/v1/runs/"+id.RunID+"/events?"+q, "", nil)
		if code, _, _ := r.errBody(t); r.status != 400 || code != "SCHEMA_VALIDATION_FAILED" {
			t.Errorf("%s: %d %s, want 400", q, r.status, code)
		}
	}
	if r := do(t, "GET", e.url+"/v1/runs/nope/events", "", nil); r.status != 404 {
		t.Errorf("unknown run: %d", r.status)
	}
	if r := do(t, "GET", e.url+"/v1/nothing", "", nil); r.status != 404 {
		t.Errorf("unknown path: %d", r.status)
	} else if code, _, _ := r.errBody(t); code != "NOT_FOUND" {
		t.Errorf("unknown path code %s", code)
	}
}

func TestSnapshot_RedisAndConsistent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{})
	id := workload.NewIdentity("tenant_a")
	for _, ev := range []store.RunEventWrite{
		workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil),
		workload.Event(id, store.EventStepStarted, "s1", 1, 1, time.Now(), nil),
	} {
		if r := do(t, "POST", e.url+"/v1/events", "", mustJSON(t, ev)); r.status != 201 {
			t.Fatal(r.status)
		}
	}
	if r := do(t, "GET", e.url+"/v1/runs/"+id.RunID+"/snapshot", "", nil); r.status != 200 || r.header.Get("X-Runstream-Snapshot-Source") != "store" {
		t.Fatalf("no Redis snapshot yet: %d from %q, want 200 from the store", r.status, r.header.Get("X-Runstream-Snapshot-Source"))
	}
	r := do(t, "GET", e.url+"/v1/runs/"+id.RunID+"/snapshot?consistent=true", "", nil)
	var snap store.RunSnapshot
	if err := json.Unmarshal(r.body, &snap); err != nil || r.status != 200 || r.header.Get("X-Runstream-Snapshot-Source") != "store" {
		t.Fatalf("consistent: %d %s (source %q)", r.status, r.body, r.header.Get("X-Runstream-Snapshot-Source"))
	}
	if snap.LastEventSeq != 2 || snap.Status != store.RunRunning || len(snap.Steps) != 1 || r.header.Get("ETag") != `"2"` {
		t.Fatalf("consistent snapshot %+v etag %s", snap, r.header.Get("ETag"))
	}
	stored := `{"runId":"` + id.RunID + `","tenantId":"tenant_a","status":"RUNNING","lastEventSeq":7,"stale":true,"futureField":1}`
	e.redis.Set(context.Background(), snapshots.Key(id.RunID), stored, time.Minute)
	r = do(t, "GET", e.url+"/v1/runs/"+id.RunID+"/snapshot", "", nil)
	if r.status != 200 || string(r.body) != stored || r.header.Get("X-Runstream-Snapshot-Source") != "redis" {
		t.Fatalf("Redis snapshot: %d %s (source %q); want it as stored, from redis", r.status, r.body, r.header.Get("X-Runstream-Snapshot-Source"))
	}
	tag := r.header.Get("ETag")
	if tag != `"7-stale"` {
		t.Fatalf("ETag %q, want \"7-stale\"", tag)
	}
	req, _ := http.NewRequest("GET", e.url+"/v1/runs/"+id.RunID+"/snapshot", nil)
	req.Header.Set("If-None-Match", tag)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 304 {
		t.Fatalf("If-None-Match with the current ETag: %d, want 304", resp.StatusCode)
	}
	if r := do(t, "GET", e.url+"/v1/runs/"+id.RunID+"/snapshot?consistent=maybe", "", nil); r.status != 400 {
		t.Fatalf("consistent=maybe: %d, want 400", r.status)
	}
}

func TestPostgresDown_503WithRetryAfter(t *testing.T) {
	t.Parallel()
	pool, err := pgxpool.New(context.Background(), "postgres://runstream:runstream@127.0.0.1:1/x?sslmode=disable&connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	e := newEnvOn(t, httpapi.Config{}, pool, nil)
	ev := workload.Event(workload.NewIdentity("tenant_a"), store.EventRunStarted, "", 1, 1, time.Now(), nil)
	for _, c := range []struct {
		method, path string
		body         []byte
	}{
		{"POST", "/v1/events", mustJSON(t, ev)},
		{"POST", "/v1/events:batch", mustJSON(t, map[string]any{"events": []any{ev}})},
		{"GET", "/v1/runs/" + ev.RunID + "/events", nil},
	} {
		r := do(t, c.method, e.url+c.path, "", c.body)
		code, _, msg := r.errBody(t)
		if r.status != 503 || code != "UNAVAILABLE" || r.header.Get("Retry-After") == "" {
			t.Fatalf("%s %s with Postgres down: %d %s (Retry-After %q); want 503 UNAVAILABLE with Retry-After", c.method, c.path, r.status, code, r.header.Get("Retry-After"))
		}
		if strings.Contains(msg, "127.0.0.1:1") || strings.Contains(msg, "dial") {
			t.Fatalf("the cause leaked to the client: %q", msg)
		}
	}
}

func TestReadyz_ReflectsDependencies(t *testing.T) {
	t.Parallel()
	pool := migratedPool(t, 5)
	st, _ := postgres.New(pool, postgres.Config{})
	broken := httpapi.Check{Name: "kafka", Fn: func(context.Context) error { return fmt.Errorf("no brokers") }}
	for _, tc := range []struct {
		checks []httpapi.Check
		want   int
	}{{nil, 200}, {[]httpapi.Check{broken}, 503}} {
		srv, err := httpapi.New(httpapi.Config{}, st, testenv.Redis(t), tc.checks...)
		if err != nil {
			t.Fatal(err)
		}
		addr, stop := startServing(t, srv)
		r := do(t, "GET", "http://"+addr+"/readyz", "", nil)
		if err := stop(); err != nil {
			t.Fatalf("Serve returned %v on shutdown", err)
		}
		if r.status != tc.want {
			t.Fatalf("readyz with %d extra checks: %d %s, want %d", len(tc.checks), r.status, r.body, tc.want)
		}
	}
}
