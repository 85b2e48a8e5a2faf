package httpapi_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// The tests of this file exercise the limits of docs/SECURITY.md through a
// served API (Server.Serve on a loopback listener, as `runstream api`
// runs it), since several live in the http.Server and the listener.

// servedEnv is an API served by Server.Serve, with a log that counts lines
// by level.
type servedEnv struct {
	addr   string // host:port
	url    string
	reg    *prometheus.Registry
	st     *postgres.Store
	pool   *pgxpool.Pool
	levels *levelCounter
}

func serve(t *testing.T, cfg httpapi.Config) *servedEnv {
	t.Helper()
	pool := migratedPool(t, 20)
	reg := prometheus.NewRegistry()
	st, err := postgres.New(pool, postgres.Config{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	lc := &levelCounter{}
	cfg.Registerer, cfg.Gatherer, cfg.Logger = reg, reg, slog.New(lc)
	srv, err := httpapi.New(cfg, st, testenv.Redis(t))
	if err != nil {
		t.Fatal(err)
	}
	addr, stop := startServing(t, srv)
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Serve returned %v on shutdown", err)
		}
	})
	return &servedEnv{addr: addr, url: "http://" + addr, reg: reg, st: st, pool: pool, levels: lc}
}

// startServing runs srv.Serve on a loopback port; stop shuts it down and
// returns what Serve returned.
func startServing(t *testing.T, srv *httpapi.Server) (addr string, stop func() error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	started := make(chan string, 1)
	go func() { done <- srv.Serve(ctx, ln, started) }()
	return <-started, func() error { cancel(); return <-done }
}

// hugeHeaders opens conns connections that each send an unfinished 1 MiB
// header, and says how many were answered 431 and the highest heap in use
// seen meanwhile.
func hugeHeaders(t *testing.T, addr string, conns int) (got431 int64, peakHeap uint64) {
	t.Helper()
	// One request for every client: the measure is the server's heap.
	huge := []byte("GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Filler: " + strings.Repeat("a", 1<<20))
	var n431, peak atomic.Int64
	var wg sync.WaitGroup
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(30 * time.Second))
			// Written from another goroutine: the server answers and
			// closes long before the megabyte is sent.
			go func() { _, _ = c.Write(huge) }()
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err == nil && resp.StatusCode == http.StatusRequestHeaderFieldsTooLarge {
				n431.Add(1)
			}
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			for p := peak.Load(); int64(m.HeapInuse) > p && !peak.CompareAndSwap(p, int64(m.HeapInuse)); p = peak.Load() {
			}
		}()
	}
	wg.Wait()
	return n431.Load(), uint64(peak.Load())
}

// levelCounter is a slog handler counting records by level.
type levelCounter struct {
	mu     sync.Mutex
	counts map[slog.Level]int
	msgs   []string
}

func (l *levelCounter) Enabled(context.Context, slog.Level) bool { return true }
func (l *levelCounter) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.counts == nil {
		l.counts = map[slog.Level]int{}
	}
	l.counts[r.Level]++
	if r.Level >= slog.LevelError {
		l.msgs = append(l.msgs, r.Message)
	}
	return nil
}
func (l *levelCounter) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *levelCounter) WithGroup(string) slog.Handler      { return l }
func (l *levelCounter) count(level slog.Level) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.counts[level]
}

func requestsWithCode(t *testing.T, reg *prometheus.Registry, code string) int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		if mf.GetName() != "runstream_api_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "code" && lp.GetValue() == code {
					n += int(m.GetCounter().GetValue())
				}
			}
		}
	}
	return n
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestLimits_HugeHeadersGet431: 100 connections each sending an unfinished
// 1 MiB header are answered 431 after the header limit (32 KiB), and the
// process does not hold their megabytes (with Go's default, 1 MiB, it
// buffered each until the header timeout).
func TestLimits_HugeHeadersGet431(t *testing.T) {
	e := serve(t, httpapi.Config{})
	before := heapInUse()
	const conns = 100
	got431, peak := hugeHeaders(t, e.addr, conns)
	if got431 != conns {
		t.Fatalf("%d of %d oversized headers answered 431", got431, conns)
	}
	t.Logf("heap in use: %d MB before, peak %d MB during %d unfinished 1 MiB headers", before>>20, peak>>20, conns)
	if peak > before+32<<20 {
		t.Fatalf("heap grew from %d MB to %d MB", before>>20, peak>>20)
	}
}

// TestLimits_SlowBodyGets408: a body trickling in is cut at the request
// deadline with 408, and the connection is released.
func TestLimits_SlowBodyGets408(t *testing.T) {
	e := serve(t, httpapi.Config{Limits: httpapi.Limits{RequestTimeout: time.Second}})
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	_, _ = io.WriteString(c, "POST /v1/events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{")
	stop := make(chan struct{})
	defer close(stop)
	go func() { // one byte every 300 ms, never finishing in time
		for {
			select {
			case <-stop:
				return
			case <-time.After(300 * time.Millisecond):
				if _, err := io.WriteString(c, " "); err != nil {
					return
				}
			}
		}
	}()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a slow body: %v", err)
	}
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("slow body answered %d, want 408", resp.StatusCode)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("slow body cut after %v, want about the 1s deadline", d)
	}
	if n := requestsWithCode(t, e.reg, "500"); n != 0 {
		t.Fatalf("%d requests counted as 500", n)
	}
}

// TestLimits_LyingContentLengthRefusedAtOnce: a declared length past the
// body limit is refused before a byte is read; nothing waits for it.
func TestLimits_LyingContentLengthRefusedAtOnce(t *testing.T) {
	e := serve(t, httpapi.Config{})
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.WriteString(c, "POST /v1/events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n{}")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("answered %d, want 413", resp.StatusCode)
	}
}

// TestLimits_ConnectionCap: with every connection of --max-connections at
// work and the 16 connections kept for probes open, a new connection gets
// a bare 503 with Retry-After and is closed; a slot freed is usable again.
func TestLimits_ConnectionCap(t *testing.T) {
	e := serve(t, httpapi.Config{Limits: httpapi.Limits{MaxConnections: 5}})
	release := holdBusyConns(t, e, 5)
	defer release()
	var probes []net.Conn
	defer func() {
		for _, c := range probes {
			c.Close()
		}
	}()
	for range 16 { // the probes' connections, held silent
		c, err := net.Dial("tcp", e.addr)
		if err != nil {
			t.Fatal(err)
		}
		probes = append(probes, c)
	}
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	c.Close()
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a connection past the budget and the probes': %v %v, want 503 with Retry-After", resp, err)
	}
	release()
	testenv.WaitUntil(t, 5*time.Second, func() error {
		r, err := http.Get(e.url + "/v1/runs?tenantId=tenant_a")
		if err != nil {
			return err
		}
		r.Body.Close()
		if r.StatusCode != 200 {
			return fmt.Errorf("GET /v1/runs %d after the slots were freed", r.StatusCode)
		}
		return nil
	})
}

// gaugeValue reads a gathered gauge (its first series).
func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) > 0 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}

// TestLimits_HangupsAre499: clients that hang up mid-body are counted as
// 499, logged at DEBUG, never as a 5xx or an ERROR line.
func TestLimits_HangupsAre499(t *testing.T) {
	e := serve(t, httpapi.Config{})
	const hangups = 50
	for range hangups {
		c, err := net.Dial("tcp", e.addr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(c, "POST /v1/events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n{\"eventId\":")
		time.Sleep(5 * time.Millisecond)
		c.Close()
	}
	testenv.WaitFor(t, 10*time.Second, "every hang-up counted", func() bool {
		return requestsWithCode(t, e.reg, "499") == hangups
	})
	if n := requestsWithCode(t, e.reg, "500"); n != 0 {
		t.Fatalf("%d hang-ups counted as 500", n)
	}
	if n := e.levels.count(slog.LevelError); n != 0 {
		t.Fatalf("%d ERROR lines from hang-ups: %v", n, e.levels.msgs)
	}
}

// TestLimits_InflightAppends: past --max-inflight-appends an append gets
// 503 with Retry-After at once, instead of queueing behind the store.
func TestLimits_InflightAppends(t *testing.T) {
	e := serve(t, httpapi.Config{Limits: httpapi.Limits{MaxInflightAppends: 1}})
	post := func(ev store.RunEventWrite) response { return do(t, "POST", e.url+"/v1/events", "", mustJSON(t, ev)) }
	// Hold the run's row: the next append to it waits in the store,
	// holding the only slot.
	held, waiting, release := holdNewRun(t, e)
	blocked := make(chan response, 1)
	go func() { blocked <- post(workload.Event(held, store.EventStepStarted, "s1", 1, 1, time.Now(), nil)) }()
	// Probe only once it waits on the lock: a probe earlier could take
	// the slot first and turn the held append away.
	testenv.WaitFor(t, 10*time.Second, "the held append to wait on the run's row", waiting)
	r := post(workload.Event(workload.NewIdentity("tenant_a"), store.EventRunStarted, "", 1, 1, time.Now(), nil))
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
		t.Fatalf("an append while the only slot is held: %d %s, want 503 with Retry-After", r.status, r.body)
	}
	release()
	if r := <-blocked; r.status != 201 {
		t.Fatalf("the held append: %d %s", r.status, r.body)
	}
}

// TestLimits_WatchersCapped: past the per-tenant cap a stream gets 429,
// past the global one 503, both with Retry-After; the gauge counts them.
func TestLimits_WatchersCapped(t *testing.T) {
	e := serve(t, httpapi.Config{Limits: httpapi.Limits{MaxWatchers: 3, MaxWatchersPerTenant: 2}})
	open := func(tenant string) (*http.Response, func()) {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", e.url+"/v1/runs/watch?tenantId="+tenant, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		return resp, func() { cancel(); resp.Body.Close() }
	}
	var closers []func()
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	for _, tenant := range []string{"tenant_a", "tenant_a", "tenant_b"} {
		resp, stop := open(tenant)
		closers = append(closers, stop)
		if resp.StatusCode != 200 {
			t.Fatalf("watch %s: %d", tenant, resp.StatusCode)
		}
	}
	resp, stop := open("tenant_a")
	stop()
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a third stream of tenant_a: %d (Retry-After %q), want 429/503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	resp, stop = open("tenant_c")
	stop()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a fourth stream: %d, want 503 with Retry-After", resp.StatusCode)
	}
	if g := gaugeValue(t, e.reg, "runstream_api_sse_streams"); g != 3 {
		t.Fatalf("runstream_api_sse_streams = %v, want 3", g)
	}
	// A closed stream frees its slot.
	closers[0]()
	closers = closers[1:]
	testenv.WaitUntil(t, 5*time.Second, func() error {
		resp, stop := open("tenant_a")
		stop()
		if resp.StatusCode != 200 {
			return fmt.Errorf("after a stream closed: %d", resp.StatusCode)
		}
		return nil
	})
}

// TestLimits_HeadOnWatchHasNoStream: HEAD answers the stream's headers and
// returns, instead of streaming a body.
func TestLimits_HeadOnWatchHasNoStream(t *testing.T) {
	e := serve(t, httpapi.Config{})
	c := &http.Client{Timeout: 3 * time.Second}
	resp, err := c.Head(e.url + "/v1/runs/watch?tenantId=tenant_a")
	if err != nil {
		t.Fatalf("HEAD on a watch route: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("HEAD: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

// TestLimits_WrongMethodIs405: a path with routes for other methods
// answers 405 with Allow, not 404.
func TestLimits_WrongMethodIs405(t *testing.T) {
	e := serve(t, httpapi.Config{})
	for _, c := range []struct{ method, path, allow string }{
		{"DELETE", "/v1/events", "GET, HEAD, POST"},
		{"PUT", "/v1/events?from=2026-01-01T00:00:00Z", "GET, HEAD, POST"},
		{"POST", "/v1/runs", "GET, HEAD"},
		{"PUT", "/v1/runs/r1/snapshot", "GET, HEAD"},
		{"GET", "/v1/runs/r1/resync", "POST"},
	} {
		req, _ := http.NewRequest(c.method, e.url+c.path, nil)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != c.allow {
			t.Errorf("%s %s: %d Allow %q, want 405 Allow %q", c.method, c.path, resp.StatusCode, resp.Header.Get("Allow"), c.allow)
		}
	}
	if r := do(t, "POST", e.url+"/v1/nothing", "", []byte("{}")); r.status != 404 {
		t.Errorf("POST to an unknown path: %d, want 404", r.status)
	}
}

// TestLimits_BatchHangupIs499: a client that hangs up while its batch is
// being written gets one 499 and one DEBUG line, as a single append does;
// before, the request counted as 200 and logged an ERROR line for each of
// its events.
func TestLimits_BatchHangupIs499(t *testing.T) {
	e := serve(t, httpapi.Config{})
	held, waiting, release := holdNewRun(t, e)
	// 999 events of new runs and one of the held run: the batch waits on
	// the held run's row.
	evs := []store.RunEventWrite{workload.Event(held, store.EventStepStarted, "s1", 1, 1, time.Now(), nil)}
	for range 999 {
		evs = append(evs, workload.Event(workload.NewIdentity("tenant_a"), store.EventRunStarted, "", 1, 1, time.Now(), nil))
	}
	body := mustJSON(t, map[string]any{"events": evs})
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "POST /v1/events:batch HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
	if _, err := c.Write(body); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 30*time.Second, "the batch to wait on the held run's row", waiting)
	debugBefore := e.levels.count(slog.LevelDebug)
	c.Close()
	testenv.WaitFor(t, 10*time.Second, "the hang-up counted as 499", func() bool {
		return requestsWithCode(t, e.reg, "499") == 1
	})
	release()
	if n := e.levels.count(slog.LevelError); n != 0 {
		t.Fatalf("%d ERROR lines from one batch hang-up: %v", n, e.levels.msgs[:min(3, len(e.levels.msgs))])
	}
	if n := e.levels.count(slog.LevelDebug) - debugBefore; n != 1 {
		t.Fatalf("%d DEBUG lines for one batch hang-up, want 1", n)
	}
	if n := requestsWithCode(t, e.reg, "200"); n != 0 {
		t.Fatalf("the hung-up batch counted as 200 (%d)", n)
	}
}

// holdNewRun appends a RunStarted of a new run of tenant_a and holds the
// run's row in a transaction, so the next append to the run waits in the
// store. waiting reports whether something waits on that row; release
// ends the transaction (also at the test's end).
func holdNewRun(t *testing.T, e *servedEnv) (held workload.Identity, waiting func() bool, release func()) {
	t.Helper()
	held = workload.NewIdentity("tenant_a")
	if r := do(t, "POST", e.url+"/v1/events", "", mustJSON(t, workload.Event(held, store.EventRunStarted, "", 1, 1, time.Now(), nil))); r.status != 201 {
		t.Fatalf("first append %d %s", r.status, r.body)
	}
	ctx := context.Background()
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	release = func() { _ = tx.Rollback(ctx) }
	t.Cleanup(release)
	if _, err := tx.Exec(ctx, "SELECT 1 FROM runs WHERE run_id = $1 FOR UPDATE", held.RunID); err != nil {
		t.Fatal(err)
	}
	var xid string
	if err := tx.QueryRow(ctx, "SELECT pg_current_xact_id()::text").Scan(&xid); err != nil {
		t.Fatal(err)
	}
	waiting = func() bool {
		var n int
		_ = e.pool.QueryRow(ctx, "SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype = 'transactionid' AND transactionid::text = $1", xid).Scan(&n)
		return n > 0
	}
	return held, waiting, release
}
