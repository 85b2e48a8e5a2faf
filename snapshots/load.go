package snapshots

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/store"
)

// Load reads the snapshots of runIDs with pipelined GETs (not MGET, which
// a cluster refuses across slots; go-redis splits a pipeline by node) and
// decodes them with [Decode]. A missing run has no entry; one that does
// not decode is reported in broken.
func Load(ctx context.Context, rdb redis.UniversalClient, runIDs []string) (snaps map[string]store.RunSnapshot, broken map[string]bool, err error) {
	pipe := rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(runIDs))
	for i, id := range runIDs {
		cmds[i] = pipe.Get(ctx, Key(id))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, err
	}
	snaps = make(map[string]store.RunSnapshot, len(runIDs))
	broken = map[string]bool{}
	for i, c := range cmds {
		b, err := c.Bytes()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		var s store.RunSnapshot
		if err := Decode(b, &s); err != nil {
			broken[runIDs[i]] = true
			continue
		}
		snaps[runIDs[i]] = s
	}
	return snaps, broken, nil
}

// headScript returns a snapshot's watermark (-1 when there is none or it
// is unreadable), whether it is stale, and whether it has an expiry,
// without sending the snapshot.
var headScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if not cur then
  return {-1, 0, 0}
end
local seq, stale = -1, 0
if string.sub(cur, 1, 5) == 'rsz1|' then
  local s, st = string.match(cur, '^rsz1|(%-?%d+)|([01])|')
  seq = tonumber(s) or -1
  if st == '1' then
    stale = 1
  end
else
  seq = tonumber(string.match(cur, '"lastEventSeq":(%-?%d+)')) or -1
  if string.find(cur, '"stale":true', 1, true) then
    stale = 1
  end
end
local expires = 0
if redis.call('PTTL', KEYS[1]) >= 0 then
  expires = 1
end
return {seq, stale, expires}
`)

// Watermark is what Redis holds of a run, read without sending its
// snapshot: convergence compares it with the store's head of the run.
type Watermark struct {
	// LastEventSeq is the snapshot's watermark; -1 when there is no
	// snapshot or its watermark cannot be read.
	LastEventSeq int64
	Stale        bool
	// Expires: Redis will expire the snapshot (it was written with the
	// retention of a terminal run).
	Expires bool
	// Indexed: the run is in its tenant's run index, and in its catalog
	// at the snapshot's watermark or later.
	Indexed bool
}

// ReadWatermarks reads the watermark, stale flag and run index entry of
// each run in one pipeline (a Lua script reads the first two inside Redis,
// so the snapshots are not sent). The answers are in the order of runs.
func ReadWatermarks(ctx context.Context, rdb redis.UniversalClient, runs []store.RunHead) ([]Watermark, error) {
	var hs []*redis.Cmd
	var zs []*redis.FloatCmd
	var ms []*redis.StringCmd
	err := withScript(ctx, rdb, headScript, "snapshot head", func() error {
		pipe := rdb.Pipeline()
		hs = make([]*redis.Cmd, len(runs))
		zs = make([]*redis.FloatCmd, len(runs))
		ms = make([]*redis.StringCmd, len(runs))
		for i, h := range runs {
			hs[i] = headScript.EvalSha(ctx, pipe, []string{Key(h.RunID)})
			zs[i] = pipe.ZScore(ctx, IndexKey(h.TenantID), h.RunID)
			ms[i] = pipe.HGet(ctx, CatalogMetaKey(h.TenantID), h.RunID)
		}
		_, err := pipe.Exec(ctx)
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading snapshot watermarks: %w", err)
	}
	out := make([]Watermark, len(runs))
	for i := range runs {
		vals, err := hs[i].Int64Slice()
		if err != nil || len(vals) != 3 {
			return nil, fmt.Errorf("reading the watermark of run %q: %v", runs[i].RunID, err)
		}
		out[i] = Watermark{LastEventSeq: vals[0], Stale: vals[1] == 1, Expires: vals[2] == 1}
		_, zerr := zs[i].Result()
		if zerr != nil && !errors.Is(zerr, redis.Nil) {
			return nil, fmt.Errorf("reading the run index of tenant %q: %w", runs[i].TenantID, zerr)
		}
		meta, merr := ms[i].Result()
		if merr != nil && !errors.Is(merr, redis.Nil) {
			return nil, fmt.Errorf("reading the runs catalog of tenant %q: %w", runs[i].TenantID, merr)
		}
		e, catalogued := parseCatalogEntry(runs[i].RunID, meta)
		out[i].Indexed = zerr == nil && catalogued && e.LastEventSeq >= out[i].LastEventSeq
	}
	return out, nil
}
