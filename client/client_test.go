package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runstream/runstream/client"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
)

// roundTripFunc is an http.RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func newClient(t testing.TB, cfg client.Config) *client.Client {
	t.Helper()
	if cfg.SpoolDir == "" && !cfg.DisableFailOpen {
		cfg.SpoolDir = t.TempDir()
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return c
}

func TestConfig_Validate(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		cfg  client.Config
		want string // substring of the error; empty: valid
	}{
		{"minimal", client.Config{URL: "http://127.0.0.1:8080", SpoolDir: dir}, ""},
		{"no spool without fail-open", client.Config{URL: "http://127.0.0.1:8080", DisableFailOpen: true}, ""},
		{"no fail-open types", client.Config{URL: "http://127.0.0.1:8080", FailOpen: []string{}}, ""},
		{"no URL", client.Config{SpoolDir: dir}, "Config.URL is empty"},
		{"bad URL", client.Config{URL: "127.0.0.1:8080", SpoolDir: dir}, "Config.URL"},
		{"no spool", client.Config{URL: "http://h"}, "Config.SpoolDir is empty"},
		{"negative budget", client.Config{URL: "http://h", SpoolDir: dir, WriteLatencyBudget: -time.Second}, "Config.WriteLatencyBudget"},
		{"type in both lists", client.Config{URL: "http://h", SpoolDir: dir, FailOpen: []string{"StepCompleted"}}, `"StepCompleted" is in both`},
		{"not an event type", client.Config{URL: "http://h", SpoolDir: dir, FailOpen: []string{"stepStarted"}}, "Config.FailOpen holds"},
		{"tiny spool", client.Config{URL: "http://h", SpoolDir: dir, MaxSpoolBytes: 10}, "Config.MaxSpoolBytes"},
		{"backoff max below base", client.Config{URL: "http://h", SpoolDir: dir, BackoffBase: time.Second, BackoffMax: time.Millisecond}, "Config.BackoffMax"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate = %v, want an error containing %q", err, tt.want)
			}
			if _, nerr := client.New(tt.cfg); nerr == nil {
				t.Fatal("New accepted a config Validate refuses")
			}
		})
	}
}

// TestKey_PeerVectors appends the peer's key vectors (the repository's
// copy, testdata/peer) with an empty key and checks the key the client
// sends.
func TestKey_PeerVectors(t *testing.T) {
	data, err := os.ReadFile(testenv.Testdata(t, "peer", testenv.KeyVectorsFile))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Vectors []struct {
			Name             string `json:"name"`
			RunID            string `json:"runId"`
			StepID           string `json:"stepId"`
			LogicalAttemptID int64  `json:"logicalAttemptId"`
			EventType        string `json:"eventType"`
			PlanID           string `json:"planId"`
			PlanVersion      string `json:"planVersion"`
			Want             string `json:"expectedSha256Hex"`
		} `json:"vectors"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Vectors) == 0 {
		t.Fatal("no vectors in the peer file")
	}
	var sent atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev store.RunEventWrite
		_ = json.NewDecoder(r.Body).Decode(&ev)
		sent.Store(ev.IdempotencyKey)
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"eventId":"x","runSeq":1,"persistedAt":"2026-01-01T00:00:00.000000Z","idempotent":false,"persisted":true}`))
	}))
	defer srv.Close()
	c := newClient(t, client.Config{URL: srv.URL, DisableFailOpen: true})
	for _, v := range file.Vectors {
		t.Run(v.Name, func(t *testing.T) {
			id := workload.Identity{RunID: v.RunID, TenantID: testTenant, ProjectID: "p", EnvironmentID: "e", PlanID: v.PlanID, PlanVersion: v.PlanVersion}
			w := workload.Event(id, v.EventType, v.StepID, v.LogicalAttemptID, 1, time.Now(), nil)
			w.IdempotencyKey = ""
			if _, err := c.Append(context.Background(), w); err != nil {
				t.Fatal(err)
			}
			if got := sent.Load(); got != v.Want {
				t.Errorf("the client sent key %v, want %s", got, v.Want)
			}
		})
	}
}

// fakeAPI answers with the statuses given in turn (the last one again
// once they run out); 2xx answers carry an AppendResult.
type fakeAPI struct {
	*httptest.Server
	calls atomic.Int64
}

func newFakeAPI(t *testing.T, retryAfter string, statuses ...int) *fakeAPI {
	f := &fakeAPI{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(f.calls.Add(1))
		st := statuses[min(n, len(statuses))-1]
		w.Header().Set("Content-Type", "application/json")
		if st/100 == 2 {
			w.WriteHeader(st)
			_, _ = w.Write([]byte(`{"eventId":"e","runSeq":7,"persistedAt":"2026-01-01T00:00:00.000000Z","idempotent":false,"persisted":true}`))
			return
		}
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(st)
		code := map[int]string{400: "SCHEMA_VALIDATION_FAILED", 401: "UNAUTHENTICATED", 403: "FORBIDDEN", 404: "NOT_FOUND",
			413: "PAYLOAD_TOO_LARGE", 429: "UNAVAILABLE", 503: "UNAVAILABLE", 500: "INTERNAL"}[st]
		_, _ = w.Write([]byte(`{"error":{"code":"` + code + `","message":"fake says no","field":"runId"}}`))
	}))
	t.Cleanup(f.Close)
	return f
}

func testEvent(eventType string) store.RunEventWrite {
	return newEvent(workload.NewIdentity(testTenant), eventType, 1)
}

func TestAppend_RetriesHonourRetryAfter(t *testing.T) {
	for _, status := range []int{http.StatusServiceUnavailable, http.StatusTooManyRequests} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			t.Parallel()
			f := newFakeAPI(t, "1", status, status, http.StatusCreated)
			c := newClient(t, client.Config{URL: f.URL, WriteLatencyBudget: 5 * time.Second, BackoffBase: time.Millisecond})
			start := time.Now()
			res, err := c.Append(context.Background(), testEvent(store.EventStepCompleted))
			if err != nil {
				t.Fatal(err)
			}
			if res.RunSeq != 7 || res.Spooled {
				t.Errorf("result %+v, want runSeq 7, not spooled", res)
			}
			if got := f.calls.Load(); got != 3 {
				t.Errorf("%d requests, want 3", got)
			}
			// Two waits of Retry-After: 1, not the 1ms backoff.
			if el := time.Since(start); el < 2*time.Second {
				t.Errorf("took %v; the two Retry-After: 1 waits alone are 2s", el)
			}
		})
	}
}

// TestAppend_RetryAfterPastBudget: a Retry-After longer than what is
// left of the budget ends the Append at once, instead of sleeping into a
// failure.
func TestAppend_RetryAfterPastBudget(t *testing.T) {
	f := newFakeAPI(t, "10", http.StatusServiceUnavailable)
	c := newClient(t, client.Config{URL: f.URL, WriteLatencyBudget: 2 * time.Second})
	start := time.Now()
	_, err := c.Append(context.Background(), testEvent(store.EventStepCompleted))
	if !errors.Is(err, client.ErrBudgetExceeded) || !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrBudgetExceeded wrapping UNAVAILABLE", err)
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("took %v, want an answer at once", el)
	}
	if f.calls.Load() != 1 {
		t.Errorf("%d requests, want 1", f.calls.Load())
	}
}

func TestAppend_BackoffWithoutRetryAfter(t *testing.T) {
	f := newFakeAPI(t, "", 503, 503, 503, 503, 201)
	c := newClient(t, client.Config{URL: f.URL, BackoffBase: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond})
	if _, err := c.Append(context.Background(), testEvent(store.EventStepFailed)); err != nil {
		t.Fatal(err)
	}
	if f.calls.Load() != 5 {
		t.Errorf("%d requests, want 5", f.calls.Load())
	}
}

func TestAppend_NeverRetries4xx(t *testing.T) {
	tests := []struct {
		status int
		want   error
	}{
		{400, store.ErrSchemaValidation},
		{401, &store.Error{Code: store.CodeUnauthenticated}},
		{403, store.ErrForbidden},
		{404, store.ErrNotFound},
		{413, &store.Error{Code: store.CodePayloadTooLarge}},
		{500, &store.Error{Code: store.CodeInternal}},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			t.Parallel()
			f := newFakeAPI(t, "", tt.status)
			c := newClient(t, client.Config{URL: f.URL})
			// StepStarted fails open, but not on a definitive answer.
			res, err := c.Append(context.Background(), testEvent(store.EventStepStarted))
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			var se *store.Error
			if !errors.As(err, &se) || se.Field != "runId" || se.Message != "fake says no" {
				t.Errorf("err = %#v, want the API's field and message", se)
			}
			if res.Spooled || c.Spooled() != 0 {
				t.Error("a refused event was spooled")
			}
			if f.calls.Load() != 1 {
				t.Errorf("%d requests, want 1", f.calls.Load())
			}
		})
	}
}

// hangingAPI never answers until the request is given up.
func hangingAPI(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read the body first: only then does the server notice the
		// client hanging up.
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestAppend_Budget: against an API that never answers, each Append ends
// at the budget; StepStarted fails open into the spool, StepCompleted,
// StepFailed and a type in neither list (RunCompleted) fail.
func TestAppend_Budget(t *testing.T) {
	srv := hangingAPI(t)
	const budget = 300 * time.Millisecond
	c := newClient(t, client.Config{URL: srv.URL, WriteLatencyBudget: budget, DrainInterval: time.Hour})
	tests := []struct {
		eventType string
		spooled   bool
	}{
		{store.EventStepStarted, true},
		{store.EventStepCompleted, false},
		{store.EventStepFailed, false},
		{store.EventRunCompleted, false},
	}
	for _, tt := range tests {
		t.Run(tt.eventType, func(t *testing.T) {
			start := time.Now()
			res, err := c.Append(context.Background(), testEvent(tt.eventType))
			el := time.Since(start)
			if el < budget || el > budget+time.Second {
				t.Errorf("took %v, want about the budget %v", el, budget)
			}
			if tt.spooled {
				if err != nil || !res.Spooled || res.EventID == "" {
					t.Fatalf("res %+v, err %v; want spooled", res, err)
				}
				return
			}
			if !errors.Is(err, client.ErrBudgetExceeded) || res.Spooled {
				t.Fatalf("res %+v, err %v; want ErrBudgetExceeded, not spooled", res, err)
			}
		})
	}
	if got := c.Spooled(); got != 1 {
		t.Errorf("%d events spooled, want 1", got)
	}
}

// TestAppend_CallerContext: the caller's ctx bounds the Append too.
func TestAppend_CallerContext(t *testing.T) {
	srv := hangingAPI(t)
	c := newClient(t, client.Config{URL: srv.URL, WriteLatencyBudget: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Append(ctx, testEvent(store.EventStepCompleted))
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, client.ErrBudgetExceeded) {
		t.Fatalf("err = %v, want the caller's deadline", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Error("the caller's deadline did not end the Append")
	}
}

// TestAppend_TransportErrorsRetried: a refused connection is retried
// until the budget, then the event fails open or fails.
func TestAppend_TransportErrorsRetried(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	c := newClient(t, client.Config{URL: url, WriteLatencyBudget: 300 * time.Millisecond, BackoffBase: 10 * time.Millisecond, DrainInterval: time.Hour})
	if _, err := c.Append(context.Background(), testEvent(store.EventStepCompleted)); !errors.Is(err, client.ErrBudgetExceeded) {
		t.Fatalf("err = %v, want ErrBudgetExceeded", err)
	}
	res, err := c.Append(context.Background(), testEvent(store.EventStepStarted))
	if err != nil || !res.Spooled {
		t.Fatalf("res %+v, err %v; want spooled", res, err)
	}
}

// TestDrain_RefusedForGood: a spooled event the API later refuses for
// good (here 403, a token that lost its tenant) is not retried forever and
// not dropped silently: it goes to the spool's rejected.ndjson, with the
// API's answer, and an error is logged.
func TestDrain_RefusedForGood(t *testing.T) {
	var refuse atomic.Bool
	f := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if refuse.Load() {
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"error":{"code":"FORBIDDEN","message":"your token is for another tenant","field":"tenantId"}}`))
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer f.Close()
	dir := t.TempDir()
	var logs testenv.Buffer
	c := newClient(t, client.Config{URL: f.URL, SpoolDir: dir, WriteLatencyBudget: 50 * time.Millisecond,
		BackoffBase: 30 * time.Millisecond, DrainInterval: time.Hour, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	w := testEvent(store.EventStepStarted)
	res, err := c.Append(context.Background(), w)
	if err != nil || !res.Spooled {
		t.Fatalf("res %+v, err %v; want spooled", res, err)
	}
	refuse.Store(true)
	if err := c.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c.Spooled() != 0 {
		t.Errorf("%d still spooled", c.Spooled())
	}
	rejected, err := os.ReadFile(filepath.Join(dir, "rejected.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rejected), w.EventID) || !strings.Contains(string(rejected), "FORBIDDEN") {
		t.Errorf("rejected.ndjson = %s; want the event and the API's answer", rejected)
	}
	if !strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("no error logged: %s", logs.String())
	}
}

// TestDrain_BatchRefusedWhole: a drain batch the API refuses as a whole
// (413: over its body limit) is not blamed on its events: each is sent
// alone, and only the one too large alone is rejected. A 401 (a token
// rotated) rejects nothing: the events wait for a good token.
func TestDrain_BatchRefusedWhole(t *testing.T) {
	var mode atomic.Int32 // 0: 503 to all; 1: batches 413, singles by size; 2: 401
	var delivered atomic.Int64
	f := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case mode.Load() == 0:
			w.WriteHeader(http.StatusServiceUnavailable)
		case mode.Load() == 2:
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":{"code":"UNAUTHENTICATED","message":"unknown token"}}`))
		case strings.HasSuffix(r.URL.Path, ":batch") || strings.Contains(string(body), "huge"):
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			_, _ = w.Write([]byte(`{"error":{"code":"PAYLOAD_TOO_LARGE","message":"too large"}}`))
		default:
			delivered.Add(1)
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"eventId":"e","runSeq":1,"persistedAt":"2026-01-01T00:00:00.000000Z","idempotent":false,"persisted":true}`))
		}
	}))
	defer f.Close()
	dir := t.TempDir()
	// Drain retries a 401 (the token may be fixed) until its ctx ends,
	// then returns the last refusal; the test's ctx must end after the
	// first 401 arrived and before a retry is sent. It was a 300 ms
	// deadline, which one request to the local server outlasted at load 15:
	// the drain then reported the deadline. Now the transport cancels the
	// ctx as it hands the client the first 401, whose body it has read, so
	// the drain sees the refusal and then the cancellation, however slow
	// the machine.
	var stopDrain atomic.Pointer[context.CancelFunc]
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := tr.RoundTrip(r)
		if err != nil || resp.StatusCode != http.StatusUnauthorized {
			return resp, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		resp.Body = io.NopCloser(strings.NewReader(string(body)))
		if stop := stopDrain.Load(); stop != nil {
			(*stop)()
		}
		return resp, nil
	})}
	c := newClient(t, client.Config{URL: f.URL, SpoolDir: dir, WriteLatencyBudget: 30 * time.Millisecond, DrainInterval: time.Hour, HTTPClient: hc})
	for i := range 5 {
		w := testEvent(store.EventStepStarted)
		if i == 2 {
			w.Payload = []byte(`{"note":"huge"}`)
		}
		if res, err := c.Append(context.Background(), w); err != nil || !res.Spooled {
			t.Fatalf("event %d: %+v, %v; want spooled", i, res, err)
		}
	}
	mode.Store(2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stopDrain.Store(&cancel)
	if err := c.Drain(ctx); !errors.Is(err, &store.Error{Code: store.CodeUnauthenticated}) {
		t.Errorf("Drain with a bad token = %v, want UNAUTHENTICATED", err)
	}
	stopDrain.Store(nil)
	if c.Spooled() != 5 {
		t.Fatalf("%d spooled after the 401s, want all 5 kept", c.Spooled())
	}
	if _, err := os.Stat(filepath.Join(dir, "rejected.ndjson")); err == nil {
		t.Fatal("a 401 rejected events")
	}
	mode.Store(1)
	if err := c.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if delivered.Load() != 4 || c.Spooled() != 0 {
		t.Errorf("%d delivered, %d spooled; want 4 and 0", delivered.Load(), c.Spooled())
	}
	rejected, _ := os.ReadFile(filepath.Join(dir, "rejected.ndjson"))
	if n := strings.Count(string(rejected), "\n"); n != 1 || !strings.Contains(string(rejected), "huge") {
		t.Errorf("rejected.ndjson = %s; want the one huge event", rejected)
	}
}
