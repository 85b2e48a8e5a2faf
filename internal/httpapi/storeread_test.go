package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
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

// TestWatchRun_StoreOnlyRuns: the watch of a terminal run Redis does not
// hold sends its snapshot from the store and an `end` event, then the
// stream ends; reconnecting at its lastEventSeq is 204. An open run Redis
// does not hold yet streams on live from its store snapshot.
func TestWatchRun_StoreOnlyRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{AuthTokens: roleTokens})
	done := finishedRun(t, e.url, "tok-a", "tenant_a")
	watch := e.url + "/v1/runs/" + done.RunID + "/watch"

	c, st := openSSE(t, watch, "tok-a", "")
	if st != http.StatusOK {
		t.Fatalf("watch of a store-only terminal run: %d, want 200", st)
	}
	ev, data := c.next(t)
	var first store.RunSnapshot
	if err := json.Unmarshal([]byte(data), &first); ev != "snapshot" || err != nil || first.LastEventSeq != 2 || first.Status != store.RunCompleted {
		t.Fatalf("first event %s %s, want the completed run's snapshot", ev, data)
	}
	ev, data = c.next(t)
	var end struct {
		RunID        string `json:"runId"`
		LastEventSeq int64  `json:"lastEventSeq"`
		Status       string `json:"status"`
		Reason       string `json:"reason"`
	}
	if err := json.Unmarshal([]byte(data), &end); ev != "end" || err != nil || end.RunID != done.RunID || end.LastEventSeq != 2 ||
		end.Status != store.RunCompleted || end.Reason != "terminal" {
		t.Fatalf("second event %s %s, want end naming the run at seq 2", ev, data)
	}
	select {
	case e, ok := <-c.events:
		if ok {
			t.Fatalf("an event after end: %v", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end after its end event")
	}
	if _, st := openSSE(t, watch, "tok-a", "2"); st != http.StatusNoContent {
		t.Fatalf("reconnecting with Last-Event-ID 2: %d, want 204", st)
	}
	if _, st := openSSE(t, watch, "tok-b", ""); st != http.StatusNotFound {
		t.Fatalf("another tenant's watch of the run: %d, want 404", st)
	}
	if _, st := openSSE(t, e.url+"/v1/runs/no-such-"+done.RunID+"/watch", "tok-a", ""); st != http.StatusNotFound {
		t.Fatalf("an unknown run's watch: %d, want 404", st)
	}

	open := workload.NewIdentity("tenant_a")
	appendEvents(t, e.url, "tok-a", workload.Event(open, store.EventRunStarted, "", 1, 1, time.Now(), nil))
	c, st = openSSE(t, e.url+"/v1/runs/"+open.RunID+"/watch", "tok-a", "")
	if st != http.StatusOK {
		t.Fatalf("watch of a store-only open run: %d", st)
	}
	if ev, data := c.next(t); ev != "snapshot" || !json.Valid([]byte(data)) {
		t.Fatalf("first event %s %s, want the open run's snapshot", ev, data)
	}
	// The projector reaches the run: the stream carries its change.
	putSnapshot(t, e.redis, snap("tenant_a", open.RunID, store.RunRunning, 2, time.Now()))
	if ev, data := c.next(t); ev != "snapshot" || !strings.Contains(data, `"lastEventSeq":2`) {
		t.Fatalf("got %s %s, want the projector's snapshot at seq 2", ev, data)
	}
}

// TestListRuns_SaysWhatItCovers: the list names the retention of the runs
// Redis keeps, the --snapshot-ttl in seconds, 0 when every run is kept.
func TestListRuns_SaysWhatItCovers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ttl  time.Duration
		want int64
	}{{24 * time.Hour, 86400}, {0, 0}, {1500 * time.Millisecond, 2}} {
		e := newEnv(t, httpapi.Config{DefaultTenant: "tenant_cov", SnapshotTTL: tc.ttl})
		r := do(t, "GET", e.url+"/v1/runs", "", nil)
		var out struct {
			Retention *struct {
				TerminalRunsSeconds *int64 `json:"terminalRunsSeconds"`
			} `json:"retention"`
		}
		if err := json.Unmarshal(r.body, &out); err != nil || r.status != http.StatusOK {
			t.Fatalf("list with --snapshot-ttl %v: %d %s", tc.ttl, r.status, r.body)
		}
		if out.Retention == nil || out.Retention.TerminalRunsSeconds == nil || *out.Retention.TerminalRunsSeconds != tc.want {
			t.Fatalf("list with --snapshot-ttl %v: %s, want retention.terminalRunsSeconds %d", tc.ttl, r.body, tc.want)
		}
	}
	if _, err := httpapi.New(httpapi.Config{SnapshotTTL: -time.Second}, nil, nil); err == nil {
		t.Fatal("a negative snapshot TTL was accepted")
	}
}
