// Package appendbench is `runstream bench append`: it measures the append
// path under load and compares it with pgbench on the same machine in the
// same run.
//
// [Run] drives the append path over real HTTP with keep-alive: Clients
// goroutines post valid events (POST /v1/events, or POST /v1/events:batch
// with Batch events) as fast as the API answers. The events are generated
// before the measured window so their generation is not measured. It
// reports events/s, requests/s, exact per-request latency percentiles and
// errors by status in a [Report]. With Config.Baseline it also runs pgbench
// on the same three SQL statements the append runs (the scripts in the
// repository's bench/ directory) and reports our rate as a fraction of
// pgbench's.
package appendbench

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	goclient "github.com/runstream/runstream/client"
	"github.com/runstream/runstream/internal/bench/harness"
	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

const (
	defaultClients  = 16
	defaultBatch    = 1
	defaultDuration = 10 * time.Second
	defaultWarmup   = 2 * time.Second
	// maxBatch is the API's default batch limit (httpapi MaxBatchEvents).
	maxBatch = 1000
	// initialRateGuess (events/s) sizes the warmup's pre-generated events
	// before any rate is known; the window's pool is sized from the rate the
	// warmup measured.
	initialRateGuess = 20000
	// maxPregenEvents bounds the events generated ahead (about 700 bytes of
	// JSON each). Past it, clients generate inside the window and the report
	// says how many.
	maxPregenEvents = 1_000_000
)

// Config configures [Run]. Zero values take the defaults noted.
type Config struct {
	// URL of an existing runstream API, e.g. http://127.0.0.1:8080. Empty
	// starts an API in this process on 127.0.0.1:0, against a fresh schema
	// bench_<random> in PostgresURL that is dropped at the end unless
	// KeepSchema.
	URL string
	// PostgresURL is the database of the in-process API and of the pgbench
	// baseline. Required when URL is empty or Baseline is set. Its pgx pool
	// settings (pool_max_conns=...) apply to the in-process API, as they
	// would to `runstream api`.
	PostgresURL string
	// KeepSchema keeps the bench_<random> schemas for inspection.
	KeepSchema bool
	// StoreSchema, with the in-process API, appends into this existing
	// schema instead of a fresh one (migrated first, kept at the end): a
	// store that `bench read --source store --keep-schema` loaded with
	// millions of events, to measure appends and their WAL at that size.
	StoreSchema string
	// Clients is the number of concurrent HTTP clients, and pgbench's -c;
	// 0 means 16.
	Clients int
	// Batch is the events per request: 1 posts to /v1/events, more to
	// /v1/events:batch; 0 means 1. At most 1000.
	Batch int
	// Duration of the measured window (and of the pgbench run); 0 means 10s.
	Duration time.Duration
	// Warmup runs the same load before the window, not measured; 0 means 2s.
	Warmup time.Duration
	// Runs is the number of distinct runIds the events are spread over;
	// 0 means 10000.
	Runs int
	// RunIDs is how the runs' ids are made: RunIDsOrdered (the default)
	// as the producer clients make them (UUID v7, time-ordered), or
	// RunIDsRandom (UUID v4), as an engine that passes random ids of its
	// own: each new run then lands on a random page of the store's run
	// index.
	RunIDs string
	// Token is sent as a bearer token when not empty. With the in-process
	// API it also turns authentication on, as the token of Tenant.
	Token string
	// Tenant of the generated events; empty means "tenant_bench". Against an
	// API with authentication, the tenant of Token.
	Tenant string
	// Baseline also runs pgbench with the matching script (Batch 1 or 100).
	Baseline bool
	// Pgbench is the pgbench executable; empty means /usr/bin/pgbench, else
	// pgbench on PATH.
	Pgbench string
	// CPUProfile, when set, receives a CPU profile of this process that
	// covers the measured window only (with Client "go": the first window
	// of the Go client).
	CPUProfile io.Writer
	// Progress, when set, is called about once a second with running totals,
	// from one goroutine at a time.
	Progress func(Progress)
	// Logger receives the in-process API's logs; nil means discard.
	Logger *slog.Logger
	// Client is how events are posted: "raw" (or empty) posts
	// pre-encoded bodies with net/http, as always; "go" also measures the
	// Go producer client (package client: key, validation, encoding,
	// budget) in the same run, against the same API and workload, in
	// Rounds alternated rounds of each, and reports its median rate as a
	// fraction of raw's (target 0.90).
	Client string
	// Rounds is the rounds of each client with Client "go"; 0 means 3.
	Rounds int
	// TSDir is the TypeScript client's directory (clients/typescript,
	// built with npm ci && npm run build) for Client "ts" and "all".
	TSDir string
}

// The producer clients a comparison can measure; ClientRaw is the
// baseline arm, first in every round.
const (
	ClientRaw = "raw"
	ClientGo  = "go"
	// ClientTS is the TypeScript client (clients/typescript, run by
	// Node.js through its bench/append.mjs); ClientAll measures raw, go
	// and ts in the same run.
	ClientTS  = "ts"
	ClientAll = "all"
)

// defaultRounds is the rounds of each arm of a comparison.
const defaultRounds = 3

// How the runs' ids are made ([Config.RunIDs]).
const (
	RunIDsOrdered = "ordered"
	RunIDsRandom  = "random"
)

// Progress is a running total, reported while a phase runs.
type Progress struct {
	// Phase is "warmup", "measure", "pgbench warmup" or "pgbench".
	Phase string
	// Elapsed and Total are the phase's time so far and planned length.
	Elapsed, Total time.Duration
	// Events, Requests and Errors so far in the phase (zero for pgbench).
	Events, Requests, Errors int64
}

// Validate reports a configuration error naming the setting to change.
func (c Config) Validate() error {
	var errs []error
	if c.Clients < 0 {
		errs = append(errs, fmt.Errorf("clients (--clients) must be >= 1, got %d", c.Clients))
	}
	if c.Batch < 0 || c.Batch > maxBatch {
		errs = append(errs, fmt.Errorf("batch (--batch) must be from 1 to %d events per request, got %d", maxBatch, c.Batch))
	}
	if c.Duration < 0 {
		errs = append(errs, fmt.Errorf("duration (--duration) must be > 0, got %v", c.Duration))
	}
	if c.Warmup < 0 {
		errs = append(errs, fmt.Errorf("warmup (--warmup) must be > 0, got %v", c.Warmup))
	}
	if c.Runs < 0 {
		errs = append(errs, fmt.Errorf("runs (--runs) must be >= 1, got %d", c.Runs))
	}
	switch c.RunIDs {
	case "", RunIDsOrdered, RunIDsRandom:
	default:
		errs = append(errs, fmt.Errorf("run ids (--run-ids) must be %s or %s, got %q", RunIDsOrdered, RunIDsRandom, c.RunIDs))
	}
	switch c.Client {
	case "", ClientRaw, ClientGo, ClientTS, ClientAll:
	default:
		errs = append(errs, fmt.Errorf("client (--client) must be %s, %s, %s or %s, got %q", ClientRaw, ClientGo, ClientTS, ClientAll, c.Client))
	}
	if (c.Client == ClientTS || c.Client == ClientAll) && c.Batch > 1 {
		errs = append(errs, fmt.Errorf("client (--client) %s appends one event per request (its bench script): use --batch 1", c.Client))
	}
	if c.StoreSchema != "" && (c.URL != "" || c.Baseline) {
		errs = append(errs, errors.New("--store-schema applies to the in-process API without --baseline (pgbench runs in a fresh schema): drop --url or --baseline"))
	}
	if c.Rounds < 0 {
		errs = append(errs, fmt.Errorf("rounds (--rounds) must be >= 1, got %d", c.Rounds))
	}
	if c.URL != "" {
		u, err := url.Parse(c.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("url (--url) must be the API's base URL such as http://127.0.0.1:8080, got %q", c.URL))
		}
	}
	if c.PostgresURL == "" {
		if c.URL == "" {
			errs = append(errs, errors.New("a Postgres URL (--postgres-url, RUNSTREAM_POSTGRES_URL) is needed to start the in-process API; or point --url at a running API"))
		}
		if c.Baseline {
			errs = append(errs, errors.New("a Postgres URL (--postgres-url, RUNSTREAM_POSTGRES_URL) is needed for the pgbench baseline"))
		}
	}
	if c.Baseline {
		b := c.Batch
		if b == 0 {
			b = defaultBatch
		}
		if _, _, err := pgbenchScript(b); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (c *Config) setDefaults() {
	harness.Default(&c.Clients, defaultClients)
	harness.Default(&c.Batch, defaultBatch)
	harness.Default(&c.Duration, defaultDuration)
	harness.Default(&c.Warmup, defaultWarmup)
	harness.Default(&c.Runs, harness.DefaultRuns)
	harness.Default(&c.RunIDs, RunIDsOrdered)
	harness.Default(&c.Tenant, harness.DefaultTenant)
	harness.Default(&c.Client, ClientRaw)
	harness.Default(&c.Rounds, defaultRounds)
	c.Logger = harness.OrDiscard(c.Logger)
}

// Run runs the append benchmark described by cfg and, with
// cfg.Baseline, the pgbench baseline after it. It blocks for about
// Warmup+Duration (twice that with a baseline) and cleans up what it
// created before it returns, also when ctx is cancelled.
func Run(ctx context.Context, cfg Config) (rep *Report, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	if cfg.Baseline {
		// Fail before the long part, not after it.
		if _, err := harness.FindPgbench(cfg.Pgbench); err != nil {
			return nil, err
		}
	}
	target := strings.TrimRight(cfg.URL, "/")
	var (
		api    *inProcessAPI
		before storeMark
	)
	if target == "" {
		api, err = startAPI(ctx, cfg)
		if err != nil {
			return nil, err
		}
		defer func() { err = errors.Join(err, api.close(ctx)) }()
		target = api.url
		if before, err = markStore(ctx, api.pool); err != nil {
			return nil, err
		}
	}
	g := newLoad(cfg, target)
	defer g.hc.CloseIdleConnections()
	if cfg.Client == ClientRaw {
		rep, err = g.run(ctx)
	} else {
		rep, err = g.compare(ctx)
	}
	if err != nil {
		return nil, err
	}
	if api != nil {
		rep.Target = "in-process"
		rep.PoolMaxConns = api.pool.Config().MaxConns
		after, err := markStore(ctx, api.pool)
		if err != nil {
			return nil, err
		}
		rep.Stored = after.events - before.events
		rep.StoredBefore = before.events
		rep.StoreSchema = api.schema.Name
		if rep.Stored > 0 {
			rep.WALBytesPerEvent = harness.Round(float64(after.wal-before.wal)/float64(rep.Stored), 0)
		}
		// Stop the API and drop its schema now, so the baseline runs on a
		// quiet database.
		cerr := api.close(ctx)
		api = nil
		if cerr != nil {
			return nil, cerr
		}
	}
	if cfg.Baseline {
		bl, err := runBaseline(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("running the pgbench baseline: %w", err)
		}
		bl.Ratio = harness.Round(harness.Ratio(rep.EventsPerSec(), bl.EventsPerSec()), 4)
		rep.Baseline = bl
	}
	return rep, nil
}

// inProcessAPI is an httpapi.Server on 127.0.0.1:0 over a fresh schema.
type inProcessAPI struct {
	url    string
	pool   *pgxpool.Pool
	schema *harness.Schema
	cancel context.CancelFunc
	done   chan error
}

func startAPI(ctx context.Context, cfg Config) (_ *inProcessAPI, err error) {
	sc, pool, err := harness.StoreSchema(ctx, cfg.PostgresURL, cfg.StoreSchema, cfg.KeepSchema)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			pool.Close()
			err = errors.Join(err, sc.Drop(ctx))
		}
	}()
	// A registry of its own: the API records its metrics as in production,
	// and nothing touches the global registry.
	reg := prometheus.NewRegistry()
	st, err := postgres.New(pool, postgres.Config{Registerer: reg, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	var tokens map[string]string
	if cfg.Token != "" {
		tokens = map[string]string{cfg.Token: cfg.Tenant}
	}
	srv, err := httpapi.New(httpapi.Config{Addr: "127.0.0.1:0", AuthTokens: tokens,
		Registerer: reg, Gatherer: reg, Logger: cfg.Logger}, st, nil)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening on 127.0.0.1:0 for the in-process API: %w", err)
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	a := &inProcessAPI{pool: pool, schema: sc, cancel: cancel, done: make(chan error, 1)}
	started := make(chan string, 1)
	go func() { a.done <- srv.Serve(sctx, ln, started) }()
	select {
	case addr := <-started:
		a.url = "http://" + addr
		return a, nil
	case err := <-a.done:
		cancel()
		return nil, fmt.Errorf("starting the in-process API: %w", err)
	}
}

// close stops the server, waits for it, closes the pool and drops the
// schema. It is safe to call on nil and more than once.
func (a *inProcessAPI) close(ctx context.Context) error {
	if a == nil || a.cancel == nil {
		return nil
	}
	a.cancel()
	a.cancel = nil
	err := <-a.done
	a.pool.Close()
	return errors.Join(err, a.schema.Drop(ctx))
}

// load is the load generator for one run.
type load struct {
	cfg      Config
	target   string
	endpoint string
	health   string
	hc       *http.Client
	ids      []workload.Identity
	clients  []*client
	// arm is the producer client of the current round (ClientRaw or
	// ClientGo); gc is the Go client of the ClientGo rounds.
	arm string
	gc  *goclient.Client
	// tsRate is the latest raw round's events/s: it sizes a TypeScript
	// round (runTS).
	tsRate float64

	// Live totals of the current phase, for progress.
	events, requests, failures atomic.Int64
}

// client is one load goroutine's state; only that goroutine touches it
// while a phase runs.
type client struct {
	idx    int
	rng    *mrand.Rand
	steps  int64 // stepIds are step_<idx>_<steps>: never repeated, so keys never collide
	bodies [][]byte
	// writes are the ClientGo rounds' pre-generated requests (Batch
	// events each), without their idempotency keys: the Go client
	// computes them, as it does for an engine.
	writes [][]store.RunEventWrite
	next   int

	lat                   []time.Duration
	requests, events      int64
	duplicates, generated int64
	errs                  map[string]int64
	buf                   bytes.Buffer
}

func newLoad(cfg Config, target string) *load {
	tr := &http.Transport{
		// Direct: a proxy from the environment would be measured too.
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        2 * cfg.Clients,
		MaxIdleConnsPerHost: 2 * cfg.Clients,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	path := "/v1/events"
	if cfg.Batch > 1 {
		path = "/v1/events:batch"
	}
	g := &load{cfg: cfg, target: target, endpoint: target + path, health: target + "/healthz", arm: ClientRaw,
		hc: &http.Client{Transport: tr, Timeout: time.Minute}}
	g.ids = make([]workload.Identity, cfg.Runs)
	for i := range g.ids {
		g.ids[i] = workload.NewIdentity(cfg.Tenant)
		if cfg.RunIDs == RunIDsRandom {
			g.ids[i].RunID = uuid.NewString()
		}
	}
	g.clients = make([]*client, cfg.Clients)
	for i := range g.clients {
		g.clients[i] = &client{idx: i, rng: mrand.New(mrand.NewPCG(mrand.Uint64(), uint64(i))), errs: map[string]int64{}}
	}
	return g
}

func (g *load) run(ctx context.Context) (*Report, error) {
	if err := g.checkHealth(ctx); err != nil {
		return nil, err
	}
	// Warmup: a pool sized by a guess; clients that exhaust it generate on
	// the fly, which does not matter here.
	g.pregenerate(eventsFor(initialRateGuess, g.cfg.Warmup))
	warm, warmEvents := g.phase(ctx, "warmup", g.cfg.Warmup, false)
	if ctx.Err() != nil {
		return nil, fmt.Errorf("bench interrupted during warmup: %w", ctx.Err())
	}
	// The window's pool: twice the warmup's rate, so it lasts even if the
	// system speeds up once warm.
	rate := float64(warmEvents) / max(warm.Seconds(), 0.001)
	if warmEvents == 0 {
		rate = initialRateGuess
	}
	g.pregenerate(eventsFor(2*rate, g.cfg.Duration))
	for _, c := range g.clients {
		c.lat = make([]time.Duration, 0, len(c.bodies)+len(c.writes)-c.next+16)
		c.requests, c.events, c.duplicates, c.generated = 0, 0, 0, 0
		clear(c.errs)
	}
	// Start the window with a clean heap, as testing does before a benchmark.
	runtime.GC()

	w, err := harness.StartWindow(g.cfg.CPUProfile)
	if err != nil {
		return nil, err
	}
	window, _ := g.phase(ctx, "measure", g.cfg.Duration, true)
	cpu := w.Stop()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("bench interrupted: %w", ctx.Err())
	}

	rep := &Report{Target: g.target, Clients: g.cfg.Clients, Batch: g.cfg.Batch, Runs: g.cfg.Runs, RunIDs: g.cfg.RunIDs,
		Window: window, Errors: map[string]int64{}, WarmupEvents: warmEvents, CPU: cpu}
	var lat []time.Duration
	for _, c := range g.clients {
		rep.Requests += c.requests
		rep.Events += c.events
		rep.Duplicates += c.duplicates
		rep.GeneratedInWindow += c.generated
		for k, v := range c.errs {
			rep.Errors[k] += v
		}
		lat = append(lat, c.lat...)
	}
	rep.Latency = harness.Summarize(lat)
	return rep, nil
}

// checkHealth fails fast when the API does not answer.
func (g *load) checkHealth(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, g.health, nil)
	if err != nil {
		return err
	}
	resp, err := g.hc.Do(req)
	if err != nil {
		return fmt.Errorf("checking the API at %s: %w (is it running?)", g.health, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("checking the API at %s: status %d, want 200", g.health, resp.StatusCode)
	}
	return nil
}

// eventsFor is how many events a rate sustains over d.
func eventsFor(rate float64, d time.Duration) int {
	return int(rate * d.Seconds())
}

// pregenerate tops every client's pool up to its share of events (in
// requests of Batch events), bounded by maxPregenEvents in all. Clients
// generate in parallel.
func (g *load) pregenerate(events int) {
	events = min(events, maxPregenEvents)
	perClient := (events/g.cfg.Clients)/g.cfg.Batch + 8
	var wg sync.WaitGroup
	for _, c := range g.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if g.arm == ClientGo {
				c.writes = append(c.writes[:0], c.writes[c.next:]...)
				c.next = 0
				for len(c.writes) < perClient {
					c.writes = append(c.writes, g.writes(c))
				}
				return
			}
			c.bodies = append(c.bodies[:0], c.bodies[c.next:]...) // release what was sent
			c.next = 0
			for len(c.bodies) < perClient {
				c.bodies = append(c.bodies, g.body(c))
			}
		}()
	}
	wg.Wait()
}

// batchBody is the wire shape of POST /v1/events:batch.
type batchBody struct {
	Events []store.RunEventWrite `json:"events"`
}

// body returns one request body of Batch valid events, on random runs.
func (g *load) body(c *client) []byte {
	var (
		b   []byte
		err error
	)
	if g.cfg.Batch == 1 {
		b, err = json.Marshal(g.event(c))
	} else {
		evs := make([]store.RunEventWrite, g.cfg.Batch)
		for i := range evs {
			evs[i] = g.event(c)
		}
		b, err = json.Marshal(batchBody{Events: evs})
	}
	if err != nil {
		panic(err) // RunEventWrite always marshals
	}
	return b
}

// writes returns one request's Batch events for the Go client, keys
// left for it to compute.
func (g *load) writes(c *client) []store.RunEventWrite {
	evs := make([]store.RunEventWrite, g.cfg.Batch)
	for i := range evs {
		evs[i] = g.event(c)
		evs[i].IdempotencyKey = ""
	}
	return evs
}

// event is a StepCompleted of a random run, with a stepId never used
// before (so its idempotency key is new) and a payload of about 200 bytes,
// the shape the pgbench scripts insert.
func (g *load) event(c *client) store.RunEventWrite {
	id := g.ids[c.rng.IntN(len(g.ids))]
	c.steps++
	step := "step_" + strconv.Itoa(c.idx) + "_" + strconv.FormatInt(c.steps, 10)
	return workload.Event(id, store.EventStepCompleted, step, 1, 1, time.Now(), map[string]any{
		"durationMs": c.rng.IntN(5000),
		"result":     map[string]any{"rowsAffected": c.rng.IntN(1000000)},
		"artifacts": []map[string]any{{
			"uri":       "s3://runstream-artifacts/" + id.RunID + "/" + step + "/1/run_results.json",
			"kind":      "dbt-run-results",
			"sizeBytes": c.rng.IntN(100000),
		}},
	})
}

// phase runs every client until d has passed and returns the time from the
// common start until the last request completed, and the events appended.
// Requests already sent at the deadline complete and count. With record,
// the clients keep per-request latencies and totals for the report.
func (g *load) phase(ctx context.Context, name string, d time.Duration, record bool) (time.Duration, int64) {
	g.events.Store(0)
	g.requests.Store(0)
	g.failures.Store(0)
	start := time.Now()
	deadline := start.Add(d)
	stop := g.progress(name, start, d)
	var wg sync.WaitGroup
	for _, c := range g.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && time.Now().Before(deadline) {
				g.do(ctx, c, record)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	stop()
	return elapsed, g.events.Load()
}

// progress calls cfg.Progress every second until the returned stop is
// called; stop waits for the goroutine.
func (g *load) progress(name string, start time.Time, total time.Duration) (stop func()) {
	return harness.EverySecond(g.cfg.Progress, func() Progress {
		return Progress{Phase: name, Elapsed: time.Since(start), Total: total,
			Events: g.events.Load(), Requests: g.requests.Load(), Errors: g.failures.Load()}
	})
}

var (
	errorKey     = []byte(`"error":`)
	idempotentOn = []byte(`"idempotent":true`)
)

// do sends one request. With record, it records the request in c's
// window totals; the live totals are updated either way.
func (g *load) do(ctx context.Context, c *client, record bool) {
	if g.arm == ClientGo {
		g.doGo(ctx, c, record)
		return
	}
	var body []byte
	if c.next < len(c.bodies) {
		body = c.bodies[c.next]
		c.bodies[c.next] = nil
		c.next++
	} else {
		body = g.body(c)
		if record {
			c.generated++
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.endpoint, bytes.NewReader(body))
	if err != nil {
		panic(err) // the endpoint was validated
	}
	req.Header.Set("Content-Type", "application/json")
	if g.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+g.cfg.Token)
	}
	t0 := time.Now()
	resp, err := g.hc.Do(req)
	if err == nil {
		c.buf.Reset()
		_, err = c.buf.ReadFrom(resp.Body)
		resp.Body.Close()
	}
	lat := time.Since(t0)
	if ctx.Err() != nil {
		return // interrupted: not a failure of the API
	}
	g.requests.Add(1)
	if record {
		c.requests++
		c.lat = append(c.lat, lat)
	}
	fail := func(key string, n int64) {
		g.failures.Add(n)
		if record {
			c.errs[key] += n
		}
	}
	switch {
	case err != nil:
		fail("transport", 1)
		return
	case resp.StatusCode/100 != 2:
		fail(strconv.Itoa(resp.StatusCode), 1)
		return
	}
	ok := int64(g.cfg.Batch)
	if g.cfg.Batch > 1 {
		if n := int64(bytes.Count(c.buf.Bytes(), errorKey)); n > 0 {
			fail("item", n)
			ok -= n
		}
	}
	g.events.Add(ok)
	if record {
		c.events += ok
		c.duplicates += int64(bytes.Count(c.buf.Bytes(), idempotentOn))
	}
}

// doGo appends one request's events through the Go client: Append for
// one event, AppendBatch for more.
func (g *load) doGo(ctx context.Context, c *client, record bool) {
	var evs []store.RunEventWrite
	if c.next < len(c.writes) {
		evs = c.writes[c.next]
		c.writes[c.next] = nil
		c.next++
	} else {
		evs = g.writes(c)
		if record {
			c.generated++
		}
	}
	t0 := time.Now()
	var (
		results []goclient.BatchResult
		err     error
	)
	if len(evs) == 1 {
		var res goclient.Result
		res, err = g.gc.Append(ctx, evs[0])
		results = []goclient.BatchResult{{Result: res, Err: err}}
	} else {
		results, err = g.gc.AppendBatch(ctx, evs)
	}
	lat := time.Since(t0)
	if ctx.Err() != nil {
		return
	}
	g.requests.Add(1)
	if record {
		c.requests++
		c.lat = append(c.lat, lat)
	}
	fail := func(key string) {
		g.failures.Add(1)
		if record {
			c.errs[key]++
		}
	}
	if err != nil {
		for range evs {
			fail(goErrorKey(err))
		}
		return
	}
	var ok int64
	for _, r := range results {
		switch {
		case r.Err != nil:
			fail(goErrorKey(r.Err))
		case r.Spooled:
			fail("spooled")
		default:
			ok++
			if record && r.Idempotent {
				c.duplicates++
			}
		}
	}
	g.events.Add(ok)
	if record {
		c.events += ok
	}
}

// goErrorKey is the Errors key of a Go client error: the API's code, or
// "go client" for the client's own.
func goErrorKey(err error) string {
	var se *store.Error
	if errors.As(err, &se) {
		return string(se.Code)
	}
	return "go client"
}

// compare measures each producer client in alternated rounds (raw, go;
// go, raw; raw, go) against the same API, each round a warmup and a window,
// and returns raw's median round as the report with the comparison.
func (g *load) compare(ctx context.Context) (*Report, error) {
	spool, err := os.MkdirTemp("", "runstream-bench-spool-")
	if err != nil {
		return nil, fmt.Errorf("creating the Go client's spool directory: %w", err)
	}
	defer os.RemoveAll(spool)
	g.gc, err = goclient.New(goclient.Config{URL: g.target, Token: g.cfg.Token, HTTPClient: g.hc, SpoolDir: spool, Logger: g.cfg.Logger})
	if err != nil {
		return nil, err
	}
	defer g.gc.Close()
	arms := []string{ClientRaw, g.cfg.Client}
	if g.cfg.Client == ClientAll {
		arms = []string{ClientRaw, ClientGo, ClientTS}
	}
	reports := make([][]*Report, len(arms))
	// One window can be profiled: the first round of the client measured.
	profile := g.cfg.CPUProfile
	defer func() { g.cfg.CPUProfile = profile }()
	for round := 0; round < g.cfg.Rounds; round++ {
		// The arms take turns going first (raw, go; go, raw; ...), so a
		// machine that slows down or speeds up over the run favours
		// neither.
		for k := range arms {
			i := (k + round) % len(arms)
			arm := arms[i]
			g.arm = arm
			g.cfg.CPUProfile = nil
			if round == 0 && i == 1 {
				g.cfg.CPUProfile = profile
			}
			for _, c := range g.clients {
				// The other arm's pool: not this round's.
				c.bodies, c.writes, c.next = nil, nil, 0
			}
			run := g.run
			if arm == ClientTS {
				run = g.runTS
			}
			rep, err := run(ctx)
			if err != nil {
				return nil, fmt.Errorf("round %d of the %s client: %w", round+1, arm, err)
			}
			rep.Client = arm
			reports[i] = append(reports[i], rep)
			if arm == ClientRaw {
				// The TypeScript rounds append about a window's worth.
				g.tsRate = rep.EventsPerSec()
			}
		}
	}
	comp := &Comparison{Rounds: g.cfg.Rounds, LoadAverage: loadAverage()}
	var top *Report
	for i, arm := range arms {
		a := Arm{Client: arm, Errors: map[string]int64{}}
		for _, r := range reports[i] {
			a.RoundsEventsPerSec = append(a.RoundsEventsPerSec, harness.Round(r.EventsPerSec(), 1))
			for k, v := range r.Errors {
				a.Errors[k] += v
			}
		}
		med := medianReport(reports[i])
		a.MedianEventsPerSec = harness.Round(med.EventsPerSec(), 1)
		a.Latency = med.Latency
		a.CPU = med.CPU
		if i == 0 {
			top = med
		} else {
			a.Ratio = harness.Round(harness.Ratio(med.EventsPerSec(), top.EventsPerSec()), 4)
			if arm == ClientGo {
				a.Target = ClientTargetRatio // the TypeScript client's rate is reported beside it
			}
		}
		comp.Arms = append(comp.Arms, a)
	}
	top.Comparison = comp
	return top, nil
}

// ClientTargetRatio is the fraction of the raw rate a producer client
// must reach (issue 21).
const ClientTargetRatio = 0.90

// medianReport is the round with the median rate (the lower middle of an
// even count).
func medianReport(rs []*Report) *Report {
	s := slices.Clone(rs)
	slices.SortFunc(s, func(a, b *Report) int { return cmp.Compare(a.EventsPerSec(), b.EventsPerSec()) })
	return s[(len(s)-1)/2]
}

// loadAverage is /proc/loadavg's first three fields, empty where there is
// none.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// storeMark is the store's event count and the server's WAL position at
// one moment: two of them give the events appended between and the WAL
// they wrote (the whole server's WAL: run on an otherwise quiet server).
type storeMark struct {
	events int64
	wal    int64
}

func markStore(ctx context.Context, pool *pgxpool.Pool) (storeMark, error) {
	var m storeMark
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM run_events), pg_current_wal_lsn() - '0/0'::pg_lsn`).Scan(&m.events, &m.wal); err != nil {
		return m, fmt.Errorf("counting the store's events and reading the WAL position: %w", err)
	}
	return m, nil
}
