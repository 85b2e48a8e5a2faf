// Package devbroker runs franz-go's kfake, a real Kafka-protocol broker,
// inside the process for `runstream dev` and tests. With a data directory
// it persists topics, records and committed offsets across restarts.
package devbroker

import (
	"fmt"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Config configures the embedded broker.
type Config struct {
	// Addr to listen on; empty means 127.0.0.1:9092.
	Addr string
	// DataDir persists the broker's state; empty means in memory only.
	DataDir string
	// Partitions is the default partition count of auto-created topics; 0
	// means 12.
	Partitions int32
}

// Broker is a running embedded broker.
type Broker struct {
	cluster *kfake.Cluster
	addrs   []string
}

// Start starts the broker. Close it when done.
func Start(cfg Config) (*Broker, error) {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:9092"
	}
	if cfg.Partitions == 0 {
		cfg.Partitions = 12
	}
	host, portStr, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("embedded broker address %q must be host:port: %w", cfg.Addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("embedded broker port %q: %w", portStr, err)
	}
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.Ports(port),
		kfake.DefaultNumPartitions(int(cfg.Partitions)),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) {
			return net.Listen(network, net.JoinHostPort(host, portStr))
		}),
	}
	if cfg.DataDir != "" {
		opts = append(opts, kfake.DataDir(cfg.DataDir))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("starting the embedded Kafka broker on %s (is another process using the port? set RUNSTREAM_KAFKA_BROKERS to use a real cluster): %w", cfg.Addr, err)
	}
	return &Broker{cluster: c, addrs: c.ListenAddrs()}, nil
}

// Addrs are the broker addresses to give clients.
func (b *Broker) Addrs() []string { return b.addrs }

// Cluster exposes kfake for fault injection in tests.
func (b *Broker) Cluster() *kfake.Cluster { return b.cluster }

// Close stops the broker, flushing its data directory.
func (b *Broker) Close() { b.cluster.Close() }
