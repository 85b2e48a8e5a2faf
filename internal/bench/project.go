package bench

import (
	"bufio"
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/runstream/runstream/internal/devbroker"
	"github.com/runstream/runstream/internal/relay"
	"github.com/runstream/runstream/internal/retry"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/projector"
	"github.com/runstream/runstream/reduce"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// The projector's targets (issue 4, "Speed"), printed next to the numbers.
const (
	// TargetCatchUpRatio is the catch-up rate to reach, as a fraction of
	// the guarded script's own rate on the same Redis.
	TargetCatchUpRatio = 0.50
	// TargetEndToEndP99 bounds p99 append-committed-to-snapshot-visible at
	// TargetEndToEndRate.
	TargetEndToEndP99 = 50 * time.Millisecond
	// TargetEndToEndRate is the offered rate the latency target holds at.
	TargetEndToEndRate = 1000
	// TargetProjectorRSS bounds the projector's memory with 100k active
	// runs, in bytes.
	TargetProjectorRSS = 300 << 20
)

const (
	defaultProjectEvents       = 1_000_000
	defaultProjectPartitions   = 12
	defaultProjectBatch        = 5000
	defaultProjectDuration     = 10 * time.Second
	defaultProjectAppenders    = 16
	defaultProjectLatencyRuns  = 1000
	defaultProjectMemoryRuns   = 100_000
	defaultProjectMemoryEvents = 300_000
	// projStall fails a catch-up when the group commits nothing for this
	// long, rather than hanging.
	projStall = time.Minute
	// projGrace is how long the latency phase waits, after the last append,
	// for the last snapshots to become visible.
	projGrace = 30 * time.Second
	// projTemplates is how many generated runs give the baseline its
	// snapshot bodies (run r writes the bodies of template r mod
	// projTemplates): the sizes of the projector's snapshots without
	// reducing every run twice.
	projTemplates = 16
	// projWarmupRuns open the latency phase: two events each, appended and
	// waited for before the window, so the group has joined and every
	// connection is open.
	projWarmupRuns = 8
	// projRateTolerance is the share of the offered rate the appends must
	// achieve for the latency target to count as met at that rate.
	projRateTolerance = 0.95
)

// ProjectConfig configures [RunProject]. Zero values take the defaults
// noted.
type ProjectConfig struct {
	// RedisURL is the snapshot cache; required. redis://h1:p?addr=h2:p
	// is a Redis Cluster. The bench writes only keys of its own runs (and
	// their tenant's run index) and deletes them at the end.
	RedisURL string
	// PostgresURL is the Append Authority of the latency phase, which works
	// in a fresh schema bench_<random> dropped at the end; required unless
	// DisableLatency.
	PostgresURL string
	// Partitions of each phase's fresh topic on an in-process kfake broker;
	// 0 means 12.
	Partitions int32
	// Batch is the projector's MaxPollRecords and the baseline's pipeline
	// length; 0 means 5000 (the projector's default).
	Batch int
	// DisableCatchUp skips the catch-up phase and its baseline.
	DisableCatchUp bool
	// DisableConvergence runs the projectors without convergence passes,
	// to measure what the passes cost the catch-up.
	DisableConvergence bool
	// RepairRuns sizes the repair phase: that many finished runs in the
	// store and none in Redis (Redis restarted empty), timed until
	// convergence brought every snapshot back; 0 skips it. It needs
	// PostgresURL.
	RepairRuns int
	// Events pre-filled into the catch-up topic; 0 means 1,000,000.
	Events int
	// Runs the catch-up's events are spread over; 0 means 10,000.
	Runs int
	// DisableLatency skips the end-to-end latency phase.
	DisableLatency bool
	// Rate is the latency phase's offered append rate in events/s; 0 means
	// 1000.
	Rate int
	// Duration of the latency phase's appends; 0 means 10s.
	Duration time.Duration
	// Appenders is the goroutines appending in the latency phase, and the
	// connections of their store's pool; 0 means 16.
	Appenders int
	// LatencyRuns the latency phase's events are spread over; 0 means 1000.
	LatencyRuns int
	// DisableMemory skips the memory phase.
	DisableMemory bool
	// MemoryRuns and MemoryEvents size the memory phase's topic; 0 means
	// 100,000 runs and 300,000 events.
	MemoryRuns, MemoryEvents int
	// ProjectorCommand, when set, is the command line of a projector
	// process, such as {"/usr/local/bin/runstream", "projector"}; the
	// memory phase then also runs it on its topic (with --kafka-brokers,
	// --topic, --group, --redis-url, --postgres-url, --http-addr and a few
	// more appended) and its RSS is the one held to the target. It needs
	// PostgresURL: the process migrates a fresh schema of its own.
	ProjectorCommand []string
	// CatchUpCPUProfile, when set, receives a CPU profile of this process
	// (projector, broker and bench) covering the catch-up window only.
	CatchUpCPUProfile io.Writer
	// Progress, when set, is called about once a second with running
	// totals, from one goroutine at a time.
	Progress func(PhaseProgress)
	// Logger receives the projector's, relay's and store's logs; nil means
	// discard.
	Logger *slog.Logger
}

// Validate reports a configuration error naming the setting to change.
func (c ProjectConfig) Validate() error {
	var errs []error
	if c.RedisURL == "" {
		errs = append(errs, errors.New("a Redis URL (--redis-url, RUNSTREAM_REDIS_URL) is needed"))
	}
	if c.PostgresURL == "" && !c.DisableLatency {
		errs = append(errs, errors.New("a Postgres URL (--postgres-url, RUNSTREAM_POSTGRES_URL) is needed for the latency phase (or --latency=false)"))
	}
	if c.PostgresURL == "" && c.DisableLatency && !c.DisableMemory && len(c.ProjectorCommand) > 0 {
		errs = append(errs, errors.New("a Postgres URL (--postgres-url, RUNSTREAM_POSTGRES_URL) is needed for the projector process of the memory phase"))
	}
	if c.PostgresURL == "" && c.RepairRuns > 0 {
		errs = append(errs, errors.New("a Postgres URL (--postgres-url, RUNSTREAM_POSTGRES_URL) is needed for the repair phase (or --repair-runs 0)"))
	}
	if c.DisableCatchUp && c.DisableLatency && c.DisableMemory && c.RepairRuns == 0 {
		errs = append(errs, errors.New("every phase is off (--catch-up=false --latency=false --memory=false --repair-runs 0): nothing to measure"))
	}
	for _, f := range []struct {
		flag string
		v    int64
	}{{"partitions", int64(c.Partitions)}, {"batch", int64(c.Batch)}, {"events", int64(c.Events)},
		{"runs", int64(c.Runs)}, {"rate", int64(c.Rate)}, {"duration", int64(c.Duration)},
		{"appenders", int64(c.Appenders)}, {"latency-runs", int64(c.LatencyRuns)},
		{"memory-runs", int64(c.MemoryRuns)}, {"memory-events", int64(c.MemoryEvents)}, {"repair-runs", int64(c.RepairRuns)}} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("--%s must be > 0, got %d", f.flag, f.v))
		}
	}
	return errors.Join(errs...)
}

func (c ProjectConfig) withDefaults() ProjectConfig {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	if c.Partitions == 0 {
		c.Partitions = defaultProjectPartitions
	}
	def(&c.Batch, defaultProjectBatch)
	def(&c.Events, defaultProjectEvents)
	def(&c.Runs, defaultRuns)
	def(&c.Rate, TargetEndToEndRate)
	def(&c.Appenders, defaultProjectAppenders)
	def(&c.LatencyRuns, defaultProjectLatencyRuns)
	def(&c.MemoryRuns, defaultProjectMemoryRuns)
	def(&c.MemoryEvents, defaultProjectMemoryEvents)
	if c.Duration == 0 {
		c.Duration = defaultProjectDuration
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// RunProject measures the projector (package projector) against real
// Redis, an in-process Kafka-protocol broker (franz-go's kfake, as
// `runstream dev` runs it) and, for the latency phase, real Postgres, in
// three phases:
//
//   - Memory (run first, in a fresh process state): a topic holding
//     MemoryEvents events of MemoryRuns runs that never finish; the
//     process's VmRSS and heap are read before the projector starts,
//     sampled while it catches up, and read again once it has caught up;
//     with ProjectorCommand, a projector process catches it up again and
//     its peak RSS is read.
//   - Catch-up: a topic pre-filled with Events events of Runs runs (each
//     run's runSeq contiguous from 1, the runs interleaved), produced
//     outside the window; the window runs from the projector's start until
//     its group's committed offsets reach the end offsets, while a
//     subscriber records the projector's guarded writes. Then every run's
//     snapshot is checked, and the baseline runs on the same Redis: the
//     same writes replayed by the projector's guarded Lua script alone,
//     pipelined like the projector's batches, with snapshots of the same
//     sizes.
//   - End to end: store (AppendEvent, outbox notifier), relay and projector
//     in this process; appends at Rate for Duration; per event, from the
//     append's return (committed) until a SUBSCRIBE on the projector's
//     update channel shows that run's lastEventSeq at or past the event's
//     runSeq.
//
// It cleans up what it created before it returns, also when ctx is
// cancelled.
func RunProject(ctx context.Context, cfg ProjectConfig) (rep *ProjectReport, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	rdb, where, err := projOpenRedis(ctx, cfg.RedisURL)
	if err != nil {
		return nil, err
	}
	defer rdb.Close()
	b := &projBench{cfg: cfg, rdb: rdb, prefix: "tenant_bench_" + projHex(4)}
	defer func() { err = errors.Join(err, b.unlink(ctx)) }()
	rep = &ProjectReport{Redis: where, Broker: "in-process kfake", Partitions: cfg.Partitions, Batch: cfg.Batch}
	if !cfg.DisableMemory {
		if rep.Memory, err = b.memory(ctx); err != nil {
			return nil, err
		}
	}
	if !cfg.DisableCatchUp {
		if rep.CatchUp, err = b.catchUp(ctx); err != nil {
			return nil, err
		}
	}
	if !cfg.DisableLatency {
		if rep.EndToEnd, err = b.endToEnd(ctx); err != nil {
			return nil, err
		}
	}
	if cfg.RepairRuns > 0 {
		if rep.Repair, err = b.repair(ctx); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// projBench is one RunProject's shared state.
type projBench struct {
	cfg    ProjectConfig
	rdb    redis.UniversalClient
	prefix string   // of the tenants of the bench's runs, one tenant per phase
	keys   []string // Redis keys to delete before returning
}

func projHex(n int) string {
	p := make([]byte, n)
	_, _ = crand.Read(p)
	return hex.EncodeToString(p)
}

// projOpenRedis connects the way `runstream projector` does: a URL with
// addr= parameters is a Redis Cluster.
func projOpenRedis(ctx context.Context, url string) (redis.UniversalClient, string, error) {
	var c redis.UniversalClient
	var where string
	if strings.Contains(url, "addr=") {
		opts, err := redis.ParseClusterURL(url)
		if err != nil {
			return nil, "", fmt.Errorf("parsing --redis-url (RUNSTREAM_REDIS_URL) as a cluster URL: %w", err)
		}
		c, where = redis.NewClusterClient(opts), "cluster "+strings.Join(opts.Addrs, ",")
	} else {
		opts, err := redis.ParseURL(url)
		if err != nil {
			return nil, "", fmt.Errorf("parsing --redis-url (RUNSTREAM_REDIS_URL): %w", err)
		}
		c, where = redis.NewClient(opts), opts.Addr
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.Ping(cctx).Err(); err != nil {
		_ = c.Close()
		return nil, "", fmt.Errorf("connecting to Redis at %s: %w (is it running? scripts/up.sh starts one)", where, err)
	}
	return c, where, nil
}

// track schedules the snapshot keys of runIDs, and their tenant's run
// index, for deletion.
func (b *projBench) track(tenant string, runIDs ...string) {
	if tenant != "" {
		b.keys = append(b.keys, snapshots.IndexKey(tenant))
	}
	for _, id := range runIDs {
		b.keys = append(b.keys, snapshots.Key(id))
	}
}

// unlink deletes the tracked keys, one key per command so that it works
// on a cluster, also after ctx was cancelled.
func (b *projBench) unlink(ctx context.Context) error {
	if len(b.keys) == 0 {
		return nil
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	for lo := 0; lo < len(b.keys); lo += 1000 {
		hi := min(lo+1000, len(b.keys))
		pipe := b.rdb.Pipeline()
		for _, k := range b.keys[lo:hi] {
			pipe.Unlink(dctx, k)
		}
		if _, err := pipe.Exec(dctx); err != nil {
			return fmt.Errorf("deleting the bench's Redis keys (%d left): %w", len(b.keys)-lo, err)
		}
	}
	b.keys = nil
	return nil
}

// progress reports a phase through cfg.Progress (see [phaseReporter]).
func (b *projBench) progress(phase string, total int64, done func() int64) (stop func()) {
	return phaseReporter(b.cfg.Progress, phase, total, done)
}

// projPlan generates one run's events in runSeq order, shaped like
// internal/workload's runs but built directly: RunStarted, then steps that
// start and complete (a payload with durationMs and a dbt run_results
// artifact), one attempt in ten failing and retried as the next logical
// attempt (at most three), a future event type after one step in twenty,
// and RunCompleted as event number events when complete.
type projPlan struct {
	id       workload.Identity
	events   int // the run's events (for complete runs, the seq of RunCompleted)
	complete bool
	src      mrand.PCG
	seq      int64
	step     int
	attempt  int64
	stage    int // 0: StepStarted next; 1: StepCompleted or StepFailed next; 2: the future event type next
	unknown  int64
	at       time.Time
}

var projStepNames = []string{"seed.customers", "model.orders", "model.payments", "test.orders_unique",
	"snapshot.inventory", "export.s3", "model.revenue", "notify.slack", "model.sessions", "test.not_null"}

// newProjPlans returns runs plans of tenant sharing events between them
// (the first events mod runs runs get one more), emitted from start on.
func newProjPlans(tenant string, runs, events int, complete bool, start time.Time) []*projPlan {
	plans := make([]*projPlan, runs)
	var seed [16]byte
	_, _ = crand.Read(seed[:])
	s1, s2 := binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:])
	for i := range plans {
		n := events / runs
		if i < events%runs {
			n++
		}
		plans[i] = &projPlan{id: workload.NewIdentity(tenant), events: n, complete: complete, attempt: 1,
			at: start.Add(time.Duration(i) * time.Millisecond)}
		plans[i].src.Seed(s1+uint64(i), s2)
	}
	return plans
}

func (p *projPlan) intn(n int) int { return int(p.src.Uint64() % uint64(n)) }

func (p *projPlan) stepID() string {
	name := projStepNames[p.step%len(projStepNames)]
	if p.step >= len(projStepNames) {
		name += "_" + strconv.Itoa(p.step/len(projStepNames))
	}
	return name
}

// next returns the run's next write; p.seq is its runSeq in a store that
// got the run's writes in order.
func (p *projPlan) next() store.RunEventWrite {
	p.seq++
	p.at = p.at.Add(time.Duration(50+p.intn(2000)) * time.Millisecond)
	id, at := p.id, p.at
	var w store.RunEventWrite
	var payload []byte
	switch {
	case p.seq == 1:
		w = workload.Event(id, store.EventRunStarted, "", 1, 1, at, nil)
		payload = fmt.Appendf(nil, `{"engineRunRef":"temporal://default/etl/%s","engineType":"temporal","startedAt":%q}`,
			id.RunID, at.UTC().Format(time.RFC3339Nano))
	case p.complete && p.seq >= int64(p.events):
		w = workload.Event(id, store.EventRunCompleted, "", 1, 1, at, nil)
	case p.stage == 2:
		p.unknown++
		p.stage = 0
		w = workload.Event(id, "RunCostReported", "", p.unknown, 1, at, nil)
		payload = fmt.Appendf(nil, `{"note":"a future event type","costUsd":%d.%02d}`, p.intn(40), p.intn(100))
	case p.stage == 0:
		p.stage = 1
		w = workload.Event(id, store.EventStepStarted, p.stepID(), p.attempt, 1, at, nil)
	case p.attempt < 3 && p.intn(10) == 0:
		w = workload.Event(id, store.EventStepFailed, p.stepID(), p.attempt, 1, at, nil)
		payload = fmt.Appendf(nil, `{"errorCode":%q,"errorMessage":"the warehouse query did not finish","retryable":true,"failureCategory":%q,"failureSource":"activity"}`,
			[]string{"TIMEOUT", "DB_CONNECTION_FAILED", "SQL_ERROR"}[p.intn(3)], []string{"USER", "SYSTEM", "PLATFORM", "TIMEOUT"}[p.intn(4)])
		p.attempt++
		p.stage = 0
	default:
		step := p.stepID()
		w = workload.Event(id, store.EventStepCompleted, step, p.attempt, 1, at, nil)
		payload = fmt.Appendf(nil, `{"durationMs":%d,"artifacts":[{"uri":"s3://runstream-artifacts/%s/%s/%d/run_results.json","kind":"dbt-run-results","sizeBytes":%d}]}`,
			100+p.intn(5000), id.RunID, step, p.attempt, 1000+p.intn(100000))
		p.step++
		p.attempt = 1
		p.stage = 0
		if p.intn(20) == 0 {
			p.stage = 2
		}
	}
	w.Payload = payload
	return w
}

// nextRecord is next as the store would have persisted it.
func (p *projPlan) nextRecord() store.RunEventRecord {
	w := p.next()
	return store.RunEventRecord{RunEventWrite: w, RunSeq: p.seq, PersistedAt: store.FormatPersistedAt(p.at.Add(3 * time.Millisecond))}
}

// wantStatus is the run's status once all its events are applied.
func (p *projPlan) wantStatus() string {
	if p.complete && p.events >= 2 {
		return store.RunCompleted
	}
	return store.RunRunning
}

// projBroker is a phase's in-process broker and fresh topic.
type projBroker struct {
	broker  *devbroker.Broker
	brokers []string
	admin   *kgo.Client
	adm     *kadm.Client
	topic   string
}

func newProjBroker(ctx context.Context, partitions int32) (_ *projBroker, err error) {
	pb := &projBroker{topic: "bench-project-" + projHex(6)}
	defer func() {
		if err != nil {
			pb.close()
		}
	}()
	if pb.broker, err = devbroker.Start(devbroker.Config{Addr: "127.0.0.1:0", Partitions: partitions}); err != nil {
		return nil, err
	}
	pb.brokers = pb.broker.Addrs()
	if pb.admin, err = kgo.NewClient(kgo.SeedBrokers(pb.brokers...)); err != nil {
		return nil, fmt.Errorf("creating the Kafka admin client: %w", err)
	}
	pb.adm = kadm.NewClient(pb.admin)
	resp, err := pb.adm.CreateTopic(ctx, partitions, -1, nil, pb.topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return nil, fmt.Errorf("creating topic %s (%d partitions): %w", pb.topic, partitions, err)
	}
	return pb, nil
}

// close stops the broker; it is safe on a partly built projBroker.
func (pb *projBroker) close() {
	if pb.admin != nil {
		pb.admin.Close()
		pb.admin = nil
	}
	if pb.broker != nil {
		pb.broker.Close()
		pb.broker = nil
	}
}

// endSum is the sum of topic's end offsets.
func endSum(ctx context.Context, adm *kadm.Client, topic string) (int64, error) {
	lo, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = lo.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("listing the end offsets of %s: %w", topic, err)
	}
	var sum int64
	lo.Each(func(o kadm.ListedOffset) { sum += o.Offset })
	return sum, nil
}

// committedSum is the sum of group's committed offsets on topic (0 before
// its first commit).
func committedSum(ctx context.Context, adm *kadm.Client, topic, group string) (int64, error) {
	resp, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return 0, fmt.Errorf("fetching the committed offsets of group %s: %w", group, err)
	}
	var sum int64
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.Err == nil && o.At > 0 {
			sum += o.At
		}
	})
	return sum, nil
}

// fill produces events events of plans, event k being the next of run k
// mod len(plans), so each run's runSeq is contiguous from 1 and the runs
// interleave as they do when many progress at once. The records are
// built with relay.Record and produced with the relay's client options
// (murmur2 key partitioning), so they are what the relay would publish.
// It returns the mean record value size.
func (b *projBench) fill(ctx context.Context, pb *projBroker, plans []*projPlan, events int, phase string) (float64, error) {
	// No delivery timeout: franz-go measures it from the record's
	// timestamp, which here is in the past (below).
	cl, err := kgo.NewClient(append(relay.ClientOptions(pb.brokers), kgo.RecordDeliveryTimeout(0))...)
	if err != nil {
		return 0, fmt.Errorf("creating the bench's producer: %w", err)
	}
	defer cl.Close()
	var acked, valueBytes atomic.Int64
	var firstErr atomic.Pointer[error]
	stop := b.progress(phase, int64(events), acked.Load)
	defer stop()
	for k := 0; k < events && ctx.Err() == nil && firstErr.Load() == nil; k++ {
		rec := plans[k%len(plans)].nextRecord()
		kr, err := relay.Record(pb.topic, &rec)
		if err != nil {
			return 0, err
		}
		// Stamped as the relay would have published it, just after it was
		// persisted: the topic is a history being caught up on, not a
		// backlog published late (which a projector treats with care, see
		// projector.isLate).
		if t, err := time.Parse(time.RFC3339Nano, rec.PersistedAt); err == nil {
			kr.Timestamp = t.Add(5 * time.Millisecond)
		}
		valueBytes.Add(int64(len(kr.Value)))
		cl.Produce(ctx, kr, func(_ *kgo.Record, err error) {
			if err != nil {
				firstErr.CompareAndSwap(nil, &err)
			}
			acked.Add(1)
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, fmt.Errorf("producing the %s topic: %w", phase, err)
	}
	if p := firstErr.Load(); p != nil {
		return 0, fmt.Errorf("producing the %s topic: %w", phase, *p)
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("bench interrupted while filling the topic: %w", err)
	}
	end, err := endSum(ctx, pb.adm, pb.topic)
	if err != nil {
		return 0, err
	}
	if end != int64(events) {
		return 0, fmt.Errorf("the %s topic holds %d records after producing %d", phase, end, events)
	}
	return float64(valueBytes.Load()) / float64(max(events, 1)), nil
}

// projRunning is a projector running in this process.
type projRunning struct {
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan error
}

// startProjector starts projector.Run with a fresh registry.
func (b *projBench) startProjector(ctx context.Context, brokers []string, topic, group string, src interface {
	FetchEvents(context.Context, string, store.FetchOptions) ([]store.RunEventRecord, error)
	ProjectSnapshot(context.Context, string) (store.RunSnapshot, error)
}, lagHigh time.Duration) (*projRunning, error) {
	reg := prometheus.NewRegistry()
	converge := time.Duration(0) // the default interval
	if b.cfg.DisableConvergence {
		converge = -1
	}
	p, err := projector.New(projector.Config{Brokers: brokers, Topic: topic, Group: group, MaxPollRecords: b.cfg.Batch,
		LagHighThreshold: lagHigh, ConvergeInterval: converge, Registerer: reg, Logger: b.cfg.Logger}, b.rdb, src)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	r := &projRunning{reg: reg, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- p.Run(rctx) }()
	return r, nil
}

// exited reports the projector's error if it stopped on its own.
func (r *projRunning) exited() error {
	select {
	case err := <-r.done:
		r.done = nil
		if err == nil {
			err = errors.New("it returned without an error")
		}
		return fmt.Errorf("the projector stopped during the bench: %w", err)
	default:
		return nil
	}
}

// stop cancels the projector and waits for it.
func (r *projRunning) stop() error {
	if r.cancel == nil {
		return nil
	}
	r.cancel()
	r.cancel = nil
	if r.done == nil {
		return nil
	}
	return <-r.done
}

// waitCommitted polls until group's committed offsets add up to end.
// sample, when set, runs at every poll (the memory phase's readings).
func (b *projBench) waitCommitted(ctx context.Context, pb *projBroker, group string, end int64, exited func() error, phase string, sample func()) error {
	var committed atomic.Int64
	stop := b.progress(phase, end, committed.Load)
	defer stop()
	last, lastChange := int64(-1), time.Now()
	var lastErr error
	for {
		if err := exited(); err != nil {
			return err
		}
		if sample != nil {
			sample()
		}
		n, err := committedSum(ctx, pb.adm, pb.topic, group)
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
		if time.Since(lastChange) > projStall {
			return fmt.Errorf("the projector committed nothing for %v: %d of %d records committed (last error: %v)",
				projStall, n, end, lastErr)
		}
		if !retry.Sleep(ctx, 20*time.Millisecond) {
			return fmt.Errorf("bench interrupted during the %s: %w", phase, ctx.Err())
		}
	}
}

// projNoStore is the resync source of the catch-up and memory phases:
// their topics have no gaps and no undecodable records, so a projector
// that asks the store about one of their runs (mine) has a bug. The call
// fails (the projector logs it and leaves the run stale) and the report
// shows it. Other runs are another client's: the resync set
// runstream:resync is shared by everything using the Redis server, and
// every projector retries the stale runs it lists; those calls fail too,
// without counting.
type projNoStore struct {
	mine  map[string]int
	calls atomic.Int64
}

func (s *projNoStore) fail(runID string) error {
	if _, ok := s.mine[runID]; !ok {
		return fmt.Errorf("bench: run %q is not the bench's (another client left it in %s); the bench has no store for it", runID, snapshots.ResyncSetKey)
	}
	s.calls.Add(1)
	return fmt.Errorf("bench: the projector asked the store about run %q, but the topic has no gaps: a projector bug", runID)
}

func (s *projNoStore) FetchEvents(_ context.Context, runID string, _ store.FetchOptions) ([]store.RunEventRecord, error) {
	return nil, s.fail(runID)
}

func (s *projNoStore) ProjectSnapshot(_ context.Context, runID string) (store.RunSnapshot, error) {
	return store.RunSnapshot{}, s.fail(runID)
}

// ConvergenceHorizon, ChangedRuns and RunsBefore make projNoStore a
// converge.Heads, so the catch-up runs with convergence on, as in
// production: its passes take the lease, measure the group's lag (which
// holds the horizon back while the projector catches up) and move the
// cursor in Redis. The bench's runs exist only on the topic, so no window
// holds any run: what a pass costs the store itself is not in this
// measurement (one query over a BRIN range every 5 s, in one process).
func (s *projNoStore) ConvergenceHorizon(_ context.Context, grace time.Duration) (time.Time, error) {
	return time.Now().Add(-grace), nil
}

func (s *projNoStore) ChangedRuns(context.Context, time.Time, time.Time) ([]store.RunHead, error) {
	return nil, nil
}

func (s *projNoStore) RunsBefore(context.Context, string, time.Time, int) ([]store.RunHead, error) {
	return nil, nil
}

// projMetrics is a reading of a projector's registry.
type projMetrics struct {
	events                                               map[string]int64 // by result
	conflicts, resyncs, undecodable, gaps, redisFailures int64
	cacheHits, cacheMisses                               int64
	batches                                              int64
	batchTime                                            time.Duration
}

func readProjMetrics(reg *prometheus.Registry) (projMetrics, error) {
	m := projMetrics{events: map[string]int64{}}
	mfs, err := reg.Gather()
	if err != nil {
		return m, fmt.Errorf("gathering the projector's metrics: %w", err)
	}
	for _, mf := range mfs {
		for _, met := range mf.GetMetric() {
			v := int64(met.GetCounter().GetValue())
			switch mf.GetName() {
			case "runstream_projector_events_total":
				for _, lp := range met.GetLabel() {
					if lp.GetName() == "result" {
						m.events[lp.GetValue()] += v
					}
				}
			case "runstream_projector_write_conflicts_total":
				m.conflicts += v
			case "runstream_projector_resyncs_total":
				m.resyncs += v
			case "runstream_projector_undecodable_records_total":
				m.undecodable += v
			case "runstream_projector_non_contiguous_total":
				m.gaps += v
			case "runstream_projector_redis_failures_total":
				m.redisFailures += v
			case "runstream_projector_snapshot_cache_hits_total":
				m.cacheHits += v
			case "runstream_projector_snapshot_cache_misses_total":
				m.cacheMisses += v
			case "runstream_projector_batch_seconds":
				m.batches += int64(met.GetHistogram().GetSampleCount())
				m.batchTime += time.Duration(met.GetHistogram().GetSampleSum() * float64(time.Second))
			}
		}
	}
	return m, nil
}

// projCheck is what verifySnapshots found.
type projCheck struct {
	verified, wrong, missing int64
	first                    string // the first difference, for the report
}

// verifySnapshots reads every run's snapshot and checks its watermark is
// want(i), it is not stale, and its status is status(i); and that the
// tenant's run index lists every run.
func (b *projBench) verifySnapshots(ctx context.Context, tenant string, ids []string, want func(int) int64, status func(int) string) (projCheck, error) {
	var c projCheck
	var checked atomic.Int64
	stop := b.progress("verify", int64(len(ids)), checked.Load)
	defer stop()
	for lo := 0; lo < len(ids); lo += 1000 {
		hi := min(lo+1000, len(ids))
		pipe := b.rdb.Pipeline()
		cmds := make([]*redis.StringCmd, hi-lo)
		for i := lo; i < hi; i++ {
			cmds[i-lo] = pipe.Get(ctx, snapshots.Key(ids[i]))
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return c, fmt.Errorf("reading back snapshots: %w", err)
		}
		for j, cmd := range cmds {
			i := lo + j
			raw, err := cmd.Bytes()
			if errors.Is(err, redis.Nil) {
				c.missing++
				c.note(fmt.Sprintf("run %s has no snapshot", ids[i]))
				continue
			}
			if err != nil {
				return c, fmt.Errorf("reading the snapshot of run %s: %w", ids[i], err)
			}
			var s struct {
				LastEventSeq int64  `json:"lastEventSeq"`
				Stale        bool   `json:"stale"`
				Status       string `json:"status"`
			}
			if err := json.Unmarshal(raw, &s); err != nil || s.LastEventSeq != want(i) || s.Stale || s.Status != status(i) {
				c.wrong++
				c.note(fmt.Sprintf("run %s: lastEventSeq %d stale %v status %s (decode error %v), want %d false %s",
					ids[i], s.LastEventSeq, s.Stale, s.Status, err, want(i), status(i)))
				continue
			}
			c.verified++
		}
		checked.Store(int64(hi))
	}
	n, err := b.rdb.ZCard(ctx, snapshots.IndexKey(tenant)).Result()
	if err != nil {
		return c, fmt.Errorf("counting the run index of %s: %w", tenant, err)
	}
	if n != int64(len(ids)) {
		c.wrong++
		c.note(fmt.Sprintf("the run index of %s lists %d runs, want %d", tenant, n, len(ids)))
	}
	return c, nil
}

func (c *projCheck) note(s string) {
	if c.first == "" {
		c.first = s
	}
}

// projSubscriber reads the projector's update channel until closed and
// hands each update of a run in its index to fn, in arrival order, from
// its own goroutine.
type projSubscriber struct {
	ps      *redis.PubSub
	stopped chan struct{}
	err     error // set before stopped closes
	closing atomic.Bool
	foreign atomic.Int64 // updates of other runs: other clients share the channel
	bad     atomic.Int64 // updates that did not decode
}

func (b *projBench) subscribe(ctx context.Context, index map[string]int, fn func(run int, seq int64, at time.Time)) (*projSubscriber, error) {
	ps := b.rdb.Subscribe(ctx, snapshots.UpdatesChannel)
	if _, err := ps.Receive(ctx); err != nil {
		_ = ps.Close()
		return nil, fmt.Errorf("subscribing to %s: %w", snapshots.UpdatesChannel, err)
	}
	s := &projSubscriber{ps: ps, stopped: make(chan struct{})}
	go func() {
		defer close(s.stopped)
		var u snapshots.Notification
		for {
			// go-redis does not interrupt a blocked read on ctx; close
			// does, through the connection.
			msg, err := ps.ReceiveMessage(ctx)
			if err != nil {
				if !s.closing.Load() && ctx.Err() == nil {
					s.err = fmt.Errorf("reading %s: %w", snapshots.UpdatesChannel, err)
				}
				return
			}
			now := time.Now()
			u = snapshots.Notification{}
			if err := json.Unmarshal([]byte(msg.Payload), &u); err != nil {
				s.bad.Add(1)
				continue
			}
			r, ok := index[u.RunID]
			if !ok {
				s.foreign.Add(1)
				continue
			}
			fn(r, u.LastEventSeq, now)
		}
	}()
	return s, nil
}

// exited reports the subscriber's error if it stopped on its own.
func (s *projSubscriber) exited() error {
	select {
	case <-s.stopped:
		if s.err != nil {
			return s.err
		}
		return fmt.Errorf("the subscription to %s ended", snapshots.UpdatesChannel)
	default:
		return nil
	}
}

// close unsubscribes and waits for the reader.
func (s *projSubscriber) close() error {
	s.closing.Store(true)
	_ = s.ps.Close()
	<-s.stopped
	return s.err
}

// projWriteLog is the projector's guarded writes of the catch-up, as its
// notifications told them: run and new watermark, in order.
type projWriteLog struct {
	want     []int64      // per run: its last runSeq
	complete atomic.Int64 // runs notified at their last runSeq

	mu      sync.Mutex
	last    []int64 // per run: the last watermark notified
	writes  []projWrite
	regress int64 // notifications that did not move their run's watermark forward
}

type projWrite struct{ run, seq int32 }

func (l *projWriteLog) add(r int, seq int64, _ time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if seq <= l.last[r] {
		l.regress++
	}
	l.last[r] = seq
	l.writes = append(l.writes, projWrite{int32(r), int32(seq)})
	if seq == l.want[r] {
		l.complete.Add(1)
	}
}

// catchUp fills a topic, times the projector reducing it into Redis while
// recording its writes from their notifications, checks every snapshot,
// and replays the same writes with the guarded script alone.
func (b *projBench) catchUp(ctx context.Context) (_ *CatchUpReport, err error) {
	cfg := b.cfg
	tenant := b.prefix + "_catchup"
	runs := min(cfg.Runs, cfg.Events)
	plans := newProjPlans(tenant, runs, cfg.Events, true, time.Now().Add(-10*time.Minute))
	ids := make([]string, runs)
	index := make(map[string]int, 2*runs)
	wlog := &projWriteLog{want: make([]int64, runs), last: make([]int64, runs)}
	for i, p := range plans {
		ids[i] = p.id.RunID
		index[p.id.RunID] = i
		wlog.want[i] = int64(p.events)
	}
	b.track(tenant, ids...)
	defer func() { _ = b.unlink(ctx) }()
	rep := &CatchUpReport{Events: int64(cfg.Events), Runs: runs, Target: TargetCatchUpRatio}
	pb, err := newProjBroker(ctx, cfg.Partitions)
	if err != nil {
		return nil, err
	}
	defer pb.close()
	start := time.Now()
	if rep.RecordBytes, err = b.fill(ctx, pb, plans, cfg.Events, "fill"); err != nil {
		return nil, err
	}
	rep.RecordBytes = round(rep.RecordBytes, 1)
	rep.Fill = time.Since(start)

	// The subscriber stays through the baseline, so both publish to the
	// same subscribers.
	sub, err := b.subscribe(ctx, index, wlog.add)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, sub.close()) }()
	src := &projNoStore{mine: index}
	group := "bench-project-" + projHex(6)
	runtime.GC()
	if cfg.CatchUpCPUProfile != nil {
		if err := pprof.StartCPUProfile(cfg.CatchUpCPUProfile); err != nil {
			return nil, fmt.Errorf("starting the CPU profile: %w", err)
		}
	}
	cpuBefore := sampleCPU()
	start = time.Now()
	r, err := b.startProjector(ctx, pb.brokers, pb.topic, group, src, projNoLagAlert)
	if err == nil {
		err = b.waitCommitted(ctx, pb, group, rep.Events, func() error { return errors.Join(r.exited(), sub.exited()) }, "catch-up", nil)
	}
	rep.Window = time.Since(start)
	cpuAfter := sampleCPU()
	if cfg.CatchUpCPUProfile != nil {
		pprof.StopCPUProfile()
	}
	if r != nil {
		err = errors.Join(err, r.stop())
	}
	if err != nil {
		return nil, err
	}
	rep.CPU = cpuSince(cpuBefore, cpuAfter)
	m, err := readProjMetrics(r.reg)
	if err != nil {
		return nil, err
	}
	rep.Applied, rep.Duplicates, rep.Gaps = m.events["applied"]+m.events["unknown_type"], m.events["duplicate"], m.events["gap"]
	rep.Conflicts, rep.Resyncs, rep.Undecodable = m.conflicts, m.resyncs, m.undecodable
	rep.CacheHits, rep.CacheMisses = m.cacheHits, m.cacheMisses
	rep.Batches, rep.BatchTime = m.batches, m.batchTime
	rep.StoreCalls = src.calls.Load()
	if rep.Committed, err = committedSum(ctx, pb.adm, pb.topic, group); err != nil {
		return nil, err
	}
	pb.close() // the broker's records are not needed any more

	// Each write published its notification before its batch was
	// committed; the last ones may still be on their way to us.
	for deadline := time.Now().Add(10 * time.Second); wlog.complete.Load() < int64(runs) && time.Now().Before(deadline); {
		if err := sub.exited(); err != nil {
			return nil, err
		}
		retry.Sleep(ctx, 5*time.Millisecond)
	}
	rep.UnnotifiedRuns = int64(runs) - wlog.complete.Load()
	chk, err := b.verifySnapshots(ctx, tenant, ids,
		func(i int) int64 { return int64(plans[i].events) }, func(i int) string { return plans[i].wantStatus() })
	if err != nil {
		return nil, err
	}
	rep.Verified, rep.Wrong, rep.Missing, rep.FirstProblem = chk.verified, chk.wrong, chk.missing, chk.first
	wlog.mu.Lock()
	writes := wlog.writes
	rep.Writes, rep.Regressions = int64(len(writes)), wlog.regress
	wlog.mu.Unlock()
	// The baseline starts from the same Redis as the projector did.
	if err := b.unlink(ctx); err != nil {
		return nil, err
	}
	pipeline := max(int(math.Round(projDiv(float64(len(writes)), float64(rep.Batches)))), 1)
	if rep.Baseline, err = b.baseline(ctx, tenant, plans, writes, pipeline); err != nil {
		return nil, err
	}
	rep.Baseline.Events = rep.Events
	rep.Ratio = Ratio(rep.EventsPerSec(), rep.Baseline.EventsPerSec())
	return rep, nil
}

// projNoLagAlert is the projector's lag threshold in the catch-up phases:
// a backlog is their point, PROJECTOR_LAG_HIGH warnings would be noise.
const projNoLagAlert = 24 * time.Hour

// projTemplate is one generated run's snapshot after each of its events,
// encoded as the projector encodes it.
type projTemplate struct {
	bodies [][]byte
	status []string
}

// baseline replays the projector's writes with the guarded script alone,
// in their order, in pipelines of pipeline writes (the projector's mean
// writes per batch): run r's write to seq s stores template r mod
// projTemplates's snapshot after its event s (the same generator reduced
// by the same reducer, so the projector's sizes), guarded on the
// watermark the replay last wrote for r.
func (b *projBench) baseline(ctx context.Context, tenant string, plans []*projPlan, writes []projWrite, pipeline int) (*ScriptBaseline, error) {
	maxEvents := plans[0].events
	tpls := make([]projTemplate, min(projTemplates, len(plans)))
	for t := range tpls {
		p := newProjPlans(tenant, 1, maxEvents, true, time.Now().Add(-10*time.Minute))[0]
		var cur store.RunSnapshot
		for range maxEvents {
			cur, _ = reduce.Apply(cur, p.nextRecord())
			body, err := json.Marshal(cur)
			if err != nil {
				return nil, fmt.Errorf("encoding a template snapshot: %w", err)
			}
			tpls[t].bodies = append(tpls[t].bodies, body)
			tpls[t].status = append(tpls[t].status, cur.Status)
		}
	}
	ids := make([]string, len(plans))
	last := make([]int64, len(plans))
	for i, p := range plans {
		ids[i] = "bench-baseline-" + p.id.RunID
		last[i] = -1 // no snapshot yet
	}
	b.track("", ids...)
	defer func() { _ = b.unlink(ctx) }()

	rep := &ScriptBaseline{Writes: int64(len(writes)), Pipeline: pipeline}
	var written atomic.Int64
	stop := b.progress("baseline", rep.Writes, written.Load)
	defer stop()
	ws := make([]snapshots.EncodedWrite, 0, pipeline)
	var bodyBytes int64
	runtime.GC()
	cpuBefore := sampleCPU()
	start := time.Now()
	for lo := 0; lo < len(writes); lo += pipeline {
		ws = ws[:0]
		for _, w := range writes[lo:min(lo+pipeline, len(writes))] {
			t := &tpls[int(w.run)%len(tpls)]
			seq := int64(w.seq)
			ws = append(ws, snapshots.EncodedWrite{RunID: ids[w.run], TenantID: tenant, Status: t.status[seq-1],
				Snapshot: t.bodies[seq-1], LastEventSeq: seq, Expected: last[w.run]})
			last[w.run] = seq
			bodyBytes += int64(len(t.bodies[seq-1]))
		}
		lost, err := snapshots.WriteEncoded(ctx, b.rdb, ws)
		if err != nil {
			return nil, fmt.Errorf("baseline writes: %w", err)
		}
		rep.Lost += int64(lost)
		written.Add(int64(len(ws)))
	}
	rep.Window = time.Since(start)
	rep.CPU = cpuSince(cpuBefore, sampleCPU())
	rep.SnapshotBytes = round(projDiv(float64(bodyBytes), float64(len(writes))), 1)
	return rep, nil
}

// procMemory reads VmRSS and VmHWM (peak RSS) from a /proc/<pid>/status
// file, in bytes; zeros when it is not available.
func procMemory(status string) (rss, hwm uint64) {
	kb, _ := procKB(status, "VmRSS", "VmHWM")
	return kb[0] << 10, kb[1] << 10
}

// procKB reads the "Key: N kB" lines of a /proc file (status, meminfo):
// the value of each of keys in kB (0 when absent or unreadable), and
// whether it was read.
func procKB(path string, keys ...string) (kb []uint64, found []bool) {
	kb, found = make([]uint64, len(keys)), make([]bool, len(keys))
	b, err := os.ReadFile(path)
	if err != nil {
		return kb, found
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		i := slices.Index(keys, strings.TrimSuffix(f[0], ":"))
		if i < 0 {
			continue
		}
		if n, err := strconv.ParseUint(f[1], 10, 64); err == nil {
			kb[i], found[i] = n, true
		}
	}
	return kb, found
}

func heapInuse() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// memory fills a topic with runs that stay active and measures the
// projector catching up on it: in this process (VmRSS of /proc/self and
// the Go heap, before, at the peak and once caught up) and, with
// cfg.ProjectorCommand, as a process of its own, whose RSS is then the
// number the target is about: in this process the broker's records share
// the heap, and the collector lets garbage grow in proportion to them.
func (b *projBench) memory(ctx context.Context) (*MemoryReport, error) {
	cfg := b.cfg
	tenant := b.prefix + "_memory"
	runs := min(cfg.MemoryRuns, cfg.MemoryEvents)
	plans := newProjPlans(tenant, runs, cfg.MemoryEvents, false, time.Now().Add(-10*time.Minute))
	ids := make([]string, runs)
	index := make(map[string]int, runs)
	for i, p := range plans {
		ids[i] = p.id.RunID
		index[p.id.RunID] = i
	}
	b.track(tenant, ids...)
	defer func() { _ = b.unlink(ctx) }()
	verify := func() (projCheck, error) {
		return b.verifySnapshots(ctx, tenant, ids,
			func(i int) int64 { return int64(plans[i].events) }, func(i int) string { return plans[i].wantStatus() })
	}
	rep := &MemoryReport{Runs: runs, Events: int64(cfg.MemoryEvents), Target: TargetProjectorRSS}
	pb, err := newProjBroker(ctx, cfg.Partitions)
	if err != nil {
		return nil, err
	}
	defer pb.close()
	if _, err := b.fill(ctx, pb, plans, cfg.MemoryEvents, "memory fill"); err != nil {
		return nil, err
	}

	// Everything but the projector is in place: the broker with its
	// records, the plans, the Redis client. Return what the fill freed to
	// the OS so the reading is the process's floor.
	debug.FreeOSMemory()
	rep.RSSBefore, _ = procMemory("/proc/self/status")
	rep.HeapBefore = heapInuse()
	rep.RSSPeak, rep.HeapPeak = rep.RSSBefore, rep.HeapBefore
	sample := func() {
		rss, _ := procMemory("/proc/self/status")
		rep.RSSPeak = max(rep.RSSPeak, rss)
		rep.HeapPeak = max(rep.HeapPeak, heapInuse())
	}
	src := &projNoStore{mine: index}
	group := "bench-project-" + projHex(6)
	start := time.Now()
	r, err := b.startProjector(ctx, pb.brokers, pb.topic, group, src, projNoLagAlert)
	if err != nil {
		return nil, err
	}
	err = b.waitCommitted(ctx, pb, group, rep.Events, r.exited, "memory", sample)
	rep.Window = time.Since(start)
	if err == nil {
		// Caught up, the projector still running with its partitions.
		sample()
		rep.RSSAfter, _ = procMemory("/proc/self/status")
		rep.HeapAfter = heapInuse()
		runtime.GC()
		rep.HeapLive = heapInuse()
	}
	if err := errors.Join(err, r.stop()); err != nil {
		return nil, err
	}
	rep.StoreCalls = src.calls.Load()
	chk, err := verify()
	if err != nil {
		return nil, err
	}
	rep.Verified, rep.Wrong, rep.Missing, rep.FirstProblem = chk.verified, chk.wrong, chk.missing, chk.first
	if len(cfg.ProjectorCommand) == 0 {
		return rep, nil
	}

	// The same catch-up again by a projector process, from an empty Redis.
	if err := b.unlink(ctx); err != nil {
		return nil, err
	}
	b.track(tenant, ids...)
	if rep.Standalone, err = b.memoryProcess(ctx, pb, rep.Events); err != nil {
		return nil, err
	}
	if chk, err = verify(); err != nil {
		return nil, err
	}
	s := rep.Standalone
	s.Verified, s.Wrong, s.Missing, s.FirstProblem = chk.verified, chk.wrong, chk.missing, chk.first
	return rep, nil
}

// memoryProcess runs cfg.ProjectorCommand (`runstream projector`) on the
// memory topic with a fresh group, and reads its memory from /proc and
// its /metrics once it has caught up.
func (b *projBench) memoryProcess(ctx context.Context, pb *projBroker, events int64) (_ *ProcessMemory, err error) {
	cfg := b.cfg
	sc, err := newSchema(ctx, cfg.PostgresURL, false) // it migrates its store: give it a schema of its own
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, sc.drop(ctx)) }()
	addr, err := projFreeAddr()
	if err != nil {
		return nil, err
	}
	group := "bench-project-" + projHex(6)
	args := append(slices.Clone(cfg.ProjectorCommand[1:]),
		"--kafka-brokers", strings.Join(pb.brokers, ","), "--topic", pb.topic, "--group", group,
		"--redis-url", cfg.RedisURL, "--postgres-url", withSearchPath(cfg.PostgresURL, sc.name),
		"--http-addr", addr, "--log-level", "warn", "--log-format", "text",
		"--max-poll-records", strconv.Itoa(cfg.Batch), "--lag-high-ms", strconv.FormatInt(projNoLagAlert.Milliseconds(), 10))
	cmd := exec.CommandContext(ctx, cfg.ProjectorCommand[0], args...)
	out := &projTail{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the projector process %q: %w", cfg.ProjectorCommand, err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var exitErr error
	exitedNow := false
	exited := func() error {
		if !exitedNow {
			select {
			case exitErr = <-waited:
				exitedNow = true
			default:
				return nil
			}
		}
		return fmt.Errorf("the projector process exited during the bench (%v); its output ends with:\n%s", exitErr, out.String())
	}
	pm := &ProcessMemory{Command: strings.Join(cfg.ProjectorCommand, " ")}
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	sample := func() {
		rss, _ := procMemory(status)
		pm.RSSPeak = max(pm.RSSPeak, rss)
	}
	start := time.Now()
	err = b.waitCommitted(ctx, pb, group, events, exited, "standalone", sample)
	pm.Window = time.Since(start)
	if err == nil {
		var hwm uint64
		pm.RSSAfter, hwm = procMemory(status)
		pm.RSSPeak = max(pm.RSSPeak, hwm)
		pm.HeapInuse, err = projScrapeHeap(ctx, addr)
	}
	if !exitedNow {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		exitErr = <-waited
		if exitErr != nil {
			err = errors.Join(err, fmt.Errorf("stopping the projector process: %w; its output ends with:\n%s", exitErr, out.String()))
		}
	}
	if err != nil {
		return nil, err
	}
	return pm, nil
}

// projFreeAddr returns a loopback address with a free port.
func projFreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port for the projector's /metrics: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// projScrapeHeap reads go_memstats_heap_inuse_bytes from the /metrics of
// the projector process at addr.
func projScrapeHeap(ctx context.Context, addr string) (uint64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("reading the projector process's /metrics: %w", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_memstats_heap_inuse_bytes "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return 0, fmt.Errorf("parsing go_memstats_heap_inuse_bytes %q: %w", v, err)
			}
			return uint64(f), nil
		}
	}
	return 0, fmt.Errorf("the projector process's /metrics has no go_memstats_heap_inuse_bytes (read error: %v)", sc.Err())
}

// projTail keeps the last 4 KiB written to it: a child process's output,
// for error messages.
type projTail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *projTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 4096 {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-4096:]...)
	}
	return len(p), nil
}

func (t *projTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// projSeen records, per run, when each runSeq first showed as visible on
// the update channel.
type projSeen struct {
	mu      sync.Mutex
	at      [][]time.Time // by run index, then runSeq-1
	visible atomic.Int64
}

func (s *projSeen) mark(r int, seq int64, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for int64(len(s.at[r])) < seq {
		s.at[r] = append(s.at[r], now)
		s.visible.Add(1)
	}
}

func (s *projSeen) when(r int, seq int64) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if seq < 1 || int64(len(s.at[r])) < seq {
		return time.Time{}, false
	}
	return s.at[r][seq-1], true
}

// endToEnd runs store, relay and projector in this process and measures
// append-committed to snapshot-visible at the offered rate.
func (b *projBench) endToEnd(ctx context.Context) (_ *EndToEndReport, err error) {
	cfg := b.cfg
	n := max(int(int64(cfg.Rate)*int64(cfg.Duration)/int64(time.Second)), 1)
	rep := &EndToEndReport{Rate: cfg.Rate, Duration: cfg.Duration, Appenders: cfg.Appenders, Runs: cfg.LatencyRuns,
		Offered: int64(n), TargetP99: TargetEndToEndP99, TargetRate: TargetEndToEndRate}
	tenant := b.prefix + "_latency"

	sc, err := newSchema(ctx, cfg.PostgresURL, false)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, sc.drop(ctx)) }()
	url := withSearchPath(cfg.PostgresURL, sc.name)
	// Three pools, as three processes would have: the appenders' (the
	// API's), the relay's and the projector's (for resyncs).
	relayPool, err := postgres.Connect(ctx, url)
	if err != nil {
		return nil, err
	}
	defer relayPool.Close()
	if _, err := postgres.Migrate(ctx, relayPool); err != nil {
		return nil, fmt.Errorf("migrating the bench schema %s: %w", sc.name, err)
	}
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parsing the Postgres URL (--postgres-url): %w", err)
	}
	pcfg.MaxConns = int32(cfg.Appenders)
	appendPool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("opening the appenders' pool: %w", err)
	}
	defer appendPool.Close()
	projPool, err := postgres.Connect(ctx, url)
	if err != nil {
		return nil, err
	}
	defer projPool.Close()
	st, err := postgres.New(appendPool, postgres.Config{Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	projStore, err := postgres.New(projPool, postgres.Config{Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	if err := projWarmPool(ctx, appendPool, cfg.Appenders); err != nil {
		return nil, err
	}
	pb, err := newProjBroker(ctx, cfg.Partitions)
	if err != nil {
		return nil, err
	}
	defer pb.close()

	// The runs: warmup runs first, then the measured ones, and their
	// writes, generated before the window.
	plans := newProjPlans(tenant, projWarmupRuns+cfg.LatencyRuns, 0, false, time.Now())
	seen := &projSeen{at: make([][]time.Time, len(plans))}
	ids := make([]string, len(plans))
	index := make(map[string]int, len(plans))
	for i, p := range plans {
		ids[i] = p.id.RunID
		index[p.id.RunID] = i
	}
	b.track(tenant, ids...)
	defer func() { _ = b.unlink(ctx) }()
	rng := mrand.New(mrand.NewPCG(mrand.Uint64(), 2))
	writes := make([]store.RunEventWrite, n)
	runOf := make([]int, n)
	for i := range writes {
		runOf[i] = projWarmupRuns + rng.IntN(cfg.LatencyRuns)
		writes[i] = plans[runOf[i]].next()
	}

	sub, err := b.subscribe(ctx, index, seen.mark)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, sub.close()) }()

	// The components, each owned by the group and stopped together.
	rctx, stopAll := context.WithCancel(ctx)
	g, gctx := errgroup.WithContext(rctx)
	defer func() {
		stopAll()
		if werr := g.Wait(); werr != nil && err == nil {
			err = werr
		}
	}()
	g.Go(func() error { return st.RunOutboxNotifier(gctx) })
	relayClient, err := kgo.NewClient(relay.ClientOptions(pb.brokers)...)
	if err != nil {
		return nil, fmt.Errorf("creating the relay's Kafka client: %w", err)
	}
	defer relayClient.Close()
	rl, err := relay.New(relay.Config{Topic: pb.topic, Partitions: cfg.Partitions, Logger: cfg.Logger,
		Registerer: prometheus.NewRegistry()}, relayPool, relayClient)
	if err != nil {
		return nil, err
	}
	g.Go(func() error { return rl.Run(gctx) })
	prj, err := projector.New(projector.Config{Brokers: pb.brokers, Topic: pb.topic, Group: "bench-project-" + projHex(6),
		MaxPollRecords: cfg.Batch, Registerer: prometheus.NewRegistry(), Logger: cfg.Logger}, b.rdb, projStore)
	if err != nil {
		return nil, err
	}
	g.Go(func() error { return prj.Run(gctx) })

	// A plain consumer (no group) splits each event's time into the
	// relay's part (commit until the record can be read) and the
	// projector's (from then until visible).
	eventIndex := make(map[string]int, n)
	for i := range writes {
		eventIndex[writes[i].EventID] = i
	}
	topicAt := make([]time.Time, n)
	var onTopic atomic.Int64
	cons, err := kgo.NewClient(kgo.SeedBrokers(pb.brokers...), kgo.ConsumeTopics(pb.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		return nil, fmt.Errorf("creating the bench's consumer: %w", err)
	}
	defer cons.Close()
	cctx, stopConsumer := context.WithCancel(ctx)
	consumerDone := make(chan struct{})
	go func() {
		defer close(consumerDone)
		for cctx.Err() == nil {
			fs := cons.PollFetches(cctx)
			now := time.Now()
			fs.EachRecord(func(r *kgo.Record) {
				for _, h := range r.Headers {
					if h.Key != "eventId" {
						continue
					}
					if i, ok := eventIndex[string(h.Value)]; ok && topicAt[i].IsZero() {
						topicAt[i] = now
						onTopic.Add(1)
					}
				}
			})
		}
	}()
	stopConsumerOnce := sync.OnceFunc(func() { stopConsumer(); <-consumerDone })
	defer stopConsumerOnce()

	failed := func() error {
		if err := sub.exited(); err != nil {
			return err
		}
		if gctx.Err() != nil && ctx.Err() == nil {
			return errors.New("a component of the latency phase (store notifier, relay, projector, subscriber) stopped; see the log")
		}
		return ctx.Err()
	}

	// Warmup: every run's first events, waited for, so the group has
	// joined and every connection and script is ready before the window.
	warm := int64(0)
	for r := range projWarmupRuns {
		for range 2 {
			if _, err := st.AppendEvent(ctx, plans[r].next()); err != nil {
				return nil, fmt.Errorf("warmup append: %w", err)
			}
			warm++
		}
	}
	stopWarm := b.progress("warmup", warm, seen.visible.Load)
	deadline := time.Now().Add(projStall)
	for seen.visible.Load() < warm {
		if err := failed(); err != nil {
			stopWarm()
			return nil, err
		}
		if time.Now().After(deadline) {
			stopWarm()
			return nil, fmt.Errorf("warmup: %d of %d events visible in Redis after %v", seen.visible.Load(), warm, projStall)
		}
		retry.Sleep(ctx, 5*time.Millisecond)
	}
	stopWarm()

	returned := make([]time.Time, n)
	seqs := make([]int64, n)
	due := make([]time.Duration, n)
	var appended atomic.Int64
	stop := b.progress("latency", int64(n), appended.Load)
	runtime.GC()
	cpuBefore := sampleCPU()
	start := time.Now()
	jobs := make(chan int, n)
	var aw sync.WaitGroup
	for range cfg.Appenders {
		aw.Add(1)
		go func() {
			defer aw.Done()
			for i := range jobs {
				at := start.Add(time.Duration(i) * time.Second / time.Duration(cfg.Rate))
				res, err := st.AppendEvent(ctx, writes[i])
				now := time.Now()
				due[i] = now.Sub(at)
				if err != nil {
					if ctx.Err() == nil {
						cfg.Logger.Warn("append failed in the latency phase", "err", err)
					}
					continue
				}
				returned[i], seqs[i] = now, res.RunSeq
				appended.Add(1)
			}
		}()
	}
	// Open loop: event i is due at start + i/Rate whether or not earlier
	// appends finished.
	for i := 0; i < n && ctx.Err() == nil; {
		now := time.Now()
		for i < n && !start.Add(time.Duration(i)*time.Second/time.Duration(cfg.Rate)).After(now) {
			jobs <- i
			i++
		}
		if i < n {
			retry.Sleep(ctx, time.Until(start.Add(time.Duration(i)*time.Second/time.Duration(cfg.Rate))))
		}
	}
	close(jobs)
	aw.Wait()
	rep.Window = time.Since(start)
	stop()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bench interrupted during the latency phase: %w", err)
	}
	rep.Appended = appended.Load()
	rep.Errors = int64(n) - rep.Appended

	// The last events are still on their way.
	want := warm + rep.Appended
	stopVis := b.progress("visible", want, seen.visible.Load)
	deadline = time.Now().Add(projGrace)
	for (seen.visible.Load() < want || onTopic.Load() < rep.Appended) && time.Now().Before(deadline) {
		if err := failed(); err != nil {
			stopVis()
			return nil, err
		}
		retry.Sleep(ctx, 5*time.Millisecond)
	}
	stopVis()
	rep.CPU = cpuSince(cpuBefore, sampleCPU())

	stopConsumerOnce() // topicAt is ours now

	var vis, dueLat, relayLat, projLat []time.Duration
	for i := range n {
		dueLat = append(dueLat, due[i])
		if seqs[i] == 0 {
			continue
		}
		at, ok := seen.when(runOf[i], seqs[i])
		if !ok {
			rep.Missing++
			continue
		}
		d := at.Sub(returned[i])
		if d < 0 {
			rep.BeforeReturn++
			d = 0
		}
		vis = append(vis, d)
		if t := topicAt[i]; !t.IsZero() {
			relayLat = append(relayLat, max(t.Sub(returned[i]), 0))
			projLat = append(projLat, max(at.Sub(t), 0))
		}
	}
	rep.Visible = int64(len(vis))
	rep.CommitToVisible = Summarize(vis)
	rep.CommitToTopic = Summarize(relayLat)
	rep.TopicToVisible = Summarize(projLat)
	rep.DueToAppended = Summarize(dueLat)
	rep.Foreign, rep.BadUpdates = sub.foreign.Load(), sub.bad.Load()

	// Every run's snapshot ends at the runSeq of its last append.
	last := make([]int64, len(plans))
	for r := range projWarmupRuns {
		last[r] = 2
	}
	for i := range n {
		last[runOf[i]] = max(last[runOf[i]], seqs[i])
	}
	var checkIDs []string
	var checkWant []int64
	for r, id := range ids {
		if last[r] > 0 {
			checkIDs = append(checkIDs, id)
			checkWant = append(checkWant, last[r])
		}
	}
	chk, err := b.verifySnapshots(ctx, tenant, checkIDs, func(i int) int64 { return checkWant[i] },
		func(int) string { return store.RunRunning })
	if err != nil {
		return nil, err
	}
	rep.Verified, rep.Wrong, rep.FirstProblem = chk.verified, chk.wrong+chk.missing, chk.first
	return rep, nil
}

// projWarmPool opens n connections before the window, so connection
// setup is not measured.
func projWarmPool(ctx context.Context, pool *pgxpool.Pool, n int) error {
	conns := make([]*pgxpool.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for range n {
		c, err := pool.Acquire(ctx)
		if err != nil {
			return fmt.Errorf("opening the appenders' connections: %w", err)
		}
		conns = append(conns, c)
	}
	return nil
}

// ProjectReport is the outcome of one [RunProject]. Its JSON form is the
// machine-readable report (`runstream bench project --json`).
type ProjectReport struct {
	// Redis is the server measured; Broker is "in-process kfake".
	Redis  string `json:"redis"`
	Broker string `json:"broker"`
	// Partitions of each phase's topic.
	Partitions int32 `json:"partitions"`
	// Batch is the projector's MaxPollRecords and the baseline's pipeline.
	Batch int `json:"batch"`
	// CatchUp, EndToEnd and Memory are set for the phases that ran.
	CatchUp  *CatchUpReport  `json:"catchUp,omitempty"`
	EndToEnd *EndToEndReport `json:"endToEnd,omitempty"`
	Memory   *MemoryReport   `json:"memory,omitempty"`
	Repair   *RepairReport   `json:"repair,omitempty"`
}

// CatchUpReport is the catch-up phase's outcome.
type CatchUpReport struct {
	// Events pre-filled into the topic, over Runs runs; RecordBytes is the
	// mean record value size.
	Events      int64   `json:"events"`
	Runs        int     `json:"runs"`
	RecordBytes float64 `json:"recordBytes"`
	// Fill is the time producing the topic took (not measured).
	Fill time.Duration `json:"-"`
	// Window is from the projector's start until the group's committed
	// offsets reached the end offsets.
	Window time.Duration `json:"-"`
	// Committed is the sum of the group's committed offsets at the end.
	Committed int64 `json:"committed"`
	// Applied, Duplicates and Gaps are the projector's event counts by
	// result (applied includes unknown types); Conflicts its lost guarded
	// writes, Undecodable its bad records. Resyncs counts its resync
	// attempts, including retries of other clients' stale runs from the
	// shared resync set (only StoreCalls tells about the bench's runs).
	Applied     int64 `json:"applied"`
	Duplicates  int64 `json:"duplicates"`
	Gaps        int64 `json:"gaps"`
	Conflicts   int64 `json:"conflicts"`
	Resyncs     int64 `json:"resyncs"`
	Undecodable int64 `json:"undecodable"`
	// CacheHits and CacheMisses count the runs of the projector's batches
	// whose snapshot came from its snapshot cache, or was read from Redis.
	CacheHits   int64 `json:"cacheHits"`
	CacheMisses int64 `json:"cacheMisses"`
	// StoreCalls counts the projector's calls to the store, which must be 0:
	// the topic has no gaps.
	StoreCalls int64 `json:"storeCalls"`
	// Batches is the poll batches processed and BatchTime their total
	// reduce-and-write time (runstream_projector_batch_seconds); the rest
	// of the window is polling and committing.
	Batches   int64         `json:"batches"`
	BatchTime time.Duration `json:"-"`
	// Writes is the projector's guarded writes, counted from their
	// notifications on the update channel (a batch writes each of its runs
	// once, so a write covers one event or more). Regressions counts
	// notifications that did not move their run's watermark forward, and
	// UnnotifiedRuns runs whose last notification never came; both must
	// be 0.
	Writes         int64 `json:"writes"`
	Regressions    int64 `json:"regressions"`
	UnnotifiedRuns int64 `json:"unnotifiedRuns"`
	// Verified runs' snapshots ended at their last runSeq, not stale, with
	// the right status; Wrong and Missing did not (FirstProblem says how).
	Verified     int64  `json:"verified"`
	Wrong        int64  `json:"wrong"`
	Missing      int64  `json:"missing"`
	FirstProblem string `json:"firstProblem,omitempty"`
	// CPU is the CPU used during the window (the process holds the
	// projector and the broker).
	CPU CPU `json:"cpu"`
	// Baseline is the guarded script alone on the same Redis.
	Baseline *ScriptBaseline `json:"baseline"`
	// Ratio is the catch-up's events/s over the baseline's writes/s, and
	// Target the ratio to reach.
	Ratio  float64 `json:"ratio"`
	Target float64 `json:"target"`
}

// EventsPerSec is the catch-up rate.
func (c *CatchUpReport) EventsPerSec() float64 { return perSec(c.Events, c.Window) }

// Consistent reports whether every offset was committed and every run's
// snapshot is right, without the store's help.
func (c *CatchUpReport) Consistent() bool {
	return c.Committed == c.Events && c.Verified == int64(c.Runs) && c.Wrong == 0 && c.Missing == 0 &&
		c.StoreCalls == 0 && c.Gaps == 0 && c.Undecodable == 0 && c.Applied == c.Events &&
		c.Regressions == 0 && c.UnnotifiedRuns == 0 && (c.Baseline == nil || c.Baseline.Lost == 0)
}

// Met reports whether the catch-up reached its share of the baseline,
// consistently.
func (c *CatchUpReport) Met() bool { return c.Consistent() && c.Ratio >= c.Target }

// MarshalJSON adds the derived fields and the durations in seconds.
func (c *CatchUpReport) MarshalJSON() ([]byte, error) {
	type plain CatchUpReport
	return json.Marshal(struct {
		*plain
		FillSeconds    float64 `json:"fillSeconds"`
		WindowSeconds  float64 `json:"windowSeconds"`
		BatchSeconds   float64 `json:"batchSeconds"`
		EventsPerSec   float64 `json:"eventsPerSec"`
		WritesPerSec   float64 `json:"writesPerSec"`
		EventsPerBatch float64 `json:"eventsPerBatch"`
		EventsPerWrite float64 `json:"eventsPerWrite"`
		Consistent     bool    `json:"consistent"`
		Met            bool    `json:"met"`
		CPUPerMillion  float64 `json:"cpuSecondsPerMillionEvents"`
	}{(*plain)(c), round(c.Fill.Seconds(), 3), round(c.Window.Seconds(), 3), round(c.BatchTime.Seconds(), 3),
		round(c.EventsPerSec(), 1), round(perSec(c.Writes, c.Window), 1), round(projDiv(float64(c.Events), float64(c.Batches)), 1),
		round(projDiv(float64(c.Events), float64(c.Writes)), 2), c.Consistent(), c.Met(),
		round(projDiv(c.CPU.Process*c.Window.Seconds()*1e6, float64(c.Events)), 2)})
}

// ScriptBaseline is the guarded Lua script alone, replaying the
// projector's writes of the catch-up: the same runs and watermarks in the
// same order, snapshots of the same sizes, pipelined.
type ScriptBaseline struct {
	// Writes is the script runs, covering Events events; Pipeline is their
	// pipeline length (the projector's mean writes per batch) and
	// SnapshotBytes the mean snapshot size written.
	Writes        int64   `json:"writes"`
	Events        int64   `json:"events"`
	Pipeline      int     `json:"pipeline"`
	SnapshotBytes float64 `json:"snapshotBytes"`
	// Window is the time of all the writes.
	Window time.Duration `json:"-"`
	// Lost counts writes whose guard failed; it must be 0.
	Lost int64 `json:"lost"`
	// CPU is the CPU used meanwhile (the process is only the client; the
	// machine includes Redis).
	CPU CPU `json:"cpu"`
}

// WritesPerSec is the baseline's rate.
func (s *ScriptBaseline) WritesPerSec() float64 { return perSec(s.Writes, s.Window) }

// EventsPerSec is the events the baseline's writes cover per second: the
// catch-up rate of a projector whose only cost was its writes.
func (s *ScriptBaseline) EventsPerSec() float64 { return perSec(s.Events, s.Window) }

// MarshalJSON adds the derived fields.
func (s *ScriptBaseline) MarshalJSON() ([]byte, error) {
	type plain ScriptBaseline
	return json.Marshal(struct {
		*plain
		WindowSeconds float64 `json:"windowSeconds"`
		WritesPerSec  float64 `json:"writesPerSec"`
		EventsPerSec  float64 `json:"eventsPerSec"`
	}{(*plain)(s), round(s.Window.Seconds(), 3), round(s.WritesPerSec(), 1), round(s.EventsPerSec(), 1)})
}

// EndToEndReport is the latency phase's outcome.
type EndToEndReport struct {
	// Rate is the offered rate (events/s) for Duration, by Appenders
	// goroutines, over Runs runs; Offered is the events that makes.
	Rate      int           `json:"rate"`
	Duration  time.Duration `json:"-"`
	Appenders int           `json:"appenders"`
	Runs      int           `json:"runs"`
	Offered   int64         `json:"offered"`
	// Window is from the first due time until the last append returned.
	Window time.Duration `json:"-"`
	// Appended and Errors split Offered. Visible appended events were seen
	// on the update channel; Missing were not within the grace period.
	Appended int64 `json:"appended"`
	Errors   int64 `json:"errors"`
	Visible  int64 `json:"visible"`
	Missing  int64 `json:"missing"`
	// CommitToVisible is, per event, from the append's return (its commit)
	// until the update channel showed its run's lastEventSeq at or past
	// its runSeq. BeforeReturn counts events already visible when their
	// append returned (counted as 0).
	CommitToVisible Latency `json:"commitToVisibleMs"`
	BeforeReturn    int64   `json:"visibleBeforeReturn"`
	// CommitToTopic and TopicToVisible split CommitToVisible where a plain
	// consumer of the topic (no group) read the event's record: the
	// relay's part and the projector's. Each is summarised on its own, so
	// their percentiles do not add up.
	CommitToTopic  Latency `json:"commitToTopicMs"`
	TopicToVisible Latency `json:"topicToVisibleMs"`
	// DueToAppended is each append's time from its due time to its return,
	// queueing for a free appender included.
	DueToAppended Latency `json:"dueToAppendedMs"`
	// Foreign counts updates of other clients' runs on the shared channel,
	// BadUpdates updates that did not decode.
	Foreign    int64 `json:"foreignUpdates"`
	BadUpdates int64 `json:"badUpdates"`
	// Verified runs' snapshots ended at their last appended runSeq; Wrong
	// did not (FirstProblem says how).
	Verified     int64  `json:"verified"`
	Wrong        int64  `json:"wrong"`
	FirstProblem string `json:"firstProblem,omitempty"`
	// CPU is the CPU used from the window's start until the last event was
	// visible (the process holds appenders, relay, projector and broker).
	CPU CPU `json:"cpu"`
	// TargetP99 bounds CommitToVisible's p99 at TargetRate events/s.
	TargetP99  time.Duration `json:"-"`
	TargetRate int           `json:"targetRate"`
}

// AchievedRate is the appended events per second of the window.
func (e *EndToEndReport) AchievedRate() float64 { return perSec(e.Appended, e.Window) }

// Met reports whether p99 is under the target while the appends held the
// offered rate, with every appended event visible.
func (e *EndToEndReport) Met() bool {
	return e.CommitToVisible.P99 < e.TargetP99 && e.Errors == 0 && e.Visible == e.Appended && e.Wrong == 0 &&
		e.AchievedRate() >= projRateTolerance*float64(e.Rate)
}

// MarshalJSON adds the derived fields and the durations in seconds.
func (e *EndToEndReport) MarshalJSON() ([]byte, error) {
	type plain EndToEndReport
	return json.Marshal(struct {
		*plain
		DurationSeconds float64 `json:"durationSeconds"`
		WindowSeconds   float64 `json:"windowSeconds"`
		AchievedRate    float64 `json:"achievedRate"`
		TargetP99Ms     float64 `json:"targetP99Ms"`
		Met             bool    `json:"met"`
	}{(*plain)(e), e.Duration.Seconds(), round(e.Window.Seconds(), 3), round(e.AchievedRate(), 1),
		float64(e.TargetP99) / float64(time.Millisecond), e.Met()})
}

// MemoryReport is the memory phase's outcome. Memory is this process's:
// the broker's records are in it before the projector starts, so the
// projector's share is the growth from Before.
type MemoryReport struct {
	// Runs active runs (never finished) and their Events.
	Runs   int   `json:"runs"`
	Events int64 `json:"events"`
	// Window is the projector's catch-up time.
	Window time.Duration `json:"-"`
	// RSS (VmRSS of /proc/self/status) before the projector started, at its
	// peak while catching up (sampled every 20ms), and once caught up.
	RSSBefore uint64 `json:"rssBeforeBytes"`
	RSSPeak   uint64 `json:"rssPeakBytes"`
	RSSAfter  uint64 `json:"rssAfterBytes"`
	// Heap (runtime.MemStats.HeapInuse) at the same moments, and HeapLive
	// after a forced GC once caught up with the projector still running:
	// what the projector keeps, garbage excluded.
	HeapBefore uint64 `json:"heapInuseBeforeBytes"`
	HeapPeak   uint64 `json:"heapInusePeakBytes"`
	HeapAfter  uint64 `json:"heapInuseAfterBytes"`
	HeapLive   uint64 `json:"heapLiveAfterGCBytes"`
	// StoreCalls must be 0 (no gaps); Verified, Wrong, Missing and
	// FirstProblem as in [CatchUpReport].
	StoreCalls   int64  `json:"storeCalls"`
	Verified     int64  `json:"verified"`
	Wrong        int64  `json:"wrong"`
	Missing      int64  `json:"missing"`
	FirstProblem string `json:"firstProblem,omitempty"`
	// Standalone is set when a projector process of its own caught up the
	// same topic.
	Standalone *ProcessMemory `json:"standalone,omitempty"`
	// Target bounds ProjectorRSS, in bytes.
	Target uint64 `json:"targetBytes"`
}

// ProcessMemory is a standalone projector process (`runstream projector`)
// catching up the memory phase's topic from an empty Redis.
type ProcessMemory struct {
	// Command is the process's command line, before the appended flags.
	Command string `json:"command"`
	// Window is its catch-up time.
	Window time.Duration `json:"-"`
	// RSSPeak is its peak RSS (VmHWM, and VmRSS sampled every 20ms),
	// RSSAfter its VmRSS once caught up, HeapInuse its
	// go_memstats_heap_inuse_bytes then.
	RSSPeak   uint64 `json:"rssPeakBytes"`
	RSSAfter  uint64 `json:"rssAfterBytes"`
	HeapInuse uint64 `json:"heapInuseAfterBytes"`
	// Verified, Wrong, Missing and FirstProblem as in [CatchUpReport].
	Verified     int64  `json:"verified"`
	Wrong        int64  `json:"wrong"`
	Missing      int64  `json:"missing"`
	FirstProblem string `json:"firstProblem,omitempty"`
}

// MarshalJSON adds the window in seconds.
func (p *ProcessMemory) MarshalJSON() ([]byte, error) {
	type plain ProcessMemory
	return json.Marshal(struct {
		*plain
		WindowSeconds float64 `json:"windowSeconds"`
		RSSPeakMB     float64 `json:"rssPeakMB"`
	}{(*plain)(p), round(p.Window.Seconds(), 3), round(float64(p.RSSPeak)/(1<<20), 1)})
}

// ProjectorRSS is the projector's RSS at its peak: the standalone
// process's when it ran, else what the projector added to this process.
func (m *MemoryReport) ProjectorRSS() uint64 {
	if m.Standalone != nil {
		return m.Standalone.RSSPeak
	}
	return m.InProcessRSS()
}

// InProcessRSS is the RSS the in-process projector added at its peak.
func (m *MemoryReport) InProcessRSS() uint64 { return m.RSSPeak - min(m.RSSBefore, m.RSSPeak) }

// LiveGrowth is the heap the projector keeps once caught up (negative when
// the collector freed more than it kept).
func (m *MemoryReport) LiveGrowth() int64 { return int64(m.HeapLive) - int64(m.HeapBefore) }

// Met reports whether the projector's RSS stayed under the target with
// every snapshot right.
func (m *MemoryReport) Met() bool {
	ok := m.ProjectorRSS() < m.Target && m.Verified == int64(m.Runs) && m.Wrong == 0 && m.Missing == 0 && m.StoreCalls == 0
	if s := m.Standalone; s != nil {
		ok = ok && s.Verified == int64(m.Runs) && s.Wrong == 0 && s.Missing == 0
	}
	return ok
}

// MarshalJSON adds the derived fields.
func (m *MemoryReport) MarshalJSON() ([]byte, error) {
	type plain MemoryReport
	return json.Marshal(struct {
		*plain
		WindowSeconds   float64 `json:"windowSeconds"`
		ProjectorRSS    uint64  `json:"projectorRssBytes"`
		InProcessRSS    uint64  `json:"inProcessRssGrowthBytes"`
		LiveGrowth      int64   `json:"liveHeapGrowthBytes"`
		LiveBytesPerRun float64 `json:"liveHeapGrowthBytesPerRun"`
		EventsPerSec    float64 `json:"eventsPerSec"`
		ProjectorRSSMB  float64 `json:"projectorRssMB"`
		TargetMB        float64 `json:"targetMB"`
		Met             bool    `json:"met"`
	}{(*plain)(m), round(m.Window.Seconds(), 3), m.ProjectorRSS(), m.InProcessRSS(), m.LiveGrowth(),
		round(projDiv(float64(m.LiveGrowth()), float64(m.Runs)), 1), round(perSec(m.Events, m.Window), 1),
		round(float64(m.ProjectorRSS())/(1<<20), 1), round(float64(m.Target)/(1<<20), 1), m.Met()})
}

func projDiv(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func projMB(v uint64) string { return fmt.Sprintf("%.1f MB", float64(v)/(1<<20)) }

func projVerdict(ok bool) string {
	if ok {
		return "MET"
	}
	return "BELOW TARGET"
}

func projLatency(l Latency) string {
	return fmt.Sprintf("p50 %s  p95 %s  p99 %s  max %s", fmtMs(l.P50), fmtMs(l.P95), fmtMs(l.P99), fmtMs(l.Max))
}

// WriteText writes the human-readable report.
func (r *ProjectReport) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "runstream bench project: Redis %s, %s broker, %d partitions, batch %d\n",
		r.Redis, r.Broker, r.Partitions, r.Batch)
	if c := r.CatchUp; c != nil {
		fmt.Fprintf(&b, "catch-up: %d events over %d runs (record %.0f bytes), produced in %s (not timed)\n",
			c.Events, c.Runs, c.RecordBytes, c.Fill.Round(time.Millisecond))
		fmt.Fprintf(&b, "  projector  %9.0f events/s %8.0f writes/s  (%d guarded writes, %.2f events each; %s from start until every offset was committed)\n",
			c.EventsPerSec(), perSec(c.Writes, c.Window), c.Writes, projDiv(float64(c.Events), float64(c.Writes)), c.Window.Round(time.Millisecond))
		if bl := c.Baseline; bl != nil {
			fmt.Fprintf(&b, "  baseline   %9.0f events/s %8.0f writes/s  (the same writes by the guarded script alone, pipelines of %d, snapshot %.0f bytes; %s, %d lost)\n",
				bl.EventsPerSec(), bl.WritesPerSec(), bl.Pipeline, bl.SnapshotBytes, bl.Window.Round(time.Millisecond), bl.Lost)
		}
		fmt.Fprintf(&b, "  ratio      %.1f%% of the baseline (target %.0f%%): %s\n", 100*c.Ratio, 100*c.Target, projVerdict(c.Met()))
		fmt.Fprintf(&b, "  check      %d/%d offsets committed; %d/%d snapshots right, %d wrong, %d missing; %d store calls; %d watermark regressions, %d runs unnotified\n",
			c.Committed, c.Events, c.Verified, c.Runs, c.Wrong, c.Missing, c.StoreCalls, c.Regressions, c.UnnotifiedRuns)
		fmt.Fprintf(&b, "  projector  %d applied, %d duplicates, %d gaps, %d conflicts, %d undecodable; %d batches (%.0f events each), %s reducing and writing (%.0f%% of the window)\n",
			c.Applied, c.Duplicates, c.Gaps, c.Conflicts, c.Undecodable, c.Batches, projDiv(float64(c.Events), float64(c.Batches)),
			c.BatchTime.Round(time.Millisecond), 100*projDiv(c.BatchTime.Seconds(), c.Window.Seconds()))
		fmt.Fprintf(&b, "  cache      %d snapshots from the projector's cache, %d read from Redis (%.0f%% hits)\n",
			c.CacheHits, c.CacheMisses, 100*projDiv(float64(c.CacheHits), float64(c.CacheHits+c.CacheMisses)))
		if c.CPU.Machine > 0 {
			fmt.Fprintf(&b, "  cpu        bench process (projector, broker) %.2f cores, machine %.2f cores", c.CPU.Process, c.CPU.Machine)
			if bl := c.Baseline; bl != nil && bl.CPU.Machine > 0 {
				fmt.Fprintf(&b, "; baseline: client %.2f cores, machine %.2f cores", bl.CPU.Process, bl.CPU.Machine)
			}
			b.WriteString("\n")
		}
		if c.FirstProblem != "" {
			fmt.Fprintf(&b, "  problem    %s\n", c.FirstProblem)
		}
	}
	if e := r.EndToEnd; e != nil {
		fmt.Fprintf(&b, "end to end: %d events/s offered for %s by %d appenders over %d runs (store, relay, projector, broker in one process)\n",
			e.Rate, e.Duration, e.Appenders, e.Runs)
		fmt.Fprintf(&b, "  appends    %d of %d appended (%.0f events/s achieved), %d errors; %d visible in Redis, %d missing\n",
			e.Appended, e.Offered, e.AchievedRate(), e.Errors, e.Visible, e.Missing)
		fmt.Fprintf(&b, "  commit->visible  %s  (target p99 < %s at %d events/s): %s\n",
			projLatency(e.CommitToVisible), fmtMs(e.TargetP99), e.TargetRate, projVerdict(e.Met()))
		fmt.Fprintf(&b, "    commit->topic  %s  (relay: until a plain consumer read the record)\n", projLatency(e.CommitToTopic))
		fmt.Fprintf(&b, "    topic->visible %s  (projector: from then until the update)\n", projLatency(e.TopicToVisible))
		fmt.Fprintf(&b, "  due->appended    %s  (append call, queueing included)\n", projLatency(e.DueToAppended))
		fmt.Fprintf(&b, "  check      %d runs' snapshots right, %d wrong; %d updates of other clients' runs on the channel\n",
			e.Verified, e.Wrong, e.Foreign)
		if e.CPU.Machine > 0 {
			fmt.Fprintf(&b, "  cpu        bench process %.2f cores, machine %.2f cores\n", e.CPU.Process, e.CPU.Machine)
		}
		if e.FirstProblem != "" {
			fmt.Fprintf(&b, "  problem    %s\n", e.FirstProblem)
		}
	}
	if m := r.Memory; m != nil {
		fmt.Fprintf(&b, "memory: %d active runs, %d events; projector RSS %s (target < %s): %s\n",
			m.Runs, m.Events, projMB(m.ProjectorRSS()), projMB(m.Target), projVerdict(m.Met()))
		if s := m.Standalone; s != nil {
			fmt.Fprintf(&b, "  process    %s: peak RSS %s, %s caught up, heap in use %s; caught up in %s (%.0f events/s)\n",
				s.Command, projMB(s.RSSPeak), projMB(s.RSSAfter), projMB(s.HeapInuse), s.Window.Round(time.Millisecond), perSec(m.Events, s.Window))
			fmt.Fprintf(&b, "             %d/%d snapshots right, %d wrong, %d missing\n", s.Verified, m.Runs, s.Wrong, s.Missing)
			if s.FirstProblem != "" {
				fmt.Fprintf(&b, "  problem    %s\n", s.FirstProblem)
			}
		}
		fmt.Fprintf(&b, "  in-process caught up in %s (%.0f events/s); the broker's records share this heap, so the collector lets garbage grow with them\n",
			m.Window.Round(time.Millisecond), perSec(m.Events, m.Window))
		fmt.Fprintf(&b, "    rss      %s before (broker and bench), %s peak, %s caught up: +%s\n",
			projMB(m.RSSBefore), projMB(m.RSSPeak), projMB(m.RSSAfter), projMB(m.InProcessRSS()))
		fmt.Fprintf(&b, "    heap     %s before, %s peak, %s caught up, %s live after GC: the projector keeps %+.1f MB (%.1f bytes per run)\n",
			projMB(m.HeapBefore), projMB(m.HeapPeak), projMB(m.HeapAfter), projMB(m.HeapLive),
			float64(m.LiveGrowth())/(1<<20), projDiv(float64(m.LiveGrowth()), float64(m.Runs)))
		fmt.Fprintf(&b, "    check    %d/%d snapshots right, %d wrong, %d missing; %d store calls\n",
			m.Verified, m.Runs, m.Wrong, m.Missing, m.StoreCalls)
		if m.FirstProblem != "" {
			fmt.Fprintf(&b, "  problem    %s\n", m.FirstProblem)
		}
	}
	if r := r.Repair; r != nil {
		fmt.Fprintf(&b, "repair: %d finished runs (%d events each) in the store, none in Redis: convergence rebuilt every snapshot in %s (%.0f runs/s), %d counted repaired\n",
			r.Runs, r.EventsPerRun, r.Window.Round(time.Millisecond), r.RunsPerSecond, r.Repaired)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
