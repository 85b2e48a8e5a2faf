package projector_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/testenv/testkafka"
	"github.com/runstream/runstream/internal/tracing"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/projector"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

const topic = "run-events"

type fixture struct {
	store    *postgres.Store
	rdb      redis.UniversalClient
	brokers  []string
	producer *kgo.Client    // kafka.Producer
	cluster  *kfake.Cluster // kafka.Cluster
	kafka    *testkafka.Broker
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	pool, _ := testenv.Postgres(t, 20)
	if _, err := postgres.Migrate(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	st, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	k := testkafka.Start(t, kfake.SeedTopics(12, topic))
	return &fixture{store: st, rdb: testenv.Redis(t), brokers: k.Brokers, producer: k.Producer, cluster: k.Cluster, kafka: k}
}

func seed(t *testing.T) *rand.Rand {
	s := uint64(time.Now().UnixNano())
	if v := os.Getenv("PROJECTOR_SEED"); v != "" {
		s, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (rerun with PROJECTOR_SEED=%d)", s, s)
	return rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15))
}

// appendRuns stores n generated runs and returns their records.
func (f *fixture) appendRuns(t *testing.T, rng *rand.Rand, n int) map[string][]store.RunEventRecord {
	t.Helper()
	ctx := context.Background()
	out := map[string][]store.RunEventRecord{}
	for range n {
		evs := workload.Run(rng, "tenant_a", workload.Options{})
		for _, r := range f.store.AppendBatch(ctx, evs) {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
		recs, err := f.store.FetchEvents(ctx, evs[0].RunID, store.FetchOptions{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		out[evs[0].RunID] = recs
	}
	return out
}

func (f *fixture) publish(t *testing.T, recs []store.RunEventRecord) {
	t.Helper()
	f.kafka.Publish(t, topic, recs)
}

type running struct {
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan error
}

func (r *running) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatalf("projector returned %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("projector did not stop within 30s")
	}
}

func startProjector(t *testing.T, brokers []string, group string, rdb redis.UniversalClient, src interface {
	FetchEvents(context.Context, string, store.FetchOptions) ([]store.RunEventRecord, error)
	ProjectSnapshot(context.Context, string) (store.RunSnapshot, error)
}) *running {
	t.Helper()
	return runProjector(t, testConfig(brokers, group), rdb, src)
}

// testConfig is the projectors' configuration in these tests: fast resync
// retries, the broker's shortest session timeout.
func testConfig(brokers []string, group string) projector.Config {
	return projector.Config{Brokers: brokers, Topic: topic, Group: group,
		ResyncBackoffBase: 20 * time.Millisecond, ResyncBackoffMax: 200 * time.Millisecond,
		SessionTimeout: 6 * time.Second}
}

// runProjector runs a projector of cfg (with a fresh registry) until the
// test ends; extra franz-go options are added to its client's.
func runProjector(t *testing.T, cfg projector.Config, rdb redis.UniversalClient, src interface {
	FetchEvents(context.Context, string, store.FetchOptions) ([]store.RunEventRecord, error)
	ProjectSnapshot(context.Context, string) (store.RunSnapshot, error)
}, extra ...kgo.Opt) *running {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg.Registerer = reg
	p, err := projector.New(cfg, rdb, src, extra...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{reg: reg, cancel: cancel, done: make(chan error, 1)}
	exited := make(chan struct{})
	go func() { r.done <- p.Run(ctx); close(exited) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-exited: // not r.done: stop may have read it already
		case <-time.After(30 * time.Second):
		}
	})
	return r
}

func counter(t *testing.T, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := label == ""
			for _, lp := range m.GetLabel() {
				match = match || lp.GetValue() == label
			}
			if match {
				sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

func redisSnapshot(t *testing.T, rdb redis.UniversalClient, runID string) (store.RunSnapshot, bool) {
	t.Helper()
	b, err := rdb.Get(context.Background(), snapshots.Key(runID)).Bytes()
	if errors.Is(err, redis.Nil) {
		return store.RunSnapshot{}, false
	}
	if err != nil {
		t.Fatal(err)
	}
	if b, err = snapshots.JSON(b); err != nil { // either encoding
		t.Fatalf("snapshot of %s does not decompress: %v", runID, err)
	}
	var s store.RunSnapshot
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("snapshot of %s is not JSON: %v", runID, err)
	}
	return s, true
}

// waitConverged waits until every run's Redis snapshot equals the store's
// projectSnapshot, and shows the first difference on timeout.
func (f *fixture) waitConverged(t *testing.T, runIDs []string, timeout time.Duration) {
	t.Helper()
	want := map[string]store.RunSnapshot{}
	for _, id := range runIDs {
		s, err := f.store.ProjectSnapshot(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		want[id] = s
	}
	testenv.WaitUntil(t, timeout, func() error {
		for _, id := range runIDs {
			got, ok := redisSnapshot(t, f.rdb, id)
			if !ok {
				return fmt.Errorf("run %s has no Redis snapshot", id)
			}
			if d := cmp.Diff(want[id], got); d != "" {
				return fmt.Errorf("run %s differs from store.projectSnapshot (-want +got):\n%s", id, d)
			}
		}
		return nil
	})
}

func keys(m map[string][]store.RunEventRecord) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestProjector_ReplayEquivalence delivers seeded random runs with
// duplicates, reordering within a run and dropped records: the final Redis
// snapshot of every run equals store.projectSnapshot.
func TestProjector_ReplayEquivalence(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rng := seed(t)
	runs := f.appendRuns(t, rng, 40)
	var stream []store.RunEventRecord
	for _, recs := range runs {
		var mangled []store.RunEventRecord
		for i, r := range recs {
			switch x := rng.Float64(); {
			case x < 0.08 && i != len(recs)-1:
				continue // dropped (never the last: nothing would reveal the gap)
			case x < 0.16:
				mangled = append(mangled, r, r) // duplicated
			default:
				mangled = append(mangled, r)
			}
		}
		// Swap a few neighbours: reordering on the bus.
		for k := 0; k < len(mangled)/6; k++ {
			i := rng.IntN(len(mangled) - 1)
			mangled[i], mangled[i+1] = mangled[i+1], mangled[i]
		}
		// Redeliver a random earlier record at the end.
		mangled = append(mangled, mangled[rng.IntN(len(mangled))])
		stream = append(stream, mangled...)
	}
	f.publish(t, stream)
	startProjector(t, f.brokers, "g-"+testenv.RandomID(4), f.rdb, f.store)
	f.waitConverged(t, keys(runs), 60*time.Second)
}

// TestProjector_GapResyncs: a run's event 4 never reaches Kafka, event 5
// does. The snapshot goes stale, resyncs, and ends at 5 with event 4's
// effect, not stale.
func TestProjector_GapResyncs(t *testing.T) {
	t.Parallel()
	// With tracing on, the resync is a span of its own (other tests'
	// spans are recorded too; this one's is found by its run).
	spans := tracetest.NewSpanRecorder()
	t.Cleanup(tracing.Install(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))))
	f := newFixture(t)
	ctx := context.Background()
	id := workload.NewIdentity("tenant_a")
	evs := []store.RunEventWrite{
		workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil),
		workload.Event(id, store.EventStepStarted, "a", 1, 1, time.Now(), nil),
		workload.Event(id, store.EventStepCompleted, "a", 1, 1, time.Now(), nil),
		workload.Event(id, store.EventStepStarted, "b", 1, 1, time.Now(), nil), // 4: lost on the bus
		workload.Event(id, store.EventStepFailed, "b", 1, 1, time.Now(), map[string]any{"errorCode": "X"}),
	}
	for _, r := range f.store.AppendBatch(ctx, evs) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	recs, _ := f.store.FetchEvents(ctx, id.RunID, store.FetchOptions{})
	f.publish(t, recs[:3])
	run := startProjector(t, f.brokers, "g-"+testenv.RandomID(4), f.rdb, f.store)
	testenv.WaitFor(t, 30*time.Second, "events 1-3 projected", func() bool {
		s, ok := redisSnapshot(t, f.rdb, id.RunID)
		return ok && s.LastEventSeq == 3
	})
	f.publish(t, recs[4:5])
	f.waitConverged(t, []string{id.RunID}, 30*time.Second)
	s, _ := redisSnapshot(t, f.rdb, id.RunID)
	if s.LastEventSeq != 5 || s.Stale || len(s.Steps) != 2 || s.Steps[1].Status != store.StepFailed || s.FailedSteps != 1 {
		t.Fatalf("after the gap: %+v; want watermark 5, not stale, step b FAILED (event 4's StepStarted applied before 5)", s)
	}
	if got := counter(t, run.reg, "runstream_projector_non_contiguous_total", ""); got != 1 {
		t.Fatalf("PROJECTOR_NON_CONTIGUOUS_FETCH_DETECTED counted %v times, want 1", got)
	}
	if got := counter(t, run.reg, "runstream_projector_resyncs_total", "ok"); got != 1 {
		t.Fatalf("successful resyncs = %v, want 1", got)
	}
	resyncSpans := 0
	for _, sp := range spans.Ended() {
		attrs := map[string]string{}
		for _, a := range sp.Attributes() {
			attrs[string(a.Key)] = a.Value.String()
		}
		if sp.Name() == "resync run" && attrs["runstream.run_id"] == id.RunID {
			resyncSpans++
			if attrs["runstream.resync.outcome"] != "ok" || attrs["runstream.resync.from"] != "3" {
				t.Errorf("resync span attributes %v; want outcome ok from watermark 3", attrs)
			}
		}
	}
	if resyncSpans != 1 {
		t.Errorf("%d resync spans of the run, want 1", resyncSpans)
	}
	// A duplicate of event 3 afterwards changes nothing.
	f.publish(t, recs[2:3])
	f.publish(t, recs[4:5])
	testenv.WaitFor(t, 10*time.Second, "the duplicates counted", func() bool {
		return counter(t, run.reg, "runstream_projector_events_total", "duplicate") >= 2
	})
	if s2, _ := redisSnapshot(t, f.rdb, id.RunID); s2.LastEventSeq != 5 || s2.FailedSteps != 1 {
		t.Fatalf("a duplicate changed the snapshot: %+v", s2)
	}
}

// flakySource fails FetchEvents and ProjectSnapshot while down is set: the
// store unreachable during a resync.
type flakySource struct {
	st   *postgres.Store
	down atomic.Bool
}

var errStoreDown = &store.Error{Code: store.CodeUnavailable, Message: "test: store down"}

func (s *flakySource) FetchEvents(ctx context.Context, id string, o store.FetchOptions) ([]store.RunEventRecord, error) {
	if s.down.Load() {
		return nil, errStoreDown
	}
	return s.st.FetchEvents(ctx, id, o)
}

func (s *flakySource) ProjectSnapshot(ctx context.Context, id string) (store.RunSnapshot, error) {
	if s.down.Load() {
		return store.RunSnapshot{}, errStoreDown
	}
	return s.st.ProjectSnapshot(ctx, id)
}

// TestProjector_StoreDownDuringResync: while the store is unreachable the
// gapped run stays stale and is retried; other runs keep flowing; when the
// store returns the run recovers.
func TestProjector_StoreDownDuringResync(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rng := seed(t)
	runs := f.appendRuns(t, rng, 3)
	ids := keys(runs)
	gapped := ids[0]
	src := &flakySource{st: f.store}
	src.down.Store(true)
	recs := runs[gapped]
	f.publish(t, recs[:1])
	f.publish(t, recs[2:]) // runSeq 2 lost
	run := startProjector(t, f.brokers, "g-"+testenv.RandomID(4), f.rdb, src)
	testenv.WaitFor(t, 30*time.Second, "the gapped run marked stale", func() bool {
		s, ok := redisSnapshot(t, f.rdb, gapped)
		return ok && s.Stale && s.LastEventSeq == 1
	})
	for _, id := range ids[1:] {
		f.publish(t, runs[id])
	}
	f.waitConverged(t, ids[1:], 30*time.Second)
	testenv.WaitFor(t, 10*time.Second, "resync retries while the store is down", func() bool {
		return counter(t, run.reg, "runstream_projector_resyncs_total", "error") >= 2
	})
	if s, _ := redisSnapshot(t, f.rdb, gapped); !s.Stale {
		t.Fatal("the gapped run lost its stale mark while the store was down")
	}
	src.down.Store(false)
	f.waitConverged(t, []string{gapped}, 30*time.Second)
	// The resync set is updated right after the snapshot is written, in a
	// pipeline of its own: the snapshot can be seen first.
	testenv.WaitFor(t, 10*time.Second, "the recovered run gone from the resync set", func() bool {
		n, err := f.rdb.SIsMember(context.Background(), snapshots.ResyncSetKey, gapped).Result()
		return err == nil && !n
	})
}

// TestProjector_UndecodableRecordResyncsItsRun: a record that cannot be
// decoded is counted and its run resynced, never silently dropped.
func TestProjector_UndecodableRecordResyncsItsRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	runs := f.appendRuns(t, seed(t), 1)
	id := keys(runs)[0]
	recs := runs[id]
	f.publish(t, recs[:1])
	if err := f.producer.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Key: []byte(id), Value: []byte(`{"runId": 5, garbage`)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	run := startProjector(t, f.brokers, "g-"+testenv.RandomID(4), f.rdb, f.store)
	f.waitConverged(t, []string{id}, 30*time.Second)
	if got := counter(t, run.reg, "runstream_projector_undecodable_records_total", ""); got != 1 {
		t.Fatalf("undecodable records counted %v, want 1", got)
	}
}
