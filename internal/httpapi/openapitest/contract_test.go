package openapitest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	vErrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/internal/lag"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// The tokens of the contract run: two tenants and an operator.
var tokens = map[string]string{"tok-a": "tenant-a", "tok-b": "tenant-b", "tok-op": httpapi.OperatorTenant}

// newValidator parses the served document and checks it against the
// OpenAPI 3.1 specification itself.
func newValidator(t *testing.T, raw []byte) validator.Validator {
	t.Helper()
	doc, err := libopenapi.NewDocument(raw)
	if err != nil {
		t.Fatalf("openapi.json does not parse as OpenAPI: %v", err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("building the validator: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		for _, e := range verrs {
			t.Errorf("openapi.json breaks the OpenAPI 3.1 specification: %s: %s", e.Message, e.Reason)
			for _, se := range e.SchemaValidationErrors {
				t.Errorf("  at %s: %s", se.FieldPath+" "+se.KeywordLocation, se.Reason)
			}
		}
		t.FailNow()
	}
	return v
}

// server starts a real API on real Postgres and Redis, serving on a
// loopback port as `runstream api` does.
func server(t *testing.T, cfg httpapi.Config) string {
	t.Helper()
	u, _ := serverStore(t, cfg)
	return u
}

// serverStore is server, with the store it serves (to set up what no
// route creates, such as the relay's dead letters).
func serverStore(t *testing.T, cfg httpapi.Config) (string, *postgres.Store) {
	t.Helper()
	pool, _ := testenv.Postgres(t, 10)
	if _, err := postgres.Migrate(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	st, err := postgres.New(pool, postgres.Config{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Registerer, cfg.Gatherer = reg, reg
	srv, err := httpapi.New(cfg, st, testenv.Redis(t))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, started) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the API's shutdown: %v", err)
		}
	})
	select {
	case addr := <-started:
		return "http://" + addr, st
	case err := <-done:
		t.Fatalf("the API did not start: %v", err)
		return "", nil
	}
}

// call is one request of the contract run and the status it must get.
type call struct {
	method, path, token string
	body                any // marshalled to JSON unless a string or []byte
	contentType         string
	header              http.Header
	want                int
	// badRequest marks a request that breaks the document on purpose
	// (bad JSON, a reversed window): only its answer is validated.
	badRequest bool
}

// run sends c, checks its status, and validates the request and answer
// against the document. It returns the answer's body (the headers alone
// for a stream) and records the operation's status as covered.
func (h *harness) run(t *testing.T, c call) []byte {
	t.Helper()
	var body []byte
	switch b := c.body.(type) {
	case nil:
	case string:
		body = []byte(b)
	case []byte:
		body = b
	default:
		var err error
		if body, err = json.Marshal(b); err != nil {
			t.Fatal(err)
		}
	}
	newReq := func() *http.Request {
		req, err := http.NewRequest(c.method, h.url+c.path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body != nil {
			ct := c.contentType
			if ct == "" {
				ct = "application/json"
			}
			req.Header.Set("Content-Type", ct)
		}
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		for k, vs := range c.header {
			req.Header[k] = vs
		}
		return req
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(newReq().WithContext(ctx))
	if err != nil {
		t.Fatalf("%s %s: %v", c.method, c.path, err)
	}
	var got []byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") && c.method == http.MethodGet {
		// A stream: its first event is enough, then hang up.
		got = firstEvent(t, resp.Body)
		cancel()
	} else if got, err = io.ReadAll(resp.Body); err != nil {
		t.Fatalf("%s %s: reading the answer: %v", c.method, c.path, err)
	}
	resp.Body.Close()
	if resp.StatusCode != c.want {
		t.Fatalf("%s %s: status %d, want %d: %s", c.method, c.path, resp.StatusCode, c.want, got)
	}
	if c.method == http.MethodHead || (resp.StatusCode == http.StatusOK && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")) {
		got = nil // nothing the validator can read as a body
	}
	resp.Body = io.NopCloser(bytes.NewReader(got))
	req := newReq()
	var ok bool
	var verrs []*vErrors.ValidationError
	if c.badRequest {
		ok, verrs = h.v.ValidateHttpResponse(req, resp)
	} else {
		ok, verrs = h.v.ValidateHttpRequestResponse(req, resp)
	}
	if !ok {
		for _, e := range verrs {
			t.Errorf("%s %s → %d breaks openapi.json: %s: %s", c.method, c.path, resp.StatusCode, e.Message, e.Reason)
			for _, se := range e.SchemaValidationErrors {
				t.Errorf("  at %s: %s", se.FieldPath+" "+se.KeywordLocation, se.Reason)
			}
		}
		t.Fatalf("answer: %s", got)
	}
	h.covered[c.method+" "+templateOf(c.path)] = append(h.covered[c.method+" "+templateOf(c.path)], resp.StatusCode)
	return got
}

// firstEvent reads a stream up to the end of its first event or comment
// (a tenant's stream opens with one).
func firstEvent(t *testing.T, r io.Reader) []byte {
	t.Helper()
	var out bytes.Buffer
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		out.Write(sc.Bytes())
		out.WriteByte('\n')
		if sc.Text() == "" && out.Len() > 1 {
			return out.Bytes()
		}
	}
	t.Fatalf("the stream ended before its first event: %q (%v)", out.String(), sc.Err())
	return nil
}

type harness struct {
	url     string
	v       validator.Validator
	covered map[string][]int
}

// templateOf maps a request path onto the document's path template.
func templateOf(p string) string {
	p, _, _ = strings.Cut(p, "?")
	parts := strings.Split(p, "/")
	if len(parts) == 5 && parts[1] == "v1" && parts[2] == "runs" {
		parts[3] = "{runId}"
	}
	if len(parts) >= 4 && parts[1] == "v1" && (parts[2] == "dead-letters" && parts[3] != "retry" && parts[3] != "groups" || parts[2] == "rebuilds") {
		parts[3] = "{id}"
	}
	if len(parts) >= 5 && parts[1] == "v1" && parts[2] == "lag" && parts[3] == "groups" {
		parts[4] = "{group}"
	}
	return strings.Join(parts, "/")
}

func event(runID, tenant, typ, step string) store.RunEventWrite {
	id := workload.NewIdentity(tenant)
	id.RunID = runID
	return workload.Event(id, typ, step, 1, 1, time.Now(), nil)
}

// TestContract drives every documented operation of a real API, with the
// answers a client must be ready for, and validates each request and
// answer against the served document.
func TestContract(t *testing.T) {
	var lagCalls atomic.Int64 // /v1/lag/groups measures its groups at once
	apiURL, st := serverStore(t, httpapi.Config{AuthTokens: tokens, MaxBodyBytes: 64 << 10,
		Lag: func(ctx context.Context, group string) (lag.Report, error) {
			lagCalls.Add(1)
			m := lag.Member{MemberID: "kgo-1b2c", ClientID: "projector-a", InstanceID: "pod-a", Host: "/10.0.0.7"}
			return lag.Report{Group: group, Exists: true, State: "Stable", Members: 1, MemberDetails: []lag.Member{m}, At: time.Now(),
				Partitions: []lag.Partition{{Topic: "run-events", Partition: 0, Committed: 10, End: 12, Lag: 2, LagSeconds: 0.5,
					Member: m.ClientID, Owner: &m}}}, nil
		},
		ResetGroupOffsets: func(_ context.Context, group, topic string, to lag.ResetTo, apply bool) (lag.ResetPlan, error) {
			switch group {
			case "busy-sink":
				return lag.ResetPlan{}, &lag.GroupActiveError{Group: group, State: "Stable", Members: 2}
			case "day-sink":
				return lag.ResetPlan{Group: group, Topic: topic, To: to.String(), Applied: apply, Replay: 7,
					Partitions: []lag.ResetPartition{{Partition: 0, From: 10, To: 3, End: 12}}}, nil
			}
			return lag.ResetPlan{}, lag.ErrGroupNotFound
		},
		DeleteGroup: func(_ context.Context, group string) error {
			if group == "day-sink" {
				return nil
			}
			return lag.ErrGroupNotFound
		}})
	raw := mustGet(t, apiURL+"/openapi.json")
	if !bytes.Equal(raw, httpapi.OpenAPI) {
		t.Fatal("GET /openapi.json is not the embedded document")
	}
	h := &harness{url: apiURL, v: newValidator(t, raw), covered: map[string][]int{}}

	runID := fmt.Sprintf("contract-%d", time.Now().UnixNano())
	start := time.Now().UTC().Add(-time.Second).Format(time.RFC3339Nano)
	started := event(runID, "tenant-a", store.EventRunStarted, "")
	step := event(runID, "tenant-a", store.EventStepStarted, "build")

	// Appends.
	h.run(t, call{method: "POST", path: "/v1/events", token: "tok-a", body: started, want: 201})
	h.run(t, call{method: "POST", path: "/v1/events", token: "tok-a", body: started, want: 200})
	h.run(t, call{method: "POST", path: "/v1/events", token: "tok-a", body: `{"eventId": 1`, want: 400, badRequest: true})
	h.run(t, call{method: "POST", path: "/v1/events", body: started, want: 401})
	h.run(t, call{method: "POST", path: "/v1/events", token: "tok-b", body: event(runID+"-b", "tenant-a", store.EventRunStarted, ""), want: 403})
	h.run(t, call{method: "POST", path: "/v1/events", token: "tok-a", body: strings.Repeat(" ", 65<<10) + "{}", want: 413, badRequest: true})
	bad := event(runID, "tenant-a", store.EventStepCompleted, "build")
	bad.EventID = "not-a-uuid"
	res := h.run(t, call{method: "POST", path: "/v1/events:batch", token: "tok-a",
		body: map[string]any{"events": []any{step, bad}}, want: 200, badRequest: true})
	if !strings.Contains(string(res), `"field":"events[1].eventId"`) {
		t.Fatalf("the batch's bad item is not named: %s", res)
	}
	h.run(t, call{method: "POST", path: "/v1/events:batch", token: "tok-a", body: map[string]any{"events": []any{}}, want: 400, badRequest: true})

	// Reads of a run.
	base := "/v1/runs/" + runID
	h.run(t, call{method: "GET", path: base + "/events?afterSeq=0&limit=10", token: "tok-a", want: 200})
	h.run(t, call{method: "GET", path: base + "/events?limit=0", token: "tok-a", want: 400, badRequest: true})
	h.run(t, call{method: "GET", path: base + "/events", token: "tok-b", want: 404})
	// Redis holds no snapshot yet: the store answers.
	h.run(t, call{method: "GET", path: base + "/snapshot", token: "tok-a", want: 200})
	h.run(t, call{method: "GET", path: base + "/snapshot", token: "tok-a", header: http.Header{"If-None-Match": {`"2"`}}, want: 304})
	h.run(t, call{method: "GET", path: base + "/snapshot", token: "tok-b", want: 404})
	h.run(t, call{method: "GET", path: "/v1/runs/no-such-run/snapshot", token: "tok-a", want: 404})
	snap := h.run(t, call{method: "GET", path: base + "/snapshot?consistent=true", token: "tok-a", want: 200})
	var s store.RunSnapshot
	if err := json.Unmarshal(snap, &s); err != nil || s.LastEventSeq != 2 {
		t.Fatalf("consistent snapshot: %v %s", err, snap)
	}
	h.run(t, call{method: "GET", path: base + "/snapshot?consistent=true", token: "tok-a", header: http.Header{"If-None-Match": {`"2"`}}, want: 304})
	h.run(t, call{method: "GET", path: base + "/snapshot?consistent=maybe", token: "tok-a", want: 400, badRequest: true})

	// Repair, then the projected reads (resync writes the Redis snapshot).
	h.run(t, call{method: "POST", path: base + "/resync", token: "tok-a", want: 200})
	h.run(t, call{method: "POST", path: base + "/resync", token: "tok-op", body: map[string]any{"reason": "the contract run"}, want: 200})
	h.run(t, call{method: "POST", path: "/v1/runs/no-such-run/resync", token: "tok-op", want: 404})
	h.run(t, call{method: "GET", path: base + "/snapshot", token: "tok-a", want: 200})
	h.run(t, call{method: "GET", path: "/v1/runs?limit=5", token: "tok-a", want: 200})
	h.run(t, call{method: "GET", path: "/v1/runs?status=RUNNING&limit=5", token: "tok-a", want: 200})
	h.run(t, call{method: "GET", path: "/v1/runs?status=SLEEPING", token: "tok-a", want: 400, badRequest: true})
	// The catalog's search, sort and exact counts: the resynced run is
	// found by its runId prefix, sorted by startedAt within a range.
	found := h.run(t, call{method: "GET", path: "/v1/runs?runIdPrefix=" + url.QueryEscape(runID) + "&sort=startedAt&order=asc&from=" +
		url.QueryEscape(start) + "&limit=5", token: "tok-a", want: 200})
	var list struct {
		Runs []struct {
			RunID string `json:"runId"`
		} `json:"runs"`
		Counts  map[string]int `json:"counts"`
		Matched *int           `json:"matched"`
	}
	if err := json.Unmarshal(found, &list); err != nil || len(list.Runs) != 1 || list.Runs[0].RunID != runID ||
		list.Counts["RUNNING"] < 1 || list.Matched == nil || *list.Matched != 1 {
		t.Fatalf("search by runIdPrefix sorted by startedAt: %v %s", err, found)
	}
	h.run(t, call{method: "GET", path: "/v1/runs?planId=no-such-plan&status=RUNNING&engineRunRef=x&order=desc&to=" + url.QueryEscape(time.Now().UTC().Add(time.Hour).Format(time.RFC3339)), token: "tok-a", want: 200})
	h.run(t, call{method: "GET", path: "/v1/runs?sort=startedAt&cursor=bm9wZQ", token: "tok-a", want: 400, badRequest: true})

	// Audit reads by persistedAt.
	// The events are visible once the audit horizon (the store's clock
	// less a second's grace) has passed them.
	end := time.Now().UTC().Add(time.Second).Format(time.RFC3339Nano)
	var p struct {
		Events     []store.RunEventRecord `json:"events"`
		NextCursor string                 `json:"nextCursor"`
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		page := h.run(t, call{method: "GET", path: "/v1/events?from=" + url.QueryEscape(start) + "&to=" + url.QueryEscape(end) + "&limit=1", token: "tok-a", want: 200})
		if err := json.Unmarshal(page, &p); err != nil {
			t.Fatal(err)
		}
		if len(p.Events) == 1 && p.NextCursor != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the audit read never returned the run's events: %s", page)
		}
	}
	h.run(t, call{method: "GET", path: "/v1/events?from=" + url.QueryEscape(start) + "&to=" + url.QueryEscape(end) + "&limit=1&cursor=" + url.QueryEscape(p.NextCursor), token: "tok-a", want: 200})
	h.run(t, call{method: "GET", path: "/v1/events?from=" + url.QueryEscape(start) + "&tenantId=tenant-a", token: "tok-op", want: 200})
	h.run(t, call{method: "GET", path: "/v1/events?from=" + url.QueryEscape(end) + "&to=" + url.QueryEscape(start), token: "tok-a", want: 400, badRequest: true})
	h.run(t, call{method: "GET", path: "/v1/events?from=" + url.QueryEscape(start) + "&tenantId=tenant-b", token: "tok-a", want: 403})

	// Live streams, with a header and with a ticket.
	h.run(t, call{method: "GET", path: base + "/watch", token: "tok-a", want: 200})
	h.run(t, call{method: "HEAD", path: base + "/watch", token: "tok-a", want: 200})
	h.run(t, call{method: "GET", path: "/v1/runs/no-such-run/watch", token: "tok-a", want: 404})
	// A terminal run Redis does not hold: its snapshot and end, then 204
	// for a client that reconnects at its lastEventSeq.
	doneRun := runID + "-done"
	h.run(t, call{method: "POST", path: "/v1/events", token: "tok-a", body: event(doneRun, "tenant-a", store.EventRunStarted, ""), want: 201})
	h.run(t, call{method: "POST", path: "/v1/events", token: "tok-a", body: event(doneRun, "tenant-a", store.EventRunCompleted, ""), want: 201})
	h.run(t, call{method: "GET", path: "/v1/runs/" + doneRun + "/watch", token: "tok-a", want: 200})
	h.run(t, call{method: "GET", path: "/v1/runs/" + doneRun + "/watch", token: "tok-a", header: http.Header{"Last-Event-ID": {"2"}}, want: 204})
	h.run(t, call{method: "HEAD", path: "/v1/runs/watch", token: "tok-a", want: 200})
	ticket := h.run(t, call{method: "POST", path: "/v1/stream-tickets", token: "tok-a", want: 201})
	var tk struct{ Ticket string }
	if err := json.Unmarshal(ticket, &tk); err != nil || tk.Ticket == "" {
		t.Fatalf("ticket: %v %s", err, ticket)
	}
	h.run(t, call{method: "GET", path: "/v1/runs/watch?ticket=" + url.QueryEscape(tk.Ticket), want: 200, badRequest: true})
	h.run(t, call{method: "GET", path: "/v1/runs/watch", want: 401})

	// Operations.
	h.run(t, call{method: "GET", path: "/v1/lag", token: "tok-op", want: 200})
	h.run(t, call{method: "GET", path: "/v1/lag", token: "tok-a", want: 403})
	h.run(t, call{method: "GET", path: "/healthz", want: 200})
	h.run(t, call{method: "GET", path: "/readyz", token: "tok-op", want: 200})
	h.run(t, call{method: "GET", path: "/metrics", want: 200})
	h.run(t, call{method: "GET", path: "/openapi.json", want: 200})
	if n := lagCalls.Load(); n != 1 {
		t.Fatalf("the lag report was measured %d times, want 1", n)
	}
	h.run(t, call{method: "GET", path: "/v1/lag/groups", token: "tok-op", want: 200})
	h.run(t, call{method: "GET", path: "/v1/lag/groups", token: "tok-a", want: 403})
	h.run(t, call{method: "POST", path: "/v1/lag/groups/day-sink/reset", token: "tok-op", body: map[string]any{"to": "2026-11-28T00:00:00Z", "dryRun": true}, want: 200})
	h.run(t, call{method: "POST", path: "/v1/lag/groups/day-sink/reset", token: "tok-op", body: map[string]any{"to": "earliest", "reason": "reprocess"}, want: 200})
	h.run(t, call{method: "POST", path: "/v1/lag/groups/busy-sink/reset", token: "tok-op", body: map[string]any{"to": "earliest"}, want: 409})
	h.run(t, call{method: "POST", path: "/v1/lag/groups/nobody/reset", token: "tok-op", body: map[string]any{"to": "earliest"}, want: 404})
	h.run(t, call{method: "POST", path: "/v1/lag/groups/day-sink/reset", token: "tok-op", body: map[string]any{"to": "soon"}, want: 400, badRequest: true})
	h.run(t, call{method: "DELETE", path: "/v1/lag/groups/day-sink", token: "tok-op", want: 200})
	h.run(t, call{method: "DELETE", path: "/v1/lag/groups/nobody", token: "tok-op", want: 404})

	// Dead letters: the run's two events dead-lettered as the relay does.
	if _, err := st.Pool().Exec(context.Background(), `WITH moved AS (DELETE FROM outbox WHERE run_id = $1
			RETURNING id, shard, run_id, run_seq, created_at)
		INSERT INTO outbox_dead_letters (id, shard, run_id, run_seq, created_at, attempts, last_error, first_failed_at)
		SELECT id, shard, run_id, run_seq, created_at, 5, 'MESSAGE_TOO_LARGE: the broker refused the record', now() FROM moved`, runID); err != nil {
		t.Fatal(err)
	}
	var dl struct {
		DeadLetters []struct{ ID int64 } `json:"deadLetters"`
		NextCursor  string               `json:"nextCursor"`
	}
	if err := json.Unmarshal(h.run(t, call{method: "GET", path: "/v1/dead-letters?limit=1&runId=" + runID, token: "tok-op", want: 200}), &dl); err != nil || len(dl.DeadLetters) != 1 || dl.NextCursor == "" {
		t.Fatalf("the first page of dead letters: %+v %v", dl, err)
	}
	first := dl.DeadLetters[0].ID
	if err := json.Unmarshal(h.run(t, call{method: "GET", path: "/v1/dead-letters?limit=1&runId=" + runID + "&cursor=" + url.QueryEscape(dl.NextCursor), token: "tok-op", want: 200}), &dl); err != nil || len(dl.DeadLetters) != 1 || dl.DeadLetters[0].ID == first {
		t.Fatalf("the second page of dead letters: %+v %v", dl, err)
	}
	second := dl.DeadLetters[0].ID
	h.run(t, call{method: "GET", path: "/v1/dead-letters?limit=0", token: "tok-op", want: 400, badRequest: true})
	h.run(t, call{method: "GET", path: "/v1/dead-letters", token: "tok-a", want: 403})
	h.run(t, call{method: "GET", path: fmt.Sprintf("/v1/dead-letters/%d", first), token: "tok-op", want: 200})
	h.run(t, call{method: "GET", path: "/v1/dead-letters/987654321", token: "tok-op", want: 404})
	h.run(t, call{method: "GET", path: "/v1/dead-letters/x", token: "tok-op", want: 400, badRequest: true})
	h.run(t, call{method: "POST", path: fmt.Sprintf("/v1/dead-letters/%d/retry", first), token: "tok-op", want: 200})
	h.run(t, call{method: "POST", path: fmt.Sprintf("/v1/dead-letters/%d/retry", first), token: "tok-op", want: 404})
	h.run(t, call{method: "POST", path: "/v1/dead-letters/retry", token: "tok-op", body: map[string]any{"ids": []int64{second}}, want: 200})
	h.run(t, call{method: "GET", path: "/v1/dead-letters/groups?by=error", token: "tok-op", want: 200})
	h.run(t, call{method: "GET", path: "/v1/dead-letters/groups?by=run", token: "tok-op", want: 200})
	h.run(t, call{method: "GET", path: "/v1/dead-letters/groups?by=day", token: "tok-op", want: 400, badRequest: true})
	h.run(t, call{method: "POST", path: "/v1/dead-letters/retry", token: "tok-op", body: map[string]any{"errorCode": "OTHER"}, want: 200})
	h.run(t, call{method: "POST", path: "/v1/dead-letters/retry", token: "tok-op", body: map[string]any{"all": true, "reason": "the contract run"}, want: 200})
	h.run(t, call{method: "POST", path: "/v1/dead-letters/retry", token: "tok-op", body: map[string]any{}, want: 400, badRequest: true})

	// Rebuilds.
	var rb struct {
		Rebuild struct{ ID, State string } `json:"rebuild"`
	}
	if err := json.Unmarshal(h.run(t, call{method: "POST", path: "/v1/rebuilds", token: "tok-op", body: map[string]any{"tenantId": "tenant-a"}, want: 202}), &rb); err != nil || rb.Rebuild.ID == "" {
		t.Fatalf("starting a rebuild: %+v %v", rb, err)
	}
	h.run(t, call{method: "GET", path: "/v1/rebuilds/" + rb.Rebuild.ID, token: "tok-op", want: 200})
	h.run(t, call{method: "GET", path: "/v1/rebuilds", token: "tok-op", want: 200})
	h.run(t, call{method: "GET", path: "/v1/rebuilds/00000000-0000-0000-0000-000000000000", token: "tok-op", want: 404})
	// A bulk rebuild of a search's runs, once the first is done.
	for deadline := time.Now().Add(30 * time.Second); rb.Rebuild.State != "done" && rb.Rebuild.State != "failed"; time.Sleep(50 * time.Millisecond) {
		if err := json.Unmarshal(h.run(t, call{method: "GET", path: "/v1/rebuilds/" + rb.Rebuild.ID, token: "tok-op", want: 200}), &rb); err != nil || time.Now().After(deadline) {
			t.Fatalf("the rebuild did not end: %+v %v", rb, err)
		}
	}
	if err := json.Unmarshal(h.run(t, call{method: "POST", path: "/v1/rebuilds", token: "tok-op", body: map[string]any{"search": "tenantId=tenant-a&status=RUNNING", "reason": "bulk"}, want: 202}), &rb); err != nil {
		t.Fatal(err)
	}
	h.run(t, call{method: "GET", path: "/v1/rebuilds/" + rb.Rebuild.ID, token: "tok-op", want: 200})
	h.run(t, call{method: "POST", path: "/v1/rebuilds", token: "tok-op", body: map[string]any{"search": "status=RUNNING"}, want: 400, badRequest: true})
	h.run(t, call{method: "POST", path: "/v1/rebuilds", token: "tok-op", body: map[string]any{"runIds": []string{}}, want: 400, badRequest: true})
	h.run(t, call{method: "POST", path: "/v1/rebuilds", token: "tok-a", body: map[string]any{"runIds": []string{runID}}, want: 403})
	// The store's retention: partitions (no retention process ran here).
	h.run(t, call{method: "GET", path: "/v1/retention", token: "tok-op", want: 200})
	h.run(t, call{method: "GET", path: "/v1/retention", token: "tok-a", want: 403})

	// The audit log of what the operators above did.
	h.run(t, call{method: "GET", path: "/v1/operator-actions?limit=2", token: "tok-op", want: 200})
	h.run(t, call{method: "GET", path: "/v1/operator-actions?limit=0", token: "tok-op", want: 400, badRequest: true})
	h.run(t, call{method: "GET", path: "/v1/operator-actions", token: "tok-a", want: 403})

	// Development mode: no tokens.
	dev := &harness{url: server(t, httpapi.Config{}), v: h.v, covered: h.covered}
	dev.run(t, call{method: "POST", path: "/v1/events", body: event(runID+"-dev", "tenant-dev", store.EventRunStarted, ""), contentType: "text/plain", want: 415, badRequest: true})
	dev.run(t, call{method: "POST", path: "/v1/stream-tickets", body: "{}", want: 400, badRequest: true})
	dev.run(t, call{method: "GET", path: "/v1/lag", want: 503})

	// Every documented operation was driven to a success.
	for op := range documentedOperations(t, raw) {
		if !slices.ContainsFunc(h.covered[op], func(st int) bool { return st < 300 }) {
			t.Errorf("the contract run never drove %s to a success; add it to TestContract", op)
		}
	}
}

// A method a path does not take is 405 with Allow, and the error body of
// the document.
func TestContract_MethodNotAllowed(t *testing.T) {
	apiURL := server(t, httpapi.Config{AuthTokens: tokens})
	req, _ := http.NewRequest(http.MethodDelete, apiURL+"/v1/events", nil)
	req.Header.Set("Authorization", "Bearer tok-a")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || resp.StatusCode != 405 || e.Error.Code != "METHOD_NOT_ALLOWED" || resp.Header.Get("Allow") == "" {
		t.Fatalf("DELETE /v1/events: %d %+v Allow=%q (%v)", resp.StatusCode, e, resp.Header.Get("Allow"), err)
	}
	var doc struct {
		Components struct {
			Schemas struct {
				ErrorCode struct {
					Enum []string `json:"enum"`
				} `json:"ErrorCode"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(httpapi.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(doc.Components.Schemas.ErrorCode.Enum, e.Error.Code) {
		t.Fatalf("the document's ErrorCode lacks %s", e.Error.Code)
	}
}

func documentedOperations(t *testing.T, raw []byte) map[string]bool {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	ops := map[string]bool{}
	for p, item := range doc.Paths {
		for m := range item {
			if m != "parameters" {
				ops[strings.ToUpper(m)+" "+p] = true
			}
		}
	}
	return ops
}

func mustGet(t *testing.T, u string) []byte {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", u, resp.StatusCode, err)
	}
	return b
}
