package projector

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/runstream/runstream/internal/tracing"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
)

// Config configures a [Projector]. Zero values take the defaults noted; a
// feature is turned off with its DisableX field, never with a negative
// value. New applies the defaults (setDefaults) after Validate.
type Config struct {
	// Brokers are the Kafka bootstrap brokers (required).
	Brokers []string
	// Topic to consume; empty means [store.DefaultTopic].
	Topic string
	// Group is the consumer group; empty means [store.DefaultProjectorGroup].
	Group string
	// MaxPollRecords bounds one batch; 0 means 5000.
	MaxPollRecords int
	// TraceConsumer says how the process span of a traced record relates
	// to the append's context it carries: linked (the default) or its
	// child (internal/tracing; spans exist only with tracing set up).
	TraceConsumer tracing.ConsumerMode
	// ResyncBackoffBase and ResyncBackoffMax bound the retries of resyncs
	// that failed (the store is unreachable) and of Redis failures; 0 means
	// 200ms and 30s.
	ResyncBackoffBase, ResyncBackoffMax time.Duration
	// LagHighThreshold raises PROJECTOR_LAG_HIGH; 0 means 5s (the
	// contract's threshold).
	LagHighThreshold time.Duration
	// SnapshotCacheBytes bounds the cache of the snapshots this projector
	// wrote (decoded, by an estimate of their heap bytes), which spares a
	// run's next batch reading and decoding its snapshot from Redis; 0
	// means DefaultSnapshotCacheBytes. Each cached byte costs about two of
	// RSS (the collector lets garbage grow with the live heap).
	SnapshotCacheBytes int64
	// DisableSnapshotCache turns the snapshot cache off: every batch reads
	// its runs' snapshots from Redis.
	DisableSnapshotCache bool
	// ConvergeInterval is how often the projector that holds the
	// convergence lease compares the snapshots of recently changed runs
	// (every run, when Redis lost the cursor) with the store and repairs
	// those behind (package converge); 0 means
	// converge.DefaultInterval.
	ConvergeInterval time.Duration
	// DisableConvergence turns convergence off (it is off anyway when the
	// event source cannot report run heads).
	DisableConvergence bool
	// ConvergeGrace is how long after its persistedAt an event is given
	// to arrive through Kafka before its run is checked; 0 means
	// converge.DefaultGrace.
	ConvergeGrace time.Duration
	// SnapshotTTL is how long a terminal run's snapshot and catalog
	// entries stay in Redis after its terminal event (its terminalAt);
	// Redis expires them then, and convergence does not bring them back.
	// 0 keeps every snapshot; `runstream projector` defaults to
	// snapshots.DefaultTTL and refuses less than a minute.
	SnapshotTTL time.Duration
	// SnapshotEncoding is how snapshots are written to Redis
	// (--snapshot-encoding); the zero value is JSON.
	SnapshotEncoding snapshots.Encoding
	// SessionTimeout of the group membership: how long a member that
	// stopped heartbeating holds its partitions; 0 means franz-go's default
	// (45 s). `runstream projector` uses kgroup.DefaultSessionTimeout.
	SessionTimeout time.Duration
	// InstanceID makes the projector a static member of the group
	// (KIP-345, group.instance.id): a replacement started with the same id
	// after a crash takes its partitions at once instead of waiting for the
	// session to time out. Empty means dynamic membership. Two running
	// projectors must never share one (the broker fences the older). A
	// clean stop leaves the group either way (package kgroup).
	InstanceID string
	// Registerer receives the projector's metrics; nil means none.
	Registerer prometheus.Registerer
	// Logger; nil means discard.
	Logger *slog.Logger
}

// Validate reports a configuration error naming the setting to change.
func (c Config) Validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("no Kafka brokers: set RUNSTREAM_KAFKA_BROKERS"))
	}
	if c.MaxPollRecords < 0 {
		errs = append(errs, fmt.Errorf("max poll records must be > 0, got %d", c.MaxPollRecords))
	}
	if c.SnapshotCacheBytes < 0 {
		errs = append(errs, fmt.Errorf("snapshot cache size must be >= 0 bytes (0: %d; DisableSnapshotCache turns it off), got %d",
			DefaultSnapshotCacheBytes, c.SnapshotCacheBytes))
	}
	if c.ConvergeInterval < 0 {
		errs = append(errs, fmt.Errorf("--converge-interval must be >= 0 (0: the default; DisableConvergence turns it off), got %v", c.ConvergeInterval))
	}
	if c.SnapshotTTL < 0 {
		errs = append(errs, fmt.Errorf("--snapshot-ttl must be >= 0 (0 keeps every snapshot), got %v", c.SnapshotTTL))
	}
	if c.ConvergeGrace < 0 {
		errs = append(errs, fmt.Errorf("--converge-grace must be >= 0, got %v", c.ConvergeGrace))
	}
	if c.ResyncBackoffMax != 0 && c.ResyncBackoffBase > c.ResyncBackoffMax {
		errs = append(errs, fmt.Errorf("resync backoff base %v is above its max %v", c.ResyncBackoffBase, c.ResyncBackoffMax))
	}
	return errors.Join(errs...)
}

// DefaultSnapshotCacheBytes is the default of Config.SnapshotCacheBytes:
// 16 MiB keeps a projector catching up 100,000 active runs under 300 MB of
// RSS (bench project's memory phase) with room to spare.
const DefaultSnapshotCacheBytes = 16 << 20

// cacheBytes is the snapshot cache's budget; 0 when it is off.
func (c *Config) cacheBytes() int64 {
	if c.DisableSnapshotCache {
		return 0
	}
	return c.SnapshotCacheBytes
}

// setDefaults gives every zero field its default.
func (c *Config) setDefaults() {
	if c.Topic == "" {
		c.Topic = store.DefaultTopic
	}
	if c.Group == "" {
		c.Group = store.DefaultProjectorGroup
	}
	if c.MaxPollRecords == 0 {
		c.MaxPollRecords = 5000
	}
	if c.SnapshotCacheBytes == 0 {
		c.SnapshotCacheBytes = DefaultSnapshotCacheBytes
	}
	if c.ResyncBackoffBase == 0 {
		c.ResyncBackoffBase = 200 * time.Millisecond
	}
	if c.ResyncBackoffMax == 0 {
		c.ResyncBackoffMax = 30 * time.Second
	}
	if c.LagHighThreshold == 0 {
		c.LagHighThreshold = 5 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}
