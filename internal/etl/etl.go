package etl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/consumer"
	"github.com/runstream/runstream/consumer/pgcheckpoint"
	"github.com/runstream/runstream/internal/tracing"
	"github.com/runstream/runstream/store"
)

// DefaultGroup is the consumer group of the ETL when none is given.
const DefaultGroup = store.DefaultETLGroup

// Config configures an [ETL]. Zero values take the defaults noted; a
// feature is turned off with its DisableX field, never with a negative
// value (which Validate refuses).
type Config struct {
	// Brokers are the Kafka bootstrap brokers (required).
	Brokers []string
	// Topic of run events; empty means [store.DefaultTopic].
	Topic string
	// Group is the consumer group; empty means [DefaultGroup]. Its lag
	// shows in `runstream lag --group`.
	Group string
	// Fetcher fills gaps from the store: consumer.HTTPFetcher for the API,
	// or a store.Store (required: gaps are filled, never skipped).
	Fetcher consumer.Fetcher
	// TraceConsumer says how a traced record's process span relates to
	// the append's context it carries (consumer.Config.TraceConsumer).
	TraceConsumer tracing.ConsumerMode
	// MaxPollRecords bounds one poll (all partitions); 0 means 20,000.
	// Each partition's share of a poll is written in one transaction, so
	// larger polls mean fewer, larger transactions, and fewer writes: a
	// run's events in one batch cost one write of its row. A poll never
	// waits to fill up.
	MaxPollRecords int
	// MaxQueuedRecords bounds the records polled for a partition that wait
	// while its previous batch is written (consumer.Config's); they all go
	// into its next transaction. 0 means half of MaxPollRecords: the sink
	// holds a snapshot per run of a transaction, not its events, so a
	// larger transaction costs little more per record here and saves the
	// database the writes of runs whose events it would have split
	// (docs/PERFORMANCE.md, ninth round of the ETL). The records waiting are at most this
	// many, plus a poll's share, per partition the process owns.
	MaxQueuedRecords int
	// CacheRuns bounds the runs whose snapshot is kept between batches (so
	// that their rows need not be read back); 0 means 20,000.
	CacheRuns int
	// DisableBatching writes each event's rows as the handler gets it
	// instead of once per partition batch: slower, for comparison.
	DisableBatching bool
	// SessionTimeout and InstanceID of the group membership
	// (consumer.Config's): 0 means franz-go's default session timeout,
	// empty means dynamic membership.
	SessionTimeout time.Duration
	InstanceID     string
	// Heads turns on convergence (consumer.Config's):
	// runs the store has moved past the tables' last_event_seq, a
	// dead-lettered tail no later record reveals, are brought up to date
	// through the gap filler. nil: off.
	Heads consumer.RunHeads
	// ConvergeInterval and ConvergeGrace: consumer.Config's (0 means 5s
	// each).
	ConvergeInterval, ConvergeGrace time.Duration
	// DisableConvergence turns convergence off although Heads is set.
	DisableConvergence bool
	// Retention is how long after its first event a run's rows are kept:
	// the partitions of a month whose runs all started longer ago than
	// that, and have all ended, are dropped (retention.go), and
	// convergence leaves alone the runs that ended that long ago. 0 keeps
	// every run; otherwise at least MinRetention.
	Retention time.Duration
	// PartitionInterval is how often the partitions of the current and
	// the next month are made sure of and Retention applied; 0 means
	// DefaultPartitionInterval. Both happen at start too.
	PartitionInterval time.Duration
	// ClientOptions are added to the Kafka client's (TLS, SASL, logging).
	ClientOptions []kgo.Opt
	// Registerer receives the metrics; nil means none.
	Registerer prometheus.Registerer
	// Logger; nil means discard.
	Logger *slog.Logger
}

// DefaultMaxQueuedRecords is Config.MaxQueuedRecords when it is 0: half
// of maxPollRecords.
func DefaultMaxQueuedRecords(maxPollRecords int) int {
	return max(1, maxPollRecords/2)
}

// Validate reports a configuration error.
func (c Config) Validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("etl: no Kafka brokers (--kafka-brokers, RUNSTREAM_KAFKA_BROKERS)"))
	}
	if c.Fetcher == nil {
		errs = append(errs, errors.New("etl: no store to fill gaps from (--api-url or --postgres-url)"))
	}
	if c.MaxPollRecords < 0 || c.MaxQueuedRecords < 0 || c.CacheRuns < 0 {
		errs = append(errs, fmt.Errorf("etl: MaxPollRecords (--max-poll-records), MaxQueuedRecords (--max-queued-records) and CacheRuns (--cache-runs) must be >= 0, got %d, %d and %d",
			c.MaxPollRecords, c.MaxQueuedRecords, c.CacheRuns))
	}
	if c.Retention < 0 || (c.Retention > 0 && c.Retention < MinRetention) {
		errs = append(errs, fmt.Errorf("etl: Retention (--etl-retention) must be 0 (keep every run) or at least %v (31 days, the longest month), got %v",
			MinRetention, c.Retention))
	}
	if c.ConvergeInterval < 0 || c.ConvergeGrace < 0 {
		errs = append(errs, fmt.Errorf("etl: ConvergeInterval and ConvergeGrace (--converge-interval, --converge-grace) must be >= 0, got %v and %v",
			c.ConvergeInterval, c.ConvergeGrace))
	}
	if c.PartitionInterval < 0 {
		errs = append(errs, fmt.Errorf("etl: PartitionInterval must be >= 0, got %v", c.PartitionInterval))
	}
	if c.Group != "" && strings.TrimSpace(c.Group) == "" {
		errs = append(errs, errors.New("etl: Group (--group) is blank"))
	}
	return errors.Join(errs...)
}

// setDefaults gives every zero field its default.
func (c *Config) setDefaults() {
	if c.Topic == "" {
		c.Topic = store.DefaultTopic
	}
	if c.Group == "" {
		c.Group = DefaultGroup
	}
	if c.MaxPollRecords == 0 {
		c.MaxPollRecords = 20000
	}
	if c.MaxQueuedRecords == 0 {
		c.MaxQueuedRecords = DefaultMaxQueuedRecords(c.MaxPollRecords)
	}
	if c.CacheRuns == 0 {
		c.CacheRuns = 20000
	}
	if c.PartitionInterval == 0 {
		c.PartitionInterval = DefaultPartitionInterval
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// ETL consumes the run-event topic into the runs and step_attempts tables
// of one Postgres schema, effectively once.
type ETL struct {
	cfg  Config
	pool *pgxpool.Pool
	m    *metrics
	log  *slog.Logger
	// base is cfg.Logger without the ETL's component: the consumer adds
	// its own (a JSON line carries each key once).
	base  *slog.Logger
	ready atomic.Bool
	// now is the clock of the partitions' months.
	now func() time.Time
}

// New returns an ETL writing through pool, whose search_path must be the
// ETL's schema (open it with [Connect]); call Run.
func New(cfg Config, pool *pgxpool.Pool) (*ETL, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if pool == nil {
		return nil, errors.New("etl: nil pool")
	}
	cfg.setDefaults()
	log := cfg.Logger
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &ETL{cfg: cfg, pool: pool, m: m, log: log.With("component", "etl"), base: log, now: time.Now}, nil
}

// Run migrates the schema, then consumes until ctx is done (returning nil)
// or the consumer stops on an error.
func (e *ETL) Run(ctx context.Context) error {
	applied, err := Migrate(ctx, e.pool)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting
		}
		return err
	}
	if len(applied) > 0 {
		e.log.Info("applied ETL migrations", "versions", applied)
	}
	// A run's checkpoint is the last_event_seq of its runs row, written
	// anyway in the same transaction; the checkpoint table holds only
	// those of runs without a row (unknown types so far) and those written
	// before the ETL kept them in its rows, which still count.
	cps, err := pgcheckpoint.New(ctx, e.pool, pgcheckpoint.WithOwnRows(ownCheckpoints))
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	parts := newPartitions(e.pool, e.log)
	if err := parts.load(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	ret := newRetention(e.pool, parts, e.cfg.Retention, e.log, e.m.dropped)
	if err := ret.ahead(ctx, e.now()); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	s := &sink{log: e.log, flushTime: e.m.flushTime, parts: parts, fetcher: e.cfg.Fetcher, now: e.now}
	var checkpoints consumer.Checkpoints = cps
	if !e.cfg.DisableBatching {
		s.cache = newRunCache(e.cfg.CacheRuns)
		checkpoints = &batcher{inner: cps, sink: s}
	}
	checkpoints = &partitioner{inner: checkpoints, parts: parts, retired: e.m.retired}
	var heads consumer.RunHeads
	if e.cfg.Heads != nil {
		heads = &convergeHeads{inner: e.cfg.Heads, pool: e.pool, keep: e.cfg.Retention, now: e.now}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); ret.run(ctx, e.cfg.PartitionInterval, e.now) }()
	defer func() { cancel(); wg.Wait() }()
	c, err := consumer.New(consumer.Config{
		Brokers:            e.cfg.Brokers,
		Topic:              e.cfg.Topic,
		Group:              e.cfg.Group,
		Checkpoints:        checkpoints,
		TraceConsumer:      e.cfg.TraceConsumer,
		TraceDBSystem:      "postgresql",
		Fetcher:            e.cfg.Fetcher,
		MaxPollRecords:     e.cfg.MaxPollRecords,
		MaxQueuedRecords:   e.cfg.MaxQueuedRecords,
		SessionTimeout:     e.cfg.SessionTimeout,
		InstanceID:         e.cfg.InstanceID,
		Heads:              heads,
		ConvergeState:      cps,
		ConvergeInterval:   e.cfg.ConvergeInterval,
		ConvergeGrace:      e.cfg.ConvergeGrace,
		DisableConvergence: e.cfg.DisableConvergence,
		ConvergeName:       "etl",
		Registerer:         e.cfg.Registerer,
		Hooks:              e.m.hooks(),
		Logger:             e.base,
		ClientOptions:      e.cfg.ClientOptions,
	}, s)
	if err != nil {
		return err
	}
	e.log.Info("etl consuming", "topic", e.cfg.Topic, "group", e.cfg.Group, "batching", !e.cfg.DisableBatching,
		"retention", e.cfg.Retention.String())
	e.ready.Store(true)
	defer e.ready.Store(false)
	// Log the stop when it comes, and how long the shutdown took.
	var stopAt time.Time
	ran, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-ctx.Done():
			stopAt = time.Now()
			e.log.Info("etl stopping: finishing the transactions in flight and committing their offsets")
		case <-ran:
		}
	}()
	err = c.Run(ctx)
	close(ran)
	<-watched
	if err != nil {
		return fmt.Errorf("etl: %w", err) // the caller logs it
	}
	took := time.Duration(0)
	if !stopAt.IsZero() {
		took = time.Since(stopAt)
	}
	e.log.Info("etl stopped", "took", took.Round(time.Millisecond).String())
	return nil
}

// Ready reports whether the ETL is consuming and its database answers.
func (e *ETL) Ready(ctx context.Context) error {
	if !e.ready.Load() {
		return errors.New("etl: not consuming yet (migrating or connecting)")
	}
	if err := e.pool.Ping(ctx); err != nil {
		return fmt.Errorf("etl database: %w", err)
	}
	return nil
}
