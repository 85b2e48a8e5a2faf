package readbench

import (
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/internal/bench/harness"
	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/store/postgres"
)

// Sources of the GET phase ([Config.Source]).
const (
	SourceRedis = "redis"
	SourceStore = "store"
)

// StoreConfig is the store source's part of [Config]: the runs the GETs
// read are in the store only, so the API projects each answer from the
// store (issue 30: terminal runs past --snapshot-ttl).
type StoreConfig struct {
	// Events loaded into a fresh schema, in runs of EventsPerRun; 0 means
	// 400,000 (20,000 runs of 20).
	Events int
	// EventsPerRun is each run's length (RunStarted, steps started and
	// completed, RunCompleted); 0 means 20.
	EventsPerRun int
	// MaxConsistentReads is the in-process API's limit of concurrent store
	// projections (--max-consistent-reads); 0 means the API's default.
	MaxConsistentReads int
	// Schema, when set, is a schema an earlier run loaded and kept
	// (KeepSchema): nothing is loaded, its runs are read.
	Schema string
	// KeepSchema leaves the loaded schema for another run (Schema).
	KeepSchema bool
}

// StoreReport is the store source's outcome.
type StoreReport struct {
	Schema             string          `json:"schema"`
	Events             int64           `json:"events"`
	Runs               int             `json:"runs"`
	LoadSeconds        float64         `json:"loadSeconds"`
	Clients            int             `json:"clients"`
	MaxConsistentReads int             `json:"maxConsistentReads"`
	Seconds            float64         `json:"seconds"`
	Reads              int64           `json:"reads"`
	ReadsPerSec        float64         `json:"readsPerSec"`
	Latency            harness.Latency `json:"latencyMs"`
	// Unavailable counts 503 answers (no store-read slot within the
	// API's wait); Errors every other failure, including a 200 that did
	// not come from the store.
	Unavailable int64 `json:"unavailable"`
	Errors      int64 `json:"errors"`
	// Load1 is the 1-minute load average as the reads began; CPU what the
	// machine and this process (API and clients) used during them.
	Load1       float64     `json:"load1"`
	CPU         harness.CPU `json:"cpu"`
	TargetP99Ms float64     `json:"targetP99Ms"`
	Met         bool        `json:"met"`
}

// storeTargetP99 is the target: a store-served snapshot read's p99 at 100
// concurrent readers on a store of 10 million events.
const storeTargetP99 = 20 * time.Millisecond

const storeTenant = "tenant_bench_store"

func (r *StoreReport) writeText(b io.Writer) {
	fmt.Fprintf(b, `  store-served snapshot GETs (runs Redis does not hold; schema %s: %d events, %d runs%s)
    %d clients, --max-consistent-reads %d, %.0fs (load %.2f): %.0f reads/s  (p50 %.2f ms, p95 %.2f ms, p99 %.2f ms, max %.2f ms)
    %d reads, %d answered 503, %d other errors; CPU %.2f cores (this process %.2f)
    p99 target < %.0f ms: %s
`, r.Schema, r.Events, r.Runs, loadNote(r.LoadSeconds), r.Clients, r.MaxConsistentReads, r.Seconds, r.Load1, r.ReadsPerSec,
		msOf(r.Latency.P50), msOf(r.Latency.P95), msOf(r.Latency.P99), msOf(r.Latency.Max), r.Reads, r.Unavailable, r.Errors,
		r.CPU.Machine, r.CPU.Process, r.TargetP99Ms, harness.Verdict(r.Met))
}

func loadNote(sec float64) string {
	if sec == 0 {
		return ", loaded earlier"
	}
	return fmt.Sprintf(", loaded in %.0fs", sec)
}

// storeRunID names the store source's runs; no snapshot of them is ever
// written to Redis. The ids are random-looking (an MD5 in UUID form, as
// storeRunIDSQL makes them in Postgres), so the runs index is as spread
// as a store of engine-made random run ids, not filled in order.
func storeRunID(i int) string {
	return uuid.UUID(md5.Sum([]byte("sb:" + strconv.Itoa(i)))).String()
}

// storeRunIDSQL is storeRunID in SQL, of the bigint column r.
const storeRunIDSQL = `md5('sb:' || r)::uuid::text`

// runStore loads the store (or takes a loaded schema), serves an API on
// Redis and that schema, and has cfg.Clients clients GET random runs'
// snapshots for cfg.Duration: each is absent from Redis, so each answer
// is projected from the store.
func runStore(ctx context.Context, cfg Config) (*Report, error) {
	sc := cfg.Store
	harness.Default(&sc.Events, 400000)
	harness.Default(&sc.EventsPerRun, 20)
	if sc.EventsPerRun < 2 || sc.Events < sc.EventsPerRun {
		return nil, fmt.Errorf("the store source needs at least 2 events per run and one run's events, got %d events of %d per run", sc.Events, sc.EventsPerRun)
	}
	rep := &StoreReport{Clients: cfg.Clients, TargetP99Ms: float64(storeTargetP99) / float64(time.Millisecond)}
	var pool *pgxpool.Pool
	if sc.Schema != "" {
		var err error
		if pool, err = postgres.Connect(ctx, harness.WithSearchPath(cfg.PostgresURL, sc.Schema)); err != nil {
			return nil, err
		}
		defer pool.Close()
		rep.Schema = sc.Schema
		if err := pool.QueryRow(ctx, `SELECT count(*), coalesce(sum(last_seq), 0) FROM runs WHERE tenant_id = $1`, storeTenant).Scan(&rep.Runs, &rep.Events); err != nil {
			return nil, fmt.Errorf("counting the bench runs of schema %s: %w", sc.Schema, err)
		}
		if rep.Runs == 0 {
			return nil, fmt.Errorf("schema %s holds no bench runs (tenant %s): load one with --keep-schema first", sc.Schema, storeTenant)
		}
		var named bool
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM runs WHERE run_id = $1)`, storeRunID(0)).Scan(&named); err != nil {
			return nil, fmt.Errorf("looking up the first bench run of schema %s: %w", sc.Schema, err)
		}
		if !named {
			return nil, fmt.Errorf("schema %s was loaded by an older bench, whose run ids this one does not read: load a new one with --keep-schema", sc.Schema)
		}
	} else {
		schema, p, err := harness.MigratedSchema(ctx, cfg.PostgresURL, sc.KeepSchema)
		if err != nil {
			return nil, err
		}
		defer func() { _ = schema.Drop(ctx) }()
		pool = p
		defer pool.Close()
		rep.Schema = schema.Name
		rep.Runs = sc.Events / sc.EventsPerRun
		rep.Events = int64(rep.Runs * sc.EventsPerRun)
		start := time.Now()
		if err := loadStore(ctx, pool, rep.Runs, sc.EventsPerRun, cfg.Progress); err != nil {
			return nil, err
		}
		rep.LoadSeconds = harness.Round(time.Since(start).Seconds(), 1)
	}

	opts, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("parsing the Redis URL: %w", err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	st, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		return nil, err
	}
	srv, err := httpapi.New(httpapi.Config{Limits: httpapi.Limits{MaxConnections: cfg.Clients + 256, MaxConsistentReads: sc.MaxConsistentReads}}, st, rdb)
	if err != nil {
		return nil, err
	}
	rep.MaxConsistentReads = sc.MaxConsistentReads
	if rep.MaxConsistentReads == 0 {
		rep.MaxConsistentReads = 8 // the API's default (httpapi.Limits)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx, ln, nil) }()
	err = measureStoreGets(ctx, cfg, ln.Addr().String(), rep)
	stop()
	<-served
	if err != nil {
		return nil, err
	}
	rep.Met = rep.Reads > 0 && rep.Errors == 0 && rep.Unavailable == 0 && rep.Latency.P99 < storeTargetP99
	return &Report{Clients: cfg.Clients, Store: rep}, nil
}

// loadStore inserts runs runs of perRun events each (RunStarted, steps
// started and completed in turn, RunCompleted) and their runs rows,
// server-side in chunks: the append path has benches of its own, this one
// needs the rows. Then it vacuums and analyzes, as autovacuum would have.
func loadStore(ctx context.Context, pool *pgxpool.Pool, runs, perRun int, progress io.Writer) error {
	t0 := time.Now().Add(-30 * 24 * time.Hour).UTC().Truncate(time.Second)
	chunk := max(1, 200000/perRun)
	for lo := 0; lo < runs; lo += chunk {
		hi := min(runs, lo+chunk)
		if _, err := pool.Exec(ctx, `INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
				tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
				engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
			SELECT `+storeRunIDSQL+`, s, md5(r || ':' || s)::uuid,
				CASE WHEN s = 1 THEN 'RunStarted' WHEN s = $3 THEN 'RunCompleted'
					WHEN s % 2 = 0 THEN 'StepStarted' ELSE 'StepCompleted' END,
				md5(r || ':' || s) || md5(s || ':' || r), $4, 'proj_bench', 'prod', 'plan_bench', '1',
				CASE WHEN s = 1 OR s = $3 THEN NULL ELSE 'model.step_' || (s / 2) END,
				1, 1, to_char(at - interval '3 ms', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), at,
				CASE WHEN s > 1 AND s < $3 AND s % 2 = 1 THEN json_build_object('result', json_build_object('rows', r % 9973,
					'note', 'materialized model.step_' || (s / 2)), 'artifacts', json_build_array('s3://bench/' || r || '/out.parquet')) END
			FROM generate_series($1::bigint, $2::bigint - 1) AS r, generate_series(1, $3) AS s,
				LATERAL (SELECT $5::timestamptz + r * interval '1 second' + s * interval '10 ms' AS at) t`,
			lo, hi, perRun, storeTenant, t0); err != nil {
			return fmt.Errorf("loading the events of runs %d-%d: %w", lo, hi, err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO runs (run_id, tenant_id, last_seq, terminal_at)
			SELECT `+storeRunIDSQL+`, $3, $4::integer, $5::timestamptz + r * interval '1 second' + $4::integer * interval '10 ms'
			FROM generate_series($1::bigint, $2::bigint - 1) AS r`, lo, hi, storeTenant, perRun, t0); err != nil {
			return fmt.Errorf("loading runs %d-%d: %w", lo, hi, err)
		}
		if progress != nil {
			fmt.Fprintf(progress, "bench read: loaded %d of %d runs (%d events)\n", hi, runs, hi*perRun)
		}
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE run_events, runs`); err != nil {
		return fmt.Errorf("vacuuming the loaded store: %w", err)
	}
	return nil
}

// measureStoreGets runs cfg.Clients clients GETting random runs'
// snapshots for cfg.Duration; a read counts when it is a 200 from the
// store.
func measureStoreGets(ctx context.Context, cfg Config, addr string, rep *StoreReport) error {
	var reads, unavailable, errs atomic.Int64
	lats := make([][]time.Duration, cfg.Clients)
	deadline := time.Now().Add(cfg.Duration)
	var wg sync.WaitGroup
	rep.Load1 = harness.LoadAverage1()
	start := time.Now()
	for c := range cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 11))
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
						if !pause(ctx, 10*time.Millisecond) {
							return
						}
						continue
					}
				}
				path := "/v1/runs/" + storeRunID(rng.IntN(rep.Runs)) + "/snapshot"
				t0 := time.Now()
				status, err := cl.get(path)
				switch {
				case err != nil:
					errs.Add(1)
					cl.close()
					cl = nil
				case status == http.StatusServiceUnavailable:
					unavailable.Add(1)
				case status != http.StatusOK || cl.source != "store":
					errs.Add(1)
				default:
					lats[c] = append(lats[c], time.Since(t0))
					reads.Add(1)
				}
			}
		}()
	}
	stopProgress := progress(cfg.Progress, "store-served GET", start, &reads)
	w, err := harness.StartWindow(cfg.CPUProfile)
	if err != nil {
		return err
	}
	wg.Wait()
	rep.CPU = w.Stop()
	stopProgress()
	window := time.Since(start)
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	rep.Reads, rep.Unavailable, rep.Errors = reads.Load(), unavailable.Load(), errs.Load()
	rep.Seconds = harness.Round(window.Seconds(), 1)
	rep.ReadsPerSec = harness.Round(float64(rep.Reads)/window.Seconds(), 1)
	rep.Latency = harness.Summarize(all)
	if err := ctx.Err(); err != nil {
		return err
	}
	if rep.Reads == 0 {
		return errors.New("no snapshot GET succeeded: see the errors counted")
	}
	return nil
}

// pause waits d or until ctx is done; false when ctx ended.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
