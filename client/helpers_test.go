package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

const testTenant = "tenant_client"

// realAPI serves the real HTTP API on loopback over a fresh Postgres
// schema, and returns its base URL.
func realAPI(t testing.TB) string {
	t.Helper()
	pool, _ := testenv.Postgres(t, 8)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := postgres.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	st, err := postgres.New(pool, postgres.Config{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := httpapi.New(httpapi.Config{Addr: "127.0.0.1:0", Registerer: reg, Gatherer: reg,
		Logger: slog.New(slog.DiscardHandler)}, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	started := make(chan string, 1)
	go func() { done <- srv.Serve(sctx, ln, started) }()
	addr := <-started
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("the API's Serve returned %v", err)
		}
	})
	return "http://" + addr
}

// storedEvents reads a run's records from the API, in runSeq order.
func storedEvents(t testing.TB, base, runID string) []store.RunEventRecord {
	t.Helper()
	var all []store.RunEventRecord
	after := int64(0)
	for {
		resp, err := http.Get(base + "/v1/runs/" + url.PathEscape(runID) + "/events?limit=1000&afterSeq=" + strconv.FormatInt(after, 10))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound {
			return all
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("reading run %s's events: %d %s", runID, resp.StatusCode, body)
		}
		var page struct {
			Events []store.RunEventRecord `json:"events"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatal(err)
		}
		all = append(all, page.Events...)
		if len(page.Events) < 1000 {
			return all
		}
		after = page.Events[len(page.Events)-1].RunSeq
	}
}

// newEvent is a valid event of run with an empty idempotency key (the
// client computes it). Step events get step stepN.
func newEvent(run workload.Identity, eventType string, n int) store.RunEventWrite {
	step := ""
	if store.IsStepEvent(eventType) {
		step = fmt.Sprintf("step%d", n)
	}
	w := workload.Event(run, eventType, step, 1, 1, time.Now(), nil)
	w.IdempotencyKey = ""
	return w
}

// proxy is a fake front of the API: answer decides, per request, whether
// to refuse it without forwarding (status > 0), forward it and answer
// truthfully (0), or forward it and still answer 503 (-1: the event is
// stored, but the client cannot know).
type proxy struct {
	*httptest.Server
	requests atomic.Int64
	// retryAfter is the Retry-After (seconds) of its refusals; 0 retries
	// at once.
	retryAfter atomic.Int64
}

func newProxy(t testing.TB, upstream string, answer func(r *http.Request) int) *proxy {
	t.Helper()
	p := &proxy{}
	target, _ := url.Parse(upstream)
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.requests.Add(1)
		// Read the body first: only then does the server notice a client
		// that hangs up (answer may wait for it).
		body, _ := io.ReadAll(r.Body)
		decision := answer(r)
		if decision > 0 {
			w.Header().Set("Retry-After", strconv.FormatInt(p.retryAfter.Load(), 10))
			w.WriteHeader(decision)
			fmt.Fprintf(w, `{"error":{"code":"UNAVAILABLE","message":"the test's proxy refuses"}}`)
			return
		}
		out, err := http.NewRequestWithContext(r.Context(), r.Method, target.String()+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			t.Error(err)
			return
		}
		out.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(out)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		rb, _ := io.ReadAll(resp.Body)
		if decision < 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, `{"error":{"code":"UNAVAILABLE","message":"the test's proxy lost the answer"}}`)
			return
		}
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(rb)
	}))
	t.Cleanup(p.Close)
	return p
}
