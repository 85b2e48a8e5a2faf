package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultTopicRetention is the topic's retention.ms unless told otherwise
// (Config.TopicRetention): how long a consumer group may stop, or fall
// behind, and still resume from its committed offset. A week outlasts a
// long weekend with room for the repair. Past it nothing is lost for good,
// as the store holds every event: the consumer restarts from the earliest
// record left and convergence fills what it skipped from the store, which
// costs reads of the store instead of the topic.
const DefaultTopicRetention = 7 * 24 * time.Hour

// MinTopicRetention is the shortest Config.TopicRetention accepted. Below a
// minute a consumer that pauses for a rebalance or a restart would find its
// offset deleted.
const MinTopicRetention = time.Minute

// ProduceBatchMaxBytes caps one produce batch of the relay (franz-go's
// ProducerBatchMaxBytes in [ClientOptions]: counted before compression,
// the batch header included). A batch larger than the topic's
// max.message.bytes is refused whole with MESSAGE_TOO_LARGE, which the
// relay would retry and in the end dead-letter events that are fine.
const ProduceBatchMaxBytes = 1_000_000

// TopicMaxMessageBytes is the max.message.bytes of the topic when the
// relay creates it: Kafka's own default (1 MiB plus the 12 bytes of a
// batch's offset and length), 48,588 bytes (about 5%) above
// ProduceBatchMaxBytes. Written on the topic, it holds even on a cluster
// whose default message.max.bytes was lowered below the relay's batches;
// the headroom absorbs how brokers and clients differ in counting a batch's
// framing, and lets ProduceBatchMaxBytes grow a little without a change to
// existing topics. A topic that exists is only warned about when its value
// is below ProduceBatchMaxBytes, the size the batches actually need.
const TopicMaxMessageBytes = 1_048_588

// EnsureTopic creates the topic when absent, with the configured
// partitions, replication factor and retention, and TopicMaxMessageBytes.
// A topic that exists is never altered: when its retention.ms differs from
// the configured retention, or its max.message.bytes is below
// ProduceBatchMaxBytes, one warning says which settings, their values and
// the command that changes them.
func (r *Relay) EnsureTopic(ctx context.Context) error {
	adm := kadm.NewClient(r.client)
	rf := r.cfg.ReplicationFactor
	if rf == 0 {
		rf = -1 // the broker's default
	}
	retention := strconv.FormatInt(r.cfg.TopicRetention.Milliseconds(), 10)
	maxBytes := strconv.Itoa(TopicMaxMessageBytes)
	configs := map[string]*string{"retention.ms": &retention, "max.message.bytes": &maxBytes}
	resp, err := adm.CreateTopic(ctx, r.cfg.Partitions, rf, configs, r.cfg.Topic)
	if err == nil {
		err = resp.Err
	}
	switch {
	case err == nil:
		r.log.Info("created topic", "topic", r.cfg.Topic, "partitions", r.cfg.Partitions,
			"retention", r.cfg.TopicRetention, "maxMessageBytes", TopicMaxMessageBytes)
		return nil
	case errors.Is(err, kerr.TopicAlreadyExists):
		r.checkTopic(ctx, adm)
		return nil
	}
	return fmt.Errorf("creating topic %q (%d partitions): %w", r.cfg.Topic, r.cfg.Partitions, err)
}

// topicSetting is a setting of an existing topic that differs from what
// the relay wants.
type topicSetting struct {
	key, current, wanted string
}

// checkTopic compares the existing topic's retention.ms and
// max.message.bytes with what the relay wants and warns, once, about those
// that differ. Reading them may be refused (no DescribeConfigs ACL): that
// is a warning too, never a reason not to publish.
func (r *Relay) checkTopic(ctx context.Context, adm *kadm.Client) {
	rcs, err := adm.DescribeTopicConfigs(ctx, r.cfg.Topic)
	var rc kadm.ResourceConfig
	if err == nil {
		rc, err = rcs.On(r.cfg.Topic, nil)
	}
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		r.log.Warn("could not read the existing topic's settings; its retention.ms and max.message.bytes are not checked",
			"topic", r.cfg.Topic, "err", err)
		return
	}
	current := map[string]string{}
	for _, c := range rc.Configs {
		current[c.Key] = c.MaybeValue()
	}
	var diffs []topicSetting
	wantRetention := strconv.FormatInt(r.cfg.TopicRetention.Milliseconds(), 10)
	if v, ok := current["retention.ms"]; ok && v != wantRetention {
		diffs = append(diffs, topicSetting{"retention.ms", v, wantRetention})
	}
	if v, ok := current["max.message.bytes"]; ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n < ProduceBatchMaxBytes {
			diffs = append(diffs, topicSetting{"max.message.bytes", v, strconv.Itoa(TopicMaxMessageBytes)})
		}
	}
	if len(diffs) == 0 {
		return
	}
	attrs := []any{"topic", r.cfg.Topic}
	var set, why []string
	for _, d := range diffs {
		attrs = append(attrs, slog.Group(d.key, "current", d.current, "wanted", d.wanted))
		set = append(set, d.key+"="+d.wanted)
		switch d.key {
		case "retention.ms":
			why = append(why, "retention.ms is how long a stopped consumer group can resume where it was "+
				"(if the topic's value is deliberate, start the relay with --topic-retention set to it)")
		case "max.message.bytes":
			why = append(why, "a max.message.bytes below the relay's batches ("+strconv.Itoa(ProduceBatchMaxBytes)+
				" bytes) gets batches refused (MESSAGE_TOO_LARGE) and, in the end, events dead-lettered")
		}
	}
	brokers := "<broker>"
	if bs, ok := r.client.OptValue(kgo.SeedBrokers).([]string); ok && len(bs) > 0 {
		brokers = strings.Join(bs, ",")
	}
	attrs = append(attrs, "why", strings.Join(why, "; "),
		"fix", fmt.Sprintf("kafka-configs --bootstrap-server %s --alter --entity-type topics --entity-name %s --add-config %s",
			brokers, r.cfg.Topic, strings.Join(set, ",")))
	r.log.Warn("the topic exists with settings other than the relay's; the relay never alters an existing topic, change them with the fix command", attrs...)
}
