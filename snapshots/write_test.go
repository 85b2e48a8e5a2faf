package snapshots

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/store"
)

// TestWriteAll_Modes: each guard mode writes exactly when its rule
// ([Mode]) says, a write publishes its notification and indexes the run, and the
// watermarks read back inside Redis are the ones written.
func TestWriteAll_Modes(t *testing.T) {
	tenant, id := "tenant-"+testenv.RandomID(6), "write-"+testenv.RandomID(6)
	rdb := testenv.Redis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t.Cleanup(func() { rdb.Del(context.Background(), Key(id), IndexKey(tenant)) })
	sub := rdb.Subscribe(ctx, UpdatesChannelOf(rdb))
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 2, 16, 10, 30, 0, 0, time.UTC)
	snap := func(seq int64, stale bool) store.RunSnapshot {
		return store.RunSnapshot{RunID: id, TenantID: tenant, Status: "RUNNING", LastEventSeq: seq, Stale: stale,
			UpdatedAt: store.FormatPersistedAt(at.Add(time.Duration(seq) * time.Second))}
	}
	steps := []struct {
		name   string
		w      Write
		want   bool
		stored int64 // when not written
	}{
		{"cas on nothing", Write{Snapshot: snap(3, false), Expected: -1}, true, 0},
		{"cas on a wrong watermark", Write{Snapshot: snap(4, false), Expected: 2}, false, 3},
		{"cas on the right one", Write{Snapshot: snap(5, true), Expected: 3}, true, 0},
		{"max below", Write{Snapshot: snap(4, false), Mode: ModeMax}, false, 5},
		{"max equal over stale", Write{Snapshot: snap(5, false), Mode: ModeMax}, true, 0},
		{"max equal over fresh", Write{Snapshot: snap(5, false), Mode: ModeMax}, false, 5},
		{"max_eq equal", Write{Snapshot: snap(5, false), Mode: ModeMaxEq}, true, 0},
		{"max_eq below", Write{Snapshot: snap(4, false), Mode: ModeMaxEq}, false, 5},
		{"max above", Write{Snapshot: snap(8, false), Mode: ModeMax}, true, 0},
	}
	for _, st := range steps {
		res, err := WriteAll(ctx, rdb, []Write{st.w})
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if res[0].Written != st.want || (!st.want && res[0].Stored != st.stored) {
			t.Fatalf("%s: %+v, want written %v (stored %d)", st.name, res[0], st.want, st.stored)
		}
		if !st.want {
			continue
		}
		msg, err := sub.ReceiveMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := ParseNotification([]byte(msg.Payload)); err != nil || n != NotificationOf(&st.w.Snapshot) {
			t.Fatalf("%s: notification %s, %v", st.name, msg.Payload, err)
		}
	}
	var got store.RunSnapshot
	b, err := rdb.Get(ctx, Key(id)).Bytes()
	if err != nil || Decode(b, &got) != nil || got.LastEventSeq != 8 {
		t.Fatalf("stored %s, %v", b, err)
	}
	score, err := rdb.ZScore(ctx, IndexKey(tenant), id).Result()
	if err != nil || score != float64(at.Add(8*time.Second).UnixMilli()) {
		t.Fatalf("index score %v, %v", score, err)
	}

	// Watermarks read inside Redis, and the index put back by Reindex.
	other := "write-missing-" + testenv.RandomID(6)
	heads := []store.RunHead{{RunID: id, TenantID: tenant}, {RunID: other, TenantID: tenant}}
	marks, err := ReadWatermarks(ctx, rdb, heads)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Watermark{{LastEventSeq: 8, Indexed: true}, {LastEventSeq: -1}}; marks[0] != want[0] || marks[1] != want[1] {
		t.Fatalf("watermarks %+v, want %+v", marks, want)
	}
	if err := rdb.ZRem(ctx, IndexKey(tenant), id).Err(); err != nil {
		t.Fatal(err)
	}
	if err := Reindex(ctx, rdb, []store.RunHead{{RunID: id, TenantID: tenant, LastPersistedAt: at}}, 0); err != nil {
		t.Fatal(err)
	}
	if marks, err := ReadWatermarks(ctx, rdb, heads[:1]); err != nil || !marks[0].Indexed {
		t.Fatalf("after Reindex: %+v, %v", marks, err)
	}

	// The script-only write of the bench: the same guard.
	body := Append(nil, &store.RunSnapshot{RunID: id, LastEventSeq: 9})
	lost, err := WriteEncoded(ctx, rdb, []EncodedWrite{
		{RunID: id, TenantID: tenant, Status: "RUNNING", Snapshot: body, LastEventSeq: 9, Expected: 8},
		{RunID: other, TenantID: tenant, Status: "RUNNING", Snapshot: body, LastEventSeq: 9, Expected: 3},
	})
	t.Cleanup(func() { rdb.Del(context.Background(), Key(other)) })
	if err != nil || lost != 1 {
		t.Fatalf("WriteEncoded: %d lost, %v; want 1 (the second, guarded on a snapshot that is not there)", lost, err)
	}
}

// TestWriteAll_PublishesOnItsDatabasesChannel: Redis pub/sub ignores the
// database number, so a deployment on database N publishes on its own
// channel, and one on another database of the same server never hears it.
func TestWriteAll_PublishesOnItsDatabasesChannel(t *testing.T) {
	base := testenv.Redis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	on := func(db int) *redis.Client {
		opts := *base.Options()
		opts.DB = db
		c := redis.NewClient(&opts)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	db0, db5 := on(0), on(5)
	if got := UpdatesChannelOf(db0); got != "runstream:updates" {
		t.Fatalf("database 0's channel %q, want runstream:updates (docs/INTERFACES.md)", got)
	}
	if got := UpdatesChannelOf(db5); got != "runstream:updates:db5" {
		t.Fatalf("database 5's channel %q, want runstream:updates:db5", got)
	}
	sub := db0.Subscribe(ctx, UpdatesChannelOf(db0), UpdatesChannelOf(db5))
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	id := "chan-" + testenv.RandomID(6)
	t.Cleanup(func() { db5.Del(context.Background(), Key(id), IndexKey("tenant_c")) })
	s := store.RunSnapshot{RunID: id, TenantID: "tenant_c", Status: store.RunRunning, LastEventSeq: 1, UpdatedAt: store.FormatPersistedAt(time.Now())}
	if _, err := WriteAll(ctx, db5, []Write{{Snapshot: s, Expected: -1}}); err != nil {
		t.Fatal(err)
	}
	msg, err := sub.ReceiveMessage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Channel != "runstream:updates:db5" || !strings.Contains(msg.Payload, id) {
		t.Fatalf("the write on database 5 published %q on %s, want its notification on runstream:updates:db5", msg.Payload, msg.Channel)
	}
}
