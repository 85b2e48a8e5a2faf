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

// Publish produces recs to topic as the relay would (relay.Record: key,
// headers and value) and waits until the broker acknowledged them all.
func (k *Broker) Publish(t testing.TB, topic string, recs []store.RunEventRecord) {
	t.Helper()
	krs := make([]*kgo.Record, 0, len(recs))
	for i := range recs {
		kr, err := relay.Record(topic, &recs[i])
		if err != nil {
			t.Fatal(err)
		}
		krs = append(krs, kr)
	}
	if err := k.Producer.ProduceSync(context.Background(), krs...).FirstErr(); err != nil {
		t.Fatalf("publishing %d records to %s: %v", len(krs), topic, err)
	}
}
