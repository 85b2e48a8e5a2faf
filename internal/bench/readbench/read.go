// Package readbench is `runstream bench read`: it measures the read side,
// snapshot GETs through the API against redis-benchmark's GETs of the same
// keys in the same run, then the time from a snapshot change in Redis to
// SSE watchers (see [Run]).
package readbench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/internal/bench/harness"
	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/reduce"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// Config configures [Run].
type Config struct {
	// RedisURL and PostgresURL of the servers the in-process API reads
	// (Postgres only answers readiness here).
	RedisURL, PostgresURL string
	// Clients issuing snapshot GETs; 0 means 64.
	Clients int
	// Duration of the GET phase; 0 means 10s.
	Duration time.Duration
	// Runs with a snapshot; 0 means 1000.
	Runs int
	// Watchers for the SSE phase; 0 means 1000.
	Watchers int
	// WatchedRuns the watchers spread over (watcher w watches run w mod
	// WatchedRuns), and the changes take turns on; 0 means 1: every
	// watcher on one run, each change fanned out to all of them. At most
	// Runs.
	WatchedRuns int
	// Changes published during the SSE phase; 0 means 200.
	Changes int
	// ChangeEvery paces the changes; 0 means 100ms.
	ChangeEvery time.Duration
	// RedisBenchmark is the redis-benchmark binary; empty means from PATH.
	RedisBenchmark string
	// Progress receives one line per second; nil means none.
	Progress io.Writer
	// CPUProfile, when set, receives a CPU profile of this process (API
	// and clients) covering the GET window only.
	CPUProfile io.Writer
	// SSECPUProfile, when set, receives a CPU profile of this process (API,
	// hub and watchers) covering the SSE changes only.
	SSECPUProfile io.Writer
}

// Report is the outcome of [Run].
type Report struct {
	Clients    int             `json:"clients"`
	Runs       int             `json:"runs"`
	Gets       int64           `json:"gets"`
	Errors     int64           `json:"errors"`
	GetsPerSec float64         `json:"getsPerSec"`
	GetLatency harness.Latency `json:"getLatencyMs"`
	// RedisBenchmarkGetsPerSec is redis-benchmark's GET rate on the same
	// keys with the same client count, in the same run.
	RedisBenchmarkGetsPerSec float64 `json:"redisBenchmarkGetsPerSec"`
	Ratio                    float64 `json:"ratio"`
	TargetRatio              float64 `json:"targetRatio"`
	Watchers                 int     `json:"watchers"`
	WatchedRuns              int     `json:"watchedRuns"`
	Changes                  int     `json:"changes"`
	ChangeEveryMs            float64 `json:"changeEveryMs"`
	Deliveries               int64   `json:"deliveries"`
	// SSELatency is from the snapshot change in Redis (SET + PUBLISH) to
	// a watcher reading the event, over every watcher and change.
	SSELatency   harness.Latency `json:"sseLatencyMs"`
	SSETargetP99 float64         `json:"sseTargetP99Ms"`
	// SSERSSGrowth and SSEHeapGrowth are this process's VmRSS and heap in
	// use with every watcher connected, less before the first connected:
	// both ends of every stream (API and clients) live in this process.
	SSERSSGrowth  int64 `json:"sseRssGrowthBytes"`
	SSEHeapGrowth int64 `json:"sseHeapGrowthBytes"`
}

// WriteText renders the report.
func (r *Report) WriteText(w io.Writer) error {
	met := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	_, err := fmt.Fprintf(w, `bench read
  snapshot GETs     %d clients over %d runs: %.0f GETs/s  (p50 %.2f ms, p99 %.2f ms, max %.2f ms), %d errors
  redis-benchmark   GET of the same keys, %d clients: %.0f GETs/s
  ratio             %.0f%% (target >= %.0f%%: %s)
  SSE               %d watchers of %d run(s), %d changes (one every %.1f ms, runs in turn), %d deliveries
  change -> client  p50 %.2f ms, p95 %.2f ms, p99 %.2f ms, max %.2f ms (target p99 < %.0f ms: %s)
  memory            +%.1f MB RSS, +%.1f MB heap with the watchers connected (%.1f KB RSS per watcher, both ends in this process)
`, r.Clients, r.Runs, r.GetsPerSec, msOf(r.GetLatency.P50), msOf(r.GetLatency.P99), msOf(r.GetLatency.Max), r.Errors,
		r.Clients, r.RedisBenchmarkGetsPerSec, r.Ratio*100, r.TargetRatio*100, met(r.Ratio >= r.TargetRatio),
		r.Watchers, r.WatchedRuns, r.Changes, r.ChangeEveryMs, r.Deliveries,
		msOf(r.SSELatency.P50), msOf(r.SSELatency.P95), msOf(r.SSELatency.P99), msOf(r.SSELatency.Max), r.SSETargetP99,
		met(msOf(r.SSELatency.P99) < r.SSETargetP99),
		float64(r.SSERSSGrowth)/(1<<20), float64(r.SSEHeapGrowth)/(1<<20), float64(r.SSERSSGrowth)/1024/float64(max(r.Watchers, 1)))
	return err
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// runID names bench runs so redis-benchmark's __rand_int__ (12 digits)
// hits the same keys: runstream:run:{bench-000000000042}.
func runID(i int) string { return fmt.Sprintf("bench-%012d", i) }

const tenant = "tenant_bench_read"

// Run measures the read side: snapshot GETs through the API against
// redis-benchmark GETs of the same keys, then the latency from a snapshot
// change to SSE watchers.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Clients == 0 {
		cfg.Clients = 64
	}
	if cfg.Duration == 0 {
		cfg.Duration = 10 * time.Second
	}
	if cfg.Runs == 0 {
		cfg.Runs = 1000
	}
	if cfg.Watchers == 0 {
		cfg.Watchers = 1000
	}
	if cfg.WatchedRuns == 0 {
		cfg.WatchedRuns = 1
	}
	if cfg.Changes == 0 {
		cfg.Changes = 200
	}
	if cfg.ChangeEvery == 0 {
		cfg.ChangeEvery = 100 * time.Millisecond
	}
	opts, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("parsing the Redis URL: %w", err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	if err := writeSnapshots(ctx, rdb, cfg.Runs); err != nil {
		return nil, err
	}
	defer cleanSnapshots(context.WithoutCancel(ctx), rdb, cfg.Runs)

	pool, err := pgxpool.New(ctx, cfg.PostgresURL)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	st, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		return nil, err
	}
	srv, err := httpapi.New(httpapi.Config{}, st, rdb)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx, ln, nil) }()
	defer func() { stop(); <-served }()
	base := "http://" + ln.Addr().String()

	rep := &Report{Clients: cfg.Clients, Runs: cfg.Runs, Watchers: cfg.Watchers, WatchedRuns: cfg.WatchedRuns, Changes: cfg.Changes, ChangeEveryMs: msOf(cfg.ChangeEvery),
		TargetRatio: 0.5, SSETargetP99: 10}
	if err := measureGets(ctx, cfg, base, rep); err != nil {
		return nil, err
	}
	rate, err := redisBenchmark(ctx, cfg, opts.Addr)
	if err != nil {
		return nil, err
	}
	rep.RedisBenchmarkGetsPerSec = rate
	rep.Ratio = harness.Ratio(rep.GetsPerSec, rate)
	if err := measureSSE(ctx, cfg, base, rdb, rep); err != nil {
		return nil, err
	}
	return rep, nil
}

// writeSnapshots stores realistic snapshots (the reducer's output for
// generated runs) under the bench run IDs.
func writeSnapshots(ctx context.Context, rdb *redis.Client, n int) error {
	rng := rand.New(rand.NewPCG(1, 2))
	pipe := rdb.Pipeline()
	for i := range n {
		id := workload.NewIdentity(tenant)
		id.RunID = runID(i)
		var recs []store.RunEventRecord
		for j, w := range workload.RunFor(rng, id, workload.Options{}) {
			recs = append(recs, store.RunEventRecord{RunEventWrite: w, RunSeq: int64(j + 1), PersistedAt: w.EmittedAt})
		}
		snap, _ := reduce.Project(store.RunSnapshot{}, recs)
		b, err := json.Marshal(snap)
		if err != nil {
			return err
		}
		pipe.Set(ctx, snapshots.Key(id.RunID), b, time.Hour)
		if pipe.Len() >= 500 {
			if _, err := pipe.Exec(ctx); err != nil {
				return fmt.Errorf("writing bench snapshots: %w", err)
			}
		}
	}
	_, err := pipe.Exec(ctx)
	return err
}

func cleanSnapshots(ctx context.Context, rdb *redis.Client, n int) {
	keys := make([]string, 0, n)
	for i := range n {
		keys = append(keys, snapshots.Key(runID(i)))
	}
	for len(keys) > 0 {
		k := min(len(keys), 500)
		rdb.Del(ctx, keys[:k]...)
		keys = keys[k:]
	}
}

// measureGets runs cfg.Clients clients GETting random runs' snapshots
// through the API for cfg.Duration.
func measureGets(ctx context.Context, cfg Config, base string, rep *Report) error {
	addr := strings.TrimPrefix(base, "http://")
	var gets, errs atomic.Int64
	lats := make([][]time.Duration, cfg.Clients)
	deadline := time.Now().Add(cfg.Duration)
	var wg sync.WaitGroup
	start := time.Now()
	for c := range cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			var cl *getClient
			defer func() {
				if cl != nil {
					cl.close()
				}
			}()
			for time.Now().Before(deadline) && ctx.Err() == nil {
				if cl == nil {
					var err error
					if cl, err = dialGetClient(addr); err != nil {
						errs.Add(1)
						time.Sleep(10 * time.Millisecond)
						continue
					}
				}
				path := "/v1/runs/" + runID(rng.IntN(cfg.Runs)) + "/snapshot"
				t0 := time.Now()
				status, err := cl.get(path)
				if err != nil {
					errs.Add(1)
					cl.close()
					cl = nil
					continue
				}
				if status != http.StatusOK {
					errs.Add(1)
					continue
				}
				lats[c] = append(lats[c], time.Since(t0))
				gets.Add(1)
			}
		}()
	}
	stopProgress := progress(cfg.Progress, "GET", start, &gets)
	w, err := harness.StartWindow(cfg.CPUProfile)
	if err != nil {
		return err
	}
	wg.Wait()
	w.Stop()
	stopProgress()
	window := time.Since(start)
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	rep.Gets, rep.Errors = gets.Load(), errs.Load()
	rep.GetsPerSec = float64(rep.Gets) / window.Seconds()
	rep.GetLatency = harness.Summarize(all)
	return ctx.Err()
}

// getClient is the GET phase's HTTP/1.1 client: one keep-alive connection,
// a request written in one call, the response's status and Content-Length
// parsed and its body read into a buffer that holds it whole. redis-benchmark,
// the baseline, is a lean C client; net/http's client costs more CPU per
// request than the API's handler (two goroutines per connection, a header
// map per response), and on two cores that CPU is taken from the API being
// measured.
type getClient struct {
	conn net.Conn
	r    *bufio.Reader
	req  []byte
}

func dialGetClient(addr string) (*getClient, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &getClient{conn: conn, r: bufio.NewReaderSize(conn, 64<<10)}, nil
}

func (c *getClient) close() { _ = c.conn.Close() }

// get sends GET path and reads the whole response; it needs a
// Content-Length (the API sets one on snapshots and errors are small).
func (c *getClient) get(path string) (int, error) {
	c.req = append(c.req[:0], "GET "...)
	c.req = append(c.req, path...)
	c.req = append(c.req, " HTTP/1.1\r\nHost: localhost\r\n\r\n"...)
	if _, err := c.conn.Write(c.req); err != nil {
		return 0, err
	}
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	if len(line) < 12 || !strings.HasPrefix(string(line[:5]), "HTTP/") {
		return 0, fmt.Errorf("malformed status line %q", line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, fmt.Errorf("malformed status line %q", line)
	}
	length := -1
	for {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		h := strings.TrimRight(string(line), "\r\n")
		if h == "" {
			break
		}
		if k, v, ok := strings.Cut(h, ":"); ok && strings.EqualFold(k, "Content-Length") {
			if length, err = strconv.Atoi(strings.TrimSpace(v)); err != nil {
				return 0, fmt.Errorf("malformed Content-Length %q", v)
			}
		}
	}
	if length < 0 {
		return 0, errors.New("response without Content-Length")
	}
	if _, err := c.r.Discard(length); err != nil {
		return 0, err
	}
	return status, nil
}

// progress writes a line to w every second with n, what has been done so
// far, until stopped; nothing when w is nil.
func progress(w io.Writer, what string, start time.Time, n *atomic.Int64) (stop func()) {
	if w == nil {
		return func() {}
	}
	return harness.Every(time.Second, func() {
		fmt.Fprintf(w, "bench read: %s %d in %.0fs (%.0f/s)\n", what, n.Load(), time.Since(start).Seconds(),
			float64(n.Load())/time.Since(start).Seconds())
	})
}

var rpsRE = regexp.MustCompile(`([0-9.]+) requests per second`)

// redisBenchmark runs redis-benchmark's GET over the same keys with the same
// client count and returns its rate.
func redisBenchmark(ctx context.Context, cfg Config, addr string) (float64, error) {
	bin := cfg.RedisBenchmark
	if bin == "" {
		p, err := exec.LookPath("redis-benchmark")
		if err != nil {
			return 0, errors.New("redis-benchmark not found: install Debian's redis-tools (apt-get install redis-tools)")
		}
		bin = p
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, err
	}
	n := 200000
	out, err := exec.CommandContext(ctx, bin, "-h", host, "-p", port, "-c", strconv.Itoa(cfg.Clients),
		"-n", strconv.Itoa(n), "-r", strconv.Itoa(cfg.Runs), "-q",
		"GET", "runstream:run:{bench-__rand_int__}").CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("redis-benchmark: %w: %s", err, out)
	}
	// -q prints progress lines separated by \r; the last one is the result.
	last := string(out)
	if i := strings.LastIndex(last, "\r"); i >= 0 {
		last = last[i+1:]
	}
	m := rpsRE.FindStringSubmatch(last)
	if m == nil {
		return 0, fmt.Errorf("cannot read redis-benchmark's rate from %q", out)
	}
	return strconv.ParseFloat(m[1], 64)
}

// measureSSE opens cfg.Watchers watch streams spread over cfg.WatchedRuns
// runs, publishes changes to those runs in turn, and measures change ->
// delivery per watcher.
func measureSSE(ctx context.Context, cfg Config, base string, rdb *redis.Client, rep *Report) error {
	n := cfg.WatchedRuns
	snaps := make([]store.RunSnapshot, n)
	firstSeq := make([]int64, n)
	for r := range n {
		body, err := rdb.Get(ctx, snapshots.Key(runID(r))).Bytes()
		if err != nil {
			return fmt.Errorf("reading the watched snapshot of %s: %w", runID(r), err)
		}
		if err := json.Unmarshal(body, &snaps[r]); err != nil {
			return err
		}
		firstSeq[r] = snaps[r].LastEventSeq
	}
	// Change k (1-based) goes to run (k-1) mod n as that run's change
	// (k-1)/n + 1, so its seq is firstSeq + (k-1)/n + 1.
	changeOf := func(r int, seq int64) int {
		j := seq - firstSeq[r]
		if j < 1 {
			return 0
		}
		return int(j-1)*n + r + 1
	}
	sent := make([]atomic.Int64, cfg.Changes+1) // unix nanos of change k's SET+PUBLISH
	var deliveries atomic.Int64
	lats := make([][]time.Duration, cfg.Watchers)
	// A read buffer that holds a whole event: one read per event instead of
	// three with the default 4 KB.
	tr := &http.Transport{MaxIdleConnsPerHost: cfg.Watchers, MaxConnsPerHost: 0, ReadBufferSize: 64 << 10}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	debug.FreeOSMemory()
	rssBefore, _ := harness.ProcMemory("/proc/self/status")
	heapBefore := harness.HeapInuse()
	var ready, wg sync.WaitGroup
	for w := range cfg.Watchers {
		ready.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := w % n
			req, _ := http.NewRequestWithContext(wctx, http.MethodGet, base+"/v1/runs/"+runID(r)+"/watch", nil)
			resp, err := client.Do(req)
			if err != nil {
				ready.Done()
				return
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			// A small buffer that grows to the largest event and stays there: one
			// that stays in cache, not 1 MB per watcher touched afresh by every event.
			sc.Buffer(make([]byte, 0, 4<<10), 1<<20)
			first := true
			for sc.Scan() {
				line := sc.Bytes() // no copy of the data lines
				if !bytes.HasPrefix(line, []byte("id: ")) {
					continue
				}
				seq, err := strconv.ParseInt(string(line[4:]), 10, 64)
				if err != nil {
					continue
				}
				if first {
					first = false
					ready.Done()
					continue
				}
				if k := changeOf(r, seq); k >= 1 && k <= cfg.Changes {
					if t := sent[k].Load(); t > 0 {
						lats[w] = append(lats[w], time.Duration(time.Now().UnixNano()-t))
						deliveries.Add(1)
					}
				}
			}
		}()
	}
	ready.Wait()
	runtime.GC()
	rssAfter, _ := harness.ProcMemory("/proc/self/status")
	rep.SSERSSGrowth, rep.SSEHeapGrowth = int64(rssAfter)-int64(rssBefore), int64(harness.HeapInuse())-int64(heapBefore)
	win, err := harness.StartWindow(cfg.SSECPUProfile)
	if err != nil {
		return err
	}
	defer win.Stop()
	channel := snapshots.UpdatesChannelOf(rdb)
	for k := 1; k <= cfg.Changes && ctx.Err() == nil; k++ {
		r := (k - 1) % n
		snap := &snaps[r]
		snap.LastEventSeq = firstSeq[r] + int64((k-1)/n+1)
		key := snapshots.Key(runID(r))
		b, _ := json.Marshal(snap)
		note := snapshots.NotificationOf(snap).Append(nil)
		sent[k].Store(time.Now().UnixNano())
		pipe := rdb.TxPipeline()
		pipe.Set(ctx, key, b, time.Hour)
		pipe.Publish(ctx, channel, note)
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("publishing change %d: %w", k, err)
		}
		// Pace the changes so each is a separate delivery, as a projector
		// writing one run would produce them.
		t := time.NewTimer(cfg.ChangeEvery)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
	// Let the last deliveries arrive, then hang up.
	t := time.NewTimer(500 * time.Millisecond)
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	cancel()
	wg.Wait()
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	rep.Deliveries = deliveries.Load()
	rep.SSELatency = harness.Summarize(all)
	return ctx.Err()
}
