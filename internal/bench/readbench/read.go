// Package readbench is `runstream bench read`: it measures the read side,
// snapshot GETs through the API against redis-benchmark's GETs of the same
// keys in the same run, then the time from a snapshot change in Redis to
// SSE watchers in a process of their own, the API's against a raw Go
// fan-out of the same bytes (see [Run]).
package readbench

import (
	"bufio"
	"cmp"
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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/internal/bench/harness"
	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/internal/retry"
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
	// Runs with a snapshot the GETs read; 0 means 1000. Snapshots are
	// written for at least as many runs as a shape watches.
	Runs int
	// Source is what the GETs read: SourceRedis (empty: snapshots in
	// Redis, against redis-benchmark, then the SSE phase) or SourceStore
	// (runs only the store holds, each answer projected from it; Store
	// configures it, and nothing else is measured).
	Source string
	Store  StoreConfig
	// SkipGets leaves out the GET phase and redis-benchmark.
	SkipGets bool
	// Shapes of the SSE phase, each measured Rounds times with both arms;
	// nil means [DefaultShapes], empty (non-nil) none.
	Shapes []Shape
	// Rounds per shape; 0 means 3. The figures are the medians.
	Rounds int
	// WatcherCommand starts the SSE watcher process, a command that runs
	// [WatchersMain] on its stdin and stdout (runstream bench
	// read-watchers); WatcherEnv is added to its environment.
	WatcherCommand []string
	WatcherEnv     []string
	// HashFrames has the watchers checksum every event, each checked
	// against the frame of its change (the tests: it costs the watchers
	// CPU); without it only each event's length is checked.
	HashFrames bool
	// RedisBenchmark is the redis-benchmark binary; empty means from PATH.
	RedisBenchmark string
	// RedisBenchmarkRequests is redis-benchmark's -n; 0 means 200,000.
	RedisBenchmarkRequests int
	// Progress receives one line per second of the GET phase and one per
	// SSE arm; nil means none.
	Progress io.Writer
	// CPUProfile, when set, receives a CPU profile of this process (API
	// and clients) covering the GET window only.
	CPUProfile io.Writer
	// SSECPUProfile, when set, receives a CPU profile of this process (the
	// API and its hub; the watchers are another process) covering the
	// changes of the first runstream arm only.
	SSECPUProfile io.Writer
}

// Validate names the first setting out of range.
func (c Config) Validate() error {
	if c.Clients < 0 || c.Runs < 0 || c.Rounds < 0 || c.Duration < 0 {
		return errors.New("clients, runs, rounds and duration must not be negative")
	}
	if c.Source != "" && c.Source != SourceRedis && c.Source != SourceStore {
		return fmt.Errorf("source must be %s or %s, got %q", SourceRedis, SourceStore, c.Source)
	}
	if c.Store.Events < 0 || c.Store.EventsPerRun < 0 || c.Store.MaxConsistentReads < 0 {
		return errors.New("the store source's events, events per run and max consistent reads must not be negative")
	}
	for _, s := range c.Shapes {
		if s.Watchers < 1 || s.Runs < 1 || s.Changes < 1 || s.Every <= 0 {
			return fmt.Errorf("SSE shape %s: watchers, runs, changes and the pause between changes must be positive, got %d, %d, %d, %v",
				s.Name, s.Watchers, s.Runs, s.Changes, s.Every)
		}
		if s.Runs > s.Watchers {
			return fmt.Errorf("SSE shape %s: %d runs for %d watchers leaves runs nobody watches; at most one run per watcher", s.Name, s.Runs, s.Watchers)
		}
	}
	return nil
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
	// SSE is each shape's change -> client latency, the API's against the
	// raw fan-out's (baseline), median of Rounds rounds.
	SSE    []*ShapeReport `json:"sse"`
	Rounds int            `json:"rounds"`
	// Store is the store source's outcome (Config.Source SourceStore),
	// the only one measured then.
	Store *StoreReport `json:"store,omitempty"`
}

// WriteText renders the report.
func (r *Report) WriteText(w io.Writer) error {
	met := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	var b strings.Builder
	b.WriteString("bench read\n")
	if r.Store != nil {
		r.Store.writeText(&b)
	}
	if r.Gets > 0 || r.Errors > 0 {
		fmt.Fprintf(&b, `  snapshot GETs     %d clients over %d runs: %.0f GETs/s  (p50 %.2f ms, p99 %.2f ms, max %.2f ms), %d errors
  redis-benchmark   GET of the same keys, %d clients: %.0f GETs/s
  ratio             %.0f%% (target >= %.0f%%: %s)
`, r.Clients, r.Runs, r.GetsPerSec, msOf(r.GetLatency.P50), msOf(r.GetLatency.P99), msOf(r.GetLatency.Max), r.Errors,
			r.Clients, r.RedisBenchmarkGetsPerSec, r.Ratio*100, r.TargetRatio*100, met(r.Ratio >= r.TargetRatio))
	}
	if len(r.SSE) > 0 {
		fmt.Fprintf(&b, "  SSE change -> client (watchers in a process of their own; API vs a raw Go fan-out of the same bytes, median of %d rounds)\n", r.Rounds)
		fmt.Fprintf(&b, "    %-34s %-9s %9s %9s %10s %12s %11s %10s\n", "shape", "arm", "p50 ms", "p99 ms", "p99 ratio", "heap/watcher", "RSS/watcher", "CPU/change")
		for _, s := range r.SSE {
			shape := fmt.Sprintf("%s: %d watchers, %d run(s)", s.Name, s.Watchers, s.Runs)
			for i, a := range []struct {
				name string
				sum  ArmSummary
			}{{ArmRunstream, s.Runstream}, {ArmBaseline, s.Baseline}} {
				ratio := ""
				if i == 0 {
					ratio = fmt.Sprintf("%.2fx", s.Ratio)
				}
				fmt.Fprintf(&b, "    %-34s %-9s %9.2f %9.2f %10s %9.1f KB %8.1f KB %7.2f ms\n", shape, a.name, msOf(a.sum.P50), msOf(a.sum.P99), ratio,
					a.sum.HeapPerWatcher/1024, a.sum.RSSPerWatcher/1024, msOf(a.sum.CPUPerChange))
				shape = ""
			}
			fmt.Fprintf(&b, "    %s: p99 ratio %.2fx, target <= %.1fx: %s; %d changes, one every %.1f ms\n", s.Name, s.Ratio, s.TargetRatio, met(s.Met()), s.Changes, s.EveryMs)
			var foreign int64
			for _, rr := range s.Rounds {
				foreign += rr.Baseline.Foreign
			}
			if foreign > 0 {
				fmt.Fprintf(&b, "    WARNING: %d messages on the updates channel were not the bench's (another publisher on this Redis database; the API's hub parses each): give the bench a database of its own (--redis-url redis://host:port/N)\n", foreign)
			}
			for i, rr := range s.Rounds {
				fmt.Fprintf(&b, "      round %d (load %.2f, %s first): runstream p50 %.2f p99 %.2f ms (%d/%d delivered), baseline p50 %.2f p99 %.2f ms (%d/%d), ratio %.2fx\n",
					i+1, rr.Load1, rr.First, msOf(rr.Runstream.Latency.P50), msOf(rr.Runstream.Latency.P99), rr.Runstream.Deliveries, rr.Runstream.Expected,
					msOf(rr.Baseline.Latency.P50), msOf(rr.Baseline.Latency.P99), rr.Baseline.Deliveries, rr.Baseline.Expected, rr.Ratio)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// runID names bench runs so redis-benchmark's __rand_int__ (12 digits)
// hits the same keys: runstream:run:{bench-000000000042}.
func runID(i int) string { return fmt.Sprintf("bench-%012d", i) }

const tenant = "tenant_bench_read"

// Run measures the read side: snapshot GETs through the API against
// redis-benchmark GETs of the same keys, then, for each shape, the latency
// from a snapshot change to SSE watchers in another process, the API's
// against a raw fan-out's.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	harness.Default(&cfg.Duration, 10*time.Second)
	harness.Default(&cfg.Runs, 1000)
	harness.Default(&cfg.Rounds, 3)
	if cfg.Source == SourceStore {
		harness.Default(&cfg.Clients, 100)
		return runStore(ctx, cfg)
	}
	harness.Default(&cfg.Clients, 64)
	if cfg.Shapes == nil {
		cfg.Shapes = DefaultShapes()
	}
	runs, maxWatchers := cfg.Runs, 0
	for _, s := range cfg.Shapes {
		runs, maxWatchers = max(runs, s.Runs), max(maxWatchers, s.Watchers)
	}
	if maxWatchers > 0 {
		// This process holds the server's end of every stream.
		if err := ensureFiles(maxWatchers + cfg.Clients + 256); err != nil {
			return nil, err
		}
	}
	opts, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("parsing the Redis URL: %w", err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	if err := writeSnapshots(ctx, rdb, runs); err != nil {
		return nil, err
	}
	defer cleanSnapshots(context.WithoutCancel(ctx), rdb, runs)

	pool, err := pgxpool.New(ctx, cfg.PostgresURL)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	st, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		return nil, err
	}
	// Limits that let every watcher of the largest shape in (by default
	// 4,096 connections, 10,000 streams, 1,000 of one tenant): the bench's
	// runs are all of one tenant.
	apiCfg := httpapi.Config{Limits: httpapi.Limits{MaxConnections: maxWatchers + cfg.Clients + 256,
		MaxWatchers: max(maxWatchers, 1), MaxWatchersPerTenant: max(maxWatchers, 1)}}
	newAPI := func() (*httpapi.Server, error) { return httpapi.New(apiCfg, st, rdb) }

	rep := &Report{Clients: cfg.Clients, Runs: cfg.Runs, TargetRatio: 0.5, Rounds: cfg.Rounds}
	if !cfg.SkipGets {
		if err := measureGetPhase(ctx, cfg, newAPI, opts, rep); err != nil {
			return nil, err
		}
	}
	env := &sseEnv{cfg: cfg, rdb: rdb, channel: snapshots.UpdatesChannelOf(rdb), profileNext: cfg.SSECPUProfile}
	for _, sh := range cfg.Shapes {
		sr, err := measureShape(ctx, env, newAPI, sh)
		if err != nil {
			return nil, err
		}
		rep.SSE = append(rep.SSE, sr)
	}
	return rep, nil
}

// measureGetPhase serves the GETs from an API of its own, stopped before
// the SSE phase, then runs redis-benchmark.
func measureGetPhase(ctx context.Context, cfg Config, newAPI func() (*httpapi.Server, error), redisOpts *redis.Options, rep *Report) error {
	srv, err := newAPI()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx, ln, nil) }()
	err = measureGets(ctx, cfg, "http://"+ln.Addr().String(), rep)
	stop()
	<-served
	if err != nil {
		return err
	}
	rate, err := redisBenchmark(ctx, cfg, redisOpts.Addr, redisOpts.DB)
	if err != nil {
		return err
	}
	rep.RedisBenchmarkGetsPerSec = rate
	rep.Ratio = harness.Ratio(rep.GetsPerSec, rate)
	return nil
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
						retry.Sleep(ctx, 10*time.Millisecond)
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
	// source is the last answer's X-Runstream-Snapshot-Source.
	source string
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
	c.source = ""
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
		} else if ok && strings.EqualFold(k, "X-Runstream-Snapshot-Source") {
			c.source = strings.TrimSpace(v)
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

// redisBenchmark runs redis-benchmark's GET over the same keys (database
// db) with the same client count and returns its rate.
func redisBenchmark(ctx context.Context, cfg Config, addr string, db int) (float64, error) {
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
	n := cmp.Or(cfg.RedisBenchmarkRequests, 200000)
	out, err := exec.CommandContext(ctx, bin, "-h", host, "-p", port, "-c", strconv.Itoa(cfg.Clients),
		"-n", strconv.Itoa(n), "-r", strconv.Itoa(cfg.Runs), "--dbnum", strconv.Itoa(db), "-q",
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
