package bench

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/devbroker"
	"github.com/runstream/runstream/internal/etl"
	"github.com/runstream/runstream/internal/relay"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/reduce"
	"github.com/runstream/runstream/store"
)

// TargetETLRatio is the ETL's rate to reach, as a fraction of a plain
// batched INSERT of the same rows in the same run (issue 7, "Speed").
const TargetETLRatio = 0.50

const (
	// A million records: the sink's window is then about six seconds, of
	// which the start (joining the group, the first fetches, the first
	// transactions on each connection) is a few percent; at 200,000 it
	// was a fifth, and the baseline's window a noisy half second.
	defaultETLEvents      = 1_000_000
	defaultETLPartitions  = 12
	defaultETLActiveRuns  = 2000
	defaultETLBatch       = 20000
	defaultETLInsertBatch = 1000
	// etlStall fails the sink phase when the group commits nothing for
	// this long, rather than hanging.
	etlStall = time.Minute
)

// ETLConfig configures [RunETL]. Zero values take the defaults noted.
type ETLConfig struct {
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
	Progress func(PhaseProgress)
	// Logger receives the ETL's logs; nil means discard.
	Logger *slog.Logger
}

// Validate reports a configuration error naming the setting to change.
func (c ETLConfig) Validate() error {
	var errs []error
	if c.PostgresURL == "" {
		errs = append(errs, errors.New("a Postgres URL (--postgres-url, RUNSTREAM_POSTGRES_URL) is needed"))
	}
	for _, f := range []struct {
		flag string
		v    int64
	}{{"partitions", int64(c.Partitions)}, {"events", int64(c.Events)}, {"active-runs", int64(c.ActiveRuns)},
		{"batch", int64(c.Batch)}, {"max-queued", int64(c.MaxQueued)}, {"pool-conns", int64(c.PoolConns)}, {"insert-batch", int64(c.InsertBatch)},
		{"baseline-conns", int64(c.BaselineConns)}, {"rounds", int64(c.Rounds)}} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("--%s must be > 0, got %d", f.flag, f.v))
		}
	}
	return errors.Join(errs...)
}

func (c ETLConfig) withDefaults() ETLConfig {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	if c.Partitions == 0 {
		c.Partitions = defaultETLPartitions
	}
	def(&c.Events, defaultETLEvents)
	def(&c.Rounds, 1)
	def(&c.ActiveRuns, defaultETLActiveRuns)
	def(&c.Batch, defaultETLBatch)
	def(&c.MaxQueued, etl.DefaultMaxQueuedRecords(c.Batch))
	def(&c.PoolConns, max(4, runtime.GOMAXPROCS(0)))
	def(&c.InsertBatch, defaultETLInsertBatch)
	def(&c.BaselineConns, runtime.NumCPU())
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// ETLReport is the outcome of one [RunETL]. Its JSON form is the
// machine-readable report (`runstream bench etl --json`).
type ETLReport struct {
	Broker     string `json:"broker"`
	Partitions int32  `json:"partitions"`
	Batch      int    `json:"maxPollRecords"`
	MaxQueued  int    `json:"maxQueuedRecords"`
	PoolConns  int    `json:"poolConns"`
	Batching   bool   `json:"batching"`
	// Events in the topic, of Runs runs (ActiveRuns in flight at once).
	Events      int64   `json:"events"`
	Runs        int     `json:"runs"`
	ActiveRuns  int     `json:"activeRuns"`
	RecordBytes float64 `json:"recordBytes"`
	// Fill is the time producing the topic took (not measured).
	Fill time.Duration `json:"-"`
	// Window runs from the ETL's start until its group committed every
	// offset.
	Window time.Duration `json:"-"`
	// CPU used in the window.
	CPU CPU `json:"cpu"`
	// Committed is the sum of the group's committed offsets at the end.
	Committed int64 `json:"committed"`
	// What the sink's metrics counted (runstream_etl_events_total).
	Applied      int64 `json:"applied"`
	UnknownType  int64 `json:"unknownType"`
	Duplicates   int64 `json:"duplicates"`
	GapFilled    int64 `json:"gapFilled"`
	HandlerError int64 `json:"handlerErrors"`
	DeadLettered int64 `json:"deadLettered"`
	StoreCalls   int64 `json:"storeCalls"`
	// Flushes is the sink's write transactions (partition batches), and
	// FlushTime their read-back-and-upsert time summed.
	Flushes   int64         `json:"flushes"`
	FlushTime time.Duration `json:"-"`
	// RunRows and AttemptRows are the rows the sink produced.
	RunRows     int64 `json:"runRows"`
	AttemptRows int64 `json:"attemptRows"`
	// Verified runs had the status, steps, failed steps and attempts that
	// reduce gives for their events; Wrong ones did not, Missing
	// ones had no row. FirstProblem describes one.
	Verified     int    `json:"verified"`
	Wrong        int    `json:"wrong"`
	Missing      int    `json:"missing"`
	FirstProblem string `json:"firstProblem,omitempty"`
	// Baseline is the plain batched INSERT of the same rows.
	Baseline *ETLBaseline `json:"baseline"`
	// Ratio is the sink's records/s over the baseline's, Target the ratio
	// to reach.
	Ratio  float64 `json:"ratio"`
	Target float64 `json:"target"`
	// Rounds summarises every round when there were several; the report
	// is the one of the round with the median ratio.
	Rounds []ETLRound `json:"rounds,omitempty"`
}

// ETLRound is one round's outcome, when RunETL measured several.
type ETLRound struct {
	EventsPerSec         float64 `json:"eventsPerSec"`
	BaselineEventsPerSec float64 `json:"baselineEventsPerSec"`
	Ratio                float64 `json:"ratio"`
	Consistent           bool    `json:"consistent"`
}

// ETLBaseline is a plain batched INSERT of the sink's final rows into a
// fresh copy of its tables.
type ETLBaseline struct {
	// Rows inserted (runs and step_attempts), in INSERTs of BatchRows rows
	// (one autocommitted multi-row INSERT ... SELECT FROM unnest each), on
	// Conns connections.
	Rows      int64 `json:"rows"`
	BatchRows int   `json:"batchRows"`
	Conns     int   `json:"conns"`
	Inserts   int64 `json:"inserts"`
	// Events is the topic's size: the records the rows stand for.
	Events int64         `json:"events"`
	Window time.Duration `json:"-"`
	CPU    CPU           `json:"cpu"`
}

// RowsPerSec is the baseline's rows/s.
func (b *ETLBaseline) RowsPerSec() float64 { return perSec(b.Rows, b.Window) }

// EventsPerSec is the records/s equivalent: the topic's records over the
// time the baseline took to load the rows they make.
func (b *ETLBaseline) EventsPerSec() float64 { return perSec(b.Events, b.Window) }

// MarshalJSON adds the derived rates.
func (b *ETLBaseline) MarshalJSON() ([]byte, error) {
	type plain ETLBaseline
	return json.Marshal(struct {
		*plain
		WindowSeconds float64 `json:"windowSeconds"`
		RowsPerSec    float64 `json:"rowsPerSec"`
		EventsPerSec  float64 `json:"eventsPerSec"`
	}{(*plain)(b), round(b.Window.Seconds(), 3), round(b.RowsPerSec(), 1), round(b.EventsPerSec(), 1)})
}

// EventsPerSec is the sink's records/s over the window.
func (r *ETLReport) EventsPerSec() float64 { return perSec(r.Events, r.Window) }

// Consistent reports whether the sink handled every record once and its
// rows agree with the reducer, in every round.
func (r *ETLReport) Consistent() bool {
	for _, x := range r.Rounds {
		if !x.Consistent {
			return false
		}
	}
	return r.consistent()
}

func (r *ETLReport) consistent() bool {
	return r.Committed == r.Events && r.Applied+r.UnknownType == r.Events && r.Duplicates == 0 &&
		r.GapFilled == 0 && r.HandlerError == 0 && r.DeadLettered == 0 && r.StoreCalls == 0 &&
		r.Wrong == 0 && r.Missing == 0
}

// Met reports whether the ratio reaches the target with consistent rows.
func (r *ETLReport) Met() bool { return r.Consistent() && r.Ratio >= r.Target }

// MarshalJSON adds the derived fields.
func (r *ETLReport) MarshalJSON() ([]byte, error) {
	type plain ETLReport
	return json.Marshal(struct {
		*plain
		FillSeconds      float64 `json:"fillSeconds"`
		WindowSeconds    float64 `json:"windowSeconds"`
		EventsPerSec     float64 `json:"eventsPerSec"`
		FlushSeconds     float64 `json:"flushSeconds"`
		Consistent       bool    `json:"consistent"`
		Met              bool    `json:"met"`
		MeanFlushRecords float64 `json:"meanRecordsPerFlush"`
	}{(*plain)(r), round(r.Fill.Seconds(), 3), round(r.Window.Seconds(), 3), round(r.EventsPerSec(), 1),
		round(r.FlushTime.Seconds(), 3), r.Consistent(), r.Met(), round(etlDiv(float64(r.Events), float64(r.Flushes)), 1)})
}

// WriteText writes the human-readable report.
func (r *ETLReport) WriteText(w io.Writer) error {
	var b strings.Builder
	mode := "batched"
	if !r.Batching {
		mode = "one write per event"
	}
	fmt.Fprintf(&b, "runstream bench etl: %d records of %d runs (%d in flight), %d partitions, %s, poll %d, queue %d, pool %d conns, %s\n",
		r.Events, r.Runs, r.ActiveRuns, r.Partitions, r.Broker, r.Batch, r.MaxQueued, r.PoolConns, mode)
	fmt.Fprintf(&b, "  fill       %s (not measured), %.0f bytes per record\n", r.Fill.Round(time.Millisecond), r.RecordBytes)
	fmt.Fprintf(&b, "  sink       %10.0f records/s  (%d records in %s; %d transactions, %.0f records each, %s in read-back+upsert",
		r.EventsPerSec(), r.Events, r.Window.Round(time.Millisecond), r.Flushes, etlDiv(float64(r.Events), float64(r.Flushes)),
		r.FlushTime.Round(time.Millisecond))
	if r.CPU.Machine > 0 {
		fmt.Fprintf(&b, "; process %.2f cores, machine %.2f cores", r.CPU.Process, r.CPU.Machine)
	}
	b.WriteString(")\n")
	fmt.Fprintf(&b, "  rows       %d runs, %d step_attempts; %d applied, %d unknown types, %d duplicates, %d gap-filled, %d handler errors, %d dead-lettered, %d store calls\n",
		r.RunRows, r.AttemptRows, r.Applied, r.UnknownType, r.Duplicates, r.GapFilled, r.HandlerError, r.DeadLettered, r.StoreCalls)
	fmt.Fprintf(&b, "  check      %d runs agree with reduce, %d wrong, %d missing", r.Verified, r.Wrong, r.Missing)
	if r.FirstProblem != "" {
		fmt.Fprintf(&b, " (%s)", r.FirstProblem)
	}
	b.WriteString("\n")
	if bl := r.Baseline; bl != nil {
		fmt.Fprintf(&b, "  baseline   %10.0f records/s  (%d rows in %d-row INSERTs on %d conns in %s = %.0f rows/s",
			bl.EventsPerSec(), bl.Rows, bl.BatchRows, bl.Conns, bl.Window.Round(time.Millisecond), bl.RowsPerSec())
		if bl.CPU.Machine > 0 {
			fmt.Fprintf(&b, "; process %.2f cores, machine %.2f cores", bl.CPU.Process, bl.CPU.Machine)
		}
		b.WriteString(")\n")
	}
	verdict := "MET"
	switch {
	case !r.Consistent():
		verdict = "INCONSISTENT (see rows and check)"
	case r.Ratio < r.Target:
		verdict = "BELOW TARGET"
	}
	if len(r.Rounds) > 1 {
		ratios := make([]string, len(r.Rounds))
		for i, x := range r.Rounds {
			ratios[i] = fmt.Sprintf("%.1f%%", 100*x.Ratio)
		}
		fmt.Fprintf(&b, "  rounds     %d, ratios %s; the report above is the median round's\n", len(r.Rounds), strings.Join(ratios, ", "))
	}
	fmt.Fprintf(&b, "  ratio      %.1f%% of the baseline (target %.0f%%): %s\n", 100*r.Ratio, 100*r.Target, verdict)
	_, err := io.WriteString(w, b.String())
	return err
}

// RunETL measures `runstream etl` (package etl) against real Postgres and
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
func RunETL(ctx context.Context, cfg ETLConfig) (*ETLReport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if cfg.Rounds == 1 {
		return runETLRound(ctx, cfg, "")
	}
	var reps []*ETLReport
	for i := range cfg.Rounds {
		rep, err := runETLRound(ctx, cfg, fmt.Sprintf(" %d/%d", i+1, cfg.Rounds))
		if err != nil {
			return nil, fmt.Errorf("round %d of %d: %w", i+1, cfg.Rounds, err)
		}
		reps = append(reps, rep)
		// Profiles cover the first round only.
		cfg.CPUProfile, cfg.AllocProfile, cfg.AllocProfileBase = nil, nil, nil
	}
	rounds := make([]ETLRound, len(reps))
	for i, r := range reps {
		rounds[i] = ETLRound{EventsPerSec: round(r.EventsPerSec(), 1), Ratio: r.Ratio, Consistent: r.consistent()}
		if r.Baseline != nil {
			rounds[i].BaselineEventsPerSec = round(r.Baseline.EventsPerSec(), 1)
		}
	}
	slices.SortStableFunc(reps, func(a, b *ETLReport) int { return cmp.Compare(a.Ratio, b.Ratio) })
	median := reps[(len(reps)-1)/2]
	median.Rounds = rounds
	return median, nil
}

// runETLRound is one round of RunETL; label names it in progress reports.
func runETLRound(ctx context.Context, cfg ETLConfig, label string) (rep *ETLReport, err error) {
	b := &etlBench{cfg: cfg, label: label}
	defer func() { err = errors.Join(err, b.close()) }()
	rep = &ETLReport{Broker: "in-process kfake", Partitions: cfg.Partitions, Batch: cfg.Batch, MaxQueued: cfg.MaxQueued, PoolConns: cfg.PoolConns,
		Batching: !cfg.DisableBatching, Events: int64(cfg.Events), ActiveRuns: cfg.ActiveRuns, Target: TargetETLRatio}

	runs, order := etlGenerate(uint64(time.Now().UnixNano()), cfg.Events, cfg.ActiveRuns)
	rep.Runs = len(runs)
	// What the check expects is worked out now, so that the records need
	// not stay in memory while the sink is timed: a million of them are a
	// gigabyte of pointers the collector would scan again and again, at
	// the sink's expense.
	want := etlExpect(runs)
	runs = nil
	if err := b.startBroker(ctx); err != nil {
		return nil, err
	}
	start := time.Now()
	if rep.RecordBytes, err = b.fill(ctx, order); err != nil {
		return nil, err
	}
	rep.Fill = time.Since(start)
	order = nil

	sinkSchema := "bench_etl_" + etlHex(5)
	sink, err := b.connect(ctx, sinkSchema, cfg.PoolConns)
	if err != nil {
		return nil, err
	}
	if _, err := etl.Migrate(ctx, sink); err != nil {
		return nil, err
	}
	if err := etlNoAutovacuum(ctx, sink); err != nil {
		return nil, err
	}
	if err := b.runSink(ctx, sink, rep); err != nil {
		return nil, err
	}
	b.closeBroker() // its records are not needed any more
	if err := etlVerify(ctx, sink, want, rep); err != nil {
		return nil, err
	}
	if rep.Baseline, err = b.baseline(ctx, sink); err != nil {
		return nil, err
	}
	rep.Baseline.Events = rep.Events
	rep.Ratio = Ratio(rep.EventsPerSec(), rep.Baseline.EventsPerSec())
	return rep, nil
}

// etlNoAutovacuum turns autovacuum off for the tables of pool's schema.
// Half a million new rows make autovacuum vacuum and analyze a table a few
// seconds later, which may fall in the sink's window, in the baseline's or
// in neither: a second of Postgres CPU that moved the ratio by several
// points from one run to the next. The schemas are dropped at the end
// anyway. (A checkpoint of the server's WAL can still fall in either
// window: starting one needs a superuser.)
func etlNoAutovacuum(ctx context.Context, pool *pgxpool.Pool) error {
	for _, t := range []string{"runs", "step_attempts"} {
		if _, err := pool.Exec(ctx, `ALTER TABLE `+t+` SET (autovacuum_enabled = false, toast.autovacuum_enabled = false)`); err != nil {
			return fmt.Errorf("turning autovacuum off for the bench's %s: %w", t, err)
		}
	}
	return nil
}

// etlBench is one RunETL's shared state.
type etlBench struct {
	cfg     ETLConfig
	label   string // the round, in progress reports
	broker  *devbroker.Broker
	brokers []string
	admin   *kgo.Client
	adm     *kadm.Client
	topic   string
	pools   []*pgxpool.Pool
	schemas []string
}

func etlHex(n int) string {
	p := make([]byte, n)
	_, _ = crand.Read(p)
	return hex.EncodeToString(p)
}

func (b *etlBench) startBroker(ctx context.Context) error {
	var err error
	if b.broker, err = devbroker.Start(devbroker.Config{Addr: "127.0.0.1:0", Partitions: b.cfg.Partitions}); err != nil {
		return err
	}
	b.brokers = b.broker.Addrs()
	if b.admin, err = kgo.NewClient(kgo.SeedBrokers(b.brokers...)); err != nil {
		return fmt.Errorf("creating the Kafka admin client: %w", err)
	}
	b.adm = kadm.NewClient(b.admin)
	b.topic = "bench-etl-" + etlHex(6)
	resp, err := b.adm.CreateTopic(ctx, b.cfg.Partitions, -1, nil, b.topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("creating topic %s (%d partitions): %w", b.topic, b.cfg.Partitions, err)
	}
	return nil
}

func (b *etlBench) closeBroker() {
	if b.admin != nil {
		b.admin.Close()
		b.admin = nil
	}
	if b.broker != nil {
		b.broker.Close()
		b.broker = nil
	}
}

// close stops the broker, closes the pools and drops the schemas.
func (b *etlBench) close() error {
	b.closeBroker()
	for _, p := range b.pools {
		p.Close()
	}
	if b.cfg.KeepSchema || len(b.schemas) == 0 {
		return nil
	}
	// A fresh context: the schemas go also when the bench was interrupted.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgxpool.New(ctx, b.cfg.PostgresURL)
	if err != nil {
		return fmt.Errorf("connecting to drop the bench schemas %v: %w", b.schemas, err)
	}
	defer admin.Close()
	var errs []error
	for _, s := range b.schemas {
		if _, err := admin.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{s}.Sanitize()+" CASCADE"); err != nil {
			errs = append(errs, fmt.Errorf("dropping schema %s: %w", s, err))
		}
	}
	return errors.Join(errs...)
}

// connect opens a pool of conns connections on a fresh schema.
func (b *etlBench) connect(ctx context.Context, schema string, conns int) (*pgxpool.Pool, error) {
	url := b.cfg.PostgresURL
	switch {
	case strings.Contains(url, "://") && strings.Contains(url, "?"):
		url += fmt.Sprintf("&pool_max_conns=%d", conns)
	case strings.Contains(url, "://"):
		url += fmt.Sprintf("?pool_max_conns=%d", conns)
	default:
		url += fmt.Sprintf(" pool_max_conns=%d", conns)
	}
	b.schemas = append(b.schemas, schema)
	pool, err := etl.Connect(ctx, url, schema)
	if err != nil {
		return nil, err
	}
	b.pools = append(b.pools, pool)
	return pool, nil
}

// etlGenerate makes events records of realistic runs, active of them in
// flight at once: each record belongs to a random in-flight run, and a run
// that has emitted its last event makes room for a new one. Each run's
// records are its events as the store would hold them (engine retries with
// a repeated idempotency key are dropped, as the store answers them as
// duplicates; runSeq contiguous from 1), with persistedAt in topic order.
// The runs still in flight at the end are cut short.
func etlGenerate(seed uint64, events, active int) (runs [][]store.RunEventRecord, order []store.RunEventRecord) {
	rng := mrand.New(mrand.NewPCG(seed, 11))
	start := time.Now().Add(-time.Hour)
	type inFlight struct {
		run  int
		left []store.RunEventWrite
		seq  int64
		keys map[string]bool
	}
	newRun := func() *inFlight {
		runs = append(runs, nil)
		return &inFlight{run: len(runs) - 1, keys: map[string]bool{},
			left: workload.Run(rng, "tenant_bench_etl", workload.Options{Start: start})}
	}
	slots := make([]*inFlight, 0, active)
	order = make([]store.RunEventRecord, 0, events)
	clock := start
	for len(order) < events {
		if len(slots) < active {
			slots = append(slots, newRun())
		}
		i := rng.IntN(len(slots))
		f := slots[i]
		w := f.left[0]
		f.left = f.left[1:]
		if !f.keys[w.IdempotencyKey] {
			f.keys[w.IdempotencyKey] = true
			f.seq++
			clock = clock.Add(10 * time.Microsecond)
			rec := store.RunEventRecord{RunEventWrite: w, RunSeq: f.seq, PersistedAt: store.FormatPersistedAt(clock)}
			runs[f.run] = append(runs[f.run], rec)
			order = append(order, rec)
		}
		if len(f.left) == 0 {
			slots[i] = newRun()
		}
	}
	// Runs opened but never given an event are not runs of the topic.
	kept := runs[:0]
	for _, r := range runs {
		if len(r) > 0 {
			kept = append(kept, r)
		}
	}
	return kept, order
}

// fill produces order as the relay would (relay.Record, murmur2 key
// partitioning) and returns the mean record value size.
func (b *etlBench) fill(ctx context.Context, order []store.RunEventRecord) (float64, error) {
	cl, err := kgo.NewClient(relay.ClientOptions(b.brokers)...)
	if err != nil {
		return 0, fmt.Errorf("creating the bench's producer: %w", err)
	}
	defer cl.Close()
	var acked, size atomic.Int64
	var firstErr atomic.Pointer[error]
	stop := b.progress("fill", int64(len(order)), acked.Load)
	defer stop()
	for i := range order {
		if ctx.Err() != nil || firstErr.Load() != nil {
			break
		}
		kr, err := relay.Record(b.topic, &order[i])
		if err != nil {
			return 0, err
		}
		size.Add(int64(len(kr.Value)))
		cl.Produce(ctx, kr, func(_ *kgo.Record, err error) {
			if err != nil {
				firstErr.CompareAndSwap(nil, &err)
			}
			acked.Add(1)
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, fmt.Errorf("producing the topic: %w", err)
	}
	if p := firstErr.Load(); p != nil {
		return 0, fmt.Errorf("producing the topic: %w", *p)
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("bench interrupted while filling the topic: %w", err)
	}
	end, err := endSum(ctx, b.adm, b.topic)
	if err != nil {
		return 0, err
	}
	if end != int64(len(order)) {
		return 0, fmt.Errorf("the topic holds %d records after producing %d", end, len(order))
	}
	return round(float64(size.Load())/float64(max(len(order), 1)), 1), nil
}

// etlNoStore is the sink's gap source: the topic has no gaps, so a call
// is a bug; it fails and is counted.
type etlNoStore struct{ calls atomic.Int64 }

func (s *etlNoStore) FetchEvents(_ context.Context, runID string, _ store.FetchOptions) ([]store.RunEventRecord, error) {
	s.calls.Add(1)
	return nil, fmt.Errorf("bench: the topic has no gaps, yet run %s was fetched", runID)
}

// writeAllocProfile writes the allocation profile as of the last GC (a
// profile's counts are only complete after one) to w.
func (b *etlBench) writeAllocProfile(w io.Writer) {
	runtime.GC()
	if err := pprof.Lookup("allocs").WriteTo(w, 0); err != nil {
		b.cfg.Logger.Warn("writing the allocation profile failed", "err", err)
	}
}

// runSink runs the ETL until its group committed the whole topic.
func (b *etlBench) runSink(ctx context.Context, pool *pgxpool.Pool, rep *ETLReport) error {
	reg := prometheus.NewRegistry()
	src := &etlNoStore{}
	group := "bench-etl-" + etlHex(6)
	e, err := etl.New(etl.Config{Brokers: b.brokers, Topic: b.topic, Group: group, Fetcher: src,
		MaxPollRecords: b.cfg.Batch, MaxQueuedRecords: b.cfg.MaxQueued, DisableBatching: b.cfg.DisableBatching, Registerer: reg, Logger: b.cfg.Logger}, pool)
	if err != nil {
		return err
	}
	runtime.GC()
	if b.cfg.AllocProfileBase != nil {
		b.writeAllocProfile(b.cfg.AllocProfileBase)
	}
	if b.cfg.CPUProfile != nil {
		if err := pprof.StartCPUProfile(b.cfg.CPUProfile); err != nil {
			return fmt.Errorf("starting the CPU profile: %w", err)
		}
	}
	cpuBefore := sampleCPU()
	start := time.Now()
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.Run(rctx) }()
	err = b.waitCommitted(ctx, group, rep.Events, done)
	rep.Window = time.Since(start)
	cpuAfter := sampleCPU()
	if b.cfg.CPUProfile != nil {
		pprof.StopCPUProfile()
	}
	if b.cfg.AllocProfile != nil {
		b.writeAllocProfile(b.cfg.AllocProfile)
	}
	cancel()
	if runErr := <-done; runErr != nil {
		err = errors.Join(err, fmt.Errorf("the ETL stopped with an error: %w", runErr))
	}
	if err != nil {
		return err
	}
	rep.CPU = cpuSince(cpuBefore, cpuAfter)
	if rep.Committed, err = committedSum(ctx, b.adm, b.topic, group); err != nil {
		return err
	}
	rep.StoreCalls = src.calls.Load()
	mfs, err := reg.Gather()
	if err != nil {
		return err
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case "runstream_etl_events_total":
				n := int64(m.GetCounter().GetValue())
				for _, l := range m.GetLabel() {
					switch l.GetValue() {
					case "applied":
						rep.Applied = n
					case "unknown_type":
						rep.UnknownType = n
					case "duplicate":
						rep.Duplicates = n
					case "gap_filled":
						rep.GapFilled = n
					case "handler_error":
						rep.HandlerError = n
					case "dead_lettered":
						rep.DeadLettered = n
					}
				}
			case "runstream_etl_flush_seconds":
				rep.Flushes = int64(m.GetHistogram().GetSampleCount())
				rep.FlushTime = time.Duration(m.GetHistogram().GetSampleSum() * float64(time.Second))
			}
		}
	}
	return nil
}

// waitCommitted polls until group's committed offsets add up to end.
func (b *etlBench) waitCommitted(ctx context.Context, group string, end int64, done <-chan error) error {
	var committed atomic.Int64
	stop := b.progress("sink", end, committed.Load)
	defer stop()
	last, lastChange := int64(-1), time.Now()
	var lastErr error
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		n, err := committedSum(ctx, b.adm, b.topic, group)
		if err != nil {
			lastErr = err // a group that has not joined yet; the stall check bounds it
		}
		committed.Store(n)
		if n >= end {
			return nil
		}
		if n != last {
			last, lastChange = n, time.Now()
		}
		if time.Since(lastChange) > etlStall {
			return fmt.Errorf("the ETL committed nothing for %v: %d of %d records committed (last error: %v)", etlStall, n, end, lastErr)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("bench interrupted during the sink phase: %w", ctx.Err())
		case err := <-done:
			return fmt.Errorf("the ETL stopped during the bench: %v", err)
		case <-tick.C:
		}
	}
}

// etlRow is what the check compares of a run's row.
type etlRow struct {
	status                  string
	steps, failed, attempts int
}

// etlExpect works out each run's row with reduce, for the runs
// that get one (those with an event of a known type), by run ID.
func etlExpect(runs [][]store.RunEventRecord) map[string]etlRow {
	want := make(map[string]etlRow, len(runs))
	for _, recs := range runs {
		knownEvent := false
		for i := range recs {
			knownEvent = knownEvent || store.IsKnownEvent(recs[i].EventType)
		}
		if !knownEvent {
			continue // no row: only events of unknown types
		}
		snap, _ := reduce.Project(store.RunSnapshot{}, recs)
		attempts := 0
		for _, st := range snap.Steps {
			attempts += 1 + len(st.Attempts)
		}
		want[snap.RunID] = etlRow{snap.Status, len(snap.Steps), snap.FailedSteps, attempts}
	}
	return want
}

// etlVerify counts the rows and checks each run's against what etlExpect
// worked out.
func etlVerify(ctx context.Context, pool *pgxpool.Pool, want map[string]etlRow, rep *ETLReport) error {
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM step_attempts)`).Scan(&rep.RunRows, &rep.AttemptRows); err != nil {
		return fmt.Errorf("counting the sink's rows: %w", err)
	}
	got := make(map[string]etlRow, len(want))
	rows, err := pool.Query(ctx, `SELECT run_id, status, steps, failed_steps, attempts_total FROM runs`)
	if err != nil {
		return fmt.Errorf("reading the sink's runs: %w", err)
	}
	for rows.Next() {
		var id string
		var r etlRow
		if err := rows.Scan(&id, &r.status, &r.steps, &r.failed, &r.attempts); err != nil {
			rows.Close()
			return err
		}
		got[id] = r
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	ids := make([]string, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	slices.Sort(ids) // the same first problem for the same rows
	for _, id := range ids {
		w := want[id]
		g, ok := got[id]
		switch {
		case !ok:
			rep.Missing++
			if rep.FirstProblem == "" {
				rep.FirstProblem = fmt.Sprintf("run %s has no row", id)
			}
		case g != w:
			rep.Wrong++
			if rep.FirstProblem == "" {
				rep.FirstProblem = fmt.Sprintf("run %s: row %+v, reducer %+v", id, g, w)
			}
		default:
			rep.Verified++
		}
	}
	return nil
}

// etlColumns are a table's rows read back column by column, for unnest.
type etlColumns struct {
	table string
	cols  []string
	types []string
	vals  []any // one slice per column
	n     int
}

var etlTables = []struct {
	name  string
	cols  []string
	types []string
}{
	{"runs", []string{"run_id", "tenant_id", "project_id", "environment_id", "plan_id", "plan_version", "status",
		"started_at", "completed_at", "duration_ms", "steps", "failed_steps", "attempts_total", "last_event_seq", "updated_at"},
		[]string{"text", "text", "text", "text", "text", "text", "text",
			"timestamptz", "timestamptz", "bigint", "integer", "integer", "integer", "bigint", "timestamptz"}},
	{"step_attempts", []string{"run_id", "step_id", "logical_attempt_id", "engine_attempt_id", "status",
		"started_at", "completed_at", "duration_ms", "error_code", "error_message", "failure_category", "artifacts_count"},
		[]string{"text", "text", "bigint", "bigint", "text",
			"timestamptz", "timestamptz", "bigint", "text", "text", "text", "integer"}},
}

// etlReadColumns reads a whole table of the sink into column slices of
// the types pgx scans the column types to.
func etlReadColumns(ctx context.Context, pool *pgxpool.Pool, table string, cols, types []string) (*etlColumns, error) {
	c := &etlColumns{table: table, cols: cols, types: types}
	for _, t := range types {
		switch t {
		case "text":
			c.vals = append(c.vals, []*string{})
		case "timestamptz":
			c.vals = append(c.vals, []*time.Time{})
		case "bigint":
			c.vals = append(c.vals, []*int64{})
		case "integer":
			c.vals = append(c.vals, []*int32{})
		}
	}
	rows, err := pool.Query(ctx, "SELECT "+strings.Join(cols, ", ")+" FROM "+table)
	if err != nil {
		return nil, fmt.Errorf("reading the sink's %s: %w", table, err)
	}
	defer rows.Close()
	dest := make([]any, len(cols))
	for rows.Next() {
		for i, t := range types {
			switch t {
			case "text":
				dest[i] = new(*string)
			case "timestamptz":
				dest[i] = new(*time.Time)
			case "bigint":
				dest[i] = new(*int64)
			case "integer":
				dest[i] = new(*int32)
			}
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		for i := range types {
			switch d := dest[i].(type) {
			case **string:
				c.vals[i] = append(c.vals[i].([]*string), *d)
			case **time.Time:
				c.vals[i] = append(c.vals[i].([]*time.Time), *d)
			case **int64:
				c.vals[i] = append(c.vals[i].([]*int64), *d)
			case **int32:
				c.vals[i] = append(c.vals[i].([]*int32), *d)
			}
		}
		c.n++
	}
	return c, rows.Err()
}

// slice returns the args of rows [from, to).
func (c *etlColumns) slice(from, to int) []any {
	out := make([]any, len(c.vals))
	for i, v := range c.vals {
		switch v := v.(type) {
		case []*string:
			out[i] = v[from:to]
		case []*time.Time:
			out[i] = v[from:to]
		case []*int64:
			out[i] = v[from:to]
		case []*int32:
			out[i] = v[from:to]
		}
	}
	return out
}

func (c *etlColumns) insertSQL() string {
	params := make([]string, len(c.cols))
	for i, t := range c.types {
		params[i] = fmt.Sprintf("$%d::%s[]", i+1, t)
	}
	return "INSERT INTO " + c.table + " (" + strings.Join(c.cols, ", ") + ") SELECT * FROM unnest(" + strings.Join(params, ", ") + ")"
}

// baseline inserts the sink's rows into a fresh copy of its tables with
// plain batched INSERTs on BaselineConns connections, and times it.
func (b *etlBench) baseline(ctx context.Context, sink *pgxpool.Pool) (*ETLBaseline, error) {
	var tables []*etlColumns
	var total int64
	for _, t := range etlTables {
		c, err := etlReadColumns(ctx, sink, t.name, t.cols, t.types)
		if err != nil {
			return nil, err
		}
		tables = append(tables, c)
		total += int64(c.n)
	}
	pool, err := b.connect(ctx, "bench_etl_base_"+etlHex(5), b.cfg.BaselineConns)
	if err != nil {
		return nil, err
	}
	if _, err := etl.Migrate(ctx, pool); err != nil {
		return nil, err
	}
	if err := etlNoAutovacuum(ctx, pool); err != nil {
		return nil, err
	}
	// Open every connection before the window.
	conns := make([]*pgxpool.Conn, 0, b.cfg.BaselineConns)
	for range b.cfg.BaselineConns {
		c, err := pool.Acquire(ctx)
		if err != nil {
			return nil, err
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Release()
	}
	type job struct {
		t        *etlColumns
		from, to int
	}
	jobs := make(chan job)
	var inserted, inserts atomic.Int64
	bl := &ETLBaseline{BatchRows: b.cfg.InsertBatch, Conns: b.cfg.BaselineConns}
	stop := b.progress("baseline", total, inserted.Load)
	runtime.GC()
	cpuBefore := sampleCPU()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, b.cfg.BaselineConns)
	for w := range b.cfg.BaselineConns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if errs[w] != nil {
					continue
				}
				if _, err := pool.Exec(ctx, j.t.insertSQL(), j.t.slice(j.from, j.to)...); err != nil {
					errs[w] = fmt.Errorf("baseline INSERT into %s: %w", j.t.table, err)
					continue
				}
				inserted.Add(int64(j.to - j.from))
				inserts.Add(1)
			}
		}()
	}
	for _, t := range tables {
		for from := 0; from < t.n; from += b.cfg.InsertBatch {
			jobs <- job{t, from, min(from+b.cfg.InsertBatch, t.n)}
		}
	}
	close(jobs)
	wg.Wait()
	bl.Window = time.Since(start)
	bl.CPU = cpuSince(cpuBefore, sampleCPU())
	stop()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	bl.Rows, bl.Inserts = inserted.Load(), inserts.Load()
	var n int64
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM runs) + (SELECT count(*) FROM step_attempts)`).Scan(&n); err != nil {
		return nil, err
	}
	if n != total {
		return nil, fmt.Errorf("the baseline's tables hold %d rows after inserting %d", n, total)
	}
	return bl, nil
}

// progress reports a phase through cfg.Progress (see [phaseReporter]).
func (b *etlBench) progress(phase string, total int64, done func() int64) (stop func()) {
	return phaseReporter(b.cfg.Progress, phase+b.label, total, done)
}

func etlDiv(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
