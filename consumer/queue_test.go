package consumer_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/consumer"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/record"
	"github.com/runstream/runstream/store"
)

// gatedCheckpoints holds the first transaction until gate is closed, and
// records how many events each transaction handled.
type gatedCheckpoints struct {
	inner   consumer.Checkpoints
	gate    chan struct{}
	started chan struct{}
	once    sync.Once

	mu    sync.Mutex
	sizes []int
}

type txSizeKey struct{}

func (g *gatedCheckpoints) Transact(ctx context.Context, group string, fn func(context.Context, consumer.CheckpointTx) error) error {
	first := false
	g.once.Do(func() { first = true })
	if first {
		close(g.started)
		select {
		case <-g.gate:
		case <-ctx.Done(): // the test failed and stops the consumer
			return ctx.Err()
		}
	}
	n := new(int)
	err := g.inner.Transact(ctx, group, func(ctx context.Context, tx consumer.CheckpointTx) error {
		*n = 0
		return fn(context.WithValue(ctx, txSizeKey{}, n), tx)
	})
	if err == nil && *n > 0 {
		g.mu.Lock()
		g.sizes = append(g.sizes, *n)
		g.mu.Unlock()
	}
	return err
}

func (g *gatedCheckpoints) got() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]int(nil), g.sizes...)
}

// polledCounter counts the records the client handed to PollRecords.
type polledCounter struct{ n atomic.Int64 }

func (p *polledCounter) OnFetchRecordUnbuffered(_ *kgo.Record, polled bool) {
	if polled {
		p.n.Add(1)
	}
}

// TestConsumer_QueuedPollsShareATransaction: while a partition's
// transaction runs, the records later polls bring for it wait, and go into
// its next transaction together (in order, each once); past
// MaxQueuedRecords the poll loop waits instead of queueing more.
func TestConsumer_QueuedPollsShareATransaction(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		maxQueued  int
		wantSizes  func(t *testing.T, sizes []int)
		wantPolled int64 // at most, while the first transaction is held
	}{
		{name: "all queued records in one transaction", maxQueued: 100, wantPolled: 25, wantSizes: func(t *testing.T, sizes []int) {
			if len(sizes) != 2 || sizes[0] != 1 || sizes[1] != 24 {
				t.Errorf("transactions of %v events, want [1 24]: the 24 records polled while the first ran belong in one", sizes)
			}
		}},
		{name: "bounded queue", maxQueued: 5, wantPolled: 1 + 5 + 1, wantSizes: func(t *testing.T, sizes []int) {
			for _, n := range sizes {
				if n > 5 {
					t.Errorf("transactions of %v events: one holds more than MaxQueuedRecords (5)", sizes)
				}
			}
			if len(sizes) < 2 || sizes[1] != 5 {
				t.Errorf("transactions of %v events, want the second to take the 5 queued", sizes)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			ctx := context.Background()
			const one = "one-partition"
			adm := kadm.NewClient(f.prod)
			if _, err := adm.CreateTopic(ctx, 1, 1, nil, one); err != nil {
				t.Fatal(err)
			}
			runs := f.runs(t, 5)
			publish := func(recs []store.RunEventRecord) {
				for i := range recs {
					kr, err := record.New(one, &recs[i])
					if err != nil {
						t.Fatal(err)
					}
					if err := f.prod.ProduceSync(ctx, kr).FirstErr(); err != nil {
						t.Fatal(err)
					}
				}
			}
			cps := &gatedCheckpoints{inner: consumer.NewMemoryCheckpoints(), gate: make(chan struct{}), started: make(chan struct{})}
			polled := &polledCounter{}
			rec := &recorder{}
			h := consumer.HandlerFunc(func(ctx context.Context, ev consumer.Event) error {
				*ctx.Value(txSizeKey{}).(*int)++
				return rec.Handle(ctx, ev)
			})
			cfg := consumer.Config{Brokers: f.brokers, Topic: one, Group: "q-" + testenv.RandomID(3), Checkpoints: cps,
				Fetcher: f.store, MaxPollRecords: 1, MaxQueuedRecords: tc.maxQueued,
				ClientOptions: []kgo.Opt{kgo.WithHooks(polled)}}
			start(t, cfg, h)
			publish(runs[0][:1])
			select {
			case <-cps.started:
			case <-time.After(30 * time.Second):
				t.Fatal("the first transaction never started")
			}
			var rest []store.RunEventRecord
			rest = append(rest, runs[0][1:]...)
			for _, r := range runs[1:] {
				rest = append(rest, r...)
			}
			publish(rest)
			if tc.wantPolled == 25 {
				testenv.WaitFor(t, 30*time.Second, "every record polled while the first transaction is held", func() bool {
					return polled.n.Load() == 25
				})
			} else {
				testenv.WaitFor(t, 30*time.Second, "the queue filled", func() bool { return polled.n.Load() >= tc.wantPolled })
				time.Sleep(300 * time.Millisecond) // room for a poll loop that does not wait
				if n := polled.n.Load(); n > tc.wantPolled {
					t.Errorf("%d records polled while the first transaction was held, want at most %d (MaxQueuedRecords %d)", n, tc.wantPolled, tc.maxQueued)
				}
			}
			close(cps.gate)
			testenv.WaitFor(t, 30*time.Second, "every event handled", func() bool {
				total := 0
				for _, n := range cps.got() {
					total += n
				}
				return total >= 25
			})
			tc.wantSizes(t, cps.got())
			for _, r := range runs {
				got := rec.get(r[0].RunID)
				if len(got) != len(r) {
					t.Fatalf("run %s: handled runSeqs %v, want 1..%d once each", r[0].RunID, got, len(r))
				}
				for i, seq := range got {
					if seq != int64(i+1) {
						t.Fatalf("run %s: handled runSeqs %v, want 1..%d in order", r[0].RunID, got, len(r))
					}
				}
			}
		})
	}
}
