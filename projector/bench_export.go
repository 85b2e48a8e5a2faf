package projector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// BenchWrite is one guarded snapshot write of [BenchWriteScript].
type BenchWrite struct {
	// RunID names the key written, SnapshotKey(RunID); TenantID and Status
	// go into the change notification.
	RunID, TenantID, Status string
	// Snapshot is the encoded snapshot stored as is. Its "lastEventSeq"
	// field must equal LastEventSeq: the script reads the stored watermark
	// from it.
	Snapshot     []byte
	LastEventSeq int64
	// Expected is the stored watermark the write is guarded on; -1 means
	// no snapshot yet.
	Expected int64
}

// BenchWriteScript runs the projector's guarded snapshot script in
// compare-and-set mode once per write, all in one pipeline, the way a poll
// batch's writes go out (EVALSHA, loading the script on NOSCRIPT), and
// nothing else: no snapshot reads, no reduce or JSON encoding of
// snapshots, no run-index updates. It is the baseline of `runstream bench
// project`, the rate the projector's catch-up is compared with. It returns
// how many writes lost their guard.
func BenchWriteScript(ctx context.Context, rdb redis.UniversalClient, ws []BenchWrite) (int, error) {
	if len(ws) == 0 {
		return 0, nil
	}
	lost, err := benchWrites(ctx, rdb, ws)
	if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		if err := writeScript.Load(ctx, rdb).Err(); err != nil {
			return 0, fmt.Errorf("loading the snapshot script: %w", err)
		}
		lost, err = benchWrites(ctx, rdb, ws)
	}
	return lost, err
}

func benchWrites(ctx context.Context, rdb redis.UniversalClient, ws []BenchWrite) (int, error) {
	pipe := rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(ws))
	for i := range ws {
		w := &ws[i]
		note, _ := json.Marshal(update{RunID: w.RunID, TenantID: w.TenantID, LastEventSeq: w.LastEventSeq, Status: w.Status})
		cmds[i] = writeScript.EvalSha(ctx, pipe, []string{SnapshotKey(w.RunID)},
			w.Expected, w.Snapshot, note, "cas", w.LastEventSeq)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return 0, err
	}
	lost := 0
	for i, c := range cmds {
		vals, err := c.Int64Slice()
		if err != nil {
			return 0, fmt.Errorf("snapshot script for run %q: %w", ws[i].RunID, err)
		}
		if len(vals) == 0 || vals[0] != 1 {
			lost++
		}
	}
	return lost, nil
}
