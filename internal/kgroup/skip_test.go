package kgroup_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/kgroup"
)

const skipTopic = "t"

// skipBroker starts a one-partition kfake topic holding n records and
// returns its addresses and an admin client.
func skipBroker(t *testing.T, n int) ([]string, *kadm.Client) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, skipTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic(skipTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	produce(t, cl, 0, n)
	return c.ListenAddrs(), kadm.NewClient(cl)
}

func produce(t *testing.T, cl *kgo.Client, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// deleteBelow moves the partition's log start to offset, as retention
// does (kadm DeleteRecords: exact, where retention.ms works by time).
func deleteBelow(t *testing.T, adm *kadm.Client, offset int64) {
	t.Helper()
	var o kadm.Offsets
	o.Add(kadm.Offset{Topic: skipTopic, Partition: 0, At: offset})
	resp, err := adm.DeleteRecords(context.Background(), o)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
}

func commit(t *testing.T, adm *kadm.Client, group string, offset int64) {
	t.Helper()
	var o kadm.Offsets
	o.Add(kadm.Offset{Topic: skipTopic, Partition: 0, At: offset, LeaderEpoch: -1})
	resp, err := adm.CommitOffsets(context.Background(), group, o)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// member polls the topic in group, reset to the start as the projector
// and the consumer library are, through a SkipWatch, until it has read up
// to offset end; it returns the skips seen.
type member struct {
	cl    *kgo.Client
	group string
	w     kgroup.SkipWatch
	read  int64 // offset after the last record polled
}

func newMember(t *testing.T, brokers []string, group string) *member {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(skipTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &member{cl: cl, group: group}
}

func (m *member) pollTo(t *testing.T, end int64) []kgroup.Skip {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var skips []kgroup.Skip
	for m.read < end {
		fs := m.cl.PollRecords(ctx, 3) // small polls: several per test
		if ctx.Err() != nil {
			t.Fatalf("read to offset %d of %d", m.read, end)
		}
		skips = append(skips, m.w.Check(ctx, m.cl, m.group, fs)...)
		for _, r := range fs.Records() {
			m.read = r.Offset + 1
		}
	}
	return skips
}

// A group stopped at offset 4 whose records up to 8 were deleted meanwhile:
// one skip from 4 to 8, and none for the records after.
func TestSkipWatch_CommittedOffsetDeletedWhileStopped(t *testing.T) {
	t.Parallel()
	brokers, adm := skipBroker(t, 12)
	commit(t, adm, "g", 4)
	deleteBelow(t, adm, 8)
	m := newMember(t, brokers, "g")
	skips := m.pollTo(t, 12)
	want := kgroup.Skip{Topic: skipTopic, Partition: 0, From: 4, ResumedAt: 8}
	if len(skips) != 1 || skips[0] != want {
		t.Fatalf("skips %+v, want [%+v]", skips, want)
	}
	if skips[0].Skipped() != 4 {
		t.Errorf("Skipped() = %d, want 4", skips[0].Skipped())
	}
}

// A group that never committed starts at the earliest record left: it
// skipped nothing of its own.
func TestSkipWatch_NewGroupIsNoSkip(t *testing.T) {
	t.Parallel()
	brokers, adm := skipBroker(t, 12)
	deleteBelow(t, adm, 8)
	if skips := newMember(t, brokers, "fresh").pollTo(t, 12); len(skips) != 0 {
		t.Fatalf("skips %+v, want none", skips)
	}
}

// A committed offset still in the log: nothing skipped, though the log
// start moved.
func TestSkipWatch_CommittedOffsetStillThere(t *testing.T) {
	t.Parallel()
	brokers, adm := skipBroker(t, 12)
	deleteBelow(t, adm, 3)
	commit(t, adm, "g", 5)
	if skips := newMember(t, brokers, "g").pollTo(t, 12); len(skips) != 0 {
		t.Fatalf("skips %+v, want none", skips)
	}
}

// A member consuming too slowly: retention deletes past where it is, and
// franz-go moves it to the log start with no error; the watch says so.
func TestSkipWatch_DeletedPastAMemberThatIsReading(t *testing.T) {
	t.Parallel()
	brokers, adm := skipBroker(t, 6)
	m := newMember(t, brokers, "g")
	if skips := m.pollTo(t, 6); len(skips) != 0 {
		t.Fatalf("skips %+v before anything was deleted", skips)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(skipTopic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce(t, cl, 6, 20)
	deleteBelow(t, adm, 15)
	skips := m.pollTo(t, 20)
	// The member may have fetched some records after 6 before the
	// delete: it skipped from wherever it was to 15.
	if len(skips) != 1 || skips[0].ResumedAt != 15 || skips[0].From < 6 || skips[0].From >= 15 {
		t.Fatalf("skips %+v, want one from [6, 15) to 15", skips)
	}
}
