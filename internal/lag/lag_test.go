package lag_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/lag"
	"github.com/runstream/runstream/internal/testenv/testkafka"
)

// TestMeasure_KnownCommitsAndOldTimestamps commits known offsets for a
// group, checks records lag against an independent kadm reading, and lag
// seconds against the old timestamps the records carry.
func TestMeasure_KnownCommitsAndOldTimestamps(t *testing.T) {
	k := testkafka.Start(t, kfake.SeedTopics(3, "t"))
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	old := time.Now().Add(-90 * time.Second).Truncate(time.Millisecond)
	// Partition 0: 10 records; 1: 5 records; 2: none.
	for p, n := range map[int32]int{0: 10, 1: 5} {
		for i := range n {
			ts := old.Add(time.Duration(i) * time.Second)
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Partition: p, Value: []byte("x"), Timestamp: ts}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	adm := kadm.NewClient(cl)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "t", Partition: 0, At: 4})
	offs.Add(kadm.Offset{Topic: "t", Partition: 1, At: 5})
	if _, err := adm.CommitOffsets(ctx, "etl", offs); err != nil {
		t.Fatal(err)
	}
	rep, err := lag.Measure(ctx, cl, "etl")
	if err != nil {
		t.Fatal(err)
	}
	// Independent reading: end offsets from kadm directly.
	ends, err := adm.ListEndOffsets(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	byPart := map[int32]lag.Partition{}
	for _, p := range rep.Partitions {
		byPart[p.Partition] = p
	}
	for _, p := range []int32{0, 1} {
		end, _ := ends.Lookup("t", p)
		if byPart[p].End != end.Offset {
			t.Fatalf("partition %d end %d, kadm says %d", p, byPart[p].End, end.Offset)
		}
	}
	if byPart[0].Lag != 6 || byPart[0].Committed != 4 || byPart[1].Lag != 0 || rep.TotalLag != 6 {
		t.Fatalf("lag %+v total %d; want partition 0 lag 6 (10-4), partition 1 lag 0", rep.Partitions, rep.TotalLag)
	}
	// The oldest unconsumed record of partition 0 is offset 4, stamped old+4s.
	want := time.Since(old.Add(4 * time.Second)).Seconds()
	if d := byPart[0].LagSeconds - want; d < -2 || d > 2 {
		t.Fatalf("lag seconds %.1f, want about %.1f (from the record's timestamp)", byPart[0].LagSeconds, want)
	}
	if byPart[1].LagSeconds != 0 {
		t.Fatalf("caught-up partition has lag seconds %v", byPart[1].LagSeconds)
	}
	if rep.State != "Empty" || !strings.Contains(rep.Note, "no members") {
		t.Fatalf("state %q note %q: an empty group must say so", rep.State, rep.Note)
	}
	if !strings.Contains(rep.Text(), "total lag 6 records") {
		t.Fatalf("text report:\n%s", rep.Text())
	}
	none, err := lag.Measure(ctx, cl, "never-existed")
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Exists || none.Exists {
		t.Fatalf("exists: a group with commits %v, a group never seen %v; want true, false", rep.Exists, none.Exists)
	}
	if none.Note == "" || len(none.Partitions) != 0 {
		t.Fatalf("unknown group: %+v; want a note instead of zeros", none)
	}
}

// TestMeasure_CommitBelowADeletedLog: retention deleted every record of a
// partition past the group's committed offset (the group was stopped) and
// nothing was published since. The group has nothing there to read, so how
// far it has read is known: convergence's horizon (UnreadSince) must not
// wait for a record that will never come. It used to try to read the
// partition's oldest unread record, find none, and report the group's
// position unknown until a new record arrived, skipping every convergence
// pass meanwhile.
func TestMeasure_CommitBelowADeletedLog(t *testing.T) {
	k := testkafka.Start(t, kfake.SeedTopics(2, "t"))
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	for p, n := range map[int32]int{0: 10, 1: 5} {
		for range n {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Partition: p, Value: []byte("x")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	adm := kadm.NewClient(cl)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "t", Partition: 0, At: 2})
	offs.Add(kadm.Offset{Topic: "t", Partition: 1, At: 5})
	if _, err := adm.CommitOffsets(ctx, "g", offs); err != nil {
		t.Fatal(err)
	}
	del := kadm.Offsets{}
	del.Add(kadm.Offset{Topic: "t", Partition: 0, At: 10})
	if _, err := adm.DeleteRecords(ctx, del); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rep, err := lag.Measure(ctx, cl, "g")
	if err != nil {
		t.Fatal(err)
	}
	unread, err := rep.UnreadSince()
	if err != nil || !unread.IsZero() {
		t.Fatalf("UnreadSince() = %v, %v; want nothing unread", unread, err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Measure took %v: it waited for a record of the emptied partition", d)
	}
}
