package relay_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/testenv/testkafka"
	"github.com/runstream/runstream/store"
)

// kcatPath finds kcat (Debian package kcat, built on librdkafka), or
// skips/fails the test.
func kcatPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("kcat")
	if err != nil {
		testenv.Missing(t, "kcat (apt-get install kcat)")
	}
	return p
}

// kcatMessage is kcat's -J envelope.
type kcatMessage struct {
	Topic     string            `json:"topic"`
	Partition int32             `json:"partition"`
	Offset    int64             `json:"offset"`
	Key       string            `json:"key"`
	Payload   string            `json:"payload"`
	Headers   []string          `json:"headers"`
	headerMap map[string]string `json:"-"`
}

func kcatConsume(t *testing.T, kcat, broker, topic string) []kcatMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, kcat, "-C", "-b", broker, "-t", topic, "-o", "beginning", "-e", "-q", "-J").Output()
	if err != nil {
		t.Fatalf("kcat -C: %v", err)
	}
	var msgs []kcatMessage
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m kcatMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("kcat line %q: %v", sc.Text(), err)
		}
		m.headerMap = map[string]string{}
		for i := 0; i+1 < len(m.Headers); i += 2 {
			m.headerMap[m.Headers[i]] = m.Headers[i+1]
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// TestInterop_KcatReadsTheTopic: librdkafka (kcat) consumes what the relay
// published and sees the keys, headers and JSON values docs/CONSUMERS.md
// describes ("The record").
func TestInterop_KcatReadsTheTopic(t *testing.T) {
	t.Parallel()
	kcat := kcatPath(t)
	f := newFixture(t)
	want := appendRuns(t, f.store, seed(t), 4)
	startRelay(t, f.pool, f.brokers, testConfig())
	c := newConsumer(t, f.brokers)
	c.waitComplete(t, want, 30*time.Second)
	total := int64(0)
	for _, n := range want {
		total += n
	}
	msgs := kcatConsume(t, kcat, f.brokers[0], topic)
	if int64(len(msgs)) < total {
		t.Fatalf("kcat read %d messages, want at least %d", len(msgs), total)
	}
	for _, m := range msgs {
		var rec store.RunEventRecord
		if err := json.Unmarshal([]byte(m.Payload), &rec); err != nil {
			t.Fatalf("kcat payload is not JSON RunEventRecord: %v: %s", err, m.Payload)
		}
		if m.Key != rec.RunID || m.headerMap["eventType"] != rec.EventType || m.headerMap["eventId"] != rec.EventID ||
			m.headerMap["runSeq"] != fmt.Sprint(rec.RunSeq) || m.headerMap["tenantId"] != rec.TenantID ||
			m.headerMap["content-type"] != "application/json" || m.headerMap["schema-version"] != "2.0.0" {
			t.Fatalf("kcat sees key %q headers %v for record %+v", m.Key, m.headerMap, rec)
		}
	}
}

// TestInterop_Murmur2PartitionAgreesWithLibrdkafka produces the same keys
// with kcat (librdkafka, partitioner=murmur2_random, Java-compatible) and
// checks each lands on the partition our relay's client picks.
func TestInterop_Murmur2PartitionAgreesWithLibrdkafka(t *testing.T) {
	t.Parallel()
	kcat := kcatPath(t)
	f := newFixture(t)
	if err := f.cluster.CreateTopic("probe", 12, nil); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for i := range 200 {
		keys = append(keys, fmt.Sprintf("run-%d-%s", i, testenv.RandomID(4)))
	}
	var in strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&in, "%s\t%s\n", k, k)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcat, "-P", "-b", f.brokers[0], "-t", "probe", "-K", "\t",
		"-X", "topic.partitioner=murmur2_random")
	cmd.Stdin = strings.NewReader(in.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kcat -P: %v: %s", err, out)
	}
	msgs := kcatConsume(t, kcat, f.brokers[0], "probe")
	if len(msgs) != len(keys) {
		t.Fatalf("read back %d of %d probe messages", len(msgs), len(keys))
	}
	for _, m := range msgs {
		if want := testkafka.Partition([]byte(m.Key), 12); m.Partition != want {
			t.Fatalf("librdkafka put key %q on partition %d, our murmur2 says %d", m.Key, m.Partition, want)
		}
	}
}
