package relay_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/relay"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/testenv/testkafka"
)

// topicRelay returns a relay for topic on a fresh kfake broker (no
// Postgres: only EnsureTopic is called), an admin client on the broker,
// and the relay's log as JSON lines.
func topicRelay(t *testing.T, cfg relay.Config) (*relay.Relay, *kadm.Client, *testenv.Buffer) {
	t.Helper()
	k := testkafka.Start(t)
	client, err := kgo.NewClient(relay.ClientOptions(k.Brokers)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	var logs testenv.Buffer
	cfg.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	r, err := relay.New(cfg, nil, client)
	if err != nil {
		t.Fatal(err)
	}
	return r, kadm.NewClient(k.Producer), &logs
}

// topicConfigs reads back the topic's retention.ms and max.message.bytes.
func topicConfigs(t *testing.T, adm *kadm.Client, topic string) (retention, maxBytes string) {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		t.Fatalf("describing %s: %v", topic, err)
	}
	for _, c := range rc.Configs {
		switch c.Key {
		case "retention.ms":
			retention = c.MaybeValue()
		case "max.message.bytes":
			maxBytes = c.MaybeValue()
		}
	}
	return retention, maxBytes
}

// warnings returns the WARN records of a JSON log.
func warnings(t *testing.T, logs *testenv.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec["level"] == "WARN" {
			out = append(out, rec)
		}
	}
	return out
}

func TestEnsureTopic_CreatesWithRetentionAndMaxMessageBytes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		retention time.Duration
		want      string
	}{
		{"default", 0, "604800000"},
		{"configured", 36 * time.Hour, "129600000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, adm, logs := topicRelay(t, relay.Config{Topic: topic, Partitions: 3, TopicRetention: tc.retention})
			if err := r.EnsureTopic(context.Background()); err != nil {
				t.Fatal(err)
			}
			ret, maxBytes := topicConfigs(t, adm, topic)
			if ret != tc.want || maxBytes != strconv.Itoa(relay.TopicMaxMessageBytes) {
				t.Errorf("created topic has retention.ms=%s max.message.bytes=%s, want %s and %d", ret, maxBytes, tc.want, relay.TopicMaxMessageBytes)
			}
			// Again, as at every relay start: the topic it made is as it wants.
			if err := r.EnsureTopic(context.Background()); err != nil {
				t.Fatal(err)
			}
			if w := warnings(t, logs); len(w) != 0 {
				t.Errorf("warnings about a topic the relay created itself: %v", w)
			}
		})
	}
}

// TestEnsureTopic_ExistingTopicWithOtherSettingsWarns: a topic made by
// someone else with a day's retention and batches capped below the relay's
// is left alone, and one warning names both settings, their values and the
// command that changes them.
func TestEnsureTopic_ExistingTopicWithOtherSettingsWarns(t *testing.T) {
	t.Parallel()
	r, adm, logs := topicRelay(t, relay.Config{Topic: topic, Partitions: 3})
	day, small := "86400000", "500000"
	resp, err := adm.CreateTopic(context.Background(), 3, -1, map[string]*string{"retention.ms": &day, "max.message.bytes": &small}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := r.EnsureTopic(context.Background()); err != nil {
		t.Fatal(err)
	}
	w := warnings(t, logs)
	if len(w) != 1 {
		t.Fatalf("%d warnings, want one:\n%s", len(w), logs.String())
	}
	got := w[0]
	if got["topic"] != topic {
		t.Errorf("warning names topic %v, want %s", got["topic"], topic)
	}
	for key, want := range map[string][2]string{
		"retention.ms":      {day, "604800000"},
		"max.message.bytes": {small, strconv.Itoa(relay.TopicMaxMessageBytes)},
	} {
		g, _ := got[key].(map[string]any)
		if g["current"] != want[0] || g["wanted"] != want[1] {
			t.Errorf("warning says %s %v, want current %s and wanted %s", key, got[key], want[0], want[1])
		}
	}
	fix, _ := got["fix"].(string)
	if !strings.Contains(fix, "kafka-configs") || !strings.Contains(fix, "--alter") ||
		!strings.Contains(fix, "--entity-name "+topic) || !strings.Contains(fix, "retention.ms=604800000,max.message.bytes=1048588") {
		t.Errorf("fix = %q, want the kafka-configs --alter command setting both", fix)
	}
	if ret, maxBytes := topicConfigs(t, adm, topic); ret != day || maxBytes != small {
		t.Errorf("the relay altered the existing topic: retention.ms=%s max.message.bytes=%s", ret, maxBytes)
	}
}

// TestEnsureTopic_ExistingTopicThatFitsIsQuiet: a larger max.message.bytes
// than the relay's is fine, and a retention matching --topic-retention
// too.
func TestEnsureTopic_ExistingTopicThatFitsIsQuiet(t *testing.T) {
	t.Parallel()
	r, adm, logs := topicRelay(t, relay.Config{Topic: topic, Partitions: 3, TopicRetention: 24 * time.Hour})
	day, big := "86400000", "4194304"
	resp, err := adm.CreateTopic(context.Background(), 3, -1, map[string]*string{"retention.ms": &day, "max.message.bytes": &big}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := r.EnsureTopic(context.Background()); err != nil {
		t.Fatal(err)
	}
	if w := warnings(t, logs); len(w) != 0 {
		t.Errorf("warnings about a topic that fits: %v", w)
	}
}

func TestConfig_TopicRetention(t *testing.T) {
	for _, d := range []time.Duration{-time.Hour, time.Second, time.Minute - time.Millisecond} {
		err := relay.Config{TopicRetention: d}.Validate()
		if err == nil || !strings.Contains(err.Error(), "--topic-retention") || !strings.Contains(err.Error(), "RUNSTREAM_TOPIC_RETENTION") {
			t.Errorf("TopicRetention %v: %v; want an error naming --topic-retention and RUNSTREAM_TOPIC_RETENTION", d, err)
		}
	}
	for _, d := range []time.Duration{0, time.Minute, relay.DefaultTopicRetention} {
		if err := (relay.Config{TopicRetention: d}).Validate(); err != nil {
			t.Errorf("TopicRetention %v: %v", d, err)
		}
	}
	if relay.TopicMaxMessageBytes < relay.ProduceBatchMaxBytes {
		t.Errorf("TopicMaxMessageBytes %d is below the batches' %d", relay.TopicMaxMessageBytes, relay.ProduceBatchMaxBytes)
	}
}
