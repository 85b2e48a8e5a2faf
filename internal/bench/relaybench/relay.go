// Package relaybench is `runstream bench relay`: it measures the outbox
// relay (internal/relay) against real Postgres and a Kafka-protocol
// broker, the drain rate of a backlog and the commit-to-ack latency at a
// fixed offered rate (see [Run]). relay.go holds the configuration and the
// relays, drain.go the backlog's fill, drain and read-back, latency.go the
// latency phase, metrics.go the relays' metrics, report.go the report.
package relaybench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/bench/harness"
	"github.com/runstream/runstream/internal/relay"
	"github.com/runstream/runstream/internal/retry"
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
	defaultEvents     = 1_000_000
	defaultRate       = TargetOfferedRate
	defaultDuration   = 10 * time.Second
	defaultAppenders  = 16
	defaultPartitions = 12
	// fillChunk is the events inserted per fill transaction: big enough that
	// statement overhead vanishes, small enough for a progress line a second.
	fillChunk = 50_000
	// drainStall fails the drain when the relay publishes nothing for this
	// long (dead letters, a broken broker), rather than hanging.
	drainStall = time.Minute
	// latencyGrace is how long the latency phase waits, after the last
	// append, for its records to reach the topic.
	latencyGrace = 30 * time.Second
)

// Config configures [Run]. Zero values take the defaults noted.
type Config struct {
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
	// Compression is the relays' produce codec, one of relay.Compressions;
	// "" means relay.DefaultCompression.
	Compression string
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
	Progress func(harness.PhaseProgress)
	// Logger receives the relay's and the store's logs; nil means discard.
	Logger *slog.Logger

	// fillChunk overrides the events per fill transaction (tests use small
	// chunks to run the parallel fill); 0 means fillChunk.
	fillChunk int64
}

// Validate reports a configuration error naming the setting to change.
func (c Config) Validate() error {
	var errs []error
	if c.PostgresURL == "" {
		errs = append(errs, errors.New("a Postgres URL (--postgres-url, RUNSTREAM_POSTGRES_URL) is needed"))
	}
	if c.DisableDrain && c.DisableLatency {
		errs = append(errs, errors.New("both phases are off (--drain=false --latency=false): nothing to measure"))
	}
	errs = append(errs, harness.Negative(harness.Flag("events", c.Events), harness.Flag("runs", c.Runs), harness.Flag("rate", c.Rate),
		harness.Flag("duration", c.Duration), harness.Flag("appenders", c.Appenders), harness.Flag("partitions", c.Partitions),
		harness.Flag("relay-batch", c.RelayBatch), harness.Flag("relays", c.Relays))...)
	if c.Compression != "" {
		if _, err := relay.CompressionOption(c.Compression); err != nil {
			errs = append(errs, fmt.Errorf("--compression: %w", err))
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

func (c *Config) setDefaults() {
	harness.Default(&c.Partitions, defaultPartitions)
	harness.Default(&c.Compression, relay.DefaultCompression)
	harness.Default(&c.Relays, 1)
	harness.Default(&c.Events, defaultEvents)
	harness.Default(&c.Runs, harness.DefaultRuns)
	harness.Default(&c.Rate, defaultRate)
	harness.Default(&c.Duration, defaultDuration)
	harness.Default(&c.Appenders, defaultAppenders)
	harness.Default(&c.Warmup, 2*time.Second)
	c.Warmup = max(c.Warmup, 0)
	harness.Default(&c.Settle, defaultSettle)
	c.Settle = max(c.Settle, 0)
	c.Logger = harness.OrDiscard(c.Logger)
	harness.Default(&c.fillChunk, fillChunk)
}

// Run measures the outbox relay (internal/relay) end to end, against
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
func Run(ctx context.Context, cfg Config) (rep *Report, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	b, err := newBench(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, b.close(ctx)) }()
	rep = &Report{Broker: b.kafka.Name, Topic: b.kafka.Topic, Partitions: cfg.Partitions,
		RelayBatch: cfg.RelayBatch, Relays: cfg.Relays, Compression: cfg.Compression, Schema: b.schema.Name}
	if rep.RelayBatch == 0 {
		rep.RelayBatch = defaultRelayBatch
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

// defaultSettle is Config.Settle's default.
const defaultSettle = 40 * time.Second

// settle waits cfg.Settle with the relay idle (see Config.Settle),
// reporting progress each second.
func (b *bench) settle(ctx context.Context) (*SettleReport, error) {
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
	kb, found := harness.ProcKB("/proc/meminfo", "Dirty", "Writeback")
	if !found[0] || !found[1] {
		return -1
	}
	return harness.Round(float64(kb[0]+kb[1])/1024, 1)
}

// defaultRelayBatch is relay.Config's BatchSize default, for the report.
const defaultRelayBatch = 5000

// bench is one Run's resources.
type bench struct {
	cfg    Config
	schema *harness.Schema
	pool   *pgxpool.Pool // the bench's own: fill, checks
	kafka  *harness.Broker
	relays []*runningRelay
	// produced counts the relays' produce batches as franz-go wrote them
	// (a hook on each relay's client): bytes on the wire per event.
	produced produceBytes
}

// produceBytes is a franz-go HookProduceBatchWritten summing the records
// and the bytes of every batch written, before and after compression
// (records only, without the record batch's 61-byte header).
type produceBytes struct {
	records, uncompressed, compressed atomic.Int64
}

func (p *produceBytes) OnProduceBatchWritten(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.ProduceBatchMetrics) {
	p.records.Add(int64(m.NumRecords))
	p.uncompressed.Add(int64(m.UncompressedBytes))
	p.compressed.Add(int64(m.CompressedBytes))
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

func newBench(ctx context.Context, cfg Config) (_ *bench, err error) {
	b := &bench{cfg: cfg}
	defer func() {
		if err != nil {
			err = errors.Join(err, b.close(ctx))
		}
	}()
	if b.schema, b.pool, err = harness.MigratedSchema(ctx, cfg.PostgresURL, cfg.KeepSchema); err != nil {
		return nil, err
	}
	// LogAppendTime makes a real broker stamp each record when it appends
	// it, so the record timestamp is the broker's side of the ack. kfake
	// ignores the setting and keeps the producer's timestamp; the report
	// says which one it got.
	b.kafka, err = harness.OpenBroker(ctx, harness.BrokerConfig{Addrs: cfg.Brokers, Partitions: cfg.Partitions,
		TopicPrefix: "bench-relay-", KeepTopic: cfg.KeepSchema,
		TopicConfigs: map[string]*string{"message.timestamp.type": kadm.StringPtr("LogAppendTime")}})
	return b, err
}

// close stops the relays and releases everything, also after ctx was
// cancelled. It is safe on a partly built bench.
func (b *bench) close(ctx context.Context) error {
	errs := []error{b.stopRelay()}
	if b.kafka != nil {
		errs = append(errs, b.kafka.Close(ctx))
		b.kafka = nil
	}
	if b.pool != nil {
		b.pool.Close()
		b.pool = nil
	}
	if b.schema != nil {
		errs = append(errs, b.schema.Drop(ctx))
		b.schema = nil
	}
	return errors.Join(errs...)
}

// startRelay starts cfg.Relays relays (relay.Relay.Run), each built as
// `runstream relay` builds it. Several split the outbox's shards between
// them through their advisory locks, as separate processes would.
func (b *bench) startRelay(ctx context.Context) error {
	for range b.cfg.Relays {
		rr := &runningRelay{reg: prometheus.NewRegistry(), done: make(chan error, 1)}
		var err error
		if rr.pool, err = postgres.Connect(ctx, b.schema.URL); err != nil {
			return err
		}
		compress, err := relay.CompressionOption(b.cfg.Compression)
		if err != nil {
			rr.pool.Close()
			return err
		}
		if rr.client, err = kgo.NewClient(append(relay.ClientOptions(b.kafka.Addrs), compress, kgo.WithHooks(&b.produced))...); err != nil {
			rr.pool.Close()
			return fmt.Errorf("creating the relay's Kafka client for %v: %w", b.kafka.Addrs, err)
		}
		r, err := relay.New(relay.Config{Topic: b.kafka.Topic, Partitions: b.cfg.Partitions, BatchSize: b.cfg.RelayBatch,
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
func (b *bench) relayExited() error {
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
func (b *bench) stopRelay() error {
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

// progress reports a phase through cfg.Progress (see [harness.PhaseReporter]).
func (b *bench) progress(phase string, total int64, done func() int64) (stop func()) {
	return harness.PhaseReporter(b.cfg.Progress, phase, total, done)
}
