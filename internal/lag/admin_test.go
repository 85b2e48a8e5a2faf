package lag_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/lag"
	"github.com/runstream/runstream/internal/testenv/testkafka"
)

// consumeAll reads group's records of topic from its committed offsets
// (the start when none) until n arrived or wait passed, commits and
// leaves; it returns how many it read.
func consumeAll(t *testing.T, brokers []string, group, topic string, n int, wait time.Duration) int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	got := 0
	for got < n && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		got += fs.NumRecords()
		if err := cl.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
			t.Fatal(err)
		}
	}
	return got
}

// A day reprocessed: a group that read everything is reset to a time and
// reads again exactly the records from that time on; to earliest, all of
// them. Refused while a member is in the group, for a group that does not
// exist, and for a time before what retention kept; an idle group can be
// deleted, one with a member cannot.
func TestResetOffsets_ReprocessFromATime(t *testing.T) {
	k := testkafka.Start(t, kfake.SeedTopics(3, "events"))
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	day := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	// 60 records, one a minute from day-30m: 30 before day, 30 from it on.
	var recs []*kgo.Record
	for i := range 60 {
		recs = append(recs, &kgo.Record{Topic: "events", Key: []byte(fmt.Sprintf("run-%d", i%7)), Value: []byte("x"),
			Timestamp: day.Add(time.Duration(i-30) * time.Minute)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if got := consumeAll(t, k.Brokers, "etl", "events", 60, 20*time.Second); got != 60 {
		t.Fatalf("the group read %d records first, want 60", got)
	}

	dry, err := lag.ResetOffsets(ctx, cl, "etl", "events", lag.ResetTo{At: day}, false)
	if err != nil {
		t.Fatal(err)
	}
	if dry.Applied || dry.Replay != 30 || dry.Skip != 0 || len(dry.Partitions) != 3 {
		t.Fatalf("dry run: %+v, want 30 records to replay over 3 partitions, not applied", dry)
	}
	if again := consumeAll(t, k.Brokers, "etl", "events", 1, 3*time.Second); again != 0 {
		t.Fatalf("after a dry run the group read %d records, want none (nothing moved)", again)
	}
	if _, err := lag.ResetOffsets(ctx, cl, "etl", "events", lag.ResetTo{At: day}, true); err != nil {
		t.Fatal(err)
	}
	if got := consumeAll(t, k.Brokers, "etl", "events", 30, 20*time.Second); got != 30 {
		t.Fatalf("after a reset to %s the group read %d records, want the 30 from then on", day, got)
	}
	all, err := lag.ResetOffsets(ctx, cl, "etl", "events", lag.ResetTo{Earliest: true}, true)
	if err != nil || all.Replay != 60 {
		t.Fatalf("reset to earliest: %+v, %v; want 60 to replay", all, err)
	}
	if got := consumeAll(t, k.Brokers, "etl", "events", 60, 20*time.Second); got != 60 {
		t.Fatalf("after a reset to earliest the group read %d records, want 60", got)
	}

	// Refusals.
	if _, err := lag.ResetOffsets(ctx, cl, "no-such-group", "events", lag.ResetTo{Earliest: true}, true); !errors.Is(err, lag.ErrGroupNotFound) {
		t.Fatalf("an unknown group: %v, want ErrGroupNotFound", err)
	}
	member, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...), kgo.ConsumerGroup("etl"), kgo.ConsumeTopics("events"), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	pctx, stop := context.WithCancel(ctx)
	go func() {
		for pctx.Err() == nil {
			member.PollFetches(pctx)
		}
	}()
	var active *lag.GroupActiveError
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, err = lag.ResetOffsets(ctx, cl, "etl", "events", lag.ResetTo{Earliest: true}, false)
		if errors.As(err, &active) || time.Now().After(deadline) {
			break
		}
	}
	if active == nil || active.Members != 1 {
		t.Fatalf("a reset with a member in the group: %v, want GroupActiveError with 1 member", err)
	}
	if err := lag.DeleteGroup(ctx, cl, "etl"); !errors.As(err, &active) {
		t.Fatalf("deleting a group with a member: %v, want GroupActiveError", err)
	}
	stop()
	member.Close()

	// Retention deleted the first 5 records of every partition: a time
	// before what is kept is refused, earliest is not.
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, "events")
	if err != nil {
		t.Fatal(err)
	}
	del := kadm.Offsets{}
	ends.Each(func(o kadm.ListedOffset) {
		del.Add(kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: min(5, o.Offset)})
	})
	if _, err := adm.DeleteRecords(ctx, del); err != nil {
		t.Fatal(err)
	}
	var before *lag.BeforeLogStartError
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, err = lag.ResetOffsets(ctx, cl, "etl", "events", lag.ResetTo{At: day.Add(-time.Hour)}, false)
		if errors.As(err, &before) || time.Now().After(deadline) {
			break
		}
	}
	if before == nil || !before.FirstKept.After(day.Add(-time.Hour)) {
		t.Fatalf("a reset to before what retention kept: %v, want BeforeLogStartError", err)
	}
	if p, err := lag.ResetOffsets(ctx, cl, "etl", "events", lag.ResetTo{Earliest: true}, false); err != nil || p.Replay != 60-15 {
		t.Fatalf("earliest after the deletion: %+v, %v; want 45 to replay", p, err)
	}

	if err := lag.DeleteGroup(ctx, cl, "etl"); err != nil {
		t.Fatalf("deleting the idle group: %v", err)
	}
	if _, err := lag.ResetOffsets(ctx, cl, "etl", "events", lag.ResetTo{Earliest: true}, false); !errors.Is(err, lag.ErrGroupNotFound) {
		t.Fatalf("after the delete: %v, want ErrGroupNotFound", err)
	}
}
