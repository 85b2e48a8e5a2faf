package relay

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// DefaultRetryWindow is how long a refused record is retried by default
// (Config.RetryWindow): longer than a broker rolling restart.
const DefaultRetryWindow = 5 * time.Minute

// Config configures a [Relay]. Zero values take the defaults noted.
type Config struct {
	// Topic to publish to; empty means [store.DefaultTopic].
	Topic string
	// Partitions of the topic when the relay creates it; 0 means 12.
	Partitions int32
	// ReplicationFactor of the topic when the relay creates it; 0 means the
	// broker's default.
	ReplicationFactor int16
	// TopicRetention is the retention.ms of the topic when the relay
	// creates it (and what it expects of a topic that exists, warning
	// when that differs); 0 means DefaultTopicRetention. It must be at
	// least MinTopicRetention.
	TopicRetention time.Duration
	// DisableTopicCreation skips creating the topic when absent.
	DisableTopicCreation bool
	// BatchSize is the most outbox rows read per round; 0 means 5000.
	BatchSize int
	// PollInterval is the safety-net poll when no notification arrives;
	// 0 means 1s.
	PollInterval time.Duration
	// MaxAttempts is the fewest publishes of a record the broker must
	// refuse before it is dead-lettered; 0 means 8. A record is
	// dead-lettered only when both MaxAttempts and RetryWindow are used up.
	MaxAttempts int
	// RetryWindow is how long a refused record is retried, measured from
	// its first refusal (kept in the outbox row, so a relay restart does not
	// start it again, and read on the database's clock): it is
	// dead-lettered at the first refusal that finds both at least
	// MaxAttempts refusals and the window over. It should outlast a broker
	// rolling restart, during which a partition may refuse records for
	// minutes. Meanwhile the run's later events wait (per-run order) and
	// other runs flow. 0 means 5 minutes. A window shorter than the
	// backoff (1ms) retries by count only: the record is dead-lettered at
	// its MaxAttempts-th refusal (at its second when MaxAttempts is 1, as
	// the first refusal starts the window).
	RetryWindow time.Duration
	// BackoffBase and BackoffMax bound the exponential backoff (with full
	// jitter) of refused records and of broker outages; 0 means 100ms and
	// 30s. BackoffMax also caps the time between a refused record's last
	// attempts, so a record is dead-lettered at most about BackoffMax after
	// its window ends.
	BackoffBase, BackoffMax time.Duration
	// RebalanceInterval is how often shard ownership is checked; 0 means
	// 1s.
	RebalanceInterval time.Duration
	// StallWarning is how long a publish may wait for the broker before
	// the relay counts and logs the broker as unavailable (and again each
	// interval after); 0 means 5s.
	StallWarning time.Duration
	// MetricsInterval is how often the outbox gauges are refreshed; 0 means
	// 5s.
	MetricsInterval time.Duration
	// OutboxSwitchBytes is the size on disk (table and indexes) of the
	// outbox part taking appends from which the relay switches appends to
	// the other part, once that one is drained and truncated (migration
	// 0011); the part left is truncated in turn once drained. So once a
	// backlog drained, the outbox is back under about this size within a
	// few rotation steps (one a second). 0 means
	// postgres.DefaultOutboxSwitchBytes (8 MiB).
	OutboxSwitchBytes int64
	// Registerer receives the relay's metrics; nil means none.
	Registerer prometheus.Registerer
	// Logger; nil means discard.
	Logger *slog.Logger
}

// Validate reports a configuration error naming the setting to change.
func (c Config) Validate() error {
	var errs []error
	if c.Partitions < 0 {
		errs = append(errs, fmt.Errorf("topic partitions (RUNSTREAM_PARTITIONS) must be > 0, got %d", c.Partitions))
	}
	if c.ReplicationFactor < 0 {
		errs = append(errs, fmt.Errorf("replication factor (RUNSTREAM_REPLICATION_FACTOR) must be > 0, got %d", c.ReplicationFactor))
	}
	if c.TopicRetention < 0 || (c.TopicRetention != 0 && c.TopicRetention < MinTopicRetention) {
		errs = append(errs, fmt.Errorf("topic retention (--topic-retention, RUNSTREAM_TOPIC_RETENTION) must be at least %v, got %v", MinTopicRetention, c.TopicRetention))
	}
	if c.BatchSize < 0 {
		errs = append(errs, fmt.Errorf("relay batch size (RUNSTREAM_RELAY_BATCH) must be > 0, got %d", c.BatchSize))
	}
	if c.MaxAttempts < 0 {
		errs = append(errs, fmt.Errorf("relay max attempts (RUNSTREAM_RELAY_MAX_ATTEMPTS) must be > 0, got %d", c.MaxAttempts))
	}
	if c.RetryWindow < 0 {
		errs = append(errs, fmt.Errorf("relay retry window (--retry-window, RUNSTREAM_RETRY_WINDOW) must be >= 0, got %v", c.RetryWindow))
	}
	if c.OutboxSwitchBytes < 0 {
		errs = append(errs, fmt.Errorf("relay outbox switch size must be >= 0 bytes (0: %d), got %d", postgres.DefaultOutboxSwitchBytes, c.OutboxSwitchBytes))
	}
	if c.BackoffMax != 0 && c.BackoffBase > c.BackoffMax {
		errs = append(errs, fmt.Errorf("relay backoff base %v is above its max %v", c.BackoffBase, c.BackoffMax))
	}
	return errors.Join(errs...)
}

func (c *Config) setDefaults() {
	if c.Topic == "" {
		c.Topic = store.DefaultTopic
	}
	if c.Partitions == 0 {
		c.Partitions = 12
	}
	if c.TopicRetention == 0 {
		c.TopicRetention = DefaultTopicRetention
	}
	if c.BatchSize == 0 {
		c.BatchSize = 5000
	}
	if c.PollInterval == 0 {
		c.PollInterval = time.Second
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 8
	}
	if c.RetryWindow == 0 {
		c.RetryWindow = DefaultRetryWindow
	}
	if c.BackoffBase == 0 {
		c.BackoffBase = 100 * time.Millisecond
	}
	if c.BackoffMax == 0 {
		c.BackoffMax = 30 * time.Second
	}
	if c.RebalanceInterval == 0 {
		c.RebalanceInterval = time.Second
	}
	if c.StallWarning == 0 {
		c.StallWarning = 5 * time.Second
	}
	if c.MetricsInterval == 0 {
		c.MetricsInterval = 5 * time.Second
	}
	if c.OutboxSwitchBytes == 0 {
		c.OutboxSwitchBytes = postgres.DefaultOutboxSwitchBytes
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}
