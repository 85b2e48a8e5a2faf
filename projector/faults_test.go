package projector_test

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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/projector"
	"github.com/runstream/runstream/record"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// startProjectorWith is startProjector with extra franz-go options; it
// also returns the number of partitions ever assigned to the projector.
func startProjectorWith(t *testing.T, f *fixture, group string, rdb redis.UniversalClient, extra ...kgo.Opt) (*running, *atomic.Int64) {
	t.Helper()
	var assigned atomic.Int64
	// Only OnPartitionsAssigned: the projector sets the revoked and lost
	// callbacks itself, and a later option would replace them.
	opts := append([]kgo.Opt{kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
		for _, ps := range m {
			assigned.Add(int64(len(ps)))
		}
	})}, extra...)
	return runProjector(t, testConfig(f.brokers, group), rdb, f.store, opts...), &assigned
}

// interleave merges the runs' records round-robin, keeping each run's
// order, as concurrent runs arrive on the bus.
func interleave(runs map[string][]store.RunEventRecord) []store.RunEventRecord {
	ids := keys(runs)
	var out []store.RunEventRecord
	for i := 0; ; i++ {
		n := len(out)
		for _, id := range ids {
			if i < len(runs[id]) {
				out = append(out, runs[id][i])
			}
		}
		if len(out) == n {
			return out
		}
	}
}

// progress counts the runs that have a Redis snapshot, and those whose
// snapshot reached the run's last runSeq.
func progress(t *testing.T, rdb redis.UniversalClient, runs map[string][]store.RunEventRecord) (exist, final int) {
	t.Helper()
	ctx := context.Background()
	ids := keys(runs)
	pipe := rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.Get(ctx, snapshots.Key(id))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	for i, c := range cmds {
		b, err := c.Bytes()
		if err != nil {
			continue
		}
		var s store.RunSnapshot
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("snapshot of %s is not JSON: %v", ids[i], err)
		}
		exist++
		recs := runs[ids[i]]
		if s.LastEventSeq == recs[len(recs)-1].RunSeq {
			final++
		}
	}
	return exist, final
}

// offsets returns the group's committed offset and the end offset of each
// partition of the topic; a partition never committed has -1.
func offsets(t *testing.T, adm *kadm.Client, group string) (committed, end map[int32]int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if err := ends.Error(); err != nil {
		t.Fatal(err)
	}
	resps, err := adm.FetchOffsets(ctx, group)
	if err == nil {
		err = resps.Error()
	}
	if errors.Is(err, kerr.GroupIDNotFound) {
		resps, err = nil, nil // nothing committed yet
	}
	if err != nil {
		t.Fatal(err)
	}
	committed, end = map[int32]int64{}, map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		end[o.Partition] = o.Offset
		committed[o.Partition] = -1
		if r, ok := resps.Lookup(topic, o.Partition); ok {
			committed[o.Partition] = r.At
		}
	})
	return committed, end
}

// waitCommittedAtEnd waits until the group has committed every partition
// that has records up to its end.
func waitCommittedAtEnd(t *testing.T, adm *kadm.Client, group string, timeout time.Duration) map[int32]int64 {
	t.Helper()
	var committed map[int32]int64
	testenv.WaitUntil(t, timeout, func() error {
		var end map[int32]int64
		committed, end = offsets(t, adm, group)
		for p, e := range end {
			if e > 0 && committed[p] != e {
				return fmt.Errorf("partition %d committed at %d, its end is %d", p, committed[p], e)
			}
		}
		return nil
	})
	return committed
}

// childSessionTimeout is the group session of the child projectors: a
// killed child's partitions move after it (kfake's minimum is lowered to
// allow it).
const childSessionTimeout = time.Second

// TestProjector_KilledMidStreamThenRestarted runs projectors in child
// processes (this test binary, re-executed) over a 200-run stream and kills
// each with SIGKILL part way through, three times, then starts a projector
// in the same group in-process: it resumes from the committed offsets,
// treats any writes a child made after its last commit as duplicates, and
// every snapshot converges to store.projectSnapshot.
func TestProjector_KilledMidStreamThenRestarted(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	schema := f.store.Pool().Config().ConnConfig.RuntimeParams["search_path"]
	runs := f.appendRuns(t, seed(t), 200)
	// Run after run: runs end all along the stream, so a batch lost by a
	// crash can hold a run's last events, which no later gap would reveal.
	var stream []store.RunEventRecord
	for _, id := range keys(runs) {
		stream = append(stream, runs[id]...)
	}
	f.publish(t, stream)
	group := "g-" + testenv.RandomID(4)
	adm := kadm.NewClient(f.producer)
	ms := strconv.Itoa(int(childSessionTimeout.Milliseconds()))
	resps, err := adm.AlterBrokerConfigs(context.Background(), []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "group.min.session.timeout.ms", Value: &ms}})
	if err == nil {
		for _, r := range resps {
			err = errors.Join(err, r.Err)
		}
	}
	if err != nil {
		t.Fatalf("lowering group.min.session.timeout.ms: %v", err)
	}

	for kill, target := 1, 20; kill <= 3; kill, target = kill+1, target+20 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProjectorProcess$", "-test.v", "-test.timeout=2m")
		cmd.Env = append(os.Environ(), "PROJECTOR_HELPER=1",
			"PROJECTOR_HELPER_PG="+testenv.PostgresURLWithSchema(t, schema),
			"PROJECTOR_HELPER_REDIS="+os.Getenv("RUNSTREAM_TEST_REDIS_URL"),
			"PROJECTOR_HELPER_BROKERS="+strings.Join(f.brokers, ","),
			"PROJECTOR_HELPER_GROUP="+group,
			// Small batches: a child commits many times before it is killed.
			"PROJECTOR_HELPER_MAX_POLL=20")
		out := new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-exited
			if t.Failed() {
				t.Logf("child projector %d output:\n%s", kill, out.String())
			}
		})
		testenv.WaitFor(t, 30*time.Second, fmt.Sprintf("child projector %d to complete %d runs", kill, target), func() bool {
			_, final := progress(t, f.rdb, runs)
			return final >= target
		})
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-exited
		exist, final := progress(t, f.rdb, runs)
		committed, end := offsets(t, adm, group)
		var nCommitted, nEnd int64
		for p := range end {
			nCommitted += max(committed[p], 0)
			nEnd += end[p]
		}
		t.Logf("killed child projector %d: %d of %d runs have a snapshot, %d complete; %d of %d records committed",
			kill, exist, len(runs), final, nCommitted, nEnd)
		if final == len(runs) {
			t.Fatalf("child projector %d projected the whole stream (%d records) before it was killed: nothing was tested mid-stream", kill, len(stream))
		}
	}

	startProjector(t, f.brokers, group, f.rdb, f.store)
	f.waitConverged(t, keys(runs), 60*time.Second)
	waitCommittedAtEnd(t, adm, group, 30*time.Second)
}

// TestHelperProjectorProcess is the child of
// TestProjector_KilledMidStreamThenRestarted and
// TestProjector_StaticMemberReplacedAtOnce: a projector configured from
// PROJECTOR_HELPER_* that runs until it is killed.
func TestHelperProjectorProcess(t *testing.T) {
	if os.Getenv("PROJECTOR_HELPER") != "1" {
		t.Skip("helper process for TestProjector_KilledMidStreamThenRestarted")
	}
	ctx := context.Background()
	pool, err := postgres.Connect(ctx, os.Getenv("PROJECTOR_HELPER_PG"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	opts, err := redis.ParseURL(os.Getenv("PROJECTOR_HELPER_REDIS"))
	if err != nil {
		t.Fatal(err)
	}
	maxPoll, err := strconv.Atoi(os.Getenv("PROJECTOR_HELPER_MAX_POLL"))
	if err != nil {
		t.Fatal(err)
	}
	session := childSessionTimeout
	if v := os.Getenv("PROJECTOR_HELPER_SESSION"); v != "" {
		if session, err = time.ParseDuration(v); err != nil {
			t.Fatal(err)
		}
	}
	p, err := projector.New(projector.Config{
		Brokers: strings.Split(os.Getenv("PROJECTOR_HELPER_BROKERS"), ","), Topic: topic,
		Group: os.Getenv("PROJECTOR_HELPER_GROUP"), MaxPollRecords: maxPoll,
		ResyncBackoffBase: 20 * time.Millisecond, ResyncBackoffMax: 200 * time.Millisecond,
		SessionTimeout: session, InstanceID: os.Getenv("PROJECTOR_HELPER_INSTANCE_ID"),
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
	}, redis.NewClient(opts), st, kgo.HeartbeatInterval(session/5))
	if err != nil {
		t.Fatal(err)
	}
	_ = p.Run(ctx) // until killed
}

// updateWatcher records, per run of interest, the watermarks published on
// snapshots.UpdatesChannel in the order Redis delivered them (the order of
// the snapshot writes: the script publishes atomically with its SET).
type updateWatcher struct {
	mu          sync.Mutex
	want        map[string]bool
	last        map[string]int64
	count       int
	regressions []string
	bad         []string
}

// watchUpdates subscribes to snapshots.UpdatesChannel and returns once the
// subscription is active, so no later write is missed.
func watchUpdates(t *testing.T, rdb redis.UniversalClient, runIDs []string) *updateWatcher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sub := rdb.Subscribe(ctx, snapshots.UpdatesChannel)
	if _, err := sub.Receive(ctx); err != nil { // the subscription's confirmation
		t.Fatalf("subscribing to %s: %v", snapshots.UpdatesChannel, err)
	}
	w := &updateWatcher{want: map[string]bool{}, last: map[string]int64{}}
	for _, id := range runIDs {
		w.want[id] = true
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			msg, err := sub.ReceiveMessage(ctx)
			if err != nil {
				return
			}
			w.note(msg.Payload)
		}
	}()
	t.Cleanup(func() { cancel(); _ = sub.Close(); <-done })
	return w
}

func (w *updateWatcher) note(payload string) {
	var u snapshots.Notification
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := json.Unmarshal([]byte(payload), &u); err != nil {
		// The channel is the shared Redis's, which other packages' tests
		// publish on at the same time, malformed messages included
		// (internal/httpapi's TestWatch_ForeignAndMalformedNotificationsDropped
		// publishes "not json", which failed this check when the two ran
		// together). A malformed notification is this test's when it names
		// one of its runs.
		for id := range w.want {
			if strings.Contains(payload, id) {
				w.bad = append(w.bad, payload)
				break
			}
		}
		return
	}
	if !w.want[u.RunID] {
		return // another test's run
	}
	if u.TenantID == "" || u.Status == "" {
		w.bad = append(w.bad, payload)
	}
	w.count++
	if prev, ok := w.last[u.RunID]; ok && u.LastEventSeq < prev {
		w.regressions = append(w.regressions, fmt.Sprintf("run %s: lastEventSeq %d published after %d", u.RunID, u.LastEventSeq, prev))
	}
	w.last[u.RunID] = u.LastEventSeq
}

// check waits until every run's last published watermark is its last
// runSeq, then fails t on any regression or malformed notification.
func (w *updateWatcher) check(t *testing.T, runs map[string][]store.RunEventRecord, timeout time.Duration) {
	t.Helper()
	testenv.WaitUntil(t, timeout, func() error {
		w.mu.Lock()
		defer w.mu.Unlock()
		for id, recs := range runs {
			if got, want := w.last[id], recs[len(recs)-1].RunSeq; got != want {
				return fmt.Errorf("run %s: last update published lastEventSeq %d, want %d", id, got, want)
			}
		}
		return nil
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.bad) > 0 {
		t.Errorf("%d malformed notifications on %s, first: %s", len(w.bad), snapshots.UpdatesChannel, w.bad[0])
	}
	if len(w.regressions) > 0 {
		t.Fatalf("%d snapshot regressions; first: %s", len(w.regressions), strings.Join(w.regressions[:min(5, len(w.regressions))], "; "))
	}
	t.Logf("%d updates published for %d runs, none going backwards", w.count, len(runs))
}

// delayHook makes every pipeline slow, by a random time up to max before
// it is sent and another after its replies came back: a slow Redis, or a
// slow projector, whose writes can land late or be acknowledged late.
type delayHook struct {
	max time.Duration
	mu  sync.Mutex
	rng *rand.Rand
}

func (h *delayHook) wait(ctx context.Context) error {
	h.mu.Lock()
	d := time.Duration(h.rng.Int64N(int64(h.max)))
	h.mu.Unlock()
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}

func (*delayHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (*delayHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *delayHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if err := h.wait(ctx); err != nil {
			return err
		}
		if err := next(ctx, cmds); err != nil {
			return err
		}
		return h.wait(ctx)
	}
}

// TestProjector_RebalanceDuringStream runs three projectors in one group
// over a stream published in waves; one leaves and another joins while
// waves keep coming. No update is lost (every run converges to
// store.projectSnapshot) and no snapshot regresses (the watermarks
// published on the updates channel never decrease for a run).
func TestProjector_RebalanceDuringStream(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rng := seed(t)
	runs := f.appendRuns(t, rng, 80)
	ids := keys(runs)
	// Each run's events spread over the waves in order, its last event in
	// the last wave: every run is updated before, during and after the
	// rebalances.
	const nWaves = 24
	waves := make([][]store.RunEventRecord, nWaves)
	for _, id := range ids {
		recs := runs[id]
		for i, r := range recs {
			w := ((i+1)*nWaves+len(recs)-1)/len(recs) - 1 // ceil, minus one
			waves[w] = append(waves[w], r)
		}
	}
	watch := watchUpdates(t, f.rdb, ids)
	// The projectors' Redis is slow, so a rebalance or a stop finds
	// batches between their reads and their guarded writes, or written
	// and not yet committed.
	slow := redis.NewClient(f.rdb.(*redis.Client).Options())
	slow.AddHook(&delayHook{max: 100 * time.Millisecond, rng: rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))})
	t.Cleanup(func() { _ = slow.Close() })
	group := "g-" + testenv.RandomID(4)
	var ps []*running
	var assigned []*atomic.Int64
	for range 3 {
		r, a := startProjectorWith(t, f, group, slow)
		ps, assigned = append(ps, r), append(assigned, a)
	}
	testenv.WaitFor(t, 30*time.Second, "the three projectors to be assigned partitions", func() bool {
		return assigned[0].Load() > 0 && assigned[1].Load() > 0 && assigned[2].Load() > 0
	})
	f.publish(t, waves[0])

	// The rest of the stream comes from a goroutine, a wave every 200ms, so
	// that it spans projector 1 leaving and projector 4 joining (members
	// learn of a rebalance at their next heartbeat, every 3s); the last
	// four waves wait for projector 4 to own partitions.
	published := make(chan int, nWaves)
	var sent atomic.Int32
	sent.Store(1)
	release, quit := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(quit) })
	pubErr := make(chan error, 1)
	go func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for w := 1; w < nWaves; w++ {
			if w == nWaves-4 {
				select {
				case <-release:
				case <-quit:
					return
				}
			}
			select {
			case <-tick.C:
			case <-quit:
				return
			}
			var krs []*kgo.Record
			for i := range waves[w] {
				kr, err := record.New(topic, &waves[w][i])
				if err != nil {
					pubErr <- err
					return
				}
				krs = append(krs, kr)
			}
			if err := f.producer.ProduceSync(context.Background(), krs...).FirstErr(); err != nil {
				pubErr <- err
				return
			}
			sent.Add(1)
			published <- w
		}
		pubErr <- nil
	}()
	for w := 0; w < 4; w = <-published {
	}
	start := time.Now()
	ps[0].stop(t) // leaves the group mid-stream
	r4, a4 := startProjectorWith(t, f, group, slow)
	ps = append(ps, r4)
	testenv.WaitFor(t, 30*time.Second, "the added projector to be assigned partitions", func() bool {
		return a4.Load() > 0
	})
	t.Logf("projector 4 owned partitions %v after projector 1 was told to stop, %d waves of %d published by then",
		time.Since(start), sent.Load(), nWaves)
	close(release)
	if err := <-pubErr; err != nil {
		t.Fatalf("publishing the stream: %v", err)
	}
	f.waitConverged(t, ids, 60*time.Second)
	watch.check(t, runs, 30*time.Second)
	for i, r := range ps {
		t.Logf("projector %d applied %v events, %v write conflicts", i+1,
			counter(t, r.reg, "runstream_projector_events_total", "applied"),
			counter(t, r.reg, "runstream_projector_write_conflicts_total", ""))
	}
	if counter(t, r4.reg, "runstream_projector_events_total", "applied") == 0 {
		t.Fatal("the added projector applied nothing: the test did not exercise it")
	}
}

// stallHook holds the first pipeline running the snapshot script after
// arm until release: a projector stalled between reading its snapshots and
// writing them (a long GC pause, a slow network).
type stallHook struct {
	armed   atomic.Bool
	held    chan struct{} // closed when the pipeline is held
	release chan struct{} // close to let it go
	done    chan struct{} // closed when it has been sent and answered
}

func newStallHook() *stallHook {
	return &stallHook{held: make(chan struct{}), release: make(chan struct{}), done: make(chan struct{})}
}

func (*stallHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (*stallHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *stallHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		writes := false
		for _, c := range cmds {
			writes = writes || c.Name() == "evalsha"
		}
		if !writes || !h.armed.CompareAndSwap(true, false) {
			return next(ctx, cmds)
		}
		close(h.held)
		defer close(h.done)
		select {
		case <-h.release:
		case <-ctx.Done():
			return ctx.Err()
		}
		return next(ctx, cmds)
	}
}

// TestProjector_StalledProjectorCannotRegressSnapshots: projector A reads
// its runs' snapshots and stalls before writing them, longer than the
// group's rebalance timeout. The group removes it and projector B takes its
// partitions, projects those records and later ones. When A's stale batch
// finally reaches Redis its guarded writes must lose (write conflicts):
// without the guard they would move every run back to A's older state, and
// B, having committed past it, would never repair them.
func TestProjector_StalledProjectorCannotRegressSnapshots(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	runs := f.appendRuns(t, seed(t), 20)
	ids := keys(runs)
	phases := make([]map[string][]store.RunEventRecord, 3)
	upTo := make([]map[string][]store.RunEventRecord, 3) // each run's records up to the end of a phase
	for i := range phases {
		phases[i], upTo[i] = map[string][]store.RunEventRecord{}, map[string][]store.RunEventRecord{}
	}
	for id, recs := range runs {
		a, b := len(recs)/3, 2*len(recs)/3
		for i, part := range [][]store.RunEventRecord{recs[:a], recs[a:b], recs[b:]} {
			phases[i][id] = part
		}
		upTo[0][id], upTo[1][id], upTo[2][id] = recs[:a], recs[:b], recs
	}
	watch := watchUpdates(t, f.rdb, ids)
	group := "g-" + testenv.RandomID(4)
	// A member that does not rejoin within its rebalance timeout is removed
	// from the group; heartbeats tell members of a rebalance quickly.
	fast := []kgo.Opt{kgo.RebalanceTimeout(time.Second), kgo.HeartbeatInterval(100 * time.Millisecond)}
	stall := newStallHook()
	rdbA := redis.NewClient(f.rdb.(*redis.Client).Options())
	rdbA.AddHook(stall)
	t.Cleanup(func() { _ = rdbA.Close() })

	f.publish(t, interleave(phases[0]))
	a, _ := startProjectorWith(t, f, group, rdbA, fast...)
	testenv.WaitFor(t, 30*time.Second, "projector A to project the first third", func() bool {
		_, final := progress(t, f.rdb, upTo[0])
		return final == len(runs)
	})
	stall.armed.Store(true)
	f.publish(t, interleave(phases[1]))
	testenv.WaitFor(t, 30*time.Second, "projector A to stall before writing", func() bool {
		select {
		case <-stall.held:
			return true
		default:
			return false
		}
	})

	_, assignedB := startProjectorWith(t, f, group, f.rdb, fast...)
	testenv.WaitFor(t, 30*time.Second, "projector B to be assigned partitions", func() bool {
		return assignedB.Load() > 0
	})
	f.publish(t, interleave(phases[2]))
	f.waitConverged(t, ids, 30*time.Second)

	close(stall.release)
	<-stall.done
	if _, final := progress(t, f.rdb, runs); final != len(runs) {
		t.Fatalf("after the stalled projector's writes only %d of %d runs are at their last event: its stale batch overwrote newer snapshots", final, len(runs))
	}
	testenv.WaitFor(t, 10*time.Second, "the stalled projector's writes to lose their guard", func() bool {
		return counter(t, a.reg, "runstream_projector_write_conflicts_total", "") > 0
	})
	f.waitConverged(t, ids, 10*time.Second)
	watch.check(t, runs, 10*time.Second)
}

// TestProjector_RedisDownForAWhile stops the projector's Redis (a private
// redis-server) while records keep arriving: the projector retries, the
// group's committed offsets do not move while Redis is down, and when
// Redis returns on the same address (with its keys, but an empty script
// cache) every run converges and the offsets reach the end of the
// partitions.
func TestProjector_RedisDownForAWhile(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv := testenv.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	f.rdb = rdb
	rng := seed(t)
	spanning := f.appendRuns(t, rng, 20) // half before the outage, the rest during it
	during := f.appendRuns(t, rng, 20)   // entirely during the outage
	all := map[string][]store.RunEventRecord{}
	heads, tails := map[string][]store.RunEventRecord{}, map[string][]store.RunEventRecord{}
	for id, recs := range spanning {
		all[id] = recs
		heads[id], tails[id] = recs[:len(recs)/2], recs[len(recs)/2:]
	}
	for id, recs := range during {
		all[id] = recs
		tails[id] = recs
	}
	group := "g-" + testenv.RandomID(4)
	adm := kadm.NewClient(f.producer)

	f.publish(t, interleave(heads))
	run := startProjector(t, f.brokers, group, rdb, f.store)
	before := waitCommittedAtEnd(t, adm, group, 30*time.Second)
	if exist, final := progress(t, rdb, heads); exist != len(heads) || final != len(heads) {
		t.Fatalf("before the outage %d of %d runs have a snapshot, %d at their last published event", exist, len(heads), final)
	}

	srv.Stop()
	f.publish(t, interleave(tails))
	fails0 := counter(t, run.reg, "runstream_projector_redis_failures_total", "")
	testenv.WaitUntil(t, 30*time.Second, func() error {
		committed, _ := offsets(t, adm, group)
		for p, at := range committed {
			if at != before[p] {
				t.Fatalf("partition %d: committed offset moved from %d to %d while Redis was down", p, before[p], at)
			}
		}
		if n := counter(t, run.reg, "runstream_projector_redis_failures_total", "") - fails0; n < 2 {
			return fmt.Errorf("%v failed batches while Redis is down, want a failure and a retry", n)
		}
		return nil
	})

	srv.Restart()
	// go-redis remembers dial errors for a moment after the server returns.
	testenv.WaitFor(t, 10*time.Second, "the client to reconnect", func() bool {
		return rdb.Ping(context.Background()).Err() == nil
	})
	f.waitConverged(t, keys(all), 30*time.Second)
	waitCommittedAtEnd(t, adm, group, 30*time.Second)
}
