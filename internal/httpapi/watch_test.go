package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
)

// putSnapshot writes a snapshot and its run index and catalog entries the
// way the projector does, and publishes the change.
func putSnapshot(t *testing.T, rdb *redis.Client, s store.RunSnapshot) {
	t.Helper()
	ctx := context.Background()
	b, _ := json.Marshal(s)
	if err := rdb.Set(ctx, snapshots.Key(s.RunID), b, time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	if err := snapshots.Catalog(ctx, rdb, []store.RunSnapshot{s}, 0); err != nil {
		t.Fatal(err)
	}
	note := snapshots.NotificationOf(&s).Append(nil)
	rdb.Publish(ctx, snapshots.UpdatesChannelOf(rdb), note)
}

func snap(tenant, id, status string, seq int64, at time.Time) store.RunSnapshot {
	return store.RunSnapshot{RunID: id, TenantID: tenant, Status: status, LastEventSeq: seq,
		UpdatedAt: store.FormatPersistedAt(at), Steps: []store.StepSnapshot{}, Artifacts: []store.ArtifactRef{}}
}

// appendable is a valid RunStarted write of a fresh run for tenant.
func appendable(t *testing.T, tenant string) store.RunEventWrite {
	t.Helper()
	return workload.Event(workload.NewIdentity(tenant), store.EventRunStarted, "", 1, 1, time.Now(), nil)
}

// sseClient reads events from a watch stream.
type sseClient struct {
	resp   *http.Response
	events chan [2]string // event, data
}

func openSSE(t *testing.T, url, token, lastEventID string) (*sseClient, int) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		resp.Body.Close()
		return nil, resp.StatusCode
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("watch stream Content-Type %q, want text/event-stream", ct)
	}
	if resp.Header.Get("X-Request-Id") == "" || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("watch stream headers %v: want X-Request-Id and Cache-Control: no-cache", resp.Header)
	}
	c := &sseClient{resp: resp, events: make(chan [2]string, 100)}
	go func() {
		defer close(c.events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var ev, data string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				ev = line[7:]
			case strings.HasPrefix(line, "data: "):
				data = line[6:]
			case line == "" && ev != "":
				c.events <- [2]string{ev, data}
				ev, data = "", ""
			}
		}
	}()
	t.Cleanup(func() { resp.Body.Close() })
	return c, 200
}

func (c *sseClient) next(t *testing.T) (string, string) {
	t.Helper()
	select {
	case e, ok := <-c.events:
		if !ok {
			t.Fatal("stream ended")
		}
		return e[0], e[1]
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	return "", ""
}

func TestWatchRun_SnapshotThenChangesStaleAndRecovered(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{AuthTokens: map[string]string{"tok-a": "tenant_w", "tok-b": "tenant_x"}})
	id := "watch-" + testenv.RandomID(4)
	now := time.Now()
	putSnapshot(t, e.redis, snap("tenant_w", id, store.RunRunning, 1, now))
	if _, st := openSSE(t, e.url+"/v1/runs/"+id+"/watch", "tok-b", ""); st != 404 {
		t.Fatalf("another tenant's watch: %d, want 404", st)
	}
	if _, st := openSSE(t, e.url+"/v1/runs/nope-"+id+"/watch", "tok-a", ""); st != 404 {
		t.Fatalf("unknown run's watch: %d, want 404", st)
	}
	c, _ := openSSE(t, e.url+"/v1/runs/"+id+"/watch", "tok-a", "")
	if ev, data := c.next(t); ev != "snapshot" || !strings.Contains(data, `"lastEventSeq":1`) {
		t.Fatalf("first event %s %s, want the current snapshot", ev, data)
	}
	s2 := snap("tenant_w", id, store.RunRunning, 2, now)
	s2.Stale = true
	putSnapshot(t, e.redis, s2)
	if ev, _ := c.next(t); ev != "stale" {
		t.Fatalf("got %s, want a stale event", ev)
	}
	if ev, data := c.next(t); ev != "snapshot" || !strings.Contains(data, `"stale":true`) {
		t.Fatalf("got %s %s", ev, data)
	}
	putSnapshot(t, e.redis, snap("tenant_w", id, store.RunCompleted, 5, now))
	if ev, _ := c.next(t); ev != "recovered" {
		t.Fatalf("got %s, want recovered", ev)
	}
	if ev, data := c.next(t); ev != "snapshot" || !strings.Contains(data, `"COMPLETED"`) {
		t.Fatalf("got %s %s", ev, data)
	}
	// Resuming with Last-Event-ID at the current seq sends nothing old.
	c2, _ := openSSE(t, e.url+"/v1/runs/"+id+"/watch", "tok-a", "5")
	putSnapshot(t, e.redis, snap("tenant_w", id, store.RunCompleted, 6, now))
	if ev, data := c2.next(t); ev != "snapshot" || !strings.Contains(data, `"lastEventSeq":6`) {
		t.Fatalf("resumed stream's first event %s %s, want seq 6 only", ev, data)
	}
}

func TestWatchTenant_Updates(t *testing.T) {
	t.Parallel()
	tenant := "tenant_tw_" + testenv.RandomID(3)
	e := newEnv(t, httpapi.Config{DefaultTenant: tenant})
	c, st := openSSE(t, e.url+"/v1/runs/watch", "", "")
	if st != 200 {
		t.Fatalf("tenant watch: %d", st)
	}
	putSnapshot(t, e.redis, snap("someone_else", "x-"+testenv.RandomID(3), store.RunRunning, 1, time.Now()))
	id := "tw-" + testenv.RandomID(3)
	putSnapshot(t, e.redis, snap(tenant, id, store.RunRunning, 1, time.Now()))
	if ev, data := c.next(t); ev != "update" || !strings.Contains(data, id) {
		t.Fatalf("got %s %s, want only this tenant's update", ev, data)
	}
}

// TestWatch_ManyClientsBoundedAndNoLeak opens 1000 concurrent watchers
// (the CI floor for 10,000), checks one change reaches them all,
// then disconnects them mid-stream and checks no goroutine is left.
func TestWatch_ManyClientsBoundedAndNoLeak(t *testing.T) {
	e := newEnv(t, httpapi.Config{})
	id := "many-" + testenv.RandomID(4)
	putSnapshot(t, e.redis, snap("tenant_m", id, store.RunRunning, 1, time.Now()))
	before := runtime.NumGoroutine()
	const n = 1000
	tr := &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: 0}
	client := &http.Client{Transport: tr}
	var wg sync.WaitGroup
	got := make(chan int, n)
	ctx, cancel := context.WithCancel(context.Background())
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, "GET", e.url+"/v1/runs/"+id+"/watch", nil)
			resp, err := client.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if strings.Contains(sc.Text(), `"lastEventSeq":2`) {
					got <- 1
					<-ctx.Done() // stay connected until the test hangs up
					return
				}
			}
		}()
	}
	testenv.WaitFor(t, 60*time.Second, "1000 watchers registered", func() bool {
		return strings.Contains(string(do(t, "GET", e.url+"/metrics", "", nil).body), "runstream_api_sse_streams 1000")
	})
	putSnapshot(t, e.redis, snap("tenant_m", id, store.RunRunning, 2, time.Now()))
	for i := range n {
		select {
		case <-got:
		case <-time.After(30 * time.Second):
			t.Fatalf("only %d of %d watchers saw the change", i, n)
		}
	}
	cancel() // every client disconnects mid-stream
	wg.Wait()
	tr.CloseIdleConnections()
	testenv.WaitFor(t, 30*time.Second, "watch goroutines to end", func() bool {
		return strings.Contains(string(do(t, "GET", e.url+"/metrics", "", nil).body), "runstream_api_sse_streams 0")
	})
	e.srv.Close()
	testenv.WaitFor(t, 30*time.Second, "goroutines back to the baseline", func() bool {
		return runtime.NumGoroutine() <= before+10
	})
}
