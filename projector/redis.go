package projector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/store"
)

// writeScript stores a snapshot when the stored watermark is the one the
// writer read (compare-and-set), so two projectors racing during a
// rebalance cannot both win, and a snapshot never moves backwards. It also
// publishes the change notification, atomically with the write.
//
// KEYS[1] snapshot key. ARGV[1] expected watermark (-1: no snapshot yet),
// ARGV[2] new snapshot JSON, ARGV[3] notification JSON, ARGV[4] mode: "cas"
// (exact match) or "max" (write when the stored watermark is below the new
// one, or equal and stale; rebuild uses it) or "max_eq" (below or equal;
// the operator's resync), ARGV[5] the new watermark.
// Returns {1} when written, {0, stored watermark} when not.
//
// The watermark is read with string.match rather than cjson.decode: the
// snapshot is our own JSON and lastEventSeq is always a plain integer, and
// matching is far cheaper than decoding a large snapshot on every write.
var writeScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
local seq = -1
if cur then
  seq = tonumber(string.match(cur, '"lastEventSeq":(%-?%d+)')) or -1
end
local ok
if ARGV[4] == 'max_eq' then
  ok = seq <= tonumber(ARGV[5])
elseif ARGV[4] == 'max' then
  local new = tonumber(ARGV[5])
  ok = seq < new or (seq == new and cur ~= nil and string.find(cur, '"stale":true', 1, true) ~= nil)
else
  ok = seq == tonumber(ARGV[1])
end
if not ok then
  return {0, seq}
end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('PUBLISH', 'runstream:updates', ARGV[3])
return {1}
`)

// update is the notification published on UpdatesChannel.
type update struct {
	RunID        string `json:"runId"`
	TenantID     string `json:"tenantId"`
	LastEventSeq int64  `json:"lastEventSeq"`
	Status       string `json:"status"`
}

// snapshotWrite is one guarded write.
type snapshotWrite struct {
	snap     store.RunSnapshot
	expected int64 // -1: no snapshot yet
	max      bool  // "max" mode instead of compare-and-set
	force    bool  // with max: also write over an equal watermark ("max_eq")
}

// writeResult is what happened to one snapshotWrite.
type writeResult struct {
	written bool
	stored  int64 // the stored watermark when not written
}

// writeSnapshots runs the guarded writes and the run-index updates in one
// pipeline. An error means Redis failed (some writes may have landed; each
// landed write is complete and guarded, so retrying is safe).
func writeSnapshots(ctx context.Context, rdb redis.UniversalClient, ws []snapshotWrite) ([]writeResult, error) {
	if len(ws) == 0 {
		return nil, nil
	}
	res, err := runWrites(ctx, rdb, ws)
	if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		if err := writeScript.Load(ctx, rdb).Err(); err != nil {
			return nil, fmt.Errorf("loading the snapshot script: %w", err)
		}
		res, err = runWrites(ctx, rdb, ws)
	}
	return res, err
}

// Encoding buffers: a new one of encodeChunk bytes when less than
// encodeReserve is left.
const (
	encodeChunk   = 1 << 20
	encodeReserve = 64 << 10
)

func runWrites(ctx context.Context, rdb redis.UniversalClient, ws []snapshotWrite) ([]writeResult, error) {
	pipe := rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(ws))
	// The snapshots and notifications are encoded into large buffers, each
	// argument a slice of one, never overwritten before Exec sent it: a
	// buffer that grows moves to a new array and leaves the old one be.
	var buf []byte
	for i := range ws {
		w := &ws[i]
		if cap(buf)-len(buf) < encodeReserve {
			buf = make([]byte, 0, encodeChunk)
		}
		start := len(buf)
		buf = appendSnapshot(buf, &w.snap)
		body := buf[start:len(buf):len(buf)]
		start = len(buf)
		buf = appendUpdate(buf, &w.snap)
		note := buf[start:len(buf):len(buf)]
		mode := "cas"
		switch {
		case w.max && w.force:
			mode = "max_eq"
		case w.max:
			mode = "max"
		}
		cmds[i] = writeScript.EvalSha(ctx, pipe, []string{SnapshotKey(w.snap.RunID)},
			w.expected, body, note, mode, w.snap.LastEventSeq)
		if w.snap.TenantID != "" {
			pipe.ZAddGT(ctx, RunIndexKey(w.snap.TenantID), redis.Z{Score: scoreOf(w.snap), Member: w.snap.RunID})
		}
	}
	_, err := pipe.Exec(ctx)
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	out := make([]writeResult, len(ws))
	for i, c := range cmds {
		vals, err := c.Int64Slice()
		if err != nil {
			return nil, fmt.Errorf("snapshot script for run %q: %w", ws[i].snap.RunID, err)
		}
		if len(vals) > 0 && vals[0] == 1 {
			out[i].written = true
		} else if len(vals) > 1 {
			out[i].stored = vals[1]
		}
	}
	return out, nil
}

// scoreOf is a snapshot's run-index score: its updatedAt in unix
// milliseconds (the persistedAt of its last event).
func scoreOf(s store.RunSnapshot) float64 {
	t, err := time.Parse(time.RFC3339Nano, s.UpdatedAt)
	if err != nil {
		return 0
	}
	return float64(t.UnixMilli())
}

// loadSnapshots reads the snapshots of runIDs with pipelined GETs (not
// MGET, which a cluster refuses across slots; go-redis splits a pipeline by
// node). A missing run has no
// entry; an undecodable one is reported in broken.
func loadSnapshots(ctx context.Context, rdb redis.UniversalClient, runIDs []string) (map[string]store.RunSnapshot, map[string]bool, error) {
	pipe := rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(runIDs))
	for i, id := range runIDs {
		cmds[i] = pipe.Get(ctx, SnapshotKey(id))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, err
	}
	snaps := make(map[string]store.RunSnapshot, len(runIDs))
	broken := map[string]bool{}
	for i, c := range cmds {
		b, err := c.Bytes()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		var s store.RunSnapshot
		if !fastSnapshot(b, &s) {
			s = store.RunSnapshot{}
			if err := json.Unmarshal(b, &s); err != nil {
				broken[runIDs[i]] = true
				continue
			}
		}
		snaps[runIDs[i]] = s
	}
	return snaps, broken, nil
}
