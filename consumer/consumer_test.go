package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/consumer"
	"github.com/runstream/runstream/consumer/pgcheckpoint"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/testenv/testkafka"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/record"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

const topic = "run-events"

type fixture struct {
	pool    *pgxpool.Pool
	store   *postgres.Store
	brokers []string
	kafka   *testkafka.Broker
	prod    *kgo.Client // kafka.Producer
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	pool, _ := testenv.Postgres(t, 20)
	if _, err := postgres.Migrate(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	st, _ := postgres.New(pool, postgres.Config{})
	k := testkafka.Start(t, kfake.SeedTopics(4, topic), kfake.AllowAutoTopicCreation())
	return &fixture{pool: pool, store: st, brokers: k.Brokers, kafka: k, prod: k.Producer}
}

// runs appends n small runs and returns their stored records.
func (f *fixture) runs(t *testing.T, n int) [][]store.RunEventRecord {
	t.Helper()
	ctx := context.Background()
	var out [][]store.RunEventRecord
	for range n {
		id := workload.NewIdentity("tenant_a")
		evs := []store.RunEventWrite{
			workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil),
			workload.Event(id, store.EventStepStarted, "s", 1, 1, time.Now(), nil),
			workload.Event(id, "RunCostReported", "", 1, 1, time.Now(), map[string]any{"cents": 3}),
			workload.Event(id, store.EventStepCompleted, "s", 1, 1, time.Now(), nil),
			workload.Event(id, store.EventRunCompleted, "", 1, 1, time.Now(), nil),
		}
		for _, r := range f.store.AppendBatch(ctx, evs) {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
		recs, err := f.store.FetchEvents(ctx, id.RunID, store.FetchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, recs)
	}
	return out
}

func (f *fixture) publish(t *testing.T, recs ...store.RunEventRecord) {
	t.Helper()
	f.kafka.Publish(t, topic, recs)
}

// recorder is a handler that records what it saw.
type recorder struct {
	mu   sync.Mutex
	seen map[string][]int64
	evs  []consumer.Event
}

func (r *recorder) Handle(_ context.Context, ev consumer.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil {
		r.seen = map[string][]int64{}
	}
	r.seen[ev.RunID] = append(r.seen[ev.RunID], ev.RunSeq)
	r.evs = append(r.evs, ev)
	return nil
}

func (r *recorder) get(id string) []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int64(nil), r.seen[id]...)
}

func start(t *testing.T, cfg consumer.Config, h consumer.Handler) (stop func() error) {
	t.Helper()
	c, err := consumer.New(cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	var rerr error
	stop = func() error {
		once.Do(func() { cancel(); rerr = <-done })
		return rerr
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// TestConsumer_DuplicatesAndRedeliveryReachTheHandlerOnce produces every
// record twice, then restarts the consumer and produces them a third time:
// with Postgres checkpoints the handler's table has each (runId, runSeq)
// exactly once, in order.
func TestConsumer_DuplicatesAndRedeliveryReachTheHandlerOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	cps, err := pgcheckpoint.New(ctx, f.pool)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Exec(ctx, `CREATE TABLE handled (run_id text, run_seq bigint, event_type text)`); err != nil {
		t.Fatal(err)
	}
	sink := consumer.HandlerFunc(func(ctx context.Context, ev consumer.Event) error {
		_, err := pgcheckpoint.Tx(ctx).Exec(ctx, `INSERT INTO handled VALUES ($1, $2, $3)`, ev.RunID, ev.RunSeq, ev.EventType)
		return err
	})
	runs := f.runs(t, 6)
	var all []store.RunEventRecord
	for _, r := range runs {
		all = append(all, r...)
	}
	f.publish(t, all...)
	f.publish(t, all...)
	cfg := consumer.Config{Brokers: f.brokers, Topic: topic, Group: "etl-" + testenv.RandomID(3), Checkpoints: cps, Fetcher: f.store}
	stop := start(t, cfg, sink)
	count := func() int {
		var n int
		_ = f.pool.QueryRow(ctx, `SELECT count(*) FROM handled`).Scan(&n)
		return n
	}
	testenv.WaitFor(t, 30*time.Second, "every event handled", func() bool { return count() >= len(all) })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// Redelivery after a restart (and a third copy of everything).
	f.publish(t, all...)
	start(t, cfg, sink)
	cl, _ := kgo.NewClient(kgo.SeedBrokers(f.brokers...))
	defer cl.Close()
	testenv.WaitFor(t, 30*time.Second, "the third copy consumed", func() bool {
		rep, err := lagOf(ctx, cl, cfg.Group)
		return err == nil && rep == 0
	})
	var dups int
	if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT run_id, run_seq FROM handled GROUP BY 1, 2 HAVING count(*) > 1) d`).Scan(&dups); err != nil {
		t.Fatal(err)
	}
	if dups != 0 || count() != len(all) {
		t.Fatalf("%d (runId, runSeq) handled more than once; %d rows for %d events", dups, count(), len(all))
	}
	var unknown int
	_ = f.pool.QueryRow(ctx, `SELECT count(*) FROM handled WHERE event_type = 'RunCostReported'`).Scan(&unknown)
	if unknown != len(runs) {
		t.Fatalf("unknown event types delivered %d times, want %d (forward compatibility)", unknown, len(runs))
	}
}

// TestConsumer_GapIsFilledFromTheStore: runSeq 3 never reaches the topic;
// the handler still sees 1..5 in order, 3 fetched from the store.
func TestConsumer_GapIsFilledFromTheStore(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	run := f.runs(t, 1)[0]
	f.publish(t, run[0], run[1], run[3], run[4])
	rec := &recorder{}
	var gaps []string
	var mu sync.Mutex
	cfg := consumer.Config{Brokers: f.brokers, Topic: topic, Group: "g-" + testenv.RandomID(3), Fetcher: f.store,
		Hooks: consumer.Hooks{Gap: func(id string, after, before int64) {
			mu.Lock()
			gaps = append(gaps, fmt.Sprintf("%d..%d", after, before))
			mu.Unlock()
		}}}
	start(t, cfg, rec)
	testenv.WaitFor(t, 30*time.Second, "the whole run", func() bool { return len(rec.get(run[0].RunID)) == 5 })
	if got := fmt.Sprint(rec.get(run[0].RunID)); got != "[1 2 3 4 5]" {
		t.Fatalf("handler saw %s, want [1 2 3 4 5]", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(gaps) != "[2..4]" {
		t.Fatalf("gap callback saw %v, want [2..4]", gaps)
	}
	for _, ev := range rec.evs {
		if ev.RunSeq == 3 && !ev.FromStore() {
			t.Fatal("event 3 is not marked as fetched from the store")
		}
	}
}

// TestConsumer_PoisonGoesToTheDLQ: an undecodable record and an event whose
// handler always fails go to run-events.dlq with headers saying why and
// where from; the partition moves on.
func TestConsumer_PoisonGoesToTheDLQ(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	run := f.runs(t, 1)[0]
	f.publish(t, run[0], run[1])
	garbage := &kgo.Record{Topic: topic, Key: []byte(run[0].RunID), Value: []byte(`{not json`)}
	if err := f.prod.ProduceSync(context.Background(), garbage).FirstErr(); err != nil {
		t.Fatal(err)
	}
	f.publish(t, run[2], run[3], run[4])
	rec := &recorder{}
	failing := consumer.HandlerFunc(func(ctx context.Context, ev consumer.Event) error {
		if ev.RunSeq == 2 {
			return errors.New("the warehouse refused it")
		}
		return rec.Handle(ctx, ev)
	})
	cfg := consumer.Config{Brokers: f.brokers, Topic: topic, Group: "g-" + testenv.RandomID(3), Fetcher: f.store,
		MaxAttempts: 3, BackoffBase: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond}
	start(t, cfg, failing)
	testenv.WaitFor(t, 30*time.Second, "the run's later events", func() bool { return len(rec.get(run[0].RunID)) == 4 })
	if got := fmt.Sprint(rec.get(run[0].RunID)); got != "[1 3 4 5]" {
		t.Fatalf("handler saw %s, want [1 3 4 5] (2 dead-lettered, never redelivered through a gap fill)", got)
	}
	dlq, err := kgo.NewClient(kgo.SeedBrokers(f.brokers...), kgo.ConsumeTopics(topic+".dlq"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer dlq.Close()
	var got []*kgo.Record
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for len(got) < 2 && ctx.Err() == nil {
		dlq.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, r) })
	}
	if len(got) != 2 {
		t.Fatalf("dead-letter topic holds %d records, want 2", len(got))
	}
	reasons := ""
	for _, r := range got {
		h := map[string]string{}
		for _, x := range r.Headers {
			h[x.Key] = string(x.Value)
		}
		if h["dlq-source-topic"] != topic || h["dlq-source-offset"] == "" || h["dlq-group"] != cfg.Group {
			t.Fatalf("dead letter headers %v do not say where it came from", h)
		}
		reasons += h["dlq-reason"] + ";"
	}
	if !strings.Contains(reasons, "undecodable") || !strings.Contains(reasons, "warehouse refused") {
		t.Fatalf("dead letter reasons %q", reasons)
	}
}

func TestConsumer_StopOnPoison(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if err := f.prod.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Key: []byte("r"), Value: []byte(`[]`)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	c, err := consumer.New(consumer.Config{Brokers: f.brokers, Topic: topic, Group: "g-" + testenv.RandomID(3),
		Fetcher: f.store, StopOnPoison: true}, &recorder{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Run(ctx); !errors.Is(err, consumer.ErrPoison) {
		t.Fatalf("Run = %v, want ErrPoison", err)
	}
}

func TestConfig_Validate(t *testing.T) {
	for _, c := range []consumer.Config{{}, {Brokers: []string{"x"}}, {Brokers: []string{"x"}, Group: "g"}} {
		if _, err := consumer.New(c, &recorder{}); err == nil {
			t.Errorf("New(%+v) accepted an incomplete config", c)
		}
	}
}

// TestConsumer_HeadersSkipDuplicatesWithoutDecoding: a record at or below
// its run's checkpoint is skipped on its key and runSeq header alone (a
// duplicate whose value is garbage is counted as a duplicate, not
// dead-lettered); records without headers are decoded and work as before;
// a record past its checkpoint that is undecodable, or whose value
// disagrees with its headers, is dead-lettered.
func TestConsumer_HeadersSkipDuplicatesWithoutDecoding(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	run := f.runs(t, 1)[0]
	id := run[0].RunID
	produce := func(rs ...*kgo.Record) {
		t.Helper()
		for _, r := range rs {
			r.Topic = topic
		}
		if err := f.prod.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	withSeq := func(seq string, value []byte) *kgo.Record {
		return &kgo.Record{Key: []byte(id), Value: value, Headers: []kgo.RecordHeader{{Key: record.HeaderRunSeq, Value: []byte(seq)}}}
	}
	bare := func(rec store.RunEventRecord) *kgo.Record {
		kr, err := record.New(topic, &rec)
		if err != nil {
			t.Fatal(err)
		}
		kr.Headers = nil
		return kr
	}
	f.publish(t, run[0], run[1], run[2])
	produce(
		withSeq("2", []byte(`{garbage`)), // a duplicate: never decoded
		bare(run[3]),                     // no headers: decoded
		bare(run[3]),                     // a duplicate found by decoding
		withSeq("5", []byte(`{garbage`)), // past the checkpoint: poison
	)
	wrong, _ := record.New(topic, &run[4])
	wrong.Headers = []kgo.RecordHeader{{Key: record.HeaderRunSeq, Value: []byte("6")}} // the value says 5
	produce(wrong)
	f.publish(t, run[4])

	rec := &recorder{}
	var mu sync.Mutex
	var dups []string
	var dead int
	cfg := consumer.Config{Brokers: f.brokers, Topic: topic, Group: "g-" + testenv.RandomID(3), Fetcher: f.store,
		Hooks: consumer.Hooks{
			Duplicate: func(ev *consumer.Event) {
				mu.Lock()
				defer mu.Unlock()
				dups = append(dups, fmt.Sprintf("%d:%s", ev.RunSeq, ev.EventType))
			},
			DeadLettered: func(string, int32, int64, string) {
				mu.Lock()
				defer mu.Unlock()
				dead++
			},
		}}
	start(t, cfg, rec)
	testenv.WaitFor(t, 30*time.Second, "the whole run", func() bool { return len(rec.get(id)) == 5 })
	if got := fmt.Sprint(rec.get(id)); got != "[1 2 3 4 5]" {
		t.Fatalf("handler saw %s, want [1 2 3 4 5]", got)
	}
	mu.Lock()
	if got := fmt.Sprint(dups); got != "[2: 4:"+run[3].EventType+"]" {
		t.Errorf("duplicates %s, want [2: 4:%s] (the first skipped undecoded, the second decoded)", got, run[3].EventType)
	}
	mu.Unlock()

	dlq, err := kgo.NewClient(kgo.SeedBrokers(f.brokers...), kgo.ConsumeTopics(topic+".dlq"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer dlq.Close()
	var got []string
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for len(got) < 2 && ctx.Err() == nil {
		dlq.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			for _, h := range r.Headers {
				if h.Key == "dlq-reason" {
					got = append(got, string(h.Value))
				}
			}
		})
	}
	if len(got) != 2 || !strings.Contains(got[0], "undecodable") || !strings.Contains(got[1], "disagree") {
		t.Fatalf("dead letters %q, want the garbage at runSeq 5 and the record whose header disagrees", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if dead != 2 {
		t.Fatalf("DeadLettered hook called %d times, want 2", dead)
	}
}

// TestConsumer_DecodeDuplicates: with DecodeDuplicates, a duplicate's value
// is decoded first, so a garbage one is poison.
func TestConsumer_DecodeDuplicates(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	run := f.runs(t, 1)[0]
	f.publish(t, run[0], run[1])
	garbage := &kgo.Record{Topic: topic, Key: []byte(run[0].RunID), Value: []byte(`{garbage`),
		Headers: []kgo.RecordHeader{{Key: record.HeaderRunSeq, Value: []byte("1")}}}
	if err := f.prod.ProduceSync(context.Background(), garbage).FirstErr(); err != nil {
		t.Fatal(err)
	}
	c, err := consumer.New(consumer.Config{Brokers: f.brokers, Topic: topic, Group: "g-" + testenv.RandomID(3),
		Fetcher: f.store, StopOnPoison: true, DecodeDuplicates: true}, &recorder{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Run(ctx); !errors.Is(err, consumer.ErrPoison) {
		t.Fatalf("Run = %v, want ErrPoison", err)
	}
}
