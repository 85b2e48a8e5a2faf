package harness

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/devbroker"
	"github.com/runstream/runstream/internal/relay"
	"github.com/runstream/runstream/internal/retry"
)

// InProcessBroker is [Broker.Name] for franz-go's kfake in this process.
const InProcessBroker = "in-process kfake"

// BrokerConfig configures [OpenBroker].
type BrokerConfig struct {
	// Addrs of a running Kafka-protocol cluster; empty starts franz-go's
	// kfake in this process on 127.0.0.1:0, in memory (as `runstream dev`
	// runs it, without a data directory).
	Addrs []string
	// Partitions of the fresh topic.
	Partitions int32
	// TopicPrefix names the fresh topic: TopicPrefix<random>.
	TopicPrefix string
	// TopicConfigs are the topic's configs (nil: the broker's defaults).
	TopicConfigs map[string]*string
	// KeepTopic leaves the topic on an external cluster at Close, for
	// inspection.
	KeepTopic bool
}

// Broker is a bench's Kafka-protocol broker and its fresh topic.
type Broker struct {
	// Addrs are the bootstrap brokers, Name "in-process kfake" or them.
	Addrs []string
	Name  string
	// Topic is the fresh topic, Adm an admin client of the cluster.
	Topic string
	Adm   *kadm.Client

	cfg       BrokerConfig
	inProcess *devbroker.Broker
	admin     *kgo.Client
}

// OpenBroker starts an in-process broker unless cfg.Addrs names one, and
// creates a fresh topic on it.
func OpenBroker(ctx context.Context, cfg BrokerConfig) (_ *Broker, err error) {
	b := &Broker{Addrs: cfg.Addrs, Name: strings.Join(cfg.Addrs, ","), cfg: cfg}
	defer func() {
		if err != nil {
			err = errors.Join(err, b.Close(ctx))
		}
	}()
	if len(b.Addrs) == 0 {
		if b.inProcess, err = devbroker.Start(devbroker.Config{Addr: "127.0.0.1:0", Partitions: cfg.Partitions}); err != nil {
			return nil, err
		}
		b.Addrs, b.Name = b.inProcess.Addrs(), InProcessBroker
	}
	if b.admin, err = kgo.NewClient(kgo.SeedBrokers(b.Addrs...)); err != nil {
		return nil, fmt.Errorf("creating the Kafka admin client for %v: %w", b.Addrs, err)
	}
	b.Adm = kadm.NewClient(b.admin)
	topic := cfg.TopicPrefix + RandomHex(6)
	resp, err := b.Adm.CreateTopic(ctx, cfg.Partitions, -1, cfg.TopicConfigs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return nil, fmt.Errorf("creating topic %s (%d partitions) on %v: %w", topic, cfg.Partitions, b.Addrs, err)
	}
	b.Topic = topic
	return b, nil
}

// Close deletes the topic from an external cluster (unless KeepTopic) and
// stops the in-process broker, also after ctx was cancelled. It is safe on
// a partly opened Broker and more than once.
func (b *Broker) Close(ctx context.Context) error {
	var err error
	if b.Adm != nil && b.Topic != "" && b.inProcess == nil && !b.cfg.KeepTopic {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		if _, derr := b.Adm.DeleteTopic(dctx, b.Topic); derr != nil {
			err = fmt.Errorf("deleting bench topic %s: %w", b.Topic, derr)
		}
		cancel()
	}
	if b.admin != nil {
		b.admin.Close()
		b.admin, b.Adm = nil, nil
	}
	if b.inProcess != nil {
		b.inProcess.Close()
		b.inProcess = nil
	}
	return err
}

// EndOffsets returns the topic's end offset per partition and their sum.
func (b *Broker) EndOffsets(ctx context.Context) (map[int32]int64, int64, error) {
	lo, err := b.Adm.ListEndOffsets(ctx, b.Topic)
	if err == nil {
		err = lo.Error()
	}
	if err != nil {
		return nil, 0, fmt.Errorf("listing the end offsets of %s: %w", b.Topic, err)
	}
	out := map[int32]int64{}
	var sum int64
	lo.Each(func(o kadm.ListedOffset) {
		out[o.Partition] = o.Offset
		sum += o.Offset
	})
	return out, sum, nil
}

// CommittedSum is the sum of group's committed offsets on the topic (0
// before its first commit).
func (b *Broker) CommittedSum(ctx context.Context, group string) (int64, error) {
	resp, err := b.Adm.FetchOffsets(ctx, group)
	if err != nil {
		return 0, fmt.Errorf("fetching the committed offsets of group %s: %w", group, err)
	}
	var sum int64
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Topic == b.Topic && o.Err == nil && o.At > 0 {
			sum += o.At
		}
	})
	return sum, nil
}

// Fill produces n records to the topic, record(i) building the i-th (with
// record.New, so it is what the relay would publish), with the relay's
// client options (murmur2 key partitioning) and extra, reporting progress
// as phase. It checks that the topic then holds n records and returns the
// records' mean value size.
func (b *Broker) Fill(ctx context.Context, n int, record func(i int) (*kgo.Record, error),
	progress func(PhaseProgress), phase string, extra ...kgo.Opt) (float64, error) {
	cl, err := kgo.NewClient(append(relay.ClientOptions(b.Addrs), extra...)...)
	if err != nil {
		return 0, fmt.Errorf("creating the bench's producer: %w", err)
	}
	defer cl.Close()
	var acked, valueBytes atomic.Int64
	var firstErr atomic.Pointer[error]
	stop := PhaseReporter(progress, phase, int64(n), acked.Load)
	defer stop()
	for i := 0; i < n && ctx.Err() == nil && firstErr.Load() == nil; i++ {
		kr, err := record(i)
		if err != nil {
			return 0, err
		}
		valueBytes.Add(int64(len(kr.Value)))
		cl.Produce(ctx, kr, func(_ *kgo.Record, err error) {
			if err != nil {
				firstErr.CompareAndSwap(nil, &err)
			}
			acked.Add(1)
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, fmt.Errorf("producing the topic (%s): %w", phase, err)
	}
	if p := firstErr.Load(); p != nil {
		return 0, fmt.Errorf("producing the topic (%s): %w", phase, *p)
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("bench interrupted while filling the topic: %w", err)
	}
	_, end, err := b.EndOffsets(ctx)
	if err != nil {
		return 0, err
	}
	if end != int64(n) {
		return 0, fmt.Errorf("the topic holds %d records after producing %d (%s)", end, n, phase)
	}
	return float64(valueBytes.Load()) / float64(max(n, 1)), nil
}

// Wait configures [Broker.WaitCommitted].
type Wait struct {
	// Group is the consumer group, End the committed offsets' sum to wait
	// for.
	Group string
	End   int64
	// Who names the consumer in errors: "the projector", "the ETL".
	Who string
	// Phase names the wait in progress reports and errors.
	Phase string
	// Poll is the time between two readings of the committed offsets.
	Poll time.Duration
	// Stall fails the wait when the group commits nothing for this long,
	// rather than hanging.
	Stall time.Duration
	// Exited, called at every poll, reports the consumer stopping on its
	// own.
	Exited func() error
	// Sample, when set, runs at every poll (a memory reading).
	Sample   func()
	Progress func(PhaseProgress)
}

// WaitCommitted polls until w.Group's committed offsets on the topic add
// up to w.End.
func (b *Broker) WaitCommitted(ctx context.Context, w Wait) error {
	var committed atomic.Int64
	stop := PhaseReporter(w.Progress, w.Phase, w.End, committed.Load)
	defer stop()
	last, lastChange := int64(-1), time.Now()
	var lastErr error
	for {
		if err := w.Exited(); err != nil {
			return err
		}
		if w.Sample != nil {
			w.Sample()
		}
		n, err := b.CommittedSum(ctx, w.Group)
		if err != nil {
			lastErr = err // a group that has not joined yet; the stall check bounds it
		}
		committed.Store(n)
		if n >= w.End {
			return nil
		}
		if n != last {
			last, lastChange = n, time.Now()
		}
		if time.Since(lastChange) > w.Stall {
			return fmt.Errorf("%s committed nothing for %v: %d of %d records committed (last error: %v)",
				w.Who, w.Stall, n, w.End, lastErr)
		}
		if !retry.Sleep(ctx, w.Poll) {
			return fmt.Errorf("bench interrupted during the %s: %w", w.Phase, ctx.Err())
		}
	}
}

// Consume reads cl's records in a goroutine, calling each with every
// record and the time its fetch returned, until stop is called. stop
// waits for the goroutine (what each wrote is the caller's then) and may
// be called more than once.
func Consume(ctx context.Context, cl *kgo.Client, each func(r *kgo.Record, at time.Time)) (stop func()) {
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for cctx.Err() == nil {
			fs := cl.PollFetches(cctx)
			now := time.Now()
			fs.EachRecord(func(r *kgo.Record) { each(r, now) })
		}
	}()
	return sync.OnceFunc(func() { cancel(); <-done })
}
