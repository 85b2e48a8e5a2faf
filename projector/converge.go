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
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
)

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
// recorded only in the generation the pass started in. The cursor and
// lease keys (snapshots.ConvergeCursorKey, snapshots.ConvergeLeaseKey) are
// part of the snapshot layout, beside the snapshots they vouch for: what
// loses the snapshots loses or rolls back the cursor with them.
type convergeTarget struct {
	p   *Projector
	gen string // the generation read by Cursor
}

var _ converge.Target = (*convergeTarget)(nil)

func (t *convergeTarget) Lease(ctx context.Context, owner string, ttl time.Duration) (bool, error) {
	n, err := runScript(ctx, t.p.rdb, leaseScript, []string{snapshots.ConvergeLeaseKey(t.p.cfg.Group)}, owner, ttl.Milliseconds()).Int64()
	return n == 1, err
}

func (t *convergeTarget) Cursor(ctx context.Context) (time.Time, bool, error) {
	key := snapshots.ConvergeCursorKey(t.p.cfg.Group)
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
		if gen == "" || !strings.HasPrefix(gen, generationPrefix) {
			// Not ours to trust, or recorded before the runs catalog
			// existed (its passes did not check catalog entries): a new
			// generation, and a full pass, which catalogues every run.
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
	n, err := runScript(ctx, t.p.rdb, cursorScript, []string{snapshots.ConvergeCursorKey(t.p.cfg.Group)},
		t.gen, c.UTC().Format(time.RFC3339Nano)).Int64()
	if err != nil {
		return err
	}
	if n != 1 {
		return converge.ErrStateLost
	}
	return nil
}

// generationPrefix starts every generation whose passes check the runs
// catalog (snapshots.Reindex): a cursor of an older generation, recorded
// by a projector from before the catalog, asks for a full pass, so an
// upgraded deployment catalogues the runs it already had.
const generationPrefix = "c1-"

func newGeneration() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return generationPrefix + hex.EncodeToString(b[:])
}

// repairWorkers bounds the resyncs a convergence pass runs at once.
const repairWorkers = 4

// Repair compares each run's snapshot with the store and repairs those
// behind through the projector's own resync (FROM_SNAPSHOT, FULL when the
// snapshot is gone or unreadable), which marks a run stale and queues it
// in the resync set when the store cannot answer. A run missing only from
// its tenant's run index or runs catalog gets its entries back.
//
// The snapshot retention (Config.SnapshotTTL) is decided from the store's
// head, never from what Redis lacks: a run whose terminal event (the
// store's runs.terminal_at) is older than the retention by Redis's clock
// is expected to be gone and is left alone, and whatever Redis still
// holds of it is expired at once; every other run must be there, so a
// missing one was lost (Redis restarted empty, failed over, evicted) and
// is repaired. A terminal run held without an expiry (written before the
// retention was set) gets the one it should have (cause "expiry").
func (t *convergeTarget) Repair(ctx context.Context, heads []store.RunHead) (map[string]int, int, error) {
	have, err := snapshots.ReadWatermarks(ctx, t.p.rdb, heads)
	if err != nil {
		return nil, 0, err
	}
	ttl := t.p.cfg.SnapshotTTL
	var now time.Time
	if ttl > 0 {
		if now, err = snapshots.Now(ctx, t.p.rdb); err != nil {
			return nil, 0, err
		}
	}
	found := map[string]int{}
	var due []*runEvents
	var dueHeads, unindexed []store.RunHead
	var expiries []snapshots.Expiry
	for i, h := range heads {
		got := have[i]
		cause := ""
		switch {
		case h.ExpiredAt(now, ttl):
			if got.LastEventSeq >= 0 || got.Indexed {
				found["expiry"]++
				expiries = append(expiries, expiryOf(h, ttl))
			}
			continue
		case got.LastEventSeq < 0:
			cause = "missing"
		case got.LastEventSeq < h.LastSeq:
			cause = "behind"
		case got.Stale:
			cause = "stale"
		case ttl > 0 && !h.TerminalAt.IsZero() && !got.Expires:
			found["expiry"]++
			expiries = append(expiries, expiryOf(h, ttl))
			continue
		case !got.Indexed:
			found["index"]++
			unindexed = append(unindexed, h)
			continue
		default:
			continue
		}
		found[cause]++
		t.p.log.Debug("run behind the store; repairing", "runId", h.RunID, "cause", cause,
			"watermark", got.LastEventSeq, "storeLastSeq", h.LastSeq)
		due = append(due, &runEvents{id: h.RunID, behind: h.LastSeq})
		dueHeads = append(dueHeads, h)
	}
	if err := snapshots.SetExpiry(ctx, t.p.rdb, expiries); err != nil {
		return nil, 0, err
	}
	if err := snapshots.Reindex(ctx, t.p.rdb, unindexed, ttl); err != nil {
		return nil, 0, fmt.Errorf("restoring run index entries: %w", err)
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
	after, err := snapshots.ReadWatermarks(ctx, t.p.rdb, dueHeads)
	if err != nil {
		return nil, 0, err
	}
	// A run still behind is either marked stale, and then in the resync
	// set that every projector retries, or not even that (Redis refused
	// the stale mark, or another writer raced it): only the latter is left
	// to the next pass.
	if ttl > 0 {
		if now, err = snapshots.Now(ctx, t.p.rdb); err != nil {
			return nil, 0, err
		}
	}
	failed := 0
	for i, h := range dueHeads {
		switch {
		case after[i].LastEventSeq >= h.LastSeq && !after[i].Stale:
		case h.ExpiredAt(now, ttl):
			// Its retention ended while it was repaired: the write found
			// it expired and left nothing, as it should.
		case after[i].Stale:
			t.p.log.Warn("run behind the store left stale; the resync loop retries it", "runId", h.RunID,
				"watermark", after[i].LastEventSeq, "storeLastSeq", h.LastSeq)
		default:
			failed++
		}
	}
	return found, failed, nil
}

// expiryOf is when the snapshot of the run at h expires under ttl, by the
// store's record of its terminal event.
func expiryOf(h store.RunHead, ttl time.Duration) snapshots.Expiry {
	return snapshots.Expiry{RunID: h.RunID, TenantID: h.TenantID, At: h.TerminalAt.Add(ttl).UnixMilli()}
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
	if p.cfg.DisableConvergence || !ok {
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
		Housekeep:  p.sweepExpired,
		Registerer: p.cfg.Registerer, Logger: p.cfg.Logger,
	}, heads, &convergeTarget{p: p})
	if err != nil {
		admin.Close()
		return nil, nil, err
	}
	return c, admin, nil
}

// sweepExpired takes the runs whose retention ended out of the runs
// catalogs of tenants that have written nothing since (every catalog
// write sweeps its own tenant): with the convergence lease, once a pass.
// It sweeps with a retention of 0 too: snapshots written under an earlier
// one still expire, and their entries must go with them.
func (p *Projector) sweepExpired(ctx context.Context) error {
	n, err := snapshots.SweepExpired(ctx, p.rdb)
	p.m.expiredSwept.Add(float64(n))
	return err
}
