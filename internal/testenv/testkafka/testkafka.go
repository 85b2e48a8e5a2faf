// Package testkafka gives a test an in-process Kafka-protocol broker
// (franz-go's kfake) and a producer that publishes as the relay does. It
// is apart from testenv because it imports the relay and the store, whose
// own tests use testenv.
package testkafka

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/relay"
	"github.com/runstream/runstream/record"
	"github.com/runstream/runstream/store"
)

// Broker is an in-process Kafka-protocol broker (franz-go's kfake)
// for one test, with a producer that publishes as the relay does.
type Broker struct {
	// Cluster is the broker, for fault injection (Cluster.Fault).
	Cluster *kfake.Cluster
	// Brokers are its addresses, to give clients.
	Brokers []string
	// Producer has the relay's client options (murmur2 key partitioning,
	// the idempotent producer).
	Producer *kgo.Client
}

// Start starts a one-broker kfake cluster with opts (kfake.SeedTopics,
// kfake.AllowAutoTopicCreation, ...) and closes it, and its producer, when
// t ends.
func Start(t testing.TB, opts ...kfake.Opt) *Broker {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatalf("starting kfake: %v", err)
	}
	t.Cleanup(c.Close)
	prod, err := kgo.NewClient(relay.ClientOptions(c.ListenAddrs())...)
	if err != nil {
		t.Fatalf("creating the producer: %v", err)
	}
	t.Cleanup(prod.Close)
	return &Broker{Cluster: c, Brokers: c.ListenAddrs(), Producer: prod}
}

// Publish produces recs to topic as the relay would (record.New: key,
// headers and value) and waits until the broker acknowledged them all.
func (k *Broker) Publish(t testing.TB, topic string, recs []store.RunEventRecord) {
	t.Helper()
	krs := make([]*kgo.Record, 0, len(recs))
	for i := range recs {
		kr, err := record.New(topic, &recs[i])
		if err != nil {
			t.Fatal(err)
		}
		krs = append(krs, kr)
	}
	if err := k.Producer.ProduceSync(context.Background(), krs...).FirstErr(); err != nil {
		t.Fatalf("publishing %d records to %s: %v", len(krs), topic, err)
	}
}

// Partition is the partition Kafka's default partitioner gives a keyed
// record: toPositive(murmur2(key)) % partitions. It is written from the
// Java source (org.apache.kafka.common.utils.Utils.murmur2), not taken
// from franz-go, so tests can check the relay's partitioning against it
// and aim at a run's partition.
func Partition(key []byte, partitions int32) int32 {
	return (Murmur2(key) & 0x7fffffff) % partitions
}

// Murmur2 is org.apache.kafka.common.utils.Utils.murmur2.
func Murmur2(key []byte) int32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
	)
	n := len(key)
	h := seed ^ uint32(n)
	for i := 0; i+4 <= n; i += 4 {
		k := uint32(key[i]) | uint32(key[i+1])<<8 | uint32(key[i+2])<<16 | uint32(key[i+3])<<24
		k *= m
		k ^= k >> 24
		k *= m
		h *= m
		h ^= k
	}
	tail := key[n-n%4:]
	switch len(tail) {
	case 3:
		h ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(tail[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}
