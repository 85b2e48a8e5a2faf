package lag_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/lag"
	"github.com/runstream/runstream/internal/testenv/testkafka"
)

// TopicGroups finds the groups with commits on the topic and the groups
// whose members are assigned it before any commit, never a group of
// another topic only.
func TestTopicGroups_CommitsAndAssignments(t *testing.T) {
	k := testkafka.Start(t, kfake.SeedTopics(2, "t", "u"))
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	adm := kadm.NewClient(cl)
	for g, topic := range map[string]string{"committed-on-t": "t", "committed-on-u": "u"} {
		offs := kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: topic, Partition: 1, At: 0})
		if _, err := adm.CommitOffsets(ctx, g, offs); err != nil {
			t.Fatal(err)
		}
	}
	// A member that joined and never commits (autocommit off, no records).
	m, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...), kgo.ConsumerGroup("joined-t"), kgo.ConsumeTopics("t"), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		for pctx.Err() == nil {
			m.PollFetches(pctx)
		}
	}()
	var got []string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if got, err = lag.TopicGroups(ctx, cl, "t"); err != nil {
			t.Fatal(err)
		}
		if slices.Contains(got, "joined-t") {
			break
		}
	}
	if !slices.Equal(got, []string{"committed-on-t", "joined-t"}) {
		t.Fatalf("groups of t: %v, want committed-on-t and joined-t (sorted), not committed-on-u", got)
	}
}

// The text report's member columns fit long client ids, so rows stay
// aligned.
func TestText_LongClientIDsAligned(t *testing.T) {
	m1 := lag.Member{MemberID: "m1", ClientID: "runstream-projector-a-very-long-host-name-12345", InstanceID: "projector-0", Host: "/10.0.0.1"}
	m2 := lag.Member{MemberID: "m2", ClientID: "etl-b", Host: "/10.0.0.2"}
	r := lag.Report{Group: "g", State: "Stable", Members: 2, MemberDetails: []lag.Member{m1, m2},
		Partitions: []lag.Partition{{Topic: "t", Partition: 0, Owner: &m1, Member: m1.ClientID}}}
	lines := strings.Split(r.Text(), "\n")
	head, row1, row2 := lines[1], lines[2], lines[3]
	at := strings.Index(head, "INSTANCE ID")
	if strings.Index(row1, "projector-0") != at || strings.Index(row2, " - ")+1 != at || strings.Index(head, "HOST") != strings.Index(row1, "/10.0.0.1") {
		t.Fatalf("member columns not aligned:\n%s", r.Text())
	}
	if !strings.Contains(r.Text(), "#1 "+m1.ClientID+" (projector-0) /10.0.0.1\n") {
		t.Fatalf("the partition's owner is not named by number, client id, instance id and host:\n%s", r.Text())
	}
}
