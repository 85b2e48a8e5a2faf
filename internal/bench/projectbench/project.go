// Package projectbench is `runstream bench project`: it measures the
// projector (package projector) against real Redis, an in-process
// Kafka-protocol broker and, for the latency and repair phases, real
// Postgres: its memory with many active runs, its catch-up rate against
// the guarded Lua script alone, append-to-snapshot latency end to end, and
// how fast convergence rebuilds what Redis lost (see [Run]). The files
// follow the phases: plan.go generates the runs and fills the topic,
// projector.go runs a projector, check.go checks and watches the
// snapshots, then catchup.go, memory.go, endtoend.go and repair.go, and
// report.go the report.
package projectbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/internal/bench/harness"
	"github.com/runstream/runstream/internal/config"
	"github.com/runstream/runstream/snapshots"
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
	defaultEvents       = 1_000_000
	defaultPartitions   = 12
	defaultBatch        = 5000
	defaultDuration     = 10 * time.Second
	defaultAppenders    = 16
	defaultLatencyRuns  = 1000
	defaultMemoryRuns   = 100_000
	defaultMemoryEvents = 300_000
	// stall fails a catch-up when the group commits nothing for this
	// long, rather than hanging.
	stall = time.Minute
	// grace is how long the latency phase waits, after the last append,
	// for the last snapshots to become visible.
	grace = 30 * time.Second
	// baselineTemplates is how many generated runs give the baseline its
	// snapshot bodies (run r writes the bodies of template r mod
	// baselineTemplates): the sizes of the projector's snapshots without
	// reducing every run twice.
	baselineTemplates = 16
	// warmupRuns open the latency phase: two events each, appended and
	// waited for before the window, so the group has joined and every
	// connection is open.
	warmupRuns = 8
)

// Config configures [Run]. Zero values take the defaults
// noted.
type Config struct {
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
	// SnapshotTTL is the projectors' --snapshot-ttl: terminal runs are
	// written to expire and filed in the catalog's expiry sets, as in
	// production (the default there is 24h); 0 measures without the
	// expiry machinery.
	SnapshotTTL time.Duration
	// RepairRuns sizes the repair phase: that many finished runs in the
	// store and none in Redis (Redis restarted empty), timed until
	// convergence brought every snapshot back; 0 skips it. It needs
	// PostgresURL.
	RepairRuns int
	// BacklogEvents sizes the backlog phase: a topic of that many records
	// published a minute after they were persisted (a relay's backlog
	// after a broker outage), caught up in alternated rounds for runs Redis
	// holds and for runs it lacks (target: the latter at 80% of the
	// former's rate); 0 skips it. It needs PostgresURL.
	BacklogEvents int
	// BacklogEventsPerRun is each backlog run's events in the backlog (it
	// has backlogBefore more before it); 0 means 8.
	BacklogEventsPerRun int
	// BacklogRounds is how many rounds of each kind; 0 means 3.
	BacklogRounds int
	// TracedEvery puts a sampled traceparent header on one record in
	// TracedEvery of the topics it fills (catch-up and memory; 10: a 10%
	// sampler at the API), for
	// measuring what tracing costs the projector (with OTEL_* set, the
	// bench traces as the projector would); 0 puts none.
	TracedEvery int
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
	Progress func(harness.PhaseProgress)
	// Logger receives the projector's, relay's and store's logs; nil means
	// discard.
	Logger *slog.Logger
}

// Validate reports a configuration error naming the setting to change.
func (c Config) Validate() error {
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
	if c.PostgresURL == "" && c.BacklogEvents > 0 {
		errs = append(errs, errors.New("a Postgres URL (--postgres-url, RUNSTREAM_POSTGRES_URL) is needed for the backlog phase (or --backlog-events 0)"))
	}
	if c.DisableCatchUp && c.DisableLatency && c.DisableMemory && c.RepairRuns == 0 && c.BacklogEvents == 0 {
		errs = append(errs, errors.New("every phase is off (--catch-up=false --latency=false --memory=false --repair-runs 0 --backlog-events 0): nothing to measure"))
	}
	errs = append(errs, harness.Negative(harness.Flag("partitions", c.Partitions), harness.Flag("batch", c.Batch),
		harness.Flag("events", c.Events), harness.Flag("runs", c.Runs), harness.Flag("rate", c.Rate),
		harness.Flag("duration", c.Duration), harness.Flag("appenders", c.Appenders), harness.Flag("latency-runs", c.LatencyRuns),
		harness.Flag("memory-runs", c.MemoryRuns), harness.Flag("memory-events", c.MemoryEvents), harness.Flag("repair-runs", c.RepairRuns),
		harness.Flag("backlog-events", c.BacklogEvents), harness.Flag("backlog-events-per-run", c.BacklogEventsPerRun),
		harness.Flag("backlog-rounds", c.BacklogRounds), harness.Flag("traced-every", c.TracedEvery))...)
	return errors.Join(errs...)
}

func (c *Config) setDefaults() {
	harness.Default(&c.Partitions, defaultPartitions)
	harness.Default(&c.Batch, defaultBatch)
	harness.Default(&c.Events, defaultEvents)
	harness.Default(&c.Runs, harness.DefaultRuns)
	harness.Default(&c.Rate, TargetEndToEndRate)
	harness.Default(&c.Appenders, defaultAppenders)
	harness.Default(&c.LatencyRuns, defaultLatencyRuns)
	harness.Default(&c.MemoryRuns, defaultMemoryRuns)
	harness.Default(&c.MemoryEvents, defaultMemoryEvents)
	harness.Default(&c.Duration, defaultDuration)
	harness.Default(&c.BacklogEventsPerRun, 8)
	harness.Default(&c.BacklogRounds, 3)
	c.Logger = harness.OrDiscard(c.Logger)
}

// Run measures the projector (package projector) against real
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
func Run(ctx context.Context, cfg Config) (rep *Report, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	rdb, where, err := openRedis(ctx, cfg.RedisURL)
	if err != nil {
		return nil, err
	}
	defer rdb.Close()
	b := &bench{cfg: cfg, rdb: rdb, prefix: "tenant_bench_" + harness.RandomHex(4)}
	defer func() { err = errors.Join(err, b.unlink(ctx)) }()
	rep = &Report{Redis: where, Broker: harness.InProcessBroker, Partitions: cfg.Partitions, Batch: cfg.Batch}
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
	if cfg.BacklogEvents > 0 {
		if rep.Backlog, err = b.backlog(ctx); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// bench is one Run's shared state.
type bench struct {
	cfg    Config
	rdb    redis.UniversalClient
	prefix string   // of the tenants of the bench's runs, one tenant per phase
	keys   []string // Redis keys to delete before returning
	// tenants whose run index and runs catalog to delete before returning
	tenants map[string]bool
}

// openRedis connects the way `runstream projector` does
// (config.RedisClient: one server, a Cluster or a Sentinel primary).
func openRedis(ctx context.Context, url string) (redis.UniversalClient, string, error) {
	c, where, err := config.RedisClient(url)
	if err != nil {
		return nil, "", err
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.Ping(cctx).Err(); err != nil {
		_ = c.Close()
		return nil, "", fmt.Errorf("connecting to Redis at %s: %w (%s)", where, err, config.RedisConnectHint(err))
	}
	return c, where, nil
}

// track schedules the snapshot keys of runIDs, and their tenant's run
// index and runs catalog, for deletion.
func (b *bench) track(tenant string, runIDs ...string) {
	if tenant != "" {
		if b.tenants == nil {
			b.tenants = map[string]bool{}
		}
		b.tenants[tenant] = true
	}
	for _, id := range runIDs {
		b.keys = append(b.keys, snapshots.Key(id))
	}
}

// unlink deletes the tracked keys, one key per command so that it works
// on a cluster, also after ctx was cancelled.
func (b *bench) unlink(ctx context.Context) error {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	for tenant := range b.tenants {
		if err := snapshots.DeleteCatalog(dctx, b.rdb, tenant); err != nil {
			return fmt.Errorf("deleting the bench's runs catalog of tenant %q: %w", tenant, err)
		}
		delete(b.tenants, tenant)
	}
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

// progress reports a phase through cfg.Progress (see [harness.PhaseReporter]).
func (b *bench) progress(phase string, total int64, done func() int64) (stop func()) {
	return harness.PhaseReporter(b.cfg.Progress, phase, total, done)
}

// openBroker starts a phase's in-process broker with a fresh topic.
func (b *bench) openBroker(ctx context.Context) (*harness.Broker, error) {
	return harness.OpenBroker(ctx, harness.BrokerConfig{Partitions: b.cfg.Partitions, TopicPrefix: "bench-project-"})
}

// waitCommitted polls until group's committed offsets on kafka's topic
// add up to end, failing when exited reports the projector stopped.
// sample, when set, runs at every poll (the memory phase's readings).
func (b *bench) waitCommitted(ctx context.Context, kafka *harness.Broker, group string, end int64, exited func() error, phase string, sample func()) error {
	return kafka.WaitCommitted(ctx, harness.Wait{Group: group, End: end, Who: "the projector", Phase: phase,
		Poll: 20 * time.Millisecond, Stall: stall, Exited: exited, Sample: sample, Progress: b.cfg.Progress})
}
