package projector

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/snapshots"
)

// TestBatchWriter_ResultsInOrderAcrossChunks: 150 guarded writes in chunks
// of 16 (two in flight), every third one guarded on a wrong watermark: each
// result is the one of its own write, in the order added, and exactly the
// right writes landed.
func TestBatchWriter_ResultsInOrderAcrossChunks(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	prefix := "bw-" + testenv.RandomID(4) + "-"
	var ids []string
	t.Cleanup(func() {
		for _, id := range ids {
			rdb.Del(context.Background(), snapshots.Key(id))
		}
	})
	bw := newBatchWriter(ctx, rdb, 16, 2)
	for i := range 150 {
		id := fmt.Sprintf("%s%03d", prefix, i)
		ids = append(ids, id)
		s := snap(id, int64(i+1), 1)
		s.TenantID = ""
		expected := int64(-1) // no snapshot yet: right
		if i%3 == 0 {
			expected = 5 // wrong
		}
		bw.add(snapshots.Write{Snapshot: s, Expected: expected})
	}
	writes, res, err := bw.wait()
	if err != nil {
		t.Fatal(err)
	}
	if len(writes) != 150 || len(res) != 150 {
		t.Fatalf("%d writes, %d results; want 150", len(writes), len(res))
	}
	for i, r := range res {
		if writes[i].Snapshot.RunID != ids[i] {
			t.Fatalf("write %d is run %s, want %s", i, writes[i].Snapshot.RunID, ids[i])
		}
		if want := i%3 != 0; r.Written != want {
			t.Fatalf("write %d: written %v, want %v", i, r.Written, want)
		}
		n, err := rdb.Exists(ctx, snapshots.Key(ids[i])).Result()
		if err != nil {
			t.Fatal(err)
		}
		if (n == 1) != r.Written {
			t.Fatalf("run %d: key exists %v, written %v", i, n == 1, r.Written)
		}
	}
}

// TestBatchWriter_RedisError: a failing chunk fails the batch.
func TestBatchWriter_RedisError(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer rdb.Close()
	bw := newBatchWriter(context.Background(), rdb, 4, 2)
	for i := range 10 {
		bw.add(snapshots.Write{Snapshot: snap(fmt.Sprintf("r%d", i), 1, 1), Expected: -1})
	}
	if _, _, err := bw.wait(); err == nil {
		t.Fatal("no error from writes to a Redis that is not there")
	}
}
