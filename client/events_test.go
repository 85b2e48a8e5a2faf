package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runstream/runstream/client"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
)

// TestKnownEventTypes_AreTheServers: the client's known types are the
// server's: store's lists (which validation and the reducer use), one JSON
// Schema per type in store/validate/schemas, the run/step split as the
// schemas make it.
func TestKnownEventTypes_AreTheServers(t *testing.T) {
	t.Parallel()
	known := client.KnownEventTypes()
	server := append(slices.Clone(store.RunEventTypes), store.StepEventTypes...)
	if !slices.Equal(known, server) {
		t.Errorf("client.KnownEventTypes() = %v, the server's (store.RunEventTypes, store.StepEventTypes) = %v", known, server)
	}
	for _, typ := range known {
		if !store.IsKnownEvent(typ) || !client.IsKnownEventType(typ) {
			t.Errorf("%s: store.IsKnownEvent %v, client.IsKnownEventType %v", typ, store.IsKnownEvent(typ), client.IsKnownEventType(typ))
		}
	}
	dir := filepath.Join("..", "store", "validate", "schemas")
	files, err := filepath.Glob(filepath.Join(dir, "*.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schemas []string
	for _, f := range files {
		typ := strings.TrimSuffix(filepath.Base(f), ".schema.json")
		if typ == "envelope" {
			continue
		}
		schemas = append(schemas, typ)
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if step := strings.Contains(string(b), "#/$defs/stepEvent"); step != store.IsStepEvent(typ) {
			t.Errorf("%s: its schema says step-level %v, store.IsStepEvent %v", typ, step, store.IsStepEvent(typ))
		}
	}
	slices.Sort(schemas)
	sorted := slices.Sorted(slices.Values(known))
	if !slices.Equal(schemas, sorted) {
		t.Errorf("schemas in %s: %v; client.KnownEventTypes(): %v", dir, schemas, sorted)
	}
}

// suggestions is the table the TypeScript client's test/events.test.ts
// checks too: both clients suggest the same type.
var suggestions = []struct{ typ, want string }{
	{"StepStartd", "StepStarted"},
	{"Stepstarted", "StepStarted"},
	{"onStepStarted", "StepStarted"},
	{"StepComplete", "StepCompleted"},
	{"RunCanceled", "RunCancelled"},
	{"runstarted", "RunStarted"},
	{"StpeFailed", "StepFailed"},
	{"STEPSTARTED", "StepStarted"},
	{"stepStarted", "StepStarted"}, // not PascalCase either
	{"StepBegan", ""},
	{"Heartbeat", ""},
	{"WorkflowBegan", ""},
}

func TestSuggestEventType(t *testing.T) {
	t.Parallel()
	for _, c := range suggestions {
		if got := client.SuggestEventType(c.typ); got != c.want {
			t.Errorf("SuggestEventType(%q) = %q, want %q", c.typ, got, c.want)
		}
	}
}

// TestAppend_UnknownEventType: a type outside the contract's set is refused
// locally, with the nearest known type, and never sent, spooled or
// batched; Config.AllowEventTypes lets a type of the caller's own through.
func TestAppend_UnknownEventType(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t, "", http.StatusCreated)
	c := newClient(t, client.Config{URL: api.URL})
	ctx := context.Background()
	for _, s := range suggestions {
		w := testEvent(client.EventStepStarted)
		w.EventType = s.typ
		_, err := c.Append(ctx, w)
		var ue *client.UnknownEventTypeError
		if !errors.As(err, &ue) || !errors.Is(err, client.ErrUnknownEventType) {
			t.Fatalf("%s: Append returned %v, want an *UnknownEventTypeError", s.typ, err)
		}
		if ue.EventType != s.typ || ue.Suggestion != s.want {
			t.Errorf("%s: error %+v, want the suggestion %q", s.typ, ue, s.want)
		}
		msg := err.Error()
		if s.want != "" && !strings.Contains(msg, "did you mean "+s.want+"?") {
			t.Errorf("%s: %q does not suggest %s", s.typ, msg, s.want)
		}
		if s.want == "" && !strings.Contains(msg, "the contract's types are RunQueued, ") {
			t.Errorf("%s: %q does not list the known types", s.typ, msg)
		}
		if !strings.Contains(msg, "Config.AllowEventTypes") {
			t.Errorf("%s: %q does not say how to send a type of one's own", s.typ, msg)
		}
	}
	w := testEvent(client.EventStepStarted)
	w.EventType = "StepStartd"
	out, err := c.AppendBatch(ctx, []client.Event{w})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(out[0].Err, client.ErrUnknownEventType) {
		t.Errorf("AppendBatch: %v, want ErrUnknownEventType", out[0].Err)
	}
	if n := api.calls.Load(); n != 0 {
		t.Errorf("the API got %d requests, want none", n)
	}

	if err := (client.Config{URL: api.URL, DisableFailOpen: true, AllowEventTypes: []string{"step_heartbeat"}}).Validate(); err == nil ||
		!strings.Contains(err.Error(), `Config.AllowEventTypes holds "step_heartbeat"`) {
		t.Errorf("Validate with a malformed AllowEventTypes: %v", err)
	}
}

// TestAppend_AllowEventTypes: an allowed type of the caller's own reaches
// the real API, which stores it (forward compatibility).
func TestAppend_AllowEventTypes(t *testing.T) {
	t.Parallel()
	base := realAPI(t)
	c := newClient(t, client.Config{URL: base, AllowEventTypes: []string{"StepHeartbeat"}})
	w := testEvent(client.EventStepStarted)
	w.EventType = "StepHeartbeat"
	res, err := c.Append(context.Background(), w)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Persisted {
		t.Errorf("result %+v, want persisted", res)
	}
	if got := storedEvents(t, base, w.RunID); len(got) != 1 || got[0].EventType != "StepHeartbeat" {
		t.Errorf("stored %+v", got)
	}
	w.EventType = "StepHeartbeet"
	if _, err := c.Append(context.Background(), w); !errors.Is(err, client.ErrUnknownEventType) {
		t.Errorf("a type not allowed: %v", err)
	}
}

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// TestAppend_FillsTheEnvelope: plain Append fills in an empty eventId,
// emittedAt and key, as the TypeScript client does, and an error names the
// event without a doubled space.
func TestAppend_FillsTheEnvelope(t *testing.T) {
	t.Parallel()
	base := realAPI(t)
	c := newClient(t, client.Config{URL: base})
	run := workload.NewIdentity(testTenant)
	w := client.Event{EventType: client.EventRunStarted, RunID: run.RunID, TenantID: run.TenantID, ProjectID: run.ProjectID,
		EnvironmentID: run.EnvironmentID, PlanID: run.PlanID, PlanVersion: run.PlanVersion, EngineAttemptID: 1, LogicalAttemptID: 1}
	before := time.Now().Add(-time.Second)
	res, err := c.Append(context.Background(), w)
	if err != nil {
		t.Fatal(err)
	}
	got := storedEvents(t, base, run.RunID)
	if len(got) != 1 {
		t.Fatalf("stored %d events", len(got))
	}
	e := got[0]
	if !uuidV4.MatchString(e.EventID) || e.EventID != res.EventID {
		t.Errorf("eventId %q (result %q), want a UUID v4", e.EventID, res.EventID)
	}
	at, err := time.Parse(time.RFC3339Nano, e.EmittedAt)
	if err != nil || at.Before(before) || at.After(time.Now().Add(time.Second)) || !strings.HasSuffix(e.EmittedAt, "Z") {
		t.Errorf("emittedAt %q (%v), want now in UTC", e.EmittedAt, err)
	}
	if e.IdempotencyKey != e.Key() {
		t.Errorf("key %q, want %q", e.IdempotencyKey, e.Key())
	}

	for _, bad := range []client.Event{{}, {EventType: client.EventRunStarted}, {RunID: "r1"}} {
		_, err := c.Append(context.Background(), bad)
		if err == nil {
			t.Fatalf("%+v appended", bad)
		}
		if msg := err.Error(); strings.Contains(msg, "  ") || !strings.HasPrefix(msg, "appending ") {
			t.Errorf("error %q: a doubled space, or not naming the append", msg)
		}
	}
}

// TestPayloads_JSON: the payload structs encode to the contract's field
// names, leave empty fields out (retryable excepted), and add Extra.
func TestPayloads_JSON(t *testing.T) {
	t.Parallel()
	api := newCapturingAPI(t)
	c := newClient(t, client.Config{URL: api.URL, DisableFailOpen: true})
	run := c.Run(client.RunOptions{TenantID: testTenant, ProjectID: "p", EnvironmentID: "e", PlanID: "plan", PlanVersion: "1", EngineRunRef: "wf-9"})
	ctx := context.Background()
	s := run.Step("s")
	must := func(_ client.Result, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(run.Started(ctx, client.RunStarted{EngineType: "temporal", Extra: map[string]any{"region": "eu"}}))
	must(s.Started(ctx))
	must(s.Completed(ctx, client.StepCompleted{Result: map[string]int{"rows": 3}, DurationMs: new(int64(0))}))
	must(s.Failed(ctx, client.Failure{ErrorCode: "TIMEOUT", FailureCategory: client.FailureTimeout}))
	must(s.Skipped(ctx, client.StepSkipped{}))
	must(run.Cancelled(ctx))
	want := []string{
		`{"engineRunRef":"wf-9","engineType":"temporal","region":"eu"}`,
		``,
		`{"durationMs":0,"result":{"rows":3}}`,
		`{"errorCode":"TIMEOUT","failureCategory":"TIMEOUT","retryable":false}`,
		``,
		``,
	}
	got := api.payloads()
	if !slices.Equal(got, want) {
		t.Errorf("payloads:\n got %q\nwant %q", got, want)
	}
	_, err := run.Started(ctx, client.RunStarted{Extra: map[string]any{"engineType": "x"}})
	if err == nil || !strings.Contains(err.Error(), `payload member "engineType" of Extra is a field of the payload struct`) {
		t.Errorf("an Extra member that is a field: %v", err)
	}
}

// capturingAPI answers 201 and keeps the payload of every event posted,
// compacted with its members sorted ("" when absent).
type capturingAPI struct {
	*httptest.Server
	bodies chan []byte
}

func newCapturingAPI(t *testing.T) *capturingAPI {
	a := &capturingAPI{bodies: make(chan []byte, 100)}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct {
			EventID string          `json:"eventId"`
			Payload json.RawMessage `json:"payload"`
		}
		if err := json.NewDecoder(r.Body).Decode(&ev); err != nil {
			t.Error(err)
		}
		a.bodies <- ev.Payload
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"eventId":%q,"runSeq":1,"persistedAt":"2026-01-01T00:00:00.000000Z","idempotent":false,"persisted":true}`, ev.EventID)
	}))
	t.Cleanup(a.Close)
	return a
}

func (a *capturingAPI) payloads() []string {
	var out []string
	for {
		select {
		case b := <-a.bodies:
			if len(b) == 0 {
				out = append(out, "")
				continue
			}
			var m map[string]any
			_ = json.Unmarshal(b, &m)
			s, _ := json.Marshal(m) // sorted members
			out = append(out, string(s))
		default:
			return out
		}
	}
}
