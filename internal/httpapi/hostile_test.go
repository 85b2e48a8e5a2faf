package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
)

// wantBadRequest fails t unless r is 400 SCHEMA_VALIDATION_FAILED naming
// field, with a message.
func wantBadRequest(t *testing.T, what string, r response, field string) {
	t.Helper()
	if r.status != 400 {
		t.Errorf("%s: %d %s, want 400 naming %s", what, r.status, r.body, field)
		return
	}
	code, f, msg := r.errBody(t)
	if code != "SCHEMA_VALIDATION_FAILED" || f != field || msg == "" {
		t.Errorf("%s: %s field=%q msg=%q, want SCHEMA_VALIDATION_FAILED naming %q", what, code, f, msg, field)
	}
}

// quick is do with a deadline, for requests that would open an event
// stream if the server accepted them; a timeout is status 0.
func quick(t *testing.T, method, url string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if method == "POST" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Timeout: 3 * time.Second}).Do(req)
	if err != nil {
		return response{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, b}
}

// TestPathRunID_ValidatedLikeBodies: a {runId} in a path is an identifier
// like the body's, and a bad one is 400 naming runId on
// every route, never a 500 from Postgres nor a lookup.
func TestPathRunID_ValidatedLikeBodies(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{})
	for _, id := range []string{"%00", "%ff", "run%00x", "a%7Cb", "a%0Ab", "a%0D", "%c2%85", "%ed%a0%80", strings.Repeat("r", 256)} {
		for _, rt := range []struct{ method, path string }{
			{"GET", "/v1/runs/" + id + "/events"},
			{"GET", "/v1/runs/" + id + "/events?limit=5"},
			{"GET", "/v1/runs/" + id + "/snapshot"},
			{"GET", "/v1/runs/" + id + "/snapshot?consistent=true"},
			{"GET", "/v1/runs/" + id + "/watch"},
			{"POST", "/v1/runs/" + id + "/resync"},
		} {
			wantBadRequest(t, rt.method+" "+rt.path, quick(t, rt.method, e.url+rt.path), "runId")
		}
	}
	// 255 bytes and printable Unicode are identifiers: a plain 404.
	for _, id := range []string{strings.Repeat("r", 255), "run%20%C3%A9%F0%9F%9A%80"} {
		if r := do(t, "GET", e.url+"/v1/runs/"+id+"/events", "", nil); r.status != 404 {
			t.Errorf("GET events of the unknown valid runId %q: %d %s, want 404", id, r.status, r.body)
		}
	}
}

// TestAppend_EscapedNULAndLoneSurrogatesRejected: "\u0000" and unpaired
// surrogates are refused anywhere in an event with the field path, so no
// stored payload can break a jsonb cast of the table.
func TestAppend_EscapedNULAndLoneSurrogatesRejected(t *testing.T) {
	t.Parallel()
	pool := migratedPool(t, 10)
	e := newEnvOn(t, httpapi.Config{}, pool, testenv.Redis(t))
	body := func(payload string) (string, []byte) {
		w := workload.Event(workload.NewIdentity("tenant_a"), store.EventStepCompleted, "s1", 1, 1, time.Now(), nil)
		w.Payload = json.RawMessage(payload)
		return w.RunID, mustJSON(t, w)
	}
	for _, tc := range []struct{ name, payload, field string }{
		{"NUL", `{"result":{"note":"a\u0000b"}}`, "payload.result.note"},
		{"lone high", `{"result":{"note":"\ud800"}}`, "payload.result.note"},
		{"lone low", `{"result":{"note":"x\udc00y"}}`, "payload.result.note"},
		{"high then non-low", `{"result":{"note":"\uD800\u0041"}}`, "payload.result.note"},
		{"two highs", `{"result":{"note":"\ud800\ud800\udc00"}}`, "payload.result.note"},
		{"in an array", `{"result":{"rows":[1,"ok",{"n":"\u0000"}]}}`, "payload.result.rows[2].n"},
		{"in a key", `{"result":{"\u0000k":1}}`, "payload.result"},
		{"typed member", `{"errorCode":"\udfff"}`, "payload.errorCode"},
	} {
		_, b := body(tc.payload)
		wantBadRequest(t, tc.name, do(t, "POST", e.url+"/v1/events", "", b), tc.field)
	}
	// A top-level string: after json.Unmarshal "\ud800" would be U+FFFD.
	_, b := body(`{}`)
	b = bytes.Replace(b, []byte(`"projectId":"`), []byte(`"projectId":"\ud800`), 1)
	wantBadRequest(t, "projectId", do(t, "POST", e.url+"/v1/events", "", b), "projectId")
	// In a batch, the item's field path.
	_, b = body(`{"result":{"note":"\u0000"}}`)
	r := do(t, "POST", e.url+"/v1/events:batch", "", []byte(`{"events":[`+string(b)+`]}`))
	if r.status != 200 || !strings.Contains(string(r.body), `"field":"events[0].payload.result.note"`) {
		t.Fatalf("batch: %d %s, want the item's error naming events[0].payload.result.note", r.status, r.body)
	}
	// Paired surrogates, other escapes and an escaped backslash before
	// "u0000" are text, and are stored.
	for _, p := range []string{`{"note":"\ud83d\ude80 \u00e9 \u0041"}`, `{"note":"\\u0000 \\ud800"}`, `{"note":"\"\n\t"}`} {
		id, b := body(p)
		if r := do(t, "POST", e.url+"/v1/events", "", b); r.status != 201 {
			t.Fatalf("payload %s: %d %s, want 201", p, r.status, r.body)
		}
		if r := do(t, "GET", e.url+"/v1/runs/"+id+"/events", "", nil); r.status != 200 {
			t.Fatalf("reading it back: %d %s", r.status, r.body)
		}
	}
	var n int
	if err := pool.QueryRow(context.Background(), `select count(*) from run_events where payload::jsonb is not null`).Scan(&n); err != nil {
		t.Fatalf("casting every stored payload to jsonb: %v", err)
	}
	if n != 3 {
		t.Fatalf("%d payloads stored, want the 3 valid ones", n)
	}
}

// TestBatch_DuplicateEventsMember: a batch body is read as strictly as a
// single append: "events" exactly once, with that spelling.
func TestBatch_DuplicateEventsMember(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{})
	a, b := appendable(t, "tenant_a"), appendable(t, "tenant_a")
	for _, tc := range []struct{ name, body string }{
		{"twice", `{"events":[` + string(mustJSON(t, a)) + `],"events":[` + string(mustJSON(t, b)) + `]}`},
		{"twice, one escaped", `{"events":[` + string(mustJSON(t, a)) + `],"\u0065vents":[` + string(mustJSON(t, b)) + `]}`},
		{"other case", `{"Events":[` + string(mustJSON(t, b)) + `]}`},
	} {
		wantBadRequest(t, tc.name, do(t, "POST", e.url+"/v1/events:batch", "", []byte(tc.body)), "events")
	}
	for _, id := range []string{a.RunID, b.RunID} {
		if r := do(t, "GET", e.url+"/v1/runs/"+id+"/events", "", nil); r.status != 404 {
			t.Fatalf("run %s after refused batches: %d %s, want 404 (nothing stored)", id, r.status, r.body)
		}
	}
	r := do(t, "POST", e.url+"/v1/events:batch", "", []byte(`{"events":[`+string(mustJSON(t, a))+`]}`))
	if r.status != 200 || !strings.Contains(string(r.body), `"persisted":true`) {
		t.Fatalf("a well-formed batch: %d %s", r.status, r.body)
	}
}

// TestQuery_MalformedIsRefused: a query string net/url cannot parse is 400
// naming the parameter on every route that reads the query, never
// silently dropped.
func TestQuery_MalformedIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{DefaultTenant: "tenant_q"})
	ev := appendable(t, "tenant_q")
	if r := do(t, "POST", e.url+"/v1/events", "", mustJSON(t, ev)); r.status != 201 {
		t.Fatal(r.status, string(r.body))
	}
	for _, tc := range []struct{ path, field string }{
		{"/v1/runs?cursor=%%%", "cursor"},
		{"/v1/runs?limit=5&cursor=%zz", "cursor"},
		{"/v1/runs?status=RUNNING&%gg=1", "query"},
		{"/v1/runs?tenantId=tenant_q;limit=5", "tenantId"},
		{"/v1/runs/" + ev.RunID + "/events?limit=%", "limit"},
		{"/v1/runs/" + ev.RunID + "/events?afterSeq=1%", "afterSeq"},
		{"/v1/runs/" + ev.RunID + "/snapshot?consistent=true%", "consistent"},
		{"/v1/runs/watch?tenantId=%%%", "tenantId"},
	} {
		wantBadRequest(t, tc.path, quick(t, "GET", e.url+tc.path), tc.field)
	}
	for _, path := range []string{"/v1/runs?cursor=&limit=5", "/v1/runs/" + ev.RunID + "/events?limit=5&afterSeq=0", "/v1/runs/" + ev.RunID + "/snapshot?consistent=true"} {
		if r := do(t, "GET", e.url+path, "", nil); r.status != 200 {
			t.Errorf("%s: %d %s, want 200", path, r.status, r.body)
		}
	}
}

// TestDevTenantID_Validated: without tokens, ?tenantId= is an identifier,
// so it cannot carry a newline into an event stream.
func TestDevTenantID_Validated(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{})
	for _, v := range []string{"a%0Aevent:%20update%0Adata:%20{}%0A%0A", "a%0Db", "a%7Cb", "%ff", "%00", strings.Repeat("t", 256)} {
		for _, path := range []string{"/v1/runs/watch?tenantId=", "/v1/runs?tenantId="} {
			wantBadRequest(t, path+v, quick(t, "GET", e.url+path+v), "tenantId")
		}
	}
	if r := do(t, "GET", e.url+"/v1/runs?tenantId=tenant%20%C3%A9", "", nil); r.status != 200 {
		t.Fatalf("a printable Unicode tenantId: %d %s", r.status, r.body)
	}
}
