package projector_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/projector"
	"github.com/runstream/runstream/store"
)

// memberSession is the session timeout of the membership tests: the
// brokers' minimum (group.min.session.timeout.ms, 6 s in Kafka and kfake).
const memberSession = 6 * time.Second

// appendStarted stores a RunStarted of a new run, publishes it and
// returns the run's id.
func (f *fixture) appendStarted(t *testing.T) string {
	t.Helper()
	id := workload.NewIdentity("tenant_member")
	ev := workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil)
	if _, err := f.store.AppendEvent(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	recs, err := f.store.FetchEvents(context.Background(), id.RunID, store.FetchOptions{})
	if err != nil || len(recs) != 1 {
		t.Fatalf("fetching run %s: %d events, %v", id.RunID, len(recs), err)
	}
	f.publish(t, recs)
	return id.RunID
}

// child is a projector process.
type child struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// startChild starts TestHelperProjectorProcess in group as a process of its
// own; instanceID empty means dynamic membership.
func (f *fixture) startChild(t *testing.T, group, instanceID string) *child {
	t.Helper()
	schema := f.store.Pool().Config().ConnConfig.RuntimeParams["search_path"]
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProjectorProcess$", "-test.v", "-test.timeout=2m")
	cmd.Env = append(os.Environ(), "PROJECTOR_HELPER=1",
		"PROJECTOR_HELPER_PG="+testenv.PostgresURLWithSchema(t, schema),
		"PROJECTOR_HELPER_REDIS="+os.Getenv("RUNSTREAM_TEST_REDIS_URL"),
		"PROJECTOR_HELPER_BROKERS="+strings.Join(f.brokers, ","),
		"PROJECTOR_HELPER_GROUP="+group,
		"PROJECTOR_HELPER_MAX_POLL=500",
		"PROJECTOR_HELPER_SESSION="+memberSession.String(),
		"PROJECTOR_HELPER_INSTANCE_ID="+instanceID)
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
			t.Logf("child projector (group %s, instance %q) output:\n%s", group, instanceID, out.String())
		}
	})
	return &child{cmd: cmd, exited: exited}
}

// waitSnapshot waits until run has a snapshot in Redis and returns when it
// saw it.
func (f *fixture) waitSnapshot(t *testing.T, run string, timeout time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if _, ok := redisSnapshot(t, f.rdb, run); ok {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s has no snapshot after %v", run, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// consumedAll waits until group has committed every partition up to its
// end and returns when it saw it.
func consumedAll(t *testing.T, adm *kadm.Client, group string, timeout time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		committed, end := offsets(t, adm, group)
		done := true
		for p, e := range end {
			if e > 0 && committed[p] != e {
				done = false
			}
		}
		if done {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s has not committed every partition to its end after %v: committed %v, end %v", group, timeout, committed, end)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// killAndReplace runs a projector process in a fresh group until it
// consumes, kills it with SIGKILL, starts a replacement with the same
// instance id at once and returns how long the group's partitions stalled:
// from the kill until an event appended after it was projected into Redis
// and its offset committed by the group (which only the consumer group
// does, not a convergence pass that may repair the run meanwhile).
func killAndReplace(t *testing.T, f *fixture, instanceID string) time.Duration {
	t.Helper()
	adm := kadm.NewClient(f.producer)
	group := "member-" + testenv.RandomID(4)
	first := f.startChild(t, group, instanceID)
	f.waitSnapshot(t, f.appendStarted(t), 60*time.Second)
	consumedAll(t, adm, group, 30*time.Second) // it owns the partitions and consumes
	// A heartbeat or so, as for a member that crashes at work.
	time.Sleep(time.Second)

	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-first.exited
	killed := time.Now()
	second := f.startChild(t, group, instanceID)
	probe := f.appendStarted(t)
	f.waitSnapshot(t, probe, 30*time.Second)
	stall := consumedAll(t, adm, group, 30*time.Second).Sub(killed)
	// Stop it: every group consumes the whole topic, and the next case
	// must see only its own group's projector at work.
	_ = second.cmd.Process.Kill()
	<-second.exited
	return stall
}

// TestProjector_StaticMemberReplacedAtOnce kills a projector process that
// owns every partition (SIGKILL: no leave, no commit) and starts a
// replacement at once. With an instance id (static membership, KIP-345)
// the replacement takes the dead member's place in the group as soon as it
// joins; without one it is a new member, and the group waits for the dead
// one's session to time out before it rebalances. The stall is measured
// from the kill until an event appended after it shows up in Redis. Not
// parallel: the numbers are timings.
func TestProjector_StaticMemberReplacedAtOnce(t *testing.T) {
	f := newFixture(t)
	static := killAndReplace(t, f, "projector-"+testenv.RandomID(4))
	dynamic := killAndReplace(t, f, "")
	t.Logf("partitions stalled %v with an instance id (static), %v without (dynamic); session timeout %v",
		static.Round(time.Millisecond), dynamic.Round(time.Millisecond), memberSession)
	if static >= 5*time.Second {
		t.Errorf("static member: the replacement consumed %v after the kill, want < 5s", static)
	}
	// The dead dynamic member's session started at its last heartbeat
	// (every session/5), up to 1.2 s before the kill.
	if dynamic < memberSession*3/4 {
		t.Errorf("dynamic member: the replacement consumed %v after the kill, before the %v session could time out: "+
			"the test does not measure what it says", dynamic, memberSession)
	}
}

// TestProjector_CleanStopLeavesTheGroup stops projectors with and without
// an instance id: either way the group is empty at once, not after the
// session timeout. franz-go sends no LeaveGroup for a static member on
// Close; the projector leaves explicitly (package kgroup).
func TestProjector_CleanStopLeavesTheGroup(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	adm := kadm.NewClient(f.producer)
	for _, instanceID := range []string{"projector-" + testenv.RandomID(4), ""} {
		group := "leave-" + testenv.RandomID(4)
		p, err := projector.New(projector.Config{Brokers: f.brokers, Topic: topic, Group: group,
			SessionTimeout: memberSession, InstanceID: instanceID, Registerer: prometheus.NewRegistry()}, f.rdb, f.store)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		f.waitSnapshot(t, f.appendStarted(t), 30*time.Second)
		members := func() (int, string) {
			gs, err := adm.DescribeGroups(context.Background(), group)
			if err != nil {
				t.Fatal(err)
			}
			g := gs[group]
			if g.Err != nil {
				t.Fatal(g.Err)
			}
			return len(g.Members), g.State
		}
		if n, state := members(); n != 1 {
			t.Fatalf("instance %q: %d members (%s) while running, want 1", instanceID, n, state)
		}
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the projector did not stop")
		}
		stopped := time.Now()
		// The leave is answered before Run returns; allow the broker a
		// moment, far less than the session timeout.
		testenv.WaitFor(t, time.Second, "the group to be empty after a clean stop", func() bool {
			n, _ := members()
			return n == 0
		})
		t.Logf("instance %q: the group was empty %v after Run returned", instanceID, time.Since(stopped).Round(time.Millisecond))
	}
}
