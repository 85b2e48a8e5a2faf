package kgroup_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/kgroup"
)

const skipTopic = "t"

// skipBroker starts a two-partition kfake topic holding n records in
// partition 0 and returns its addresses and an admin client.
func skipBroker(t *testing.T, n int) ([]string, *kadm.Client) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, skipTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl := producer(t, c.ListenAddrs())
	produce(t, cl, 0, 0, n)
	return c.ListenAddrs(), kadm.NewClient(cl)
}

func producer(t *testing.T, brokers []string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(skipTopic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// produce writes records from..to-1 (their values) to partition p.
func produce(t *testing.T, cl *kgo.Client, p int32, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Partition: p, Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// deleteBelow moves partition p's log start to offset, as retention does
// (kadm DeleteRecords: exact, where retention.ms works by time).
func deleteBelow(t *testing.T, adm *kadm.Client, p int32, offset int64) {
	t.Helper()
	var o kadm.Offsets
	o.Add(kadm.Offset{Topic: skipTopic, Partition: p, At: offset})
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

// member polls the topic in group through a SkipWatch, reset to the start
// as the projector and the consumer library are.
type member struct {
	cl    *kgo.Client
	group string
	w     kgroup.SkipWatch
	read  map[int32]int64 // offset after the last record polled, by partition
}

func newMember(t *testing.T, brokers []string, group string) *member {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(skipTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &member{cl: cl, group: group, read: map[int32]int64{}}
}

// pollTo polls, in small polls, until it has read partition 0 to offset
// end (and each partition of more to its end), and returns the skips the
// watch saw.
func (m *member) pollTo(t *testing.T, end int64, more ...[2]int64) []kgroup.Skip {
	t.Helper()
	ends := map[int32]int64{0: end}
	for _, pe := range more {
		ends[int32(pe[0])] = pe[1]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var skips []kgroup.Skip
	for {
		done := true
		for p, e := range ends {
			done = done && m.read[p] >= e
		}
		if done {
			return skips
		}
		fs := m.cl.PollRecords(ctx, 3)
		if ctx.Err() != nil {
			t.Fatalf("read %v of %v", m.read, ends)
		}
		skips = append(skips, m.w.Check(ctx, m.cl, m.group, fs)...)
		for _, r := range fs.Records() {
			m.read[r.Partition] = r.Offset + 1
		}
	}
}

// A group stopped at offset 4 whose records up to 8 were deleted meanwhile:
// one skip from 4 to 8, and none for the records after.
func TestSkipWatch_CommittedOffsetDeletedWhileStopped(t *testing.T) {
	t.Parallel()
	brokers, adm := skipBroker(t, 12)
	commit(t, adm, "g", 4)
	deleteBelow(t, adm, 0, 8)
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
	deleteBelow(t, adm, 0, 8)
	if skips := newMember(t, brokers, "fresh").pollTo(t, 12); len(skips) != 0 {
		t.Fatalf("skips %+v, want none", skips)
	}
}

// A partition the group never committed in, while it did in another of
// the topic: it had nothing to read there while it ran, so the deleted
// first records of that partition are ones it skipped. Commits in another
// topic do not count: for this topic the group is new.
func TestSkipWatch_PartitionTheGroupNeverCommittedIn(t *testing.T) {
	t.Parallel()
	brokers, adm := skipBroker(t, 12)
	produce(t, producer(t, brokers), 1, 0, 5)
	deleteBelow(t, adm, 1, 3)
	var other kadm.Offsets
	other.Add(kadm.Offset{Topic: "other", Partition: 0, At: 1, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(context.Background(), "new-here", other); err != nil {
		t.Fatal(err)
	}
	if skips := newMember(t, brokers, "new-here").pollTo(t, 12, [2]int64{1, 5}); len(skips) != 0 {
		t.Fatalf("skips %+v, want none for a topic the group never committed in", skips)
	}

	commit(t, adm, "g", 12) // partition 0 read to its end; partition 1 never committed
	want := kgroup.Skip{Topic: skipTopic, Partition: 1, From: 0, ResumedAt: 3}
	skips := newMember(t, brokers, "g").pollTo(t, 0, [2]int64{1, 5})
	if len(skips) != 1 || skips[0] != want {
		t.Fatalf("skips %+v, want [%+v]", skips, want)
	}
	if d := skips[0].Describe(); !strings.Contains(d, "had not read yet") {
		t.Errorf("Describe() = %q", d)
	}
}

// A committed offset still in the log: nothing skipped, though the log
// start moved.
func TestSkipWatch_CommittedOffsetStillThere(t *testing.T) {
	t.Parallel()
	brokers, adm := skipBroker(t, 12)
	deleteBelow(t, adm, 0, 3)
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
	produce(t, producer(t, brokers), 0, 6, 20)
	deleteBelow(t, adm, 0, 15)
	skips := m.pollTo(t, 20)
	// The member may have fetched some records after 6 before the
	// delete: it skipped from wherever it was to 15.
	if len(skips) != 1 || skips[0].ResumedAt != 15 || skips[0].From < 6 || skips[0].From >= 15 {
		t.Fatalf("skips %+v, want one from [6, 15) to 15", skips)
	}
}
