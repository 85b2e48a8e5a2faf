package consumer_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/runstream/runstream/consumer"
	"github.com/runstream/runstream/internal/testenv"
)

// TestConsumer_CleanStopLeavesTheGroup: a consumer stopped cleanly leaves
// its group at once, as a static member (InstanceID) too, for which
// franz-go's Close sends no LeaveGroup; and a static member's instance id
// reaches the broker.
func TestConsumer_CleanStopLeavesTheGroup(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	adm := kadm.NewClient(f.prod)
	runs := f.runs(t, 1)
	f.publish(t, runs[0]...)
	for _, instanceID := range []string{"etl-" + testenv.RandomID(4), ""} {
		group := "leave-" + testenv.RandomID(4)
		h := &recorder{}
		stop := start(t, consumer.Config{Brokers: f.brokers, Topic: topic, Group: group, Fetcher: f.store,
			SessionTimeout: 6 * time.Second, InstanceID: instanceID}, h)
		testenv.WaitFor(t, 30*time.Second, "the run's events handled", func() bool {
			return len(h.get(runs[0][0].RunID)) == len(runs[0])
		})
		describe := func() kadm.DescribedGroup {
			gs, err := adm.DescribeGroups(context.Background(), group)
			if err != nil {
				t.Fatal(err)
			}
			if err := gs[group].Err; err != nil {
				t.Fatal(err)
			}
			return gs[group]
		}
		g := describe()
		if len(g.Members) != 1 {
			t.Fatalf("instance %q: %d members while running, want 1", instanceID, len(g.Members))
		}
		if got := g.Members[0].InstanceID; (got == nil && instanceID != "") || (got != nil && *got != instanceID) {
			t.Fatalf("the member's instance id is %v, want %q", got, instanceID)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		// Far less than the 6 s session timeout a member that did not
		// leave would hold the group for.
		testenv.WaitFor(t, time.Second, "the group to be empty after a clean stop", func() bool {
			return len(describe().Members) == 0
		})
	}
}
