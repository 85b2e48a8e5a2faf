// Package etlbench is `runstream bench etl`: it measures the analytics
// ETL (internal/etl) against real Postgres and an in-process
// Kafka-protocol broker, in records/s into its sink against a plain
// batched INSERT of the same rows in the same run (see [Run]). etl.go holds
// the configuration and the rounds, sink.go the generated topic, the sink
// and its check, baseline.go the plain INSERTs, report.go the report.
package etlbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runstream/runstream/internal/bench/harness"
	"github.com/runstream/runstream/internal/etl"
)

// TargetRatio is the ETL's rate to reach, as a fraction of a plain
// batched INSERT of the same rows in the same run (issue 7, "Speed").
const TargetRatio = 0.50

const (
	// A million records: the sink's window is then about six seconds, of
	// which the start (joining the group, the first fetches, the first
	// transactions on each connection) is a few percent; at 200,000 it
	// was a fifth, and the baseline's window a noisy half second.
	defaultEvents      = 1_000_000
	defaultPartitions  = 12
	defaultActiveRuns  = 2000
	defaultBatch       = 20000
	defaultInsertBatch = 1000
	// stall fails the sink phase when the group commits nothing for
	// this long, rather than hanging.
	stall = time.Minute
)

// Config configures [Run]. Zero values take the defaults noted.
type Config struct {
	// PostgresURL is the database of the sink and of the baseline; each
	// works in a fresh schema (bench_etl_<random>, bench_etl_base_<random>)
	// dropped at the end unless KeepSchema. Required.
	PostgresURL string
	// KeepSchema keeps both schemas for inspection.
	KeepSchema bool
	// Partitions of the fresh topic on an in-process kfake broker; 0
	// means 12.
	Partitions int32
	// Events pre-filled into the topic; 0 means 1,000,000.
	Events int
	// Rounds repeats the whole measurement (fill, sink, check, baseline,
	// each round with fresh runs, topic and schemas) and reports the round
	// with the median ratio; 0 means 1. The ratio of a single round moves
	// by several points with what else the machine does.
	Rounds int
	// ActiveRuns is how many runs are in flight at once while the topic
	// is filled: the next event belongs to one of them at random, and a
	// run that ends makes room for a new one; 0 means 2,000.
	ActiveRuns int
	// Batch is the ETL's MaxPollRecords; 0 means 20,000 (its default).
	Batch int
	// MaxQueued is the ETL's MaxQueuedRecords; 0 means its default, half
	// of Batch.
	MaxQueued int
	// PoolConns is the sink's Postgres pool size; 0 means what `runstream
	// etl` gets by default, pgxpool's max(4, GOMAXPROCS): with a goroutine
	// per partition, more connections than cores only make the partitions'
	// transactions compete for them.
	PoolConns int
	// DisableBatching makes the sink write each event as it comes
	// (etl.Config.DisableBatching), for comparison.
	DisableBatching bool
	// InsertBatch is the baseline's rows per INSERT; 0 means 1000.
	InsertBatch int
	// BaselineConns is the baseline's connections, inserting batches in
	// parallel; 0 means one per CPU, the fastest here (more connections
	// than cores only contend).
	BaselineConns int
	// CPUProfile, when set, receives a CPU profile of this process (sink,
	// broker and bench) covering the first round's sink window only.
	CPUProfile io.Writer
	// AllocProfile and AllocProfileBase, when set, receive the process's
	// allocation profile (pprof "allocs", counted from its start) at the
	// end and at the start of the sink's window: `go tool pprof -base
	// <base> <profile>` shows the window's allocations.
	AllocProfile, AllocProfileBase io.Writer
	// Progress, when set, is called about once a second.
	Progress func(harness.PhaseProgress)
	// Logger receives the ETL's logs; nil means discard.
	Logger *slog.Logger
}

// Validate reports a configuration error naming the setting to change.
func (c Config) Validate() error {
	var errs []error
	if c.PostgresURL == "" {
		errs = append(errs, errors.New("a Postgres URL (--postgres-url, RUNSTREAM_POSTGRES_URL) is needed"))
	}
	errs = append(errs, harness.Negative(harness.Flag("partitions", c.Partitions), harness.Flag("events", c.Events),
		harness.Flag("active-runs", c.ActiveRuns), harness.Flag("batch", c.Batch), harness.Flag("max-queued", c.MaxQueued),
		harness.Flag("pool-conns", c.PoolConns), harness.Flag("insert-batch", c.InsertBatch),
		harness.Flag("baseline-conns", c.BaselineConns), harness.Flag("rounds", c.Rounds))...)
	return errors.Join(errs...)
}

func (c *Config) setDefaults() {
	harness.Default(&c.Partitions, defaultPartitions)
	harness.Default(&c.Events, defaultEvents)
	harness.Default(&c.Rounds, 1)
	harness.Default(&c.ActiveRuns, defaultActiveRuns)
	harness.Default(&c.Batch, defaultBatch)
	harness.Default(&c.MaxQueued, etl.DefaultMaxQueuedRecords(c.Batch))
	harness.Default(&c.PoolConns, max(4, runtime.GOMAXPROCS(0)))
	harness.Default(&c.InsertBatch, defaultInsertBatch)
	harness.Default(&c.BaselineConns, runtime.NumCPU())
	c.Logger = harness.OrDiscard(c.Logger)
}

// Run measures `runstream etl` (package etl) against real Postgres and
// an in-process Kafka-protocol broker (franz-go's kfake, as `runstream
// dev` runs it):
//
//   - Fill (not measured): a fresh topic of Partitions partitions gets
//     Events records of realistic runs (internal/workload: retries,
//     failures, skips, pauses, unknown types), ActiveRuns of them in
//     flight at once, produced as the relay produces them.
//   - Sink: the ETL, in a fresh schema, from its start until its group's
//     committed offsets reach the end offsets (kadm). Then its metrics and
//     every run's row are checked against reduce.
//   - Baseline, same run, same Postgres: the sink's final rows, read back
//     outside the window, inserted into a fresh copy of the tables with
//     plain multi-row INSERTs of InsertBatch rows.
//
// It cleans up what it created before it returns, also when ctx is
// cancelled.
//
// With several Rounds it does all of that once per round and returns the
// report of the round with the median ratio, summarising every round in
// its Rounds.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	if cfg.Rounds == 1 {
		return runRound(ctx, cfg, "")
	}
	median, reps, err := harness.Median(cfg.Rounds, func(i int) (*Report, error) {
		rep, err := runRound(ctx, cfg, fmt.Sprintf(" %d/%d", i+1, cfg.Rounds))
		// Profiles cover the first round only.
		cfg.CPUProfile, cfg.AllocProfile, cfg.AllocProfileBase = nil, nil, nil
		return rep, err
	}, func(r *Report) float64 { return r.Ratio })
	if err != nil {
		return nil, err
	}
	median.Rounds = make([]Round, len(reps))
	for i, r := range reps {
		median.Rounds[i] = Round{EventsPerSec: harness.Round(r.EventsPerSec(), 1), Ratio: r.Ratio, Consistent: r.consistent()}
		if r.Baseline != nil {
			median.Rounds[i].BaselineEventsPerSec = harness.Round(r.Baseline.EventsPerSec(), 1)
		}
	}
	return median, nil
}

// runRound is one round of Run; label names it in progress reports.
func runRound(ctx context.Context, cfg Config, label string) (rep *Report, err error) {
	b := &bench{cfg: cfg, label: label}
	defer func() { err = errors.Join(err, b.close(ctx)) }()
	rep = &Report{Broker: harness.InProcessBroker, Partitions: cfg.Partitions, Batch: cfg.Batch, MaxQueued: cfg.MaxQueued, PoolConns: cfg.PoolConns,
		Batching: !cfg.DisableBatching, Events: int64(cfg.Events), ActiveRuns: cfg.ActiveRuns, Target: TargetRatio}

	runs, order := Generate(uint64(time.Now().UnixNano()), cfg.Events, cfg.ActiveRuns)
	rep.Runs = len(runs)
	// What the check expects is worked out now, so that the records need
	// not stay in memory while the sink is timed: a million of them are a
	// gigabyte of pointers the collector would scan again and again, at
	// the sink's expense.
	want := expect(runs)
	runs = nil
	if b.kafka, err = harness.OpenBroker(ctx, harness.BrokerConfig{Partitions: cfg.Partitions, TopicPrefix: "bench-etl-"}); err != nil {
		return nil, err
	}
	start := time.Now()
	if rep.RecordBytes, err = b.fill(ctx, order); err != nil {
		return nil, err
	}
	rep.Fill = time.Since(start)
	order = nil

	sink, err := b.connect(ctx, "bench_etl_", cfg.PoolConns)
	if err != nil {
		return nil, err
	}
	if err := b.runSink(ctx, sink, rep); err != nil {
		return nil, err
	}
	_ = b.kafka.Close(ctx) // its records are not needed any more
	if err := verify(ctx, sink, want, rep); err != nil {
		return nil, err
	}
	if rep.Baseline, err = b.baseline(ctx, sink); err != nil {
		return nil, err
	}
	rep.Baseline.Events = rep.Events
	rep.Ratio = harness.Ratio(rep.EventsPerSec(), rep.Baseline.EventsPerSec())
	return rep, nil
}

// noAutovacuum turns autovacuum off for the tables of pool's schema.
// Half a million new rows make autovacuum vacuum and analyze a table a few
// seconds later, which may fall in the sink's window, in the baseline's or
// in neither: a second of Postgres CPU that moved the ratio by several
// points from one run to the next. The schemas are dropped at the end
// anyway. (A checkpoint of the server's WAL can still fall in either
// window: starting one needs a superuser.) The tables are partitioned by
// month (etl.Migrate creates the current and the next month's): the
// setting is the partitions'.
func noAutovacuum(ctx context.Context, pool *pgxpool.Pool) error {
	rows, err := pool.Query(ctx, `SELECT inhrelid::regclass::text FROM pg_inherits
		WHERE inhparent IN ('runs'::regclass, 'step_attempts'::regclass)`)
	if err != nil {
		return fmt.Errorf("listing the bench's partitions: %w", err)
	}
	parts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("listing the bench's partitions: %w", err)
	}
	for _, t := range parts {
		if _, err := pool.Exec(ctx, `ALTER TABLE `+pgx.Identifier{t}.Sanitize()+` SET (autovacuum_enabled = false, toast.autovacuum_enabled = false)`); err != nil {
			return fmt.Errorf("turning autovacuum off for the bench's %s: %w", t, err)
		}
	}
	return nil
}

// bench is one round's resources.
type bench struct {
	cfg     Config
	label   string // the round, in progress reports
	kafka   *harness.Broker
	pools   []*pgxpool.Pool
	schemas []*harness.Schema
}

// close stops the broker, closes the pools and drops the schemas (unless
// KeepSchema), also after ctx was cancelled.
func (b *bench) close(ctx context.Context) error {
	var errs []error
	if b.kafka != nil {
		errs = append(errs, b.kafka.Close(ctx))
	}
	for _, p := range b.pools {
		p.Close()
	}
	for _, s := range b.schemas {
		errs = append(errs, s.Drop(ctx))
	}
	return errors.Join(errs...)
}

// connect opens a pool of conns connections on a fresh schema
// prefix<random> with the sink's tables (etl.Migrate), autovacuum off.
func (b *bench) connect(ctx context.Context, prefix string, conns int) (*pgxpool.Pool, error) {
	sc, err := harness.NewSchema(ctx, b.cfg.PostgresURL, prefix, b.cfg.KeepSchema)
	if err != nil {
		return nil, err
	}
	b.schemas = append(b.schemas, sc)
	url := b.cfg.PostgresURL
	switch {
	case strings.Contains(url, "://") && strings.Contains(url, "?"):
		url += fmt.Sprintf("&pool_max_conns=%d", conns)
	case strings.Contains(url, "://"):
		url += fmt.Sprintf("?pool_max_conns=%d", conns)
	default:
		url += fmt.Sprintf(" pool_max_conns=%d", conns)
	}
	pool, err := etl.Connect(ctx, url, sc.Name)
	if err != nil {
		return nil, err
	}
	b.pools = append(b.pools, pool)
	if _, err := etl.Migrate(ctx, pool); err != nil {
		return nil, err
	}
	return pool, noAutovacuum(ctx, pool)
}

// progress reports a phase through cfg.Progress (see [harness.PhaseReporter]).
func (b *bench) progress(phase string, total int64, done func() int64) (stop func()) {
	return harness.PhaseReporter(b.cfg.Progress, phase+b.label, total, done)
}
