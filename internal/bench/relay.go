package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/runstream/runstream/internal/devbroker"
	"github.com/runstream/runstream/internal/relay"
	"github.com/runstream/runstream/internal/retry"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// The relay's targets (issue 3, "Speed"), printed next to the numbers.
const (
	// TargetDrainRate is the backlog drain rate to reach, in events/s.
	TargetDrainRate = 50_000.0
	// TargetCommitToAckP99 bounds p99 commit-to-ack at TargetOfferedRate.
	TargetCommitToAckP99 = 20 * time.Millisecond
	// TargetOfferedRate is the offered rate the latency target holds at.
	TargetOfferedRate = 2000
)

const (
	defaultRelayEvents     = 1_000_000
	defaultRelayRate       = TargetOfferedRate
	defaultRelayDuration   = 10 * time.Second
	defaultRelayAppenders  = 16
	defaultRelayPartitions = 12
	// fillChunk is the events inserted per fill transaction: big enough that
	// statement overhead vanishes, small enough for a progress line a second.
	fillChunk = 50_000
	// drainStall fails the drain when the relay publishes nothing for this
	// long (dead letters, a broken broker), rather than hanging.
	drainStall = time.Minute
	// latencyGrace is how long the latency phase waits, after the last
	// append, for its records to reach the topic.
	latencyGrace = 30 * time.Second
	// rateTolerance is the share of the offered rate the appends must
	// achieve for the latency target to count as met at that rate.
	rateTolerance = 0.95
)

// RelayConfig configures [RunRelay]. Zero values take the defaults noted.
type RelayConfig struct {
	// PostgresURL is the database; required. The bench works in a fresh
	// schema bench_<random>, dropped at the end unless KeepSchema.
	PostgresURL string
	// KeepSchema keeps the bench_<random> schema, and the topic on an
	// external broker, for inspection.
	KeepSchema bool
	// Brokers of a running Kafka-protocol cluster; empty starts franz-go's
	// kfake in this process on 127.0.0.1:0, in memory (as `runstream dev`
	// runs it, without a data directory).
	Brokers []string
	// Partitions of the fresh topic bench-relay-<random>; 0 means 12.
	Partitions int32
	// RelayBatch is the relay's BatchSize (outbox rows per round); 0 means
	// the relay's default.
	RelayBatch int
	// Relays is the relays to run, each with its own pool, Kafka client and
	// registry as separate `runstream relay` processes would have; they
	// split the outbox's shards. 0 means 1.
	Relays int
	// DisableDrain skips the drain phase.
	DisableDrain bool
	// Events pre-filled into the outbox for the drain; 0 means 1,000,000.
	Events int
	// Runs the events are spread over (drain and latency); 0 means 10,000.
	Runs int
	// DisableLatency skips the latency phase.
	DisableLatency bool
	// Rate is the latency phase's offered append rate in events/s; 0 means
	// 2000.
	Rate int
	// Duration of the latency phase's appends; 0 means 10s.
	Duration time.Duration
	// Warmup is how long the latency phase appends at Rate before its
	// window, unmeasured, so the window is the steady state: the first
	// second of appends runs each new session's first plpgsql calls and
	// plans, and its backlog (~200 ms) would otherwise reach the relay as
	// bursts. 0 means 2s; negative means none.
	Warmup time.Duration
	// Settle is how long the bench waits between the drain and the latency
	// phase, the relay idle, so that the latency phase measures the steady
	// state and not the drain's aftermath: a million rows written and as
	// many outbox rows deleted leave the kernel writing dirty pages back
	// (Linux does so 30 s after they were written) and Postgres
	// checkpointing them, and an append's commit then waits for its WAL
	// flush behind those writes (see docs/PERFORMANCE.md, the relay's sixth round). 0 means 40s;
	// negative means none. Without the drain there is nothing to settle.
	Settle time.Duration
	// Appenders is the goroutines appending in the latency phase (the
	// concurrent requests an API would serve); 0 means 16.
	Appenders int
	// AppendConns is the connections of the appenders' store's pool, and
	// so its append concurrency (postgres.Config.AppendConcurrency): more
	// appends at once share transactions. 0 means what `runstream api`
	// opens: pgxpool's default, max(4, cores), or the URL's pool_max_conns.
	AppendConns int
	// DrainCPUProfile, when set, receives a CPU profile of this process
	// (relay, broker and bench) covering the drain window only.
	DrainCPUProfile io.Writer
	// LatencyCPUProfile, when set, receives a CPU profile covering the
	// latency window only.
	LatencyCPUProfile io.Writer
	// Progress, when set, is called about once a second with running
	// totals, from one goroutine at a time.
	Progress func(PhaseProgress)
	// Logger receives the relay's and the store's logs; nil means discard.
	Logger *slog.Logger

	// fillChunk overrides the events per fill transaction (tests use small
	// chunks to run the parallel fill); 0 means fillChunk.
	fillChunk int64
}

// Validate reports a configuration error naming the setting to change.
func (c RelayConfig) Validate() error {
	var errs []error
	if c.PostgresURL == "" {
		errs = append(errs, errors.New("a Postgres URL (--postgres-url, RUNSTREAM_POSTGRES_URL) is needed"))
	}
	if c.DisableDrain && c.DisableLatency {
		errs = append(errs, errors.New("both phases are off (--drain=false --latency=false): nothing to measure"))
	}
	for _, f := range []struct {
		flag string
		v    int64
	}{{"events", int64(c.Events)}, {"runs", int64(c.Runs)}, {"rate", int64(c.Rate)},
		{"duration", int64(c.Duration)}, {"appenders", int64(c.Appenders)},
		{"partitions", int64(c.Partitions)}, {"relay-batch", int64(c.RelayBatch)}, {"relays", int64(c.Relays)}} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("--%s must be > 0, got %d", f.flag, f.v))
		}
	}
	for _, b := range c.Brokers {
		if strings.TrimSpace(b) == "" {
			errs = append(errs, errors.New("--brokers has an empty address; give host:port,host:port"))
			break
		}
	}
	return errors.Join(errs...)
}

func (c RelayConfig) withDefaults() RelayConfig {
	if c.Partitions == 0 {
		c.Partitions = defaultRelayPartitions
	}
	if c.Relays == 0 {
		c.Relays = 1
	}
	if c.Events == 0 {
		c.Events = defaultRelayEvents
	}
	if c.Runs == 0 {
		c.Runs = defaultRuns
	}
	if c.Rate == 0 {
		c.Rate = defaultRelayRate
	}
	if c.Duration == 0 {
		c.Duration = defaultRelayDuration
	}
	if c.Appenders == 0 {
		c.Appenders = defaultRelayAppenders
	}
	if c.Warmup == 0 {
		c.Warmup = 2 * time.Second
	}
	c.Warmup = max(c.Warmup, 0)
	if c.Settle == 0 {
		c.Settle = defaultRelaySettle
	}
	c.Settle = max(c.Settle, 0)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.fillChunk == 0 {
		c.fillChunk = fillChunk
	}
	return c
}

// RunRelay measures the outbox relay (internal/relay) end to end, against
// real Postgres and a real Kafka-protocol broker, in two phases:
//
//   - Drain: the outbox of a fresh schema is filled with Events events over
//     Runs runs by plain SQL (outside the timed window), then a relay starts
//     and the window runs until the outbox is empty and the topic's end
//     offsets account for every event. Afterwards the topic is read back:
//     every run's events must be there, in runSeq order (duplicates are
//     allowed and counted).
//   - Latency: with the relay running, owning every shard, and the outbox
//     empty and vacuumed, over an event log of Events analyzed rows (the
//     drain's, or with DisableDrain a history filled without outbox rows:
//     the relay's read joins run_events, and its plan depends on that
//     table's statistics, so an empty fresh table would measure a plan no
//     running system has), Appenders
//     goroutines append through store/postgres at a fixed offered Rate
//     (open loop: each event has its due time) for Duration, with the
//     store's outbox notifier running, while a consumer reads the topic.
//     Each event's commit-to-consume time is the consumer's clock minus the
//     record's persistedAt (one machine, one clock).
//
// It cleans up what it created before it returns, also when ctx is
// cancelled.
func RunRelay(ctx context.Context, cfg RelayConfig) (rep *RelayReport, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	b, err := newRelayBench(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, b.close(ctx)) }()
	rep = &RelayReport{Broker: b.brokerName, Topic: b.topic, Partitions: cfg.Partitions,
		RelayBatch: cfg.RelayBatch, Relays: cfg.Relays, Schema: b.schema.name}
	if rep.RelayBatch == 0 {
		rep.RelayBatch = relayDefaultBatch
	}
	if !cfg.DisableDrain {
		if rep.Drain, err = b.drain(ctx); err != nil {
			return nil, err
		}
	}
	var settled *SettleReport
	if !cfg.DisableDrain && !cfg.DisableLatency && cfg.Settle > 0 {
		if settled, err = b.settle(ctx); err != nil {
			return nil, err
		}
	}
	if !cfg.DisableLatency {
		if cfg.DisableDrain {
			if err := b.fill(ctx, newRuns(min(cfg.Runs, cfg.Events)), false); err != nil {
				return nil, err
			}
			if err := b.startRelay(ctx); err != nil {
				return nil, err
			}
		}
		if rep.Latency, err = b.latency(ctx); err != nil {
			return nil, err
		}
		rep.Latency.Settle = settled
	}
	return rep, nil
}

// defaultRelaySettle is RelayConfig.Settle's default.
const defaultRelaySettle = 40 * time.Second

// SettleReport is the wait between the drain and the latency phase.
type SettleReport struct {
	Duration time.Duration `json:"-"`
	// DirtyBefore and DirtyAfter are the machine's dirty and writeback
	// page cache (Dirty + Writeback in /proc/meminfo) when the wait began
	// and ended, in MB; -1 where /proc/meminfo cannot be read.
	DirtyBefore float64 `json:"dirtyBeforeMB"`
	DirtyAfter  float64 `json:"dirtyAfterMB"`
}

// MarshalJSON adds the duration in seconds.
func (s *SettleReport) MarshalJSON() ([]byte, error) {
	type plain SettleReport
	return json.Marshal(struct {
		*plain
		Seconds float64 `json:"seconds"`
	}{(*plain)(s), s.Duration.Seconds()})
}

// settle waits cfg.Settle with the relay idle (see RelayConfig.Settle),
// reporting progress each second.
func (b *relayBench) settle(ctx context.Context) (*SettleReport, error) {
	rep := &SettleReport{Duration: b.cfg.Settle, DirtyBefore: dirtyMB()}
	start := time.Now()
	stop := b.progress("settle", int64(b.cfg.Settle.Seconds()), func() int64 { return int64(time.Since(start).Seconds()) })
	ok := retry.Sleep(ctx, b.cfg.Settle)
	stop()
	if !ok {
		return nil, fmt.Errorf("bench interrupted while settling after the drain: %w", ctx.Err())
	}
	rep.DirtyAfter = dirtyMB()
	return rep, nil
}

// dirtyMB reads the page cache waiting to be written (Dirty + Writeback)
// from /proc/meminfo, in MB; -1 when it cannot.
func dirtyMB() float64 {
	kb, found := procKB("/proc/meminfo", "Dirty", "Writeback")
	if !found[0] || !found[1] {
		return -1
	}
	return round(float64(kb[0]+kb[1])/1024, 1)
}

// relayDefaultBatch is relay.Config's BatchSize default, for the report.
const relayDefaultBatch = 5000

// relayBench is one RunRelay's resources.
type relayBench struct {
	cfg        RelayConfig
	schema     *schema
	pool       *pgxpool.Pool // the bench's own: fill, checks
	url        string        // of the bench schema
	broker     *devbroker.Broker
	brokers    []string
	brokerName string
	admin      *kgo.Client
	adm        *kadm.Client
	topic      string
	relays     []*runningRelay
}

// runningRelay is one relay with what a `runstream relay` process would
// have of its own: a Postgres pool, a Kafka client and a metrics registry.
type runningRelay struct {
	pool   *pgxpool.Pool
	client *kgo.Client
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan error // receives Run's result; nil once received
}

func newRelayBench(ctx context.Context, cfg RelayConfig) (_ *relayBench, err error) {
	b := &relayBench{cfg: cfg}
	defer func() {
		if err != nil {
			err = errors.Join(err, b.close(ctx))
		}
	}()
	if err := b.freshSchema(ctx); err != nil {
		return nil, err
	}
	b.brokers = cfg.Brokers
	b.brokerName = strings.Join(cfg.Brokers, ",")
	if len(b.brokers) == 0 {
		if b.broker, err = devbroker.Start(devbroker.Config{Addr: "127.0.0.1:0", Partitions: cfg.Partitions}); err != nil {
			return nil, err
		}
		b.brokers = b.broker.Addrs()
		b.brokerName = "in-process kfake"
	}
	if b.admin, err = kgo.NewClient(kgo.SeedBrokers(b.brokers...)); err != nil {
		return nil, fmt.Errorf("creating the Kafka admin client for %v: %w", b.brokers, err)
	}
	b.adm = kadm.NewClient(b.admin)
	b.topic = "bench-relay-" + randomHex(6)
	// LogAppendTime makes a real broker stamp each record when it appends
	// it, so the record timestamp is the broker's side of the ack. kfake
	// ignores the setting and keeps the producer's timestamp; the report
	// says which one it got.
	resp, err := b.adm.CreateTopic(ctx, cfg.Partitions, -1,
		map[string]*string{"message.timestamp.type": kadm.StringPtr("LogAppendTime")}, b.topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return nil, fmt.Errorf("creating topic %s (%d partitions) on %v: %w", b.topic, cfg.Partitions, b.brokers, err)
	}
	return b, nil
}

// freshSchema creates the bench's migrated bench_<random> schema and its
// pool.
func (b *relayBench) freshSchema(ctx context.Context) error {
	sc, err := newSchema(ctx, b.cfg.PostgresURL, b.cfg.KeepSchema)
	if err != nil {
		return err
	}
	b.schema = sc
	b.url = withSearchPath(b.cfg.PostgresURL, sc.name)
	if b.pool, err = postgres.Connect(ctx, b.url); err != nil {
		return err
	}
	if _, err := postgres.Migrate(ctx, b.pool); err != nil {
		return fmt.Errorf("migrating the bench schema %s: %w", sc.name, err)
	}
	return nil
}

func randomHex(n int) string {
	p := make([]byte, n)
	_, _ = rand.Read(p)
	return hex.EncodeToString(p)
}

// close stops the relay and releases everything, also after ctx was
// cancelled. It is safe on a partly built relayBench.
func (b *relayBench) close(ctx context.Context) error {
	var errs []error
	errs = append(errs, b.stopRelay())
	if b.adm != nil && b.broker == nil && !b.cfg.KeepSchema {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		if _, err := b.adm.DeleteTopic(dctx, b.topic); err != nil {
			errs = append(errs, fmt.Errorf("deleting bench topic %s: %w", b.topic, err))
		}
		cancel()
	}
	if b.admin != nil {
		b.admin.Close()
		b.admin, b.adm = nil, nil
	}
	if b.broker != nil {
		b.broker.Close()
		b.broker = nil
	}
	if b.pool != nil {
		b.pool.Close()
		b.pool = nil
	}
	if b.schema != nil {
		errs = append(errs, b.schema.drop(ctx))
		b.schema = nil
	}
	return errors.Join(errs...)
}

// startRelay starts cfg.Relays relays (relay.Relay.Run), each built as
// `runstream relay` builds it. Several split the outbox's shards between
// them through their advisory locks, as separate processes would.
func (b *relayBench) startRelay(ctx context.Context) error {
	for range b.cfg.Relays {
		rr := &runningRelay{reg: prometheus.NewRegistry(), done: make(chan error, 1)}
		var err error
		if rr.pool, err = postgres.Connect(ctx, b.url); err != nil {
			return err
		}
		if rr.client, err = kgo.NewClient(relay.ClientOptions(b.brokers)...); err != nil {
			rr.pool.Close()
			return fmt.Errorf("creating the relay's Kafka client for %v: %w", b.brokers, err)
		}
		r, err := relay.New(relay.Config{Topic: b.topic, Partitions: b.cfg.Partitions, BatchSize: b.cfg.RelayBatch,
			Registerer: rr.reg, Logger: b.cfg.Logger}, rr.pool, rr.client)
		if err != nil {
			rr.client.Close()
			rr.pool.Close()
			return err
		}
		var rctx context.Context
		rctx, rr.cancel = context.WithCancel(context.WithoutCancel(ctx))
		b.relays = append(b.relays, rr)
		go func() { rr.done <- r.Run(rctx) }()
	}
	return nil
}

// relayExited reports an error if a relay stopped on its own.
func (b *relayBench) relayExited() error {
	for _, rr := range b.relays {
		if rr.done == nil {
			continue
		}
		select {
		case err := <-rr.done:
			rr.done = nil
			if err == nil {
				return errors.New("a relay stopped during the bench without an error")
			}
			return fmt.Errorf("a relay stopped during the bench: %w", err)
		default:
		}
	}
	return nil
}

// stopRelay stops every relay and waits for them.
func (b *relayBench) stopRelay() error {
	for _, rr := range b.relays {
		rr.cancel()
	}
	var errs []error
	for _, rr := range b.relays {
		if rr.done != nil {
			errs = append(errs, <-rr.done)
		}
		rr.client.Close()
		rr.pool.Close()
	}
	b.relays = nil
	return errors.Join(errs...)
}

// endOffsets returns the topic's end offset per partition.
func (b *relayBench) endOffsets(ctx context.Context) (map[int32]int64, int64, error) {
	lo, err := b.adm.ListEndOffsets(ctx, b.topic)
	if err == nil {
		err = lo.Error()
	}
	if err != nil {
		return nil, 0, fmt.Errorf("listing the end offsets of %s: %w", b.topic, err)
	}
	out := map[int32]int64{}
	var sum int64
	lo.Each(func(o kadm.ListedOffset) {
		out[o.Partition] = o.Offset
		sum += o.Offset
	})
	return out, sum, nil
}

// relayMetrics is a reading of the relays' metrics, summed over them.
type relayMetrics struct {
	published, batches, ownedShards float64
	publishCount                    uint64
	publishSum                      float64
	commitToAck                     histogram
}

// histogram is a Prometheus histogram's cumulative buckets.
type histogram struct {
	upper []float64
	cum   []uint64
	count uint64
	sum   float64
}

func (b *relayBench) readMetrics() (relayMetrics, error) {
	var m relayMetrics
	for _, rr := range b.relays {
		mfs, err := rr.reg.Gather()
		if err != nil {
			return m, fmt.Errorf("gathering the relay's metrics: %w", err)
		}
		for _, mf := range mfs {
			if len(mf.GetMetric()) == 0 {
				continue
			}
			met := mf.GetMetric()[0]
			switch mf.GetName() {
			case "runstream_relay_published_total":
				m.published += met.GetCounter().GetValue()
			case "runstream_relay_batches_total":
				m.batches += met.GetCounter().GetValue()
			case "runstream_relay_owned_shards":
				m.ownedShards += met.GetGauge().GetValue()
			case "runstream_relay_publish_seconds":
				m.publishCount += met.GetHistogram().GetSampleCount()
				m.publishSum += met.GetHistogram().GetSampleSum()
			case "runstream_relay_commit_to_ack_seconds":
				h := met.GetHistogram()
				m.commitToAck.count += h.GetSampleCount()
				m.commitToAck.sum += h.GetSampleSum()
				for i, bk := range h.GetBucket() {
					if i == len(m.commitToAck.upper) {
						m.commitToAck.upper = append(m.commitToAck.upper, bk.GetUpperBound())
						m.commitToAck.cum = append(m.commitToAck.cum, 0)
					}
					m.commitToAck.cum[i] += bk.GetCumulativeCount()
				}
			}
		}
	}
	return m, nil
}

// since returns the observations of h made after before.
func (h histogram) since(before histogram) histogram {
	out := histogram{upper: h.upper, count: h.count - before.count, sum: h.sum - before.sum}
	out.cum = make([]uint64, len(h.cum))
	for i := range h.cum {
		out.cum[i] = h.cum[i]
		if i < len(before.cum) {
			out.cum[i] -= before.cum[i]
		}
	}
	return out
}

// within is the share of the observations at or under bound, exact when
// bound is one of the bucket bounds (ok false otherwise, or when empty).
func (h histogram) within(bound float64) (share float64, ok bool) {
	for i, up := range h.upper {
		if up == bound && h.count > 0 {
			return float64(h.cum[i]) / float64(h.count), true
		}
	}
	return 0, false
}

// quantile estimates the q-th quantile (0 < q <= 1) the way Prometheus's
// histogram_quantile does: linear within the bucket the rank falls in. An
// observation above the last bound reports that bound.
func (h histogram) quantile(q float64) time.Duration {
	if h.count == 0 || len(h.upper) == 0 {
		return 0
	}
	rank := q * float64(h.count)
	lower, prev := 0.0, uint64(0)
	for i, up := range h.upper {
		if float64(h.cum[i]) >= rank {
			in := float64(h.cum[i] - prev)
			v := up
			if in > 0 {
				v = lower + (up-lower)*(rank-float64(prev))/in
			}
			return time.Duration(v * float64(time.Second))
		}
		lower, prev = up, h.cum[i]
	}
	return time.Duration(h.upper[len(h.upper)-1] * float64(time.Second))
}

// everyInterval calls fn every interval until stop is called; stop waits
// for the goroutine. A nil fn does nothing.
func everyInterval(interval time.Duration, fn func()) (stop func()) {
	if fn == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fn()
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// progress reports a phase through cfg.Progress (see [phaseReporter]).
func (b *relayBench) progress(phase string, total int64, done func() int64) (stop func()) {
	return phaseReporter(b.cfg.Progress, phase, total, done)
}

// benchRun is one run of the generated data.
type benchRun struct {
	id    workload.Identity
	shard int32
	want  int64 // events the drain put in this run
}

// fillSQL inserts events [$1, $2) of the drain's backlog. Event k belongs
// to run k mod runs ($3) with runSeq k div runs + 1, so every run's
// runSeq is contiguous from 1 and the runs' events interleave in outbox id
// order, as they do when many runs progress at once. The values look like
// the API's: a UUID eventId, the v2 idempotency key (SHA-256 of the key
// fields), RFC 3339 emittedAt one millisecond apart, and a StepCompleted
// payload of about 300 bytes, built with format() rather than
// json_build_object so it is compact like a producer's. The runs are
// joined from arrays (unnest WITH ORDINALITY is a hash join; subscripting a
// text[] parameter per row would walk the array each time).
const fillEventsSQL = `INSERT INTO run_events (run_id, run_seq, event_id, event_type, idempotency_key,
	tenant_id, project_id, environment_id, plan_id, plan_version, step_id,
	engine_attempt_id, logical_attempt_id, emitted_at, persisted_at, payload)
SELECT r.run_id, k / $3 + 1, gen_random_uuid(), 'StepCompleted',
	encode(sha256(convert_to(r.run_id || '|step_' || (k / $3 + 1) || '|1|StepCompleted|' || $6 || '|' || $7, 'UTF8')), 'hex'),
	$4, $8, $9, $6, $7, 'step_' || (k / $3 + 1), 1, 1,
	to_char(($5::timestamptz + k * interval '1 millisecond') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
	clock_timestamp(),
	format('{"durationMs":%s,"model":"model.orders_%s","warehouse":"analytics_wh","result":{"status":"success","rowsAffected":%s,"bytesScanned":%s},"artifacts":[{"uri":"s3://runstream-artifacts/%s/step_%s/1/run_results.json","kind":"dbt-run-results","sizeBytes":%s}]}',
		(k * 7919) % 5000, k % 97, (k * 104729) % 1000000, (k * 15485863) % 1000000000,
		r.run_id, k / $3 + 1, (k * 31337) % 100000)::json
FROM generate_series($1::bigint, $2::bigint - 1) AS k
JOIN unnest($10::text[]) WITH ORDINALITY AS r(run_id, i) ON r.i = k % $3 + 1`

// fillOutboxSQL inserts the outbox rows of events [$1, $2) with id k+1, so
// outbox ids interleave the runs like live appends do and, whatever order
// parallel chunks commit in, a run's ids rise with its runSeq: the
// invariant the append path keeps by taking the outbox id under the run's
// counter lock, and the relay's per-run order relies on.
const fillOutboxSQL = `INSERT INTO outbox (id, shard, run_id, run_seq)
SELECT k + 1, r.shard, r.run_id, k / $3 + 1
FROM generate_series($1::bigint, $2::bigint - 1) AS k
JOIN unnest($4::text[], $5::int[]) WITH ORDINALITY AS r(run_id, shard, i) ON r.i = k % $3 + 1
ORDER BY k`

// newRuns returns n fresh runs with their outbox shards.
func newRuns(n int) []benchRun {
	runs := make([]benchRun, n)
	for i := range runs {
		runs[i].id = workload.NewIdentity(defaultTenant)
		runs[i].shard = int32(postgres.ShardOf(runs[i].id.RunID))
	}
	return runs
}

// fill inserts the drain's backlog: runs, run_events and (with outbox) the
// outbox rows, in chunks of cfg.fillChunk events, then VACUUM ANALYZE so the relay meets the
// tables as autovacuum would leave them (statistics and visibility map
// current, hint bits set) rather than paying for that in the window.
func (b *relayBench) fill(ctx context.Context, runs []benchRun, outbox bool) error {
	n, events := int64(len(runs)), int64(b.cfg.Events)
	ids := make([]string, n)
	shards := make([]int32, n)
	lastSeq := make([]int64, n)
	for i, r := range runs {
		ids[i], shards[i] = r.id.RunID, r.shard
		runs[i].want = (events - int64(i) + n - 1) / n
		lastSeq[i] = runs[i].want
	}
	var filled atomic.Int64
	phase := "fill"
	if !outbox {
		phase = "history"
	}
	stop := b.progress(phase, events, filled.Load)
	defer stop()
	id := runs[0].id
	if _, err := b.pool.Exec(ctx, `INSERT INTO runs (run_id, tenant_id, last_seq)
		SELECT run_id, $2, last_seq FROM unnest($1::text[], $3::bigint[]) AS r(run_id, last_seq)`,
		ids, id.TenantID, lastSeq); err != nil {
		return fmt.Errorf("filling runs: %w", err)
	}
	emitted := time.Now().Add(-time.Hour).UTC()
	// Chunks go to one worker per core: each INSERT ... SELECT runs on one
	// Postgres backend, so this is what makes the fill use the machine.
	g, gctx := errgroup.WithContext(ctx)
	chunks := make(chan int64)
	for range min(runtime.NumCPU(), 4) {
		g.Go(func() error {
			for lo := range chunks {
				hi := min(lo+b.cfg.fillChunk, events)
				err := pgx.BeginFunc(gctx, b.pool, func(tx pgx.Tx) error {
					if _, err := tx.Exec(gctx, fillEventsSQL, lo, hi, n, id.TenantID, emitted, id.PlanID, id.PlanVersion,
						id.ProjectID, id.EnvironmentID, ids); err != nil {
						return fmt.Errorf("filling run_events: %w", err)
					}
					if !outbox {
						return nil
					}
					if _, err := tx.Exec(gctx, fillOutboxSQL, lo, hi, n, ids, shards); err != nil {
						return fmt.Errorf("filling outbox: %w", err)
					}
					return nil
				})
				if err != nil {
					return fmt.Errorf("filling events %d to %d: %w", lo, hi, err)
				}
				filled.Add(hi - lo)
			}
			return nil
		})
	}
	g.Go(func() error {
		defer close(chunks)
		for lo := int64(0); lo < events; lo += b.cfg.fillChunk {
			select {
			case chunks <- lo:
			case <-gctx.Done():
				return nil
			}
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return err
	}
	// Later appends (the latency phase) must get ids after the backlog's.
	if _, err := b.pool.Exec(ctx, `SELECT setval(pg_get_serial_sequence('outbox', 'id'), $1)`, events); err != nil {
		return fmt.Errorf("moving the outbox id sequence past the fill: %w", err)
	}
	for _, t := range []string{"runs", "run_events", "outbox"} {
		if _, err := b.pool.Exec(ctx, "VACUUM (ANALYZE) "+t); err != nil {
			return fmt.Errorf("vacuuming %s after the fill: %w", t, err)
		}
	}
	return nil
}

// drain fills the outbox, runs the relay until it is empty and every
// record is on the topic, and reads the topic back to check it.
func (b *relayBench) drain(ctx context.Context) (*DrainReport, error) {
	runs := newRuns(min(b.cfg.Runs, b.cfg.Events))
	rep := &DrainReport{Events: int64(b.cfg.Events), Runs: len(runs), Target: TargetDrainRate}
	start := time.Now()
	if err := b.fill(ctx, runs, true); err != nil {
		return nil, err
	}
	rep.Fill = time.Since(start)
	if err := b.pool.QueryRow(ctx, `SELECT coalesce(avg(octet_length(payload::text)), 0)::float8 FROM
		(SELECT payload FROM run_events LIMIT 1000) s`).Scan(&rep.PayloadBytes); err != nil {
		return nil, fmt.Errorf("measuring the payloads: %w", err)
	}
	rep.PayloadBytes = round(rep.PayloadBytes, 1)

	runtime.GC()
	if b.cfg.DrainCPUProfile != nil {
		if err := pprof.StartCPUProfile(b.cfg.DrainCPUProfile); err != nil {
			return nil, fmt.Errorf("starting the CPU profile: %w", err)
		}
	}
	before := sampleCPU()
	start = time.Now()
	err := b.startRelay(ctx)
	if err == nil {
		err = b.waitDrained(ctx, rep.Events)
	}
	rep.Window = time.Since(start)
	after := sampleCPU()
	if b.cfg.DrainCPUProfile != nil {
		pprof.StopCPUProfile()
	}
	if err != nil {
		return nil, err
	}
	rep.CPU = cpuSince(before, after)
	m, err := b.readMetrics()
	if err != nil {
		return nil, err
	}
	rep.Rounds = int64(m.batches)
	if m.publishCount > 0 {
		rep.PublishTime = time.Duration(m.publishSum * float64(time.Second))
		rep.Waves = int64(m.publishCount)
	}
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM outbox_dead_letters`).Scan(&rep.DeadLetters); err != nil {
		return nil, fmt.Errorf("counting dead letters: %w", err)
	}
	if err := b.verifyDrain(ctx, runs, rep); err != nil {
		return nil, err
	}
	// The drain left the outbox full of dead rows, which the relay's reads
	// would wade through until autovacuum came by (and which autovacuum
	// would then clean up in the middle of the latency phase). The latency
	// phase measures the steady state, so vacuum now; ANALYZE also has the
	// relay's cached read plan re-planned for an outbox of a few rows.
	if _, err := b.pool.Exec(ctx, "VACUUM (ANALYZE) outbox"); err != nil {
		return nil, fmt.Errorf("vacuuming the outbox after the drain: %w", err)
	}
	return rep, nil
}

// waitDrained polls until the outbox is empty and the topic holds events
// records. It watches the relay's published counter (in this process, so
// free) and asks the broker and Postgres only once that counter says the
// work is done, so the polling does not slow the relay down.
func (b *relayBench) waitDrained(ctx context.Context, events int64) error {
	var published atomic.Int64
	stop := b.progress("drain", events, published.Load)
	defer stop()
	lastChange, last := time.Now(), int64(-1)
	for {
		if err := b.relayExited(); err != nil {
			return err
		}
		m, err := b.readMetrics()
		if err != nil {
			return err
		}
		n := int64(m.published)
		published.Store(n)
		if n != last {
			last, lastChange = n, time.Now()
		}
		if n >= events {
			_, sum, err := b.endOffsets(ctx)
			if err != nil {
				return err
			}
			if sum >= events {
				var empty bool
				if err := b.pool.QueryRow(ctx, `SELECT NOT EXISTS (SELECT 1 FROM outbox)`).Scan(&empty); err != nil {
					return fmt.Errorf("checking that the outbox is empty: %w", err)
				}
				if empty {
					return nil
				}
			}
		}
		if time.Since(lastChange) > drainStall {
			var left, dead int64
			_ = b.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM outbox), (SELECT count(*) FROM outbox_dead_letters)`).Scan(&left, &dead)
			return fmt.Errorf("the relay published nothing for %v: %d of %d records acknowledged, %d outbox rows left, %d dead letters",
				drainStall, n, events, left, dead)
		}
		if !retry.Sleep(ctx, 5*time.Millisecond) {
			return fmt.Errorf("bench interrupted during the drain: %w", ctx.Err())
		}
	}
}

// newConsumer returns a client reading topic from the given offsets,
// without a group.
func (b *relayBench) newConsumer(from map[int32]int64) (*kgo.Client, error) {
	offs := make(map[int32]kgo.Offset, len(from))
	for p, o := range from {
		offs[p] = kgo.NewOffset().At(o)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{b.topic: offs}),
		kgo.FetchMaxWait(time.Second))
	if err != nil {
		return nil, fmt.Errorf("creating the bench's consumer for %v: %w", b.brokers, err)
	}
	return cl, nil
}

// verifyDrain reads the whole topic back and checks every run's records:
// runSeq must go 1, 2, 3, ... per run (a record at or below the run's
// last seen runSeq is a duplicate, at-least-once allows it; one past a
// hole is out of order), and each run must reach the events filled.
func (b *relayBench) verifyDrain(ctx context.Context, runs []benchRun, rep *DrainReport) error {
	end, sum, err := b.endOffsets(ctx)
	if err != nil {
		return err
	}
	rep.Records = sum
	byRun := make(map[string]*runCheck, len(runs))
	for _, r := range runs {
		byRun[r.id.RunID] = &runCheck{want: r.want}
	}
	from := make(map[int32]int64, len(end))
	for p := range end {
		from[p] = 0
	}
	cl, err := b.newConsumer(from)
	if err != nil {
		return err
	}
	defer cl.Close()
	var read atomic.Int64
	stop := b.progress("verify", sum, read.Load)
	defer stop()
	vctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	next := map[int32]int64{}
	pending := func() bool {
		for p, e := range end {
			if next[p] < e {
				return true
			}
		}
		return false
	}
	for pending() {
		fs := cl.PollFetches(vctx)
		if vctx.Err() != nil {
			return fmt.Errorf("reading back the topic: %d of %d records after %v: %w", read.Load(), sum, 5*time.Minute, vctx.Err())
		}
		fs.EachError(func(_ string, p int32, err error) {
			b.cfg.Logger.Warn("fetch error while reading back the topic", "partition", p, "err", err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			next[r.Partition] = r.Offset + 1
			read.Add(1)
			c := byRun[string(r.Key)]
			seq, ok := headerInt(r, "runSeq")
			if c == nil || !ok {
				rep.Foreign++
				return
			}
			switch {
			case seq <= c.last:
				rep.Duplicates++
			case seq == c.last+1:
				c.last = seq
			default:
				rep.OutOfOrder++
				c.last = seq
			}
		})
	}
	for _, c := range byRun {
		if c.last < c.want {
			rep.Missing += c.want - c.last
		}
	}
	return nil
}

// runCheck is one run's state while reading the topic back.
type runCheck struct {
	want, last int64
}

func headerInt(r *kgo.Record, key string) (int64, bool) {
	for _, h := range r.Headers {
		if h.Key == key {
			v, err := strconv.ParseInt(string(h.Value), 10, 64)
			return v, err == nil
		}
	}
	return 0, false
}

// latencyEvent is what the consumer needs of a record's value.
type latencyEvent struct {
	EventID     string `json:"eventId"`
	PersistedAt string `json:"persistedAt"`
}

// latency appends at the offered rate with the relay running and measures
// each event's commit-to-consume time on the topic.
func (b *relayBench) latency(ctx context.Context) (_ *LatencyReport, err error) {
	cfg := b.cfg
	n := int(int64(cfg.Rate) * int64(cfg.Duration) / int64(time.Second))
	n = max(n, 1)
	rep := &LatencyReport{Rate: cfg.Rate, Duration: cfg.Duration, Warmup: cfg.Warmup, Appenders: cfg.Appenders, Offered: int64(n),
		TargetP99: TargetCommitToAckP99, TargetRate: TargetOfferedRate}

	// The appenders' store, on a pool of its own sized as `runstream api`
	// sizes its own (unless --append-conns): its appends beyond the pool's
	// connections share transactions, as the API's would.
	pcfg, err := pgxpool.ParseConfig(withSearchPath(cfg.PostgresURL, b.schema.name))
	if err != nil {
		return nil, fmt.Errorf("parsing the Postgres URL (--postgres-url): %w", err)
	}
	if cfg.AppendConns > 0 {
		pcfg.MaxConns = int32(cfg.AppendConns)
	}
	rep.AppendConns = int(pcfg.MaxConns)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("opening the appenders' pool: %w", err)
	}
	if err := pool.QueryRow(ctx, `SELECT current_setting('track_commit_timestamp')::bool`).Scan(&rep.CommitTimestamps); err != nil {
		pool.Close()
		return nil, fmt.Errorf("reading track_commit_timestamp: %w", err)
	}
	defer pool.Close()
	storeMetrics := prometheus.NewRegistry()
	st, err := postgres.New(pool, postgres.Config{Logger: cfg.Logger, Registerer: storeMetrics})
	if err != nil {
		return nil, err
	}
	if err := warmPool(ctx, pool, rep.AppendConns); err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	nctx, stopNotifier := context.WithCancel(ctx)
	defer func() { stopNotifier(); wg.Wait() }()
	wg.Add(1)
	go func() { defer wg.Done(); _ = st.RunOutboxNotifier(nctx) }()

	// The events, generated before the window: the warmup's first, then
	// the window's n.
	runs := newRuns(cfg.Runs)
	rng := mrand.New(mrand.NewPCG(mrand.Uint64(), 1))
	warm := int(int64(cfg.Rate) * int64(cfg.Warmup) / int64(time.Second))
	n += warm
	writes := make([]store.RunEventWrite, n)
	index := make(map[string]int32, n)
	for i := range writes {
		writes[i] = latencyWrite(rng, runs[rng.IntN(len(runs))].id, i)
		index[writes[i].EventID] = int32(i)
	}

	// The consumer starts at the current end, so it sees exactly this
	// phase's records.
	from, _, err := b.endOffsets(ctx)
	if err != nil {
		return nil, err
	}
	cons, err := b.newConsumer(from)
	if err != nil {
		return nil, err
	}
	defer cons.Close()
	consumeLat := make([]time.Duration, n)
	produceLat := make([]time.Duration, n)
	consumedAt := make([]time.Time, n)
	seen := make([]bool, n)
	var received, tsLogAppend atomic.Int64
	var dups, foreign, badValues int64
	cctx, stopConsumer := context.WithCancel(ctx)
	consumerDone := make(chan struct{})
	go func() {
		defer close(consumerDone)
		for cctx.Err() == nil {
			fs := cons.PollFetches(cctx)
			now := time.Now()
			fs.EachRecord(func(r *kgo.Record) {
				var ev latencyEvent
				if err := json.Unmarshal(r.Value, &ev); err != nil {
					badValues++
					return
				}
				i, ok := index[ev.EventID]
				if !ok {
					foreign++
					return
				}
				if seen[i] {
					dups++
					return
				}
				at, err := time.Parse(time.RFC3339Nano, ev.PersistedAt)
				if err != nil {
					badValues++
					return
				}
				seen[i] = true
				consumeLat[i] = now.Sub(at)
				consumedAt[i] = now
				produceLat[i] = r.Timestamp.Sub(at)
				if r.Attrs.TimestampType() == 1 {
					tsLogAppend.Add(1)
				}
				received.Add(1)
			})
		}
	}()
	defer func() { stopConsumer(); <-consumerDone }()

	// The window starts once the relays own every shard, as a relay that
	// has been running does.
	var before relayMetrics
	for deadline := time.Now().Add(30 * time.Second); ; {
		if before, err = b.readMetrics(); err != nil {
			return nil, err
		}
		if before.ownedShards >= postgres.NumShards {
			break
		}
		if err := b.relayExited(); err != nil {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the relays own %.0f of %d outbox shards after 30s", before.ownedShards, postgres.NumShards)
		}
		if !retry.Sleep(ctx, 10*time.Millisecond) {
			return nil, fmt.Errorf("bench interrupted before the latency phase: %w", ctx.Err())
		}
	}
	profiling := false
	stopProfile := func() {
		if profiling {
			pprof.StopCPUProfile()
			profiling = false
		}
	}
	defer stopProfile()
	var cpuBefore cpuSample
	var txBefore txCounts
	// startWindow marks the end of the warmup: the relay's metrics, the
	// CPU and the profile count from here.
	startWindow := func() error {
		var err error
		if before, err = b.readMetrics(); err != nil {
			return err
		}
		if cfg.LatencyCPUProfile != nil {
			if err := pprof.StartCPUProfile(cfg.LatencyCPUProfile); err != nil {
				return fmt.Errorf("starting the CPU profile: %w", err)
			}
			profiling = true
		}
		cpuBefore = sampleCPU()
		txBefore = appendTransactions(storeMetrics)
		return nil
	}
	appendLat := make([]time.Duration, n)
	appendedAt := make([]time.Time, n)
	appendErr := make([]bool, n)
	var appended atomic.Int64
	stop := b.progress("latency", int64(n), appended.Load)
	start := time.Now()
	jobs := make(chan int, n)
	var aw sync.WaitGroup
	for range cfg.Appenders {
		aw.Add(1)
		go func() {
			defer aw.Done()
			for i := range jobs {
				due := start.Add(time.Duration(i) * time.Second / time.Duration(cfg.Rate))
				_, err := st.AppendEvent(ctx, writes[i])
				appendedAt[i] = time.Now()
				appendLat[i] = appendedAt[i].Sub(due)
				if err != nil {
					appendErr[i] = true
					if ctx.Err() == nil {
						cfg.Logger.Warn("append failed in the latency phase", "err", err)
					}
					continue
				}
				appended.Add(1)
			}
		}()
	}
	// Open loop: event i is due at start + i/Rate whether or not earlier
	// appends finished, so a slow database shows as append latency (from
	// the due time) instead of a lower offered rate.
	windowStarted := false
	for i := 0; i < n && ctx.Err() == nil; {
		now := time.Now()
		for i < n && !start.Add(time.Duration(i)*time.Second/time.Duration(cfg.Rate)).After(now) {
			if i == warm && !windowStarted {
				windowStarted = true
				if err := startWindow(); err != nil {
					close(jobs)
					aw.Wait()
					return nil, err
				}
			}
			jobs <- i
			i++
		}
		if i < n {
			retry.Sleep(ctx, time.Until(start.Add(time.Duration(i)*time.Second/time.Duration(cfg.Rate))))
		}
	}
	close(jobs)
	aw.Wait()
	rep.Window = time.Since(start) - cfg.Warmup
	txAfter := appendTransactions(storeMetrics)
	rep.SingleTransactions = txAfter.single - txBefore.single
	rep.SharedTransactions = txAfter.shared - txBefore.shared
	stop()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("bench interrupted during the latency phase: %w", ctx.Err())
	}
	rep.Appended = appended.Load() - int64(warm)
	for i := range warm {
		if appendErr[i] {
			rep.Appended++ // the warmup's failures are not the window's
		}
	}
	rep.Errors = int64(n-warm) - rep.Appended

	// The records of the last appends are still on their way.
	deadline := time.Now().Add(latencyGrace)
	for received.Load() < appended.Load() && time.Now().Before(deadline) {
		if err := b.relayExited(); err != nil {
			return nil, err
		}
		if !retry.Sleep(ctx, 5*time.Millisecond) {
			break
		}
	}
	cpuAfter := sampleCPU()
	stopProfile()
	stopConsumer()
	<-consumerDone
	rep.CPU = cpuSince(cpuBefore, cpuAfter)
	after, err := b.readMetrics()
	if err != nil {
		return nil, err
	}

	rep.Received = 0
	for i := warm; i < n; i++ {
		if seen[i] {
			rep.Received++
		}
	}
	rep.Duplicates, rep.Foreign, rep.BadValues = dups, foreign, badValues
	rep.TimestampType = "CreateTime"
	if tsLogAppend.Load() > 0 {
		rep.TimestampType = "LogAppendTime"
	}
	var cLat, pLat, aLat, rLat []time.Duration
	for i := warm; i < n; i++ {
		if !appendErr[i] {
			aLat = append(aLat, appendLat[i])
		}
		if seen[i] {
			cLat = append(cLat, consumeLat[i])
			pLat = append(pLat, produceLat[i])
			if !appendErr[i] {
				rLat = append(rLat, consumedAt[i].Sub(appendedAt[i]))
			}
		}
	}
	rep.CommitToConsume = Summarize(cLat)
	rep.AppendedToConsume = Summarize(rLat)
	rep.CommitToProduce = Summarize(pLat)
	rep.DueToAppended = Summarize(aLat)
	h := after.commitToAck.since(before.commitToAck)
	rep.RelayCommitToAck = Latency{P50: h.quantile(0.50), P95: h.quantile(0.95), P99: h.quantile(0.99)}
	rep.RelayWithinTarget, rep.RelayWithinExact = h.within(rep.TargetP99.Seconds())
	rep.RelayObservations = int64(h.count)
	rep.Rounds = int64(after.batches - before.batches)
	return rep, nil
}

// warmPool opens n connections before the window, so connection setup is
// not measured.
func warmPool(ctx context.Context, pool *pgxpool.Pool, n int) error {
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

// latencyWrite is a StepCompleted with a payload shaped like the drain's
// (about 300 bytes) and a stepId no other event of the phase has.
func latencyWrite(rng *mrand.Rand, id workload.Identity, i int) store.RunEventWrite {
	step := "step_l" + strconv.Itoa(i)
	return workload.Event(id, store.EventStepCompleted, step, 1, 1, time.Now(), map[string]any{
		"durationMs": rng.IntN(5000),
		"model":      "model.orders_" + strconv.Itoa(rng.IntN(97)),
		"warehouse":  "analytics_wh",
		"result":     map[string]any{"status": "success", "rowsAffected": rng.IntN(1000000), "bytesScanned": rng.IntN(1000000000)},
		"artifacts": []map[string]any{{
			"uri":       "s3://runstream-artifacts/" + id.RunID + "/" + step + "/1/run_results.json",
			"kind":      "dbt-run-results",
			"sizeBytes": rng.IntN(100000),
		}},
	})
}

// RelayReport is the outcome of one [RunRelay]. Its JSON form is the
// machine-readable report (`runstream bench relay --json`).
type RelayReport struct {
	// Broker is "in-process kfake" or the brokers measured.
	Broker string `json:"broker"`
	// Topic is the fresh topic the relay published to.
	Topic string `json:"topic"`
	// Partitions of Topic.
	Partitions int32 `json:"partitions"`
	// RelayBatch is the relay's outbox rows per round.
	RelayBatch int `json:"relayBatch"`
	// Relays is the relays that ran (splitting the shards).
	Relays int `json:"relays"`
	// Schema is the bench_<random> schema (dropped unless kept).
	Schema string `json:"schema"`
	// Drain is set when the drain phase ran.
	Drain *DrainReport `json:"drain,omitempty"`
	// Latency is set when the latency phase ran.
	Latency *LatencyReport `json:"latency,omitempty"`
}

// DrainReport is the drain phase's outcome.
type DrainReport struct {
	// Events pre-filled into the outbox, over Runs runs.
	Events int64 `json:"events"`
	Runs   int   `json:"runs"`
	// PayloadBytes is the mean payload size of the filled events.
	PayloadBytes float64 `json:"payloadBytes"`
	// Fill is the time the fill took (not measured).
	Fill time.Duration `json:"-"`
	// Window is from the relay's start until the outbox was empty and the
	// topic's end offsets accounted for every event.
	Window time.Duration `json:"-"`
	// Records is the records on the topic (the sum of its end offsets).
	Records int64 `json:"records"`
	// Duplicates are records of an event already on the topic (at least
	// once allows them: a restart, a delete that failed after the ack).
	Duplicates int64 `json:"duplicates"`
	// Missing counts events never found on the topic; OutOfOrder counts
	// records that came past a hole in their run's runSeq. Both must be 0.
	Missing    int64 `json:"missing"`
	OutOfOrder int64 `json:"outOfOrder"`
	// Foreign counts records of no filled run or without a runSeq header.
	Foreign int64 `json:"foreign"`
	// DeadLetters is the rows the relay dead-lettered.
	DeadLetters int64 `json:"deadLetters"`
	// Rounds is the relay's outbox rounds that published something; Waves
	// and PublishTime are its produce calls and their total time until
	// acknowledged (the rest of the window is Postgres and the relay's
	// own work).
	Rounds      int64         `json:"rounds"`
	Waves       int64         `json:"waves"`
	PublishTime time.Duration `json:"-"`
	// CPU is the CPU used during the window (the process holds the relay,
	// and the broker when it is in-process).
	CPU CPU `json:"cpu"`
	// Target is the events/s the issue asks for.
	Target float64 `json:"target"`
}

// EventsPerSec is the drain rate.
func (d *DrainReport) EventsPerSec() float64 { return perSec(d.Events, d.Window) }

// Met reports whether the drain reached its target with nothing lost.
func (d *DrainReport) Met() bool {
	return d.EventsPerSec() >= d.Target && d.Missing == 0 && d.OutOfOrder == 0
}

// MarshalJSON adds the derived fields and the durations in seconds.
func (d *DrainReport) MarshalJSON() ([]byte, error) {
	type plain DrainReport
	return json.Marshal(struct {
		*plain
		FillSeconds        float64 `json:"fillSeconds"`
		WindowSeconds      float64 `json:"windowSeconds"`
		PublishSeconds     float64 `json:"publishSeconds"`
		EventsPerSec       float64 `json:"eventsPerSec"`
		RecordsPerRound    float64 `json:"recordsPerRound"`
		Met                bool    `json:"met"`
		DuplicatesOnTopic  int64   `json:"recordsMinusEvents"`
		PublishShareOfTime float64 `json:"publishShareOfWindow"`
	}{(*plain)(d), round(d.Fill.Seconds(), 3), round(d.Window.Seconds(), 3), round(d.PublishTime.Seconds(), 3),
		round(d.EventsPerSec(), 1), round(ratioOr0(float64(d.Events), float64(d.Rounds)), 1), d.Met(),
		d.Records - d.Events, round(ratioOr0(d.PublishTime.Seconds(), d.Window.Seconds()), 3)})
}

func ratioOr0(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// txCounts are a store's append transactions so far, by kind.
type txCounts struct{ single, shared uint64 }

// appendTransactions reads runstream_store_append_seconds's counts: mode
// "single" is an append alone, "batch" a shared transaction.
func appendTransactions(reg *prometheus.Registry) txCounts {
	var c txCounts
	mfs, err := reg.Gather()
	if err != nil {
		return c
	}
	for _, mf := range mfs {
		if mf.GetName() != "runstream_store_append_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				switch {
				case l.GetName() != "mode":
				case l.GetValue() == "single":
					c.single = m.GetHistogram().GetSampleCount()
				case l.GetValue() == "batch":
					c.shared = m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return c
}

// LatencyReport is the latency phase's outcome.
type LatencyReport struct {
	// Rate is the offered rate (events/s) for Duration, by Appenders
	// goroutines; Offered is the events that makes.
	Rate      int           `json:"rate"`
	Duration  time.Duration `json:"-"`
	Appenders int           `json:"appenders"`
	Offered   int64         `json:"offered"`
	// AppendConns is the appenders' pool size (their store's append
	// concurrency); in the window, SingleTransactions appends ran alone
	// and SharedTransactions transactions carried the others.
	AppendConns        int    `json:"appendConns"`
	SingleTransactions uint64 `json:"singleTransactions"`
	SharedTransactions uint64 `json:"sharedTransactions"`
	// Warmup is how long the same load ran before the window, unmeasured.
	Warmup time.Duration `json:"-"`
	// Settle is the wait after the drain, when there was one.
	Settle *SettleReport `json:"settle,omitempty"`
	// Window is from the first due time until the last append returned.
	Window time.Duration `json:"-"`
	// Appended and Errors split Offered.
	Appended int64 `json:"appended"`
	Errors   int64 `json:"errors"`
	// Received is the appended events read back from the topic;
	// Duplicates are further records of them, Foreign records of no event
	// of the phase, BadValues records whose value did not decode.
	Received   int64 `json:"received"`
	Duplicates int64 `json:"duplicates"`
	Foreign    int64 `json:"foreign"`
	BadValues  int64 `json:"badValues"`
	// CommitToConsume is, per event, the bench consumer's clock when the
	// record arrived minus its persistedAt: commit to broker ack, plus the
	// fetch back (an upper bound of commit-to-ack).
	CommitToConsume Latency `json:"commitToConsumeMs"`
	// AppendedToConsume is the same from the moment AppendEvent returned
	// (after the commit) instead of persistedAt (before the commit, inside
	// the transaction): a lower bound where CommitToConsume is an upper one.
	// The two differ by the commit's own time (WAL flush), which a busy
	// disk can stretch. It can be negative for an event whose appender was
	// descheduled while the relay already delivered it.
	AppendedToConsume Latency `json:"appendedToConsumeMs"`
	// CommitToProduce is the record's timestamp minus persistedAt. With
	// TimestampType "LogAppendTime" that is the broker's append; with
	// "CreateTime" (kfake) it is when the relay handed the record to its
	// client, before the broker had it.
	CommitToProduce Latency `json:"commitToRecordTimestampMs"`
	TimestampType   string  `json:"timestampType"`
	// RelayCommitToAck is the relay's own histogram
	// (runstream_relay_commit_to_ack_seconds: commit, see CommitTimestamps,
	// to ack seen) over the window, estimated from its buckets; no max.
	RelayCommitToAck  Latency `json:"relayCommitToAckMs"`
	RelayObservations int64   `json:"relayObservations"`
	// RelayWithinTarget is the share of those observations at or under
	// TargetP99, exact when RelayWithinExact (the histogram has a bucket
	// bound there). The verdict: p99 < TargetP99 when at least 99% are.
	RelayWithinTarget float64 `json:"relayWithinTarget"`
	RelayWithinExact  bool    `json:"relayWithinExact"`
	// CommitTimestamps is Postgres's track_commit_timestamp: when on, the
	// relay's histogram starts at each event's commit; when off, at its
	// outbox row's creation inside the appending transaction (earlier by
	// the rest of the append and the commit's WAL flush).
	CommitTimestamps bool `json:"commitTimestamps"`
	// Rounds is the relay's outbox rounds that published something during
	// the phase (runstream_relay_batches_total).
	Rounds int64 `json:"rounds"`
	// DueToAppended is each append's time from its due time to its return,
	// queueing for a free appender included.
	DueToAppended Latency `json:"dueToAppendedMs"`
	// CPU is the CPU used during the window.
	CPU CPU `json:"cpu"`
	// TargetP99 bounds CommitToConsume's p99 at TargetRate events/s.
	TargetP99  time.Duration `json:"-"`
	TargetRate int           `json:"targetRate"`
}

// AchievedRate is the appended events per second of the window.
func (l *LatencyReport) AchievedRate() float64 { return perSec(l.Appended, l.Window) }

// Met reports whether p99 commit-to-consume (which bounds commit-to-ack
// from above) is under the target while the appends held the offered rate,
// with every appended event received.
//
// The latency counted is the relay's own commit-to-ack histogram, from the
// outbox row's created_at (taken in the append's transaction, so at or
// before its commit) until the broker acknowledged the row's wave: at
// least the true commit-to-ack time, to the exact share at the target's
// bucket bound. The consumer's view (commit->consumed) adds the fetch and
// is reported beside it; without an exact share it decides.
func (l *LatencyReport) Met() bool {
	latencyOK := l.CommitToConsume.P99 < l.TargetP99
	if l.RelayWithinExact {
		latencyOK = l.RelayWithinTarget >= 0.99
	}
	return latencyOK && l.Received == l.Appended && l.Errors == 0 &&
		l.AchievedRate() >= rateTolerance*float64(l.Rate)
}

// MarshalJSON adds the derived fields and the durations in seconds.
func (l *LatencyReport) MarshalJSON() ([]byte, error) {
	type plain LatencyReport
	return json.Marshal(struct {
		*plain
		DurationSeconds float64 `json:"durationSeconds"`
		WindowSeconds   float64 `json:"windowSeconds"`
		AchievedRate    float64 `json:"achievedRate"`
		TargetP99Ms     float64 `json:"targetP99Ms"`
		Met             bool    `json:"met"`
	}{(*plain)(l), l.Duration.Seconds(), round(l.Window.Seconds(), 3), round(l.AchievedRate(), 1),
		float64(l.TargetP99) / float64(time.Millisecond), l.Met()})
}

// WriteText writes the human-readable report.
func (r *RelayReport) WriteText(w io.Writer) error {
	var b strings.Builder
	relays := "1 relay"
	if r.Relays > 1 {
		relays = fmt.Sprintf("%d relays splitting the shards", r.Relays)
	}
	fmt.Fprintf(&b, "runstream bench relay: %s broker, topic %s (%d partitions), %s, relay batch %d\n",
		r.Broker, r.Topic, r.Partitions, relays, r.RelayBatch)
	verdict := func(ok bool) string {
		if ok {
			return "MET"
		}
		return "BELOW TARGET"
	}
	if d := r.Drain; d != nil {
		fmt.Fprintf(&b, "drain: %d events over %d runs (payload %.0f bytes), filled by SQL in %s (not timed)\n",
			d.Events, d.Runs, d.PayloadBytes, d.Fill.Round(time.Millisecond))
		fmt.Fprintf(&b, "  window     %s from relay start to outbox empty and every record on the broker\n", d.Window.Round(time.Millisecond))
		fmt.Fprintf(&b, "  rate       %10.0f events/s  (target >= %.0f): %s\n", d.EventsPerSec(), d.Target, verdict(d.Met()))
		fmt.Fprintf(&b, "  topic      %d records: %d duplicates, %d missing, %d out of order, %d foreign; %d dead letters\n",
			d.Records, d.Duplicates, d.Missing, d.OutOfOrder, d.Foreign, d.DeadLetters)
		if d.Rounds > 0 {
			summed := ""
			if r.Relays > 1 {
				summed = ", summed over the relays"
			}
			fmt.Fprintf(&b, "  relay      %d rounds (%.0f events each), %d produce waves, %s waiting for acks (%.0f%% of the window%s)\n",
				d.Rounds, ratioOr0(float64(d.Events), float64(d.Rounds)), d.Waves, d.PublishTime.Round(time.Millisecond),
				100*ratioOr0(d.PublishTime.Seconds(), d.Window.Seconds()), summed)
		}
		if d.CPU.Machine > 0 {
			fmt.Fprintf(&b, "  cpu        bench process (relay%s) %.2f cores, machine %.2f cores\n",
				inProcessBroker(r.Broker), d.CPU.Process, d.CPU.Machine)
		}
	}
	if l := r.Latency; l != nil {
		fmt.Fprintf(&b, "latency: %d events/s offered for %s by %d appenders (store.AppendEvent on %d connections, outbox NOTIFY on), after %s of the same load unmeasured\n",
			l.Rate, l.Duration, l.Appenders, l.AppendConns, l.Warmup)
		if st := l.Settle; st != nil {
			fmt.Fprintf(&b, "  settle     %s idle after the drain first (--settle); dirty page cache %s MB -> %s MB\n",
				st.Duration, mb(st.DirtyBefore), mb(st.DirtyAfter))
		}
		fmt.Fprintf(&b, "  appends    %d of %d appended (%.0f events/s achieved), %d errors; %d received from the topic, %d duplicates\n",
			l.Appended, l.Offered, l.AchievedRate(), l.Errors, l.Received, l.Duplicates)
		fmt.Fprintf(&b, "  append tx  %d alone, %d shared by the others (appends beyond the %d connections wait and go together)\n",
			l.SingleTransactions, l.SharedTransactions, l.AppendConns)
		fmt.Fprintf(&b, "  commit->consumed    %s  (persistedAt to consumer: the fetch included, an upper bound)\n",
			fmtLatency(l.CommitToConsume, true))
		fmt.Fprintf(&b, "  appended->consumed  %s  (from AppendEvent's return, after the commit: a lower bound)\n",
			fmtLatency(l.AppendedToConsume, true))
		what := "relay's client timestamp at produce, before the broker has it"
		if l.TimestampType == "LogAppendTime" {
			what = "broker's append time"
		}
		fmt.Fprintf(&b, "  commit->record ts   %s  (%s: %s)\n", fmtLatency(l.CommitToProduce, true), l.TimestampType, what)
		fmt.Fprintf(&b, "  relay commit->ack   %s  (runstream_relay_commit_to_ack_seconds, bucket estimate, %d observations)\n",
			fmtLatency(l.RelayCommitToAck, false), l.RelayObservations)
		if l.RelayWithinExact {
			origin := "their commit (track_commit_timestamp on)"
			if !l.CommitTimestamps {
				origin = "their outbox row's creation (track_commit_timestamp off: before the commit)"
			}
			fmt.Fprintf(&b, "  relay within %s  %.2f%% of events acked within %s of %s (exact; p99 < %s needs 99%%)\n",
				fmtMs(l.TargetP99), 100*l.RelayWithinTarget, fmtMs(l.TargetP99), origin, fmtMs(l.TargetP99))
		}
		basis := "the relay's commit->ack share within the target"
		if !l.RelayWithinExact {
			basis = "commit->consumed p99"
		}
		fmt.Fprintf(&b, "  verdict    commit-to-ack p99 < %s at %d events/s, by %s: %s\n", fmtMs(l.TargetP99), l.TargetRate, basis, verdict(l.Met()))
		fmt.Fprintf(&b, "  due->appended       %s  (append call, queueing included)\n", fmtLatency(l.DueToAppended, true))
		if l.Rounds > 0 {
			fmt.Fprintf(&b, "  relay      %d rounds, %.1f events each, %.0f rounds/s\n",
				l.Rounds, ratioOr0(float64(l.Received), float64(l.Rounds)), perSec(l.Rounds, l.Window))
		}
		if l.Foreign > 0 || l.BadValues > 0 {
			fmt.Fprintf(&b, "  note       %d records of no event of this phase, %d undecodable values\n", l.Foreign, l.BadValues)
		}
		if l.CPU.Machine > 0 {
			fmt.Fprintf(&b, "  cpu        bench process (relay, appenders%s) %.2f cores, machine %.2f cores\n",
				inProcessBroker(r.Broker), l.CPU.Process, l.CPU.Machine)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func inProcessBroker(name string) string {
	if name == "in-process kfake" {
		return ", broker"
	}
	return ""
}

func fmtLatency(l Latency, withMax bool) string {
	s := fmt.Sprintf("p50 %s  p95 %s  p99 %s", fmtMs(l.P50), fmtMs(l.P95), fmtMs(l.P99))
	if withMax {
		s += "  max " + fmtMs(l.Max)
	}
	return s
}

// mb formats a size in MB, or "?" for an unknown one (negative).
func mb(v float64) string {
	if v < 0 {
		return "?"
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}
