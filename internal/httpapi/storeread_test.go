package httpapi_test

import (
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

const sourceHeader = "X-Runstream-Snapshot-Source"

// appendEvents appends evs with token, each a new event (201).
func appendEvents(t *testing.T, url, token string, evs ...store.RunEventWrite) {
	t.Helper()
	for _, ev := range evs {
		if r := do(t, "POST", url+"/v1/events", token, mustJSON(t, ev)); r.status != http.StatusCreated {
			t.Fatalf("appending %s: %d %s", ev.EventType, r.status, r.body)
		}
	}
}

// finishedRun appends a run of tenant that started and completed: two
// events, terminal.
func finishedRun(t *testing.T, url, token, tenant string) workload.Identity {
	t.Helper()
	id := workload.NewIdentity(tenant)
	appendEvents(t, url, token,
		workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil),
		workload.Event(id, store.EventRunCompleted, "", 1, 1, time.Now(), nil))
	return id
}

// TestSnapshot_FromTheStoreWhenRedisHasNone: a run Redis does not hold
// (a terminal run past --snapshot-ttl) is answered from the store, scoped
// to its tenant like any read, with the ETag of its lastEventSeq; the
// header says which source answered.
func TestSnapshot_FromTheStoreWhenRedisHasNone(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{AuthTokens: roleTokens})
	id := finishedRun(t, e.url, "tok-a", "tenant_a")
	path := e.url + "/v1/runs/" + id.RunID + "/snapshot"

	r := do(t, "GET", path, "tok-a", nil)
	var snap store.RunSnapshot
	if err := json.Unmarshal(r.body, &snap); err != nil || r.status != http.StatusOK {
		t.Fatalf("a run only the store holds: %d %s, want 200", r.status, r.body)
	}
	if got := r.header.Get(sourceHeader); got != "store" {
		t.Fatalf("%s: %q, want store", sourceHeader, got)
	}
	if snap.RunID != id.RunID || snap.LastEventSeq != 2 || snap.Status != store.RunCompleted || r.header.Get("ETag") != `"2"` {
		t.Fatalf("store snapshot %+v with ETag %s, want the completed run at seq 2 and ETag \"2\"", snap, r.header.Get("ETag"))
	}
	req, _ := http.NewRequest("GET", path, nil)
	req.Header.Set("Authorization", "Bearer tok-a")
	req.Header.Set("If-None-Match", `"2"`)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotModified || resp.Header.Get(sourceHeader) != "store" {
		t.Fatalf("If-None-Match with the store's ETag: %d from %q, want 304 from store", resp.StatusCode, resp.Header.Get(sourceHeader))
	}

	// Another tenant's run is as unknown as a run nobody appended; an
	// operator reads any.
	if r := do(t, "GET", path, "tok-b", nil); r.status != http.StatusNotFound {
		t.Fatalf("tenant_b reading tenant_a's store-only run: %d %s, want 404", r.status, r.body)
	}
	if r := do(t, "GET", e.url+"/v1/runs/no-such-"+id.RunID+"/snapshot", "tok-a", nil); r.status != http.StatusNotFound {
		t.Fatalf("an unknown run: %d %s, want 404", r.status, r.body)
	}
	if r := do(t, "GET", path, "tok-op", nil); r.status != http.StatusOK || r.header.Get(sourceHeader) != "store" {
		t.Fatalf("an operator reading the store-only run: %d from %q", r.status, r.header.Get(sourceHeader))
	}

	// Once Redis holds it, Redis answers.
	putSnapshot(t, e.redis, snap)
	if r := do(t, "GET", path, "tok-a", nil); r.status != http.StatusOK || r.header.Get(sourceHeader) != "redis" || r.header.Get("ETag") != `"2"` {
		t.Fatalf("a run Redis holds: %d from %q, ETag %s; want 200 from redis, ETag \"2\"", r.status, r.header.Get(sourceHeader), r.header.Get("ETag"))
	}
	if r := do(t, "GET", path+"?consistent=true", "tok-a", nil); r.status != http.StatusOK || r.header.Get(sourceHeader) != "store" {
		t.Fatalf("?consistent=true: %d from %q, want 200 from store", r.status, r.header.Get(sourceHeader))
	}
}

// TestSnapshot_StoreReadsWaitBoundedForASlot: with every store-read slot
// taken, a snapshot read waits for one; it gets the slot a read gives
// back, and past the bound it answers 503 with Retry-After.
func TestSnapshot_StoreReadsWaitBoundedForASlot(t *testing.T) {
	pool := migratedPool(t, 20)
	rdb := testenv.Redis(t)
	waiting := make(chan struct{}, 10)
	// serve is an API of one store-read slot whose reads wait up to wait
	// for it, on a store whose projections can be held.
	serve := func(wait time.Duration) (string, *countingStore, *prometheus.Registry) {
		pst, err := postgres.New(pool, postgres.Config{Registerer: prometheus.NewRegistry()})
		if err != nil {
			t.Fatal(err)
		}
		cs := &countingStore{Store: pst, hold: make(chan struct{})}
		reg := prometheus.NewRegistry()
		cfg := httpapi.WithStoreReadWait(httpapi.Config{AuthTokens: roleTokens, Limits: httpapi.Limits{MaxConsistentReads: 1},
			Registerer: reg, Gatherer: reg}, wait, func() { waiting <- struct{}{} })
		srv, err := httpapi.New(cfg, cs, rdb)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
		return newTestServer(t, srv.Handler()), cs, reg
	}
	const bound = 300 * time.Millisecond
	for _, tc := range []struct {
		name string
		wait time.Duration
		want int
	}{
		{"a slot given back within the wait", time.Minute, http.StatusOK},
		{"no slot within the wait", bound, http.StatusServiceUnavailable},
	} {
		url, cs, reg := serve(tc.wait)
		id := finishedRun(t, url, "tok-a", "tenant_a")
		path := url + "/v1/runs/" + id.RunID + "/snapshot"
		cs.holding.Store(true)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := do(t, "GET", path, "tok-a", nil); r.status != http.StatusOK {
				t.Errorf("%s: the read holding the slot: %d %s", tc.name, r.status, r.body)
			}
		}()
		testenv.WaitFor(t, 5*time.Second, "the first read to hold the slot", func() bool { return cs.rebuilds.Load() == 1 })
		got := make(chan response, 1)
		start := time.Now()
		go func() { got <- do(t, "GET", path, "tok-a", nil) }()
		<-waiting // the second read waits for the slot
		var r response
		if tc.want == http.StatusOK {
			close(cs.hold) // the first read ends: its slot goes to the waiter
			r = <-got
		} else {
			r = <-got
			close(cs.hold)
		}
		waited := time.Since(start)
		wg.Wait()
		if r.status != tc.want {
			t.Fatalf("%s: %d %s, want %d", tc.name, r.status, r.body, tc.want)
		}
		if tc.want != http.StatusServiceUnavailable {
			continue
		}
		if r.header.Get("Retry-After") == "" {
			t.Fatalf("%s: 503 without Retry-After", tc.name)
		}
		// A timer never fires early; the upper bound is generous for a
		// loaded machine.
		if waited < bound || waited > bound+10*time.Second {
			t.Fatalf("%s: answered after %v, want about the wait's bound %v", tc.name, waited, bound)
		}
		if n := counterValue(t, reg, "runstream_api_limit_rejections_total", "consistent_reads"); n != 1 {
			t.Fatalf("%s: %v rejections counted, want 1", tc.name, n)
		}
	}
}
