package relay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runstream/runstream/internal/relay"
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
	schema  string
	store   *postgres.Store
	cluster *kfake.Cluster
	brokers []string
}

func newFixture(t *testing.T, kopts ...kfake.Opt) *fixture {
	t.Helper()
	pool, schema := testenv.Postgres(t, 40)
	if _, err := postgres.Migrate(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	st, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	k := testkafka.Start(t, kopts...)
	return &fixture{pool: pool, schema: schema, store: st, cluster: k.Cluster, brokers: k.Brokers}
}

func testConfig() relay.Config {
	return relay.Config{Topic: topic, PollInterval: 50 * time.Millisecond, RebalanceInterval: 100 * time.Millisecond,
		StallWarning: 300 * time.Millisecond,
		BackoffBase:  10 * time.Millisecond, BackoffMax: 200 * time.Millisecond, BatchSize: 500}
}

type running struct {
	relay  *relay.Relay
	cancel context.CancelFunc
	done   chan error
	reg    *prometheus.Registry
	once   sync.Once
	err    error
}

// stop cancels the relay and waits for Run to return (at most 20s).
func (r *running) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	r.once.Do(func() {
		select {
		case r.err = <-r.done:
		case <-time.After(20 * time.Second):
			r.err = errors.New("relay did not stop within 20s of cancellation")
		}
	})
	if r.err != nil {
		t.Fatalf("relay: %v", r.err)
	}
}

// startRelay starts a relay; setup, if any, is applied before Run.
func startRelay(t *testing.T, pool *pgxpool.Pool, brokers []string, cfg relay.Config, setup ...func(*relay.Relay)) *running {
	t.Helper()
	client, err := kgo.NewClient(append(relay.ClientOptions(brokers), kgo.RecordDeliveryTimeout(3*time.Second))...)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	cfg.Registerer = reg
	r, err := relay.New(cfg, pool, client)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range setup {
		f(r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx); client.Close() }()
	run := &running{relay: r, cancel: cancel, done: done, reg: reg}
	t.Cleanup(func() { run.stop(t) })
	return run
}

// appendRuns appends n generated runs and returns how many events each
// run has in the store.
func appendRuns(t *testing.T, st *postgres.Store, rng *rand.Rand, n int) map[string]int64 {
	t.Helper()
	want := map[string]int64{}
	var all []store.RunEventWrite
	for range n {
		all = append(all, workload.Run(rng, "tenant_a", workload.Options{})...)
	}
	for i := 0; i < len(all); i += 200 {
		for _, r := range st.AppendBatch(context.Background(), all[i:min(i+200, len(all))]) {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			if r.Result.Persisted {
				want[all[i].RunID] = 0
			}
		}
	}
	for _, w := range all {
		want[w.RunID] = 0
	}
	for id := range want {
		recs, err := st.FetchEvents(context.Background(), id, store.FetchOptions{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		want[id] = int64(len(recs))
	}
	return want
}

// consumer reads the topic from the start, collecting each run's runSeqs in
// topic order.
type consumer struct {
	client *kgo.Client
	mu     sync.Mutex
	seqs   map[string][]int64
	recs   []*kgo.Record
}

func newConsumer(t *testing.T, brokers []string) *consumer {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &consumer{client: cl, seqs: map[string][]int64{}}
}

// poll fetches once (briefly).
func (c *consumer) poll(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	fs := c.client.PollFetches(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	fs.EachRecord(func(r *kgo.Record) {
		seq, err := strconv.ParseInt(header(r, "runSeq"), 10, 64)
		if err != nil {
			t.Errorf("record without a numeric runSeq header: %v", r.Headers)
		}
		c.seqs[string(r.Key)] = append(c.seqs[string(r.Key)], seq)
		c.recs = append(c.recs, r)
	})
}

func header(r *kgo.Record, k string) string {
	for _, h := range r.Headers {
		if h.Key == k {
			return string(h.Value)
		}
	}
	return ""
}

// complete reports whether every run's events 1..want[run] were seen.
func (c *consumer) complete(want map[string]int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, n := range want {
		seen := map[int64]bool{}
		for _, s := range c.seqs[id] {
			seen[s] = true
		}
		for s := int64(1); s <= n; s++ {
			if !seen[s] {
				return false
			}
		}
	}
	return true
}

func (c *consumer) waitComplete(t *testing.T, want map[string]int64, timeout time.Duration) {
	t.Helper()
	testenv.WaitFor(t, timeout, "every event on the topic", func() bool {
		c.poll(t)
		return c.complete(want)
	})
}

// checkOrder asserts per-run order: duplicates are allowed (at least
// once), but the first time each runSeq appears, it is in runSeq order, so
// a consumer deduplicating by runSeq sees every run in order.
func (c *consumer) checkOrder(t *testing.T) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, seqs := range c.seqs {
		seen := map[int64]bool{}
		var firsts []int64
		for _, s := range seqs {
			if !seen[s] {
				seen[s] = true
				firsts = append(firsts, s)
			}
		}
		for i := 1; i < len(firsts); i++ {
			if firsts[i] < firsts[i-1] {
				t.Fatalf("run %s: runSeq %d first appeared after %d (topic order %v): per-run order broken", id, firsts[i], firsts[i-1], seqs)
			}
		}
	}
}

func outboxRows(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func seed(t *testing.T) *rand.Rand {
	s := uint64(time.Now().UnixNano())
	if v := os.Getenv("RELAY_SEED"); v != "" {
		s, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (rerun with RELAY_SEED=%d)", s, s)
	return rand.New(rand.NewPCG(s, s))
}

func TestRelay_DeliversEveryEventInOrderWithTheRecordFormat(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	want := appendRuns(t, f.store, seed(t), 20)
	startRelay(t, f.pool, f.brokers, testConfig())
	c := newConsumer(t, f.brokers)
	c.waitComplete(t, want, 30*time.Second)
	c.checkOrder(t)
	testenv.WaitFor(t, 10*time.Second, "the outbox to drain", func() bool { return outboxRows(t, f.pool) == 0 })

	_, recordSchema := testenv.PeerSchemas(t)
	for _, r := range c.recs[:min(len(c.recs), 200)] {
		if err := testenv.ValidateJSON(recordSchema, r.Value); err != nil {
			t.Fatalf("the peer's v2 RunEventRecord schema rejects our Kafka value %s: %v", r.Value, err)
		}
		var rec store.RunEventRecord
		if err := json.Unmarshal(r.Value, &rec); err != nil {
			t.Fatalf("value is not a RunEventRecord: %v", err)
		}
		if string(r.Key) != rec.RunID {
			t.Fatalf("key %q, value runId %q", r.Key, rec.RunID)
		}
		stored, err := f.store.FetchEvents(context.Background(), rec.RunID, store.FetchOptions{AfterSeq: rec.RunSeq - 1, Limit: 1})
		if err != nil || len(stored) != 1 {
			t.Fatal(err)
		}
		b, _ := json.Marshal(stored[0])
		if !bytes.Equal(b, r.Value) {
			t.Fatalf("value differs from the stored record:\n got %s\nwant %s", r.Value, b)
		}
		for k, v := range map[string]string{"eventType": rec.EventType, "eventId": rec.EventID,
			"runSeq": strconv.FormatInt(rec.RunSeq, 10), "tenantId": rec.TenantID,
			"content-type": "application/json", "schema-version": "2.0.0"} {
			if got := header(r, k); got != v {
				t.Fatalf("header %s = %q, want %q", k, got, v)
			}
		}
		if want := testkafka.Partition(r.Key, 12); r.Partition != want {
			t.Fatalf("run %s on partition %d; Kafka's murmur2 partitioner picks %d", r.Key, r.Partition, want)
		}
	}
}

// TestRelay_LateCommitIsDelivered holds an append transaction open while
// later ones commit: a relay that kept a cursor would skip its row.
func TestRelay_LateCommitIsDelivered(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	startRelay(t, f.pool, f.brokers, testConfig())
	late := workload.Event(workload.NewIdentity("tenant_a"), store.EventRunStarted, "", 1, 1, time.Now(), nil)
	tx, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var status int
	if err := tx.QueryRow(ctx, `SELECT o_status FROM runstream_append($1,$2,$3,$4,$5,$6,$7,$8,$9,NULL,1,1,$10,NULL,$11)`,
		late.RunID, late.TenantID, late.ProjectID, late.EnvironmentID, late.PlanID, late.PlanVersion,
		late.EventID, late.EventType, late.IdempotencyKey, late.EmittedAt, postgres.ShardOf(late.RunID)).Scan(&status); err != nil || status != 0 {
		t.Fatalf("append in the held transaction: %v status %d", err, status)
	}
	want := appendRuns(t, f.store, seed(t), 5) // ids after the held row's, committed first
	c := newConsumer(t, f.brokers)
	c.waitComplete(t, want, 30*time.Second)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	want[late.RunID] = 1
	c.waitComplete(t, want, 30*time.Second)
	c.checkOrder(t)
}

// TestRelay_BacklogReadAheadKeepsOrder: in a backlog each round reads the
// next one's rows while it publishes. Refused records (which must void
// the rows read ahead: a blocked run's later events cannot go first) and
// a transaction committing in the middle of the backlog with an id below
// the rows already published (which a cursor would skip) must still give
// every event, in order.
func TestRelay_BacklogReadAheadKeepsOrder(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	rng := seed(t)
	late := workload.NewIdentity("tenant_a")
	tx, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	first := workload.Event(late, store.EventRunStarted, "", 1, 1, time.Now(), nil)
	var status int
	if err := tx.QueryRow(ctx, `SELECT o_status FROM runstream_append($1,$2,$3,$4,$5,$6,$7,$8,$9,NULL,1,1,$10,NULL,$11)`,
		first.RunID, first.TenantID, first.ProjectID, first.EnvironmentID, first.PlanID, first.PlanVersion,
		first.EventID, first.EventType, first.IdempotencyKey, first.EmittedAt, postgres.ShardOf(first.RunID)).Scan(&status); err != nil || status != 0 {
		t.Fatalf("append in the held transaction: %v status %d", err, status)
	}
	// Forty runs interleaved, as runs progressing together append them:
	// each run spans many rounds.
	var runs [][]store.RunEventWrite
	for range 40 {
		runs = append(runs, workload.Run(rng, "tenant_a", workload.Options{}))
	}
	var all []store.RunEventWrite
	for i := 0; ; i++ {
		n := len(all)
		for _, r := range runs {
			if i < len(r) {
				all = append(all, r[i])
			}
		}
		if len(all) == n {
			break
		}
	}
	want := map[string]int64{}
	for i := 0; i < len(all); i += 200 {
		for j, r := range f.store.AppendBatch(ctx, all[i:min(i+200, len(all))]) {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			want[all[i+j].RunID] = max(want[all[i+j].RunID], r.Result.RunSeq)
		}
	}
	events := int64(len(all))
	// The first two produce requests are refused, whatever their
	// partitions: retried, not dead-lettered, and the runs they held are
	// blocked while the next round's rows (their later events among them)
	// are already read.
	f.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: topic, Err: kerr.InvalidRecord, Count: 2})
	cfg := testConfig()
	cfg.BatchSize = 20
	cfg.MaxAttempts = 5
	run := startRelay(t, f.pool, f.brokers, cfg)
	c := newConsumer(t, f.brokers)
	testenv.WaitFor(t, 30*time.Second, "a third of the backlog", func() bool {
		c.poll(t)
		c.mu.Lock()
		defer c.mu.Unlock()
		return int64(len(c.recs)) >= events/3
	})
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.AppendEvent(ctx, workload.Event(late, store.EventStepStarted, "s1", 1, 1, time.Now(), nil)); err != nil {
		t.Fatal(err)
	}
	want[late.RunID] = 2
	c.waitComplete(t, want, 60*time.Second)
	testenv.WaitFor(t, 10*time.Second, "the outbox to drain", func() bool { return outboxRows(t, f.pool) == 0 })
	c.poll(t)
	c.checkOrder(t)
	if n := run.relay.ReadAheads(); n == 0 {
		t.Fatalf("no round used rows read ahead in a backlog of %d events in batches of %d", events, cfg.BatchSize)
	}
	if dls, err := f.store.Outbox().ListDeadLetters(ctx, "", 10); err != nil || len(dls) != 0 {
		t.Fatalf("dead letters %+v, %v; want none (two refusals, five attempts)", dls, err)
	}
	if got := counter(t, run.reg, "runstream_relay_retries_total"); got < 1 {
		t.Fatalf("retries = %v: the refusals did not happen, so the test did not test them", got)
	}
	t.Logf("%d events, %d rounds read ahead", events, run.relay.ReadAheads())
}

func TestRelay_BrokerDownThenBack(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := newFixture(t, kfake.DataDir(dir))
	rng := seed(t)
	run := startRelay(t, f.pool, f.brokers, testConfig())
	want := appendRuns(t, f.store, rng, 3)
	c := newConsumer(t, f.brokers)
	c.waitComplete(t, want, 30*time.Second)

	port := f.brokers[0][strings.LastIndex(f.brokers[0], ":")+1:]
	f.cluster.Close()
	more := appendRuns(t, f.store, rng, 10) // appends keep succeeding with the broker down
	backlog := outboxRows(t, f.pool)
	if backlog == 0 {
		t.Fatal("the outbox is empty with the broker down: events were lost or never queued")
	}
	testenv.WaitFor(t, 10*time.Second, "the relay to notice the outage", func() bool {
		return counter(t, run.reg, "runstream_relay_broker_unavailable_total") > 0
	})
	if got := outboxRows(t, f.pool); got < backlog {
		t.Fatalf("outbox shrank from %d to %d with the broker down", backlog, got)
	}
	p, _ := strconv.Atoi(port)
	back, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(p), kfake.DataDir(dir))
	if err != nil {
		t.Fatalf("restarting the broker on port %d: %v", p, err)
	}
	t.Cleanup(back.Close)
	for id, n := range more {
		want[id] = n
	}
	c2 := newConsumer(t, f.brokers)
	c2.waitComplete(t, want, 60*time.Second)
	c2.checkOrder(t)
	if d := counter(t, run.reg, "runstream_relay_dead_letters_total"); d != 0 {
		t.Fatalf("%v events dead-lettered during an outage; an outage must never dead-letter", d)
	}
}

func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			sum := 0.0
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
			return sum
		}
	}
	return 0
}

func TestRelay_CancelledMidBatchThenRestarted(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	want := appendRuns(t, f.store, seed(t), 150)
	cfg := testConfig()
	cfg.BatchSize = 100
	run := startRelay(t, f.pool, f.brokers, cfg)
	testenv.WaitFor(t, 30*time.Second, "the first records published", func() bool {
		return counter(t, run.reg, "runstream_relay_published_total") > 0
	})
	run.stop(t)
	if outboxRows(t, f.pool) == 0 {
		t.Skip("the relay drained everything before it was cancelled; nothing to test")
	}
	startRelay(t, f.pool, f.brokers, cfg)
	c := newConsumer(t, f.brokers)
	c.waitComplete(t, want, 60*time.Second)
	c.checkOrder(t)
}

// TestRelay_KilledProcessThenRestarted runs the relay in a child process
// (this test binary, re-executed), kills it with SIGKILL mid-stream and
// restarts it: everything arrives, duplicates allowed, order kept.
func TestRelay_KilledProcessThenRestarted(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	want := appendRuns(t, f.store, seed(t), 300)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperRelayProcess$", "-test.v")
	cmd.Env = append(os.Environ(), "RELAY_HELPER=1",
		"RELAY_HELPER_PG="+testenv.PostgresURLWithSchema(t, f.schema),
		"RELAY_HELPER_BROKERS="+strings.Join(f.brokers, ","))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	total := outboxRows(t, f.pool)
	testenv.WaitFor(t, 30*time.Second, "the child relay to publish something", func() bool {
		return outboxRows(t, f.pool) < total
	})
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	t.Logf("killed the child relay with %d of %d outbox rows left", outboxRows(t, f.pool), total)
	startRelay(t, f.pool, f.brokers, testConfig())
	c := newConsumer(t, f.brokers)
	c.waitComplete(t, want, 60*time.Second)
	c.checkOrder(t)
}

// TestHelperRelayProcess is the child of TestRelay_KilledProcessThenRestarted.
func TestHelperRelayProcess(t *testing.T) {
	if os.Getenv("RELAY_HELPER") != "1" {
		t.Skip("helper process for TestRelay_KilledProcessThenRestarted")
	}
	pool, err := pgxpool.New(context.Background(), os.Getenv("RELAY_HELPER_PG"))
	if err != nil {
		t.Fatal(err)
	}
	client, err := kgo.NewClient(relay.ClientOptions(strings.Split(os.Getenv("RELAY_HELPER_BROKERS"), ","))...)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.BatchSize = 50
	r, err := relay.New(cfg, pool, client)
	if err != nil {
		t.Fatal(err)
	}
	_ = r.Run(context.Background()) // until killed
}

func TestRelay_SeveralRelaysKeepPerRunOrder(t *testing.T) {
	t.Parallel()
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d relays", n), func(t *testing.T) {
			f := newFixture(t)
			rng := seed(t)
			var runs []*running
			for range n {
				runs = append(runs, startRelay(t, f.pool, f.brokers, testConfig()))
			}
			testenv.WaitFor(t, 20*time.Second, "the shards to be split", func() bool {
				total := 0.0
				for _, r := range runs {
					owned := counter(t, r.reg, "runstream_relay_owned_shards")
					if owned == 0 {
						return false
					}
					total += owned
				}
				return total == postgres.NumShards
			})
			// Appends keep coming while the relays publish.
			want := map[string]int64{}
			for range 5 {
				for id, k := range appendRuns(t, f.store, rng, 20) {
					want[id] = k
				}
			}
			// One relay leaves mid-stream; the others take its shards.
			runs[0].stop(t)
			for id, k := range appendRuns(t, f.store, rng, 20) {
				want[id] = k
			}
			c := newConsumer(t, f.brokers)
			c.waitComplete(t, want, 60*time.Second)
			c.checkOrder(t)
		})
	}
}

// TestRelay_RefusedRecordIsDeadLetteredAndTheRunFlowsOn injects produce
// errors for one run's partition: the head event is retried, then
// dead-lettered with alert EVENT_BUS_DELIVERY_FAILED, and the run's later
// events (and other runs) flow. Retrying the dead letter publishes it.
func TestRelay_RefusedRecordIsDeadLetteredAndTheRunFlowsOn(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	cfg := testConfig()
	cfg.MaxAttempts = 3
	// A window shorter than the backoff: MaxAttempts alone decides, so the
	// third refusal dead-letters (TestRelay_MinuteOfRefusalsDeadLettersNothing
	// is the default window).
	cfg.RetryWindow = time.Millisecond
	victim := workload.NewIdentity("tenant_a")
	vp := testkafka.Partition([]byte(victim.RunID), 12)
	// Another run on a different partition, which must be unaffected.
	other := workload.NewIdentity("tenant_a")
	for testkafka.Partition([]byte(other.RunID), 12) == vp {
		other = workload.NewIdentity("tenant_a")
	}
	// Refuse every produce to the victim's partition, exactly MaxAttempts
	// times: the victim's head event is its only record there.
	f.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: topic, Partitions: []int32{vp},
		Err: kerr.InvalidRecord, Count: cfg.MaxAttempts})
	var logs testenv.Buffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))

	if _, err := f.store.AppendEvent(ctx, workload.Event(victim, store.EventRunStarted, "", 1, 1, time.Now(), nil)); err != nil {
		t.Fatal(err)
	}
	run := startRelay(t, f.pool, f.brokers, cfg)
	testenv.WaitFor(t, 30*time.Second, "the refused event to be dead-lettered", func() bool {
		return counter(t, run.reg, "runstream_relay_dead_letters_total") == 1
	})
	if !strings.Contains(logs.String(), "alert=EVENT_BUS_DELIVERY_FAILED") {
		t.Fatalf("no EVENT_BUS_DELIVERY_FAILED alert in the logs:\n%s", logs.String())
	}
	if got := counter(t, run.reg, "runstream_relay_retries_total"); got != float64(cfg.MaxAttempts-1) {
		t.Fatalf("retries = %v, want %d before the dead letter", got, cfg.MaxAttempts-1)
	}
	for _, ev := range []store.RunEventWrite{
		workload.Event(victim, store.EventStepStarted, "s1", 1, 1, time.Now(), nil),
		workload.Event(victim, store.EventStepCompleted, "s1", 1, 1, time.Now(), nil),
		workload.Event(other, store.EventRunStarted, "", 1, 1, time.Now(), nil),
	} {
		if _, err := f.store.AppendEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	c := newConsumer(t, f.brokers)
	testenv.WaitFor(t, 30*time.Second, "the run's later events and the other run", func() bool {
		c.poll(t)
		c.mu.Lock()
		defer c.mu.Unlock()
		return fmt.Sprint(c.seqs[victim.RunID]) == "[2 3]" && len(c.seqs[other.RunID]) == 1
	})
	dls, err := f.store.Outbox().ListDeadLetters(ctx, "", 10)
	if err != nil || len(dls) != 1 || dls[0].RunID != victim.RunID || dls[0].RunSeq != 1 || dls[0].Attempts != cfg.MaxAttempts {
		t.Fatalf("dead letters = %+v, %v; want the victim's runSeq 1 after %d attempts", dls, err, cfg.MaxAttempts)
	}
	if !strings.Contains(dls[0].LastError, "INVALID_RECORD") {
		t.Fatalf("dead letter's last error %q does not say why", dls[0].LastError)
	}
	if dls[0].FirstFailedAt == nil || dls[0].FirstFailedAt.After(dls[0].FailedAt) {
		t.Fatalf("dead letter's first refusal %v, failed at %v: the start of its retry window was not carried over", dls[0].FirstFailedAt, dls[0].FailedAt)
	}
	if n, err := f.store.Outbox().RetryDeadLetters(ctx, []int64{dls[0].ID}, false); err != nil || n != 1 {
		t.Fatalf("retrying the dead letter: %d, %v", n, err)
	}
	testenv.WaitFor(t, 30*time.Second, "the replayed dead letter", func() bool {
		c.poll(t)
		c.mu.Lock()
		defer c.mu.Unlock()
		return fmt.Sprint(c.seqs[victim.RunID]) == "[2 3 1]"
	})
	if dls, _ := f.store.Outbox().ListDeadLetters(ctx, "", 10); len(dls) != 0 {
		t.Fatalf("dead letters after retry: %+v", dls)
	}
	// Only the retried letter says it is a redelivery: a consumer holding
	// nothing of the run must not take it for the run's state.
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.recs {
		_, seq, _ := record.IDs(r)
		if want := string(r.Key) == victim.RunID && seq == 1; record.Redelivered(r) != want {
			t.Errorf("run %s runSeq %d: redelivered header %q, want it only on the retried dead letter", r.Key, seq, header(r, record.HeaderRedelivered))
		}
	}
}

// TestRelay_MinuteOfRefusalsDeadLettersNothing: a broker that refuses
// every record of a partition for 60 s (a rolling restart is longer) must
// not dead-letter anything with the default MaxAttempts and RetryWindow:
// the refused run's events wait, in order, other runs flow meanwhile, and
// once the refusals end the run's events arrive in runSeq order, each once.
// (Retrying by count alone, eight attempts lasted about 4 s.)
func TestRelay_MinuteOfRefusalsDeadLettersNothing(t *testing.T) {
	t.Parallel()
	const refusal = 60 * time.Second
	f := newFixture(t)
	ctx := context.Background()
	cfg := testConfig()
	// The defaults under test: MaxAttempts 8, RetryWindow 5 minutes, and
	// BackoffBase 100ms.
	cfg.MaxAttempts, cfg.RetryWindow, cfg.BackoffBase = 0, 0, 0
	// BackoffMax 2s instead of the default 30s, only so that the first retry
	// after the refusals end comes within 2 s (the test lasts about 62 s
	// rather than up to 90). It does not help the record survive: the
	// default backoff spreads the attempts further apart, so a shorter
	// backoff reaches MaxAttempts sooner and leaves the window alone to
	// keep the record (about 60 attempts here, against 8).
	cfg.BackoffMax = 2 * time.Second
	victim := workload.NewIdentity("tenant_a")
	vp := testkafka.Partition([]byte(victim.RunID), 12)
	other := workload.NewIdentity("tenant_a")
	for testkafka.Partition([]byte(other.RunID), 12) == vp {
		other = workload.NewIdentity("tenant_a")
	}
	// Every produce to the victim's partition is refused until removed.
	refused := f.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: topic, Partitions: []int32{vp},
		Err: kerr.InvalidRecord, Count: -1})
	start := time.Now()
	appendEv := func(ev store.RunEventWrite) int64 {
		t.Helper()
		res, err := f.store.AppendEvent(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		return res.RunSeq
	}
	var victimSeqs, otherSeqs []int64
	victimSeqs = append(victimSeqs, appendEv(workload.Event(victim, store.EventRunStarted, "", 1, 1, time.Now(), nil)))
	otherSeqs = append(otherSeqs, appendEv(workload.Event(other, store.EventRunStarted, "", 1, 1, time.Now(), nil)))
	run := startRelay(t, f.pool, f.brokers, cfg)
	c := newConsumer(t, f.brokers)
	seqs := func(id string) string {
		c.mu.Lock()
		defer c.mu.Unlock()
		return fmt.Sprint(c.seqs[id])
	}
	// During the refusals: each few seconds, a step of each run. The other
	// run's events arrive; none of the victim's does.
	for step := 1; time.Since(start) < refusal-5*time.Second; step++ {
		sid := fmt.Sprintf("s%d", step)
		for _, typ := range []string{store.EventStepStarted, store.EventStepCompleted} {
			victimSeqs = append(victimSeqs, appendEv(workload.Event(victim, typ, sid, 1, 1, time.Now(), nil)))
			otherSeqs = append(otherSeqs, appendEv(workload.Event(other, typ, sid, 1, 1, time.Now(), nil)))
		}
		testenv.WaitFor(t, 10*time.Second, "the other run's events during the refusals", func() bool {
			c.poll(t)
			return seqs(other.RunID) == fmt.Sprint(otherSeqs)
		})
		if got := seqs(victim.RunID); got != "[]" {
			t.Fatalf("the refused run's events %s arrived while its partition refused every record", got)
		}
		if d := counter(t, run.reg, "runstream_relay_dead_letters_total"); d != 0 {
			t.Fatalf("%v events dead-lettered after %v of refusals, with the default retry window", d, time.Since(start).Round(time.Second))
		}
		sleep := min(5*time.Second, refusal-time.Since(start))
		time.Sleep(sleep)
	}
	time.Sleep(refusal - time.Since(start))
	refused.Remove()
	hits, retries := refused.Hits(), counter(t, run.reg, "runstream_relay_retries_total")
	if retries <= 8 {
		t.Fatalf("%v retries in %v of refusals: the test did not go past MaxAttempts (8), so it did not test the window", retries, refusal)
	}
	testenv.WaitFor(t, 30*time.Second, "the refused run's events after the refusals", func() bool {
		c.poll(t)
		return seqs(victim.RunID) == fmt.Sprint(victimSeqs)
	})
	testenv.WaitFor(t, 10*time.Second, "the outbox to drain", func() bool { return outboxRows(t, f.pool) == 0 })
	c.poll(t)
	if got, want := seqs(victim.RunID), fmt.Sprint(victimSeqs); got != want {
		t.Fatalf("refused run's runSeqs on the topic %s, want %s: each once, in order", got, want)
	}
	if got, want := seqs(other.RunID), fmt.Sprint(otherSeqs); got != want {
		t.Fatalf("other run's runSeqs on the topic %s, want %s", got, want)
	}
	if dls, err := f.store.Outbox().ListDeadLetters(ctx, "", 10); err != nil || len(dls) != 0 {
		t.Fatalf("dead letters %+v, %v; want none", dls, err)
	}
	if d := counter(t, run.reg, "runstream_relay_dead_letters_total"); d != 0 {
		t.Fatalf("%v events dead-lettered", d)
	}
	t.Logf("%d produce requests refused over %v, %v retries; the run's %d events arrived %v after the refusals ended",
		hits, refusal, retries, len(victimSeqs), time.Since(start)-refusal)
}

// TestRelay_RestartKeepsTheRetryWindow: the retry window starts at a
// record's first refusal, which the outbox row keeps, so a relay restarted
// after the window ended dead-letters the record at its first refusal
// instead of retrying it for another window.
func TestRelay_RestartKeepsTheRetryWindow(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	cfg := testConfig()
	cfg.MaxAttempts = 2
	cfg.RetryWindow = 3 * time.Second
	victim := workload.NewIdentity("tenant_a")
	f.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: topic,
		Partitions: []int32{testkafka.Partition([]byte(victim.RunID), 12)}, Err: kerr.InvalidRecord, Count: -1})
	if _, err := f.store.AppendEvent(ctx, workload.Event(victim, store.EventRunStarted, "", 1, 1, time.Now(), nil)); err != nil {
		t.Fatal(err)
	}
	first := startRelay(t, f.pool, f.brokers, cfg)
	testenv.WaitFor(t, 10*time.Second, "MaxAttempts refusals", func() bool {
		return counter(t, first.reg, "runstream_relay_retries_total") >= float64(cfg.MaxAttempts)
	})
	first.stop(t)
	if d := counter(t, first.reg, "runstream_relay_dead_letters_total"); d != 0 {
		t.Fatalf("dead-lettered within its retry window (%v)", cfg.RetryWindow)
	}
	var firstFailed time.Time
	if err := f.pool.QueryRow(ctx, `SELECT first_failed_at FROM outbox`).Scan(&firstFailed); err != nil {
		t.Fatalf("the refused row's first refusal: %v", err)
	}
	testenv.WaitFor(t, 10*time.Second, "the retry window to end, no relay running", func() bool {
		var over bool
		err := f.pool.QueryRow(ctx, `SELECT clock_timestamp() - $1::timestamptz > $2 * interval '1 microsecond'`,
			firstFailed, cfg.RetryWindow.Microseconds()).Scan(&over)
		return err == nil && over
	})
	second := startRelay(t, f.pool, f.brokers, cfg)
	testenv.WaitFor(t, 10*time.Second, "the restarted relay to dead-letter the record", func() bool {
		return counter(t, second.reg, "runstream_relay_dead_letters_total") == 1
	})
	if r := counter(t, second.reg, "runstream_relay_retries_total"); r != 0 {
		t.Fatalf("the restarted relay retried the record %v times: it started its retry window again", r)
	}
	dls, err := f.store.Outbox().ListDeadLetters(ctx, "", 10)
	if err != nil || len(dls) != 1 || dls[0].FirstFailedAt == nil || !dls[0].FirstFailedAt.Equal(firstFailed) {
		t.Fatalf("dead letters %+v, %v; want one whose first refusal is still %v", dls, err, firstFailed)
	}
}

func TestConfig_Validate(t *testing.T) {
	for _, c := range []relay.Config{{Partitions: -1}, {BatchSize: -5}, {MaxAttempts: -1},
		{BackoffBase: time.Minute, BackoffMax: time.Second}, {RetryWindow: -time.Second}} {
		if err := c.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", c)
		}
	}
	if err := (relay.Config{RetryWindow: -time.Second}).Validate(); err == nil ||
		!strings.Contains(err.Error(), "--retry-window") || !strings.Contains(err.Error(), "RUNSTREAM_RETRY_WINDOW") {
		t.Errorf("a negative retry window: %v; want an error naming --retry-window and RUNSTREAM_RETRY_WINDOW", err)
	}
	if err := (relay.Config{}).Validate(); err != nil {
		t.Errorf("zero Config: %v", err)
	}
}

// TestRelay_RowsBeingDeletedAreNotPublishedAgain: a small round's
// acknowledged rows are deleted in the background while the next round
// reads; that round must skip them. The test holds row locks on the first
// rows so their delete stays in flight while more events arrive: without
// faults, every event is still published exactly once and the outbox drains.
func TestRelay_RowsBeingDeletedAreNotPublishedAgain(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rng := seed(t)
	first := workload.Run(rng, "tenant_a", workload.Options{})
	want := map[string]int64{}
	appendAll := func(ws []store.RunEventWrite) {
		for _, w := range ws {
			res, err := f.store.AppendEvent(context.Background(), w)
			if err != nil {
				t.Fatal(err)
			}
			want[w.RunID] = max(want[w.RunID], res.RunSeq)
		}
	}
	appendAll(first)
	ctx := context.Background()
	tx, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var locked int
	if err := tx.QueryRow(ctx, `WITH l AS (SELECT id FROM outbox FOR UPDATE) SELECT count(*) FROM l`).Scan(&locked); err != nil || int64(locked) != want[first[0].RunID] {
		t.Fatalf("locking the first run's %d outbox rows: %d, %v", want[first[0].RunID], locked, err)
	}
	startRelay(t, f.pool, f.brokers, testConfig())
	c := newConsumer(t, f.brokers)
	testenv.WaitFor(t, 10*time.Second, "the first run's delete to block on the row locks", func() bool {
		var n int
		err := f.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'DELETE FROM outbox%'`).Scan(&n)
		return err == nil && n > 0
	})
	// More events while that delete waits: each wakes a round.
	var more []store.RunEventWrite
	for range 3 {
		more = append(more, workload.Run(rng, "tenant_a", workload.Options{})...)
	}
	for i := range more {
		appendAll(more[i : i+1])
		if i%5 == 0 {
			c.poll(t)
		}
	}
	time.Sleep(300 * time.Millisecond)
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	c.waitComplete(t, want, 30*time.Second)
	testenv.WaitFor(t, 10*time.Second, "the outbox to drain", func() bool { return outboxRows(t, f.pool) == 0 })
	c.poll(t)
	c.checkOrder(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, n := range want {
		if got := int64(len(c.seqs[id])); got != n {
			t.Fatalf("run %s: %d records for %d events: a row was published again while its delete was in flight", id, got, n)
		}
	}
}

// TestRelay_VacuumsTheOutboxItDrains: the outbox is a queue whose dead
// rows slow every read of its head, so once the relay deleted a few
// thousand rows (and keeps up) it vacuums the table itself; migration 0003
// lowers autovacuum's threshold for it too (on each of its parts since
// migration 0011).
func TestRelay_VacuumsTheOutboxItDrains(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	// Migration 0011 carries them over to each of the outbox's parts.
	for _, part := range []string{"outbox_0", "outbox_1"} {
		var opts []string
		if err := f.pool.QueryRow(ctx, `SELECT coalesce(reloptions, '{}') FROM pg_class WHERE oid = $1::regclass`, part).Scan(&opts); err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(opts, "autovacuum_vacuum_threshold=2000") || !slices.Contains(opts, "autovacuum_vacuum_scale_factor=0") {
			t.Fatalf("%s options %v: migration 0003's autovacuum settings are missing", part, opts)
		}
	}
	vacuums := func() int64 {
		var n int64
		if err := f.pool.QueryRow(ctx, `SELECT coalesce(sum(vacuum_count), 0)::bigint FROM pg_stat_user_tables
			WHERE schemaname = $1 AND relname IN ('outbox_0', 'outbox_1')`, f.schema).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := vacuums(); n != 0 {
		t.Fatalf("outbox vacuumed %d times before the relay started", n)
	}
	want := appendRuns(t, f.store, seed(t), 250)
	total := int64(0)
	for _, n := range want {
		total += n
	}
	if total < 2200 {
		t.Fatalf("only %d events appended; the test needs more than the relay's vacuum threshold", total)
	}
	startRelay(t, f.pool, f.brokers, testConfig())
	// The bound is for a relay that does not drain at all, not a speed
	// target: at load 15-19, with the race detector and the package's
	// other tests running, 30 s was not enough for these 2,200-odd events.
	testenv.WaitFor(t, 3*time.Minute, "the outbox to drain", func() bool { return outboxRows(t, f.pool) == 0 })
	testenv.WaitFor(t, time.Minute, "the relay to vacuum the outbox", func() bool { return vacuums() > 0 })
}
