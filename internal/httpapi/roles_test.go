package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/internal/lag"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

var roleTokens = map[string]string{"tok-a": "tenant_a", "tok-b": "tenant_b", "tok-op": httpapi.OperatorTenant}

// appendAs appends a RunStarted of a new run of tenant with token.
func appendAs(t *testing.T, url, token, tenant string) workload.Identity {
	t.Helper()
	id := workload.NewIdentity(tenant)
	if r := do(t, "POST", url+"/v1/events", token, mustJSON(t, workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil))); r.status != 201 {
		t.Fatalf("append as %s: %d %s", tenant, r.status, r.body)
	}
	return id
}

// TestRoles_OperatorIsNotATenant: lag needs an operator; readiness details
// go only to one; an operator reads and resyncs any tenant's run but does
// not append; a tenant resyncs its own runs at a bounded rate.
func TestRoles_OperatorIsNotATenant(t *testing.T) {
	var lagCalls atomic.Int32
	e := newEnv(t, httpapi.Config{AuthTokens: roleTokens, Limits: httpapi.Limits{TenantResyncsPerMinute: 2},
		Lag: func(context.Context, string) (lag.Report, error) { lagCalls.Add(1); return lag.Report{}, nil }})
	run := appendAs(t, e.url, "tok-a", "tenant_a")

	if r := do(t, "GET", e.url+"/v1/lag", "tok-a", nil); r.status != http.StatusForbidden {
		t.Fatalf("a tenant's GET /v1/lag: %d, want 403", r.status)
	}
	if r := do(t, "GET", e.url+"/v1/lag", "tok-op", nil); r.status != 200 || lagCalls.Load() != 1 {
		t.Fatalf("an operator's GET /v1/lag: %d (lag measured %d times)", r.status, lagCalls.Load())
	}

	for _, tok := range []string{"", "tok-a"} {
		r := do(t, "GET", e.url+"/readyz", tok, nil)
		var body map[string]any
		_ = json.Unmarshal(r.body, &body)
		// (Not ready: httptest serves the handler without Serve.)
		if _, ok := body["checks"]; ok || len(body) != 1 {
			t.Fatalf("/readyz with token %q: %s, want only {\"ready\": ...}", tok, r.body)
		}
	}
	if r := do(t, "GET", e.url+"/readyz", "tok-op", nil); !strings.Contains(string(r.body), `"postgres":"ok"`) || !strings.Contains(string(r.body), `"server":`) {
		t.Fatalf("an operator's /readyz: %s, want the checks", r.body)
	}

	if r := do(t, "GET", e.url+"/v1/runs/"+run.RunID+"/events", "tok-op", nil); r.status != 200 {
		t.Fatalf("an operator reading tenant_a's run: %d", r.status)
	}
	if r := do(t, "POST", e.url+"/v1/events", "tok-op", mustJSON(t, workload.Event(workload.NewIdentity("tenant_a"), store.EventRunStarted, "", 1, 1, time.Now(), nil))); r.status != http.StatusForbidden {
		t.Fatalf("an operator's append: %d, want 403", r.status)
	}
	for i := range 3 {
		if r := do(t, "POST", e.url+"/v1/runs/"+run.RunID+"/resync", "tok-op", nil); r.status != 200 {
			t.Fatalf("operator resync %d: %d %s", i, r.status, r.body)
		}
	}
	if r := do(t, "POST", e.url+"/v1/runs/"+run.RunID+"/resync", "tok-b", nil); r.status != http.StatusNotFound {
		t.Fatalf("tenant_b resyncing tenant_a's run: %d, want 404", r.status)
	}
	for i := range 2 {
		if r := do(t, "POST", e.url+"/v1/runs/"+run.RunID+"/resync", "tok-a", nil); r.status != 200 {
			t.Fatalf("tenant resync %d of its own run: %d %s", i, r.status, r.body)
		}
	}
	r := do(t, "POST", e.url+"/v1/runs/"+run.RunID+"/resync", "tok-a", nil)
	if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" {
		t.Fatalf("a third tenant resync within the minute: %d (Retry-After %q), want 429", r.status, r.header.Get("Retry-After"))
	}
}

// countingStore counts rebuilds from the store and can hold them.
type countingStore struct {
	*postgres.Store
	rebuilds atomic.Int32
	holding  atomic.Bool // rebuilds wait for hold to close
	hold     chan struct{}
}

func (c *countingStore) ProjectSnapshot(ctx context.Context, runID string) (store.RunSnapshot, error) {
	c.rebuilds.Add(1)
	if c.holding.Load() {
		<-c.hold
	}
	return c.Store.ProjectSnapshot(ctx, runID)
}

// ProjectSnapshotFor counts and holds the projections of runs the reader
// may read; a read of another tenant's run (which the store answers as
// not found, reading no events) is not a rebuild.
func (c *countingStore) ProjectSnapshotFor(ctx context.Context, runID, tenant string, onLarge postgres.LargeHook) (store.RunSnapshot, error) {
	if owner, err := c.Store.RunTenant(ctx, runID); err != nil || (tenant != "" && owner != tenant) {
		return c.Store.ProjectSnapshotFor(ctx, runID, tenant, onLarge)
	}
	return c.ProjectSnapshot(ctx, runID)
}

// TestConsistentReads_OwnershipFirstAndBounded: another tenant's
// ?consistent=true costs no rebuild, and rebuilds past the limit get 503.
func TestConsistentReads_OwnershipFirstAndBounded(t *testing.T) {
	pool := migratedPool(t, 20)
	pst, err := postgres.New(pool, postgres.Config{Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	cs := &countingStore{Store: pst, hold: make(chan struct{})}
	srv, err := httpapi.New(httpapi.Config{AuthTokens: roleTokens, Limits: httpapi.Limits{MaxConsistentReads: 1},
		Registerer: prometheus.NewRegistry(), Gatherer: prometheus.NewRegistry()}, cs, testenv.Redis(t))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := newTestServer(t, srv.Handler())
	run := appendAs(t, ts, "tok-a", "tenant_a")
	path := ts + "/v1/runs/" + run.RunID + "/snapshot?consistent=true"

	if r := do(t, "GET", path, "tok-b", nil); r.status != http.StatusNotFound || cs.rebuilds.Load() != 0 {
		t.Fatalf("tenant_b's consistent read of tenant_a's run: %d after %d rebuilds, want 404 after none", r.status, cs.rebuilds.Load())
	}
	cs.holding.Store(true)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if r := do(t, "GET", path, "tok-a", nil); r.status != 200 {
			t.Errorf("the held consistent read: %d %s", r.status, r.body)
		}
	}()
	testenv.WaitFor(t, 5*time.Second, "a rebuild to start", func() bool { return cs.rebuilds.Load() == 1 })
	r := do(t, "GET", path, "tok-a", nil)
	close(cs.hold)
	wg.Wait()
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
		t.Fatalf("a second consistent read while one rebuilds: %d, want 503 with Retry-After", r.status)
	}
}

// TestDevelopmentMode_GuardsBrowsers: without tokens, a non-JSON POST is
// 415 and a Host that is not loopback (or allowed) is 403, so a web page
// can neither post cross-site nor read through DNS rebinding.
func TestDevelopmentMode_GuardsBrowsers(t *testing.T) {
	e := newEnv(t, httpapi.Config{AllowedHosts: []string{"api.dev.internal"}})
	ev := mustJSON(t, workload.Event(workload.NewIdentity("tenant_a"), store.EventRunStarted, "", 1, 1, time.Now(), nil))
	send := func(method, path, host, ctype string, body []byte) int {
		req, _ := http.NewRequest(method, e.url+path, strings.NewReader(string(body)))
		if host != "" {
			req.Host = host
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		method, path, host, ctype string
		want                      int
	}{
		{"POST", "/v1/events", "", "text/plain", http.StatusUnsupportedMediaType},
		{"POST", "/v1/events", "", "", http.StatusUnsupportedMediaType},
		{"POST", "/v1/events", "", "application/json; charset=utf-8", http.StatusCreated},
		{"GET", "/v1/runs?tenantId=tenant_a", "evil.example:8080", "", http.StatusForbidden},
		{"GET", "/", "rebind.attacker.example", "", http.StatusForbidden},
		{"GET", "/v1/runs?tenantId=tenant_a", "localhost:8080", "", http.StatusOK},
		{"GET", "/v1/runs?tenantId=tenant_a", "[::1]:8080", "", http.StatusOK},
		{"GET", "/v1/runs?tenantId=tenant_a", "api.dev.internal", "", http.StatusOK},
		{"GET", "/healthz", "10.1.2.3:8080", "", http.StatusOK},
	} {
		if got := send(c.method, c.path, c.host, c.ctype, ev); got != c.want {
			t.Errorf("%s %s Host %q Content-Type %q: %d, want %d", c.method, c.path, c.host, c.ctype, got, c.want)
		}
	}
	// With tokens the guards are off: credentials protect the API.
	e2 := newEnv(t, httpapi.Config{AuthTokens: roleTokens})
	req, _ := http.NewRequest("GET", e2.url+"/v1/runs", nil)
	req.Host = "api.example.com"
	req.Header.Set("Authorization", "Bearer tok-a")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("with tokens, Host api.example.com: %d", resp.StatusCode)
	}
}

// TestStreamTickets_SingleUse: a ticket opens one stream of its holder's
// tenant and never a second; the token itself stays out of the URL.
func TestStreamTickets_SingleUse(t *testing.T) {
	e := newEnv(t, httpapi.Config{AuthTokens: roleTokens})
	r := do(t, "POST", e.url+"/v1/stream-tickets", "tok-a", nil)
	if r.status != http.StatusCreated {
		t.Fatalf("POST /v1/stream-tickets: %d %s", r.status, r.body)
	}
	var tk struct {
		Ticket           string `json:"ticket"`
		ExpiresInSeconds int    `json:"expiresInSeconds"`
	}
	if err := json.Unmarshal(r.body, &tk); err != nil || tk.Ticket == "" || tk.ExpiresInSeconds <= 0 {
		t.Fatalf("ticket answer %s", r.body)
	}
	open := func(query string) int {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", e.url+"/v1/runs/watch?"+query, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := open("ticket=" + tk.Ticket); st != 200 {
		t.Fatalf("first use of a ticket: %d", st)
	}
	if st := open("ticket=" + tk.Ticket); st != http.StatusUnauthorized {
		t.Fatalf("second use of a ticket: %d, want 401", st)
	}
	if st := open("ticket=not-a-ticket"); st != http.StatusUnauthorized {
		t.Fatalf("a made-up ticket: %d, want 401", st)
	}
	if r := do(t, "POST", e.url+"/v1/stream-tickets", "", nil); r.status != http.StatusUnauthorized {
		t.Fatalf("a ticket without credentials: %d, want 401", r.status)
	}
}

// newTestServer serves h on a loopback port for the test's lifetime.
func newTestServer(t *testing.T, h http.Handler) string {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL
}

// TestLag_QueryCheckedAndTokensTenantsAreIdentifiers: /v1/lag parses its
// query strictly, and a token's tenant must be an identifier (it is echoed
// into streams) or "*".
func TestLag_QueryCheckedAndTokensTenantsAreIdentifiers(t *testing.T) {
	e := newEnv(t, httpapi.Config{AuthTokens: roleTokens,
		Lag: func(context.Context, string) (lag.Report, error) { return lag.Report{}, nil }})
	for _, q := range []string{"group=%zz", "group=a%0Ab", "group=a|b"} {
		if r := do(t, "GET", e.url+"/v1/lag?"+q, "tok-op", nil); r.status != http.StatusBadRequest {
			t.Errorf("GET /v1/lag?%s: %d %s, want 400", q, r.status, r.body)
		}
	}
	_, err := httpapi.New(httpapi.Config{AuthTokens: map[string]string{"t": "tenant\nb"}}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "RUNSTREAM_AUTH_TOKENS") {
		t.Fatalf("a tenant with a newline in RUNSTREAM_AUTH_TOKENS: %v, want a configuration error", err)
	}
}
