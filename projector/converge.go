package projector

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/runstream/runstream/internal/converge"
	"github.com/runstream/runstream/internal/lag"
	"github.com/runstream/runstream/store"
)

// The projector's convergence state lives beside the snapshots it
// vouches for, so that whatever loses the snapshots (Redis restarted
// empty, a failover to a replica that missed writes) loses or rolls back
// the cursor with them, and the next pass rechecks what may be gone. It is
// kept per consumer group: the group is what reads the topic into these
// snapshots.

// ConvergeCursorKey holds the time (RFC 3339) before which every run's
// snapshot was verified against the store, for the projectors of group.
func ConvergeCursorKey(group string) string { return "runstream:converge:{" + group + "}" }

// ConvergeLeaseKey names the projector of group that runs the passes.
func ConvergeLeaseKey(group string) string { return "runstream:converge:{" + group + "}:lease" }

// leaseScript takes the lease when it is free or already ours, and renews
// it. KEYS[1] the lease, ARGV[1] owner, ARGV[2] ttl in milliseconds.
var leaseScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if cur then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`)

// headScript returns a snapshot's watermark (-1 when there is none or it
// is unreadable) and whether it is stale, without sending the snapshot.
var headScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if not cur then
  return {-1, 0}
end
local seq = tonumber(string.match(cur, '"lastEventSeq":(%-?%d+)')) or -1
if string.find(cur, '"stale":true', 1, true) then
  return {seq, 1}
end
return {seq, 0}
`)

// cursorScript moves the cursor only within the generation the pass read:
// a Redis that lost its data during the pass (restarted empty, failed
// over) has no such generation, and the pass's checks, made against what
// was lost, must not be recorded. KEYS[1] the cursor key, ARGV[1] the
// generation, ARGV[2] the new cursor.
var cursorScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, string.len(ARGV[1]) + 1) == ARGV[1] .. '|' then
  redis.call('SET', KEYS[1], ARGV[1] .. '|' .. ARGV[2])
  return 1
end
return 0
`)

// convergeTarget is the projector's side of convergence: Redis snapshots
// and run index entries checked against the store's heads. The cursor key
// holds "<generation>|<RFC 3339 time>": a generation is created with the
// key (when there is none: first start, or Redis lost it), and a cursor is
// recorded only in the generation the pass started in.
type convergeTarget struct {
	p   *Projector
	gen string // the generation read by Cursor
}

var _ converge.Target = (*convergeTarget)(nil)

func (t *convergeTarget) Lease(ctx context.Context, owner string, ttl time.Duration) (bool, error) {
	n, err := runScript(ctx, t.p.rdb, leaseScript, []string{ConvergeLeaseKey(t.p.cfg.Group)}, owner, ttl.Milliseconds()).Int64()
	return n == 1, err
}

func (t *convergeTarget) Cursor(ctx context.Context) (time.Time, bool, error) {
	key := ConvergeCursorKey(t.p.cfg.Group)
	for {
		v, err := t.p.rdb.Get(ctx, key).Result()
		if errors.Is(err, redis.Nil) {
			gen := newGeneration()
			ok, err := t.p.rdb.SetNX(ctx, key, gen+"|", 0).Result()
			if err != nil {
				return time.Time{}, false, err
			}
			if ok {
				t.gen = gen
				return time.Time{}, false, nil
			}
			continue // another projector created it meanwhile
		}
		if err != nil {
			return time.Time{}, false, err
		}
		gen, at, _ := strings.Cut(v, "|")
		if gen == "" {
			// Not ours to trust: a new generation, and a full pass.
			if err := t.p.rdb.Del(ctx, key).Err(); err != nil {
				return time.Time{}, false, err
			}
			continue
		}
		t.gen = gen
		c, err := time.Parse(time.RFC3339Nano, at)
		if err != nil {
			return time.Time{}, false, nil // a full pass of this generation is due (or was cut short)
		}
		return c, true, nil
	}
}

func (t *convergeTarget) SetCursor(ctx context.Context, c time.Time) error {
	n, err := runScript(ctx, t.p.rdb, cursorScript, []string{ConvergeCursorKey(t.p.cfg.Group)},
		t.gen, c.UTC().Format(time.RFC3339Nano)).Int64()
	if err != nil {
		return err
	}
	if n != 1 {
		return converge.ErrStateLost
	}
	return nil
}

func newGeneration() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// repairWorkers bounds the resyncs a convergence pass runs at once.
const repairWorkers = 4

// runHead is what Redis holds of a run, for comparison with the store.
type runHead struct {
	seq     int64 // -1: no snapshot
	stale   bool
	indexed bool
}

// readHeads reads the watermark, stale flag and run index entry of each
// run in one pipeline.
func (t *convergeTarget) readHeads(ctx context.Context, heads []store.RunHead) ([]runHead, error) {
	read := func() ([]*redis.Cmd, []*redis.FloatCmd, error) {
		pipe := t.p.rdb.Pipeline()
		hs := make([]*redis.Cmd, len(heads))
		zs := make([]*redis.FloatCmd, len(heads))
		for i, h := range heads {
			hs[i] = headScript.EvalSha(ctx, pipe, []string{SnapshotKey(h.RunID)})
			zs[i] = pipe.ZScore(ctx, RunIndexKey(h.TenantID), h.RunID)
		}
		_, err := pipe.Exec(ctx)
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, nil, err
		}
		return hs, zs, nil
	}
	hs, zs, err := read()
	if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		if err := headScript.Load(ctx, t.p.rdb).Err(); err != nil {
			return nil, fmt.Errorf("loading the snapshot head script: %w", err)
		}
		hs, zs, err = read()
	}
	if err != nil {
		return nil, fmt.Errorf("reading snapshot watermarks: %w", err)
	}
	out := make([]runHead, len(heads))
	for i := range heads {
		vals, err := hs[i].Int64Slice()
		if err != nil || len(vals) != 2 {
			return nil, fmt.Errorf("reading the watermark of run %q: %v", heads[i].RunID, err)
		}
		out[i] = runHead{seq: vals[0], stale: vals[1] == 1}
		if _, err := zs[i].Result(); err == nil {
			out[i].indexed = true
		} else if !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("reading the run index of tenant %q: %w", heads[i].TenantID, err)
		}
	}
	return out, nil
}

// Repair compares each run's snapshot with the store and repairs those
// behind through the projector's own resync (FROM_SNAPSHOT, FULL when the
// snapshot is gone or unreadable), which marks a run stale and queues it
// in the resync set when the store cannot answer. A run missing only from
// its tenant's run index gets its entry back.
func (t *convergeTarget) Repair(ctx context.Context, heads []store.RunHead) (map[string]int, int, error) {
	have, err := t.readHeads(ctx, heads)
	if err != nil {
		return nil, 0, err
	}
	found := map[string]int{}
	var due []*runEvents
	var dueHeads []store.RunHead
	pipe := t.p.rdb.Pipeline()
	reindexed := 0
	for i, h := range heads {
		got := have[i]
		cause := ""
		switch {
		case got.seq < 0:
			cause = "missing"
		case got.seq < h.LastSeq:
			cause = "behind"
		case got.stale:
			cause = "stale"
		case !got.indexed:
			found["index"]++
			pipe.ZAddGT(ctx, RunIndexKey(h.TenantID), redis.Z{Score: float64(h.LastPersistedAt.UnixMilli()), Member: h.RunID})
			reindexed++
			continue
		default:
			continue
		}
		found[cause]++
		t.p.log.Info("run behind the store; repairing", "runId", h.RunID, "cause", cause,
			"watermark", got.seq, "storeLastSeq", h.LastSeq)
		due = append(due, &runEvents{id: h.RunID, behind: h.LastSeq})
		dueHeads = append(dueHeads, h)
	}
	if reindexed > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, 0, fmt.Errorf("restoring run index entries: %w", err)
		}
	}
	if len(due) == 0 {
		return found, 0, nil
	}
	// The resyncs go through repairWorkers at once (each is a round trip
	// or two to the store, and after Redis lost its data a pass has every
	// run to do). Lost guards mean another writer moved the run meanwhile:
	// redo it against what that writer left, a few times, then let the
	// check below count it.
	var g errgroup.Group
	per := (len(due) + repairWorkers - 1) / repairWorkers
	for lo := 0; lo < len(due); lo += per {
		runs := due[lo:min(lo+per, len(due))]
		g.Go(func() error {
			var err error
			for attempt := 0; attempt < 3 && len(runs) > 0; attempt++ {
				if runs, err = t.p.processRuns(ctx, runs); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, 0, err
	}
	after, err := t.readHeads(ctx, dueHeads)
	if err != nil {
		return nil, 0, err
	}
	// A run still behind is either marked stale, and then in the resync
	// set that every projector retries, or not even that (Redis refused
	// the stale mark, or another writer raced it): only the latter is left
	// to the next pass.
	failed := 0
	for i, h := range dueHeads {
		switch {
		case after[i].seq >= h.LastSeq && !after[i].stale:
		case after[i].stale:
			t.p.log.Warn("run behind the store left stale; the resync loop retries it", "runId", h.RunID,
				"watermark", after[i].seq, "storeLastSeq", h.LastSeq)
		default:
			failed++
		}
	}
	return found, failed, nil
}

// runScript runs a script by its hash, loading it when Redis does not
// know it (after a restart or a failover).
func runScript(ctx context.Context, rdb redis.UniversalClient, s *redis.Script, keys []string, args ...any) *redis.Cmd {
	cmd := s.EvalSha(ctx, rdb, keys, args...)
	if err := cmd.Err(); err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		return s.Eval(ctx, rdb, keys, args...)
	}
	return cmd
}

// newConverger returns the projector's converger, or nil when convergence
// is off or the store cannot report run heads.
func (p *Projector) newConverger() (*converge.Converger, *kgo.Client, error) {
	heads, ok := p.src.(converge.Heads)
	if p.cfg.ConvergeInterval < 0 || !ok {
		return nil, nil, nil
	}
	// Lag is measured with a plain client (no group), as lag.Measure asks.
	admin, err := kgo.NewClient(kgo.SeedBrokers(p.cfg.Brokers...))
	if err != nil {
		return nil, nil, fmt.Errorf("creating the Kafka client for convergence: %w", err)
	}
	c, err := converge.New(converge.Config{
		Consumer: "projector", Interval: p.cfg.ConvergeInterval, Grace: p.cfg.ConvergeGrace,
		Unread: func(ctx context.Context) (time.Time, error) {
			rep, err := lag.Measure(ctx, admin, p.cfg.Group)
			if err != nil {
				return time.Time{}, err
			}
			return rep.UnreadSince()
		},
		Registerer: p.cfg.Registerer, Logger: p.cfg.Logger,
	}, heads, &convergeTarget{p: p})
	if err != nil {
		admin.Close()
		return nil, nil, err
	}
	return c, admin, nil
}
