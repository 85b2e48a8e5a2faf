package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/runstream/runstream/client"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
)

// TestAppend_RealAPI appends through the real API: the key is computed,
// a second append of the same event is a duplicate.
func TestAppend_RealAPI(t *testing.T) {
	t.Parallel()
	api := realAPI(t)
	c := newClient(t, client.Config{URL: api})
	run := workload.NewIdentity(testTenant)
	ctx := context.Background()
	for i, typ := range []string{store.EventRunStarted, store.EventStepStarted, store.EventStepCompleted} {
		w := newEvent(run, typ, 1)
		res, err := c.Append(ctx, w)
		if err != nil {
			t.Fatal(err)
		}
		if res.RunSeq != int64(i+1) || !res.Persisted || res.Idempotent || res.Spooled || res.EventID != w.EventID {
			t.Errorf("%s: result %+v, want runSeq %d persisted", typ, res, i+1)
		}
		again, err := c.Append(ctx, w)
		if err != nil {
			t.Fatal(err)
		}
		if again.RunSeq != res.RunSeq || !again.Idempotent || again.Persisted {
			t.Errorf("%s again: result %+v, want the duplicate of runSeq %d", typ, again, res.RunSeq)
		}
	}
}

// apiAnswer posts body to the API as a plain HTTP client would and
// returns its error, nil for a 2xx.
func apiAnswer(t *testing.T, url string, body []byte) *store.Error {
	t.Helper()
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 == 2 {
		return nil
	}
	var eb struct {
		Error struct {
			Code    store.Code `json:"code"`
			Message string     `json:"message"`
			Field   string     `json:"field"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &eb); err != nil {
		t.Fatalf("the API answered %d %s", resp.StatusCode, b)
	}
	return &store.Error{Code: eb.Error.Code, Message: eb.Error.Message, Field: eb.Error.Field}
}

// badEvents are writes the API refuses, each with what makes it bad. The
// key is the right one unless the case is about the key.
func badEvents() []struct {
	name string
	w    store.RunEventWrite
} {
	run := workload.NewIdentity(testTenant)
	mk := func(typ string, f func(w *store.RunEventWrite), keepKey bool) store.RunEventWrite {
		w := newEvent(run, typ, 1)
		f(&w)
		if !keepKey {
			w.IdempotencyKey = w.Key()
		}
		return w
	}
	return []struct {
		name string
		w    store.RunEventWrite
	}{
		// No eventId is not among them: the client fills one in
		// (TestAppend_FillsTheEnvelope). Nor is an event type that is not
		// PascalCase: the client refuses it first, as it refuses any type
		// outside the contract's, suggesting the known one
		// (TestAppend_UnknownEventType).
		{"eventId not a UUID", mk(store.EventStepStarted, func(w *store.RunEventWrite) { w.EventID = "not-a-uuid" }, false)},
		{"emittedAt not RFC 3339", mk(store.EventStepStarted, func(w *store.RunEventWrite) { w.EmittedAt = "yesterday" }, false)},
		{"runId with a pipe", mk(store.EventStepStarted, func(w *store.RunEventWrite) { w.RunID = "a|b" }, false)},
		{"runId too long", mk(store.EventStepStarted, func(w *store.RunEventWrite) { w.RunID = strings.Repeat("r", 300) }, false)},
		{"runId with NUL", mk(store.EventStepStarted, func(w *store.RunEventWrite) { w.RunID = "a\x00b" }, false)},
		{"step event without stepId", mk(store.EventStepStarted, func(w *store.RunEventWrite) { w.StepID = "" }, false)},
		{"run event with stepId", mk(store.EventRunStarted, func(w *store.RunEventWrite) { w.StepID = "s1" }, false)},
		{"logicalAttemptId 0", mk(store.EventStepCompleted, func(w *store.RunEventWrite) { w.LogicalAttemptID = 0 }, false)},
		{"engineAttemptId 0", mk(store.EventStepCompleted, func(w *store.RunEventWrite) { w.EngineAttemptID = 0 }, false)},
		{"wrong idempotencyKey", mk(store.EventStepCompleted, func(w *store.RunEventWrite) { w.IdempotencyKey = strings.Repeat("ab", 32) }, true)},
		{"payload not an object", mk(store.EventStepCompleted, func(w *store.RunEventWrite) { w.Payload = json.RawMessage(`[1,2]`) }, false)},
		{"payload field mistyped", mk(store.EventStepCompleted, func(w *store.RunEventWrite) { w.Payload = json.RawMessage(`{"durationMs":"long"}`) }, false)},
		{"no tenantId", mk(store.EventStepFailed, func(w *store.RunEventWrite) { w.TenantID = "" }, false)},
	}
}

// TestValidation_SameAsAPI: a bad event gets from the client exactly the
// error the real API gives for the same event (code, field, message), and
// the client sends nothing and spools nothing.
func TestValidation_SameAsAPI(t *testing.T) {
	t.Parallel()
	api := realAPI(t)
	front := newProxy(t, api, func(*http.Request) int { return 0 })
	c := newClient(t, client.Config{URL: front.URL})
	for _, tt := range badEvents() {
		t.Run(tt.name, func(t *testing.T) {
			body, err := json.Marshal(tt.w)
			if err != nil {
				t.Fatal(err)
			}
			want := apiAnswer(t, api+"/v1/events", body)
			if want == nil {
				t.Fatalf("the API accepted %s", body)
			}
			before := front.requests.Load()
			res, err := c.Append(context.Background(), tt.w)
			var got *store.Error
			if !errors.As(err, &got) {
				t.Fatalf("Append = %+v, %v; want a *store.Error", res, err)
			}
			if got.Code != want.Code || got.Field != want.Field || got.Message != want.Message {
				t.Errorf("client: %s (%s): %s\n   API: %s (%s): %s", got.Code, got.Field, got.Message, want.Code, want.Field, want.Message)
			}
			if !errors.Is(err, store.ErrSchemaValidation) {
				t.Errorf("errors.Is(err, store.ErrSchemaValidation) is false for %v", err)
			}
			if n := front.requests.Load() - before; n != 0 {
				t.Errorf("the client sent %d requests for a bad event", n)
			}
			// In a batch, the API names the item.
			batch, err := c.AppendBatch(context.Background(), []store.RunEventWrite{newEvent(workload.NewIdentity(testTenant), store.EventRunStarted, 0), tt.w})
			if err != nil {
				t.Fatal(err)
			}
			bb, _ := json.Marshal(map[string]any{"events": []store.RunEventWrite{tt.w}})
			var raw struct {
				Results []struct {
					Error *struct {
						Code    store.Code `json:"code"`
						Message string     `json:"message"`
						Field   string     `json:"field"`
					} `json:"error"`
				} `json:"results"`
			}
			resp, err := http.Post(api+"/v1/events:batch", "application/json", bytes.NewReader(bb))
			if err != nil {
				t.Fatal(err)
			}
			_ = json.NewDecoder(resp.Body).Decode(&raw)
			resp.Body.Close()
			if len(raw.Results) != 1 || raw.Results[0].Error == nil {
				t.Fatalf("the API's batch answer: %+v", raw)
			}
			wantItem := raw.Results[0].Error
			wantField := strings.Replace(wantItem.Field, "events[0]", "events[1]", 1)
			if batch[0].Err != nil || batch[0].RunSeq != 1 {
				t.Errorf("the good item: %+v", batch[0])
			}
			if !errors.As(batch[1].Err, &got) || got.Code != wantItem.Code || got.Field != wantField || got.Message != wantItem.Message {
				t.Errorf("batch item: %v\nwant: %s (%s): %s", batch[1].Err, wantItem.Code, wantField, wantItem.Message)
			}
			if c.Spooled() != 0 {
				t.Error("a bad event was spooled")
			}
		})
	}
	t.Run("payload not JSON", func(t *testing.T) {
		w := newEvent(workload.NewIdentity(testTenant), store.EventStepStarted, 1)
		w.Payload = json.RawMessage(`{"a":`)
		before := front.requests.Load()
		_, err := c.Append(context.Background(), w)
		var got *store.Error
		if !errors.As(err, &got) || got.Field != "payload" || !errors.Is(err, store.ErrSchemaValidation) {
			t.Fatalf("err = %v, want SCHEMA_VALIDATION_FAILED on payload", err)
		}
		if front.requests.Load() != before || c.Spooled() != 0 {
			t.Error("an event whose payload is not JSON was sent or spooled")
		}
	})
}

// TestAppendBatch_RealAPI: results in input order, duplicates answered.
func TestAppendBatch_RealAPI(t *testing.T) {
	t.Parallel()
	api := realAPI(t)
	c := newClient(t, client.Config{URL: api})
	a, b := workload.NewIdentity(testTenant), workload.NewIdentity(testTenant)
	evs := []store.RunEventWrite{newEvent(a, store.EventRunStarted, 0), newEvent(b, store.EventRunStarted, 0),
		newEvent(a, store.EventStepStarted, 1), newEvent(b, store.EventStepStarted, 1)}
	res, err := c.AppendBatch(context.Background(), append(evs, evs[0]))
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{1, 1, 2, 2, 1}
	for i, r := range res {
		if r.Err != nil || r.RunSeq != want[i] || r.EventID != append(evs, evs[0])[i].EventID {
			t.Errorf("item %d: %+v, want runSeq %d", i, r, want[i])
		}
	}
	if !res[4].Idempotent {
		t.Errorf("the repeated event: %+v, want idempotent", res[4])
	}
}
