package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/converge"
	"github.com/runstream/runstream/internal/lag"
	"github.com/runstream/runstream/store"
)

// RunHeads is what convergence (docs/ARCHITECTURE.md, "Convergence")
// reads from the store: which runs changed, where each stands, and up to
// when the store's answer is final. *postgres.Store satisfies it.
type RunHeads interface {
	// ConvergenceHorizon returns the time before which every committed
	// event is final and has left the outbox.
	ConvergenceHorizon(ctx context.Context, grace time.Duration) (time.Time, error)
	// ChangedRuns returns the runs whose last event was persisted in
	// [from, to).
	ChangedRuns(ctx context.Context, from, to time.Time) ([]store.RunHead, error)
	// RunsBefore returns up to limit runs after the given runId, in runId
	// order, whose last event was persisted before the given time.
	RunsBefore(ctx context.Context, after string, before time.Time, limit int) ([]store.RunHead, error)
}

// ConvergeState keeps a consumer group's convergence cursor and lease,
// with its checkpoints (so that losing the checkpoints loses the cursor
// too). pgcheckpoint.Store and MemoryCheckpoints implement it.
type ConvergeState interface {
	// ConvergeLease claims, or renews, the group's lease for owner.
	ConvergeLease(ctx context.Context, group, owner string, ttl time.Duration) (bool, error)
	// ConvergeCursor returns the group's cursor and its generation; ok is
	// false when there is no cursor yet (a full pass is due). It creates
	// a generation when there is none.
	ConvergeCursor(ctx context.Context, group string) (cursor time.Time, generation string, ok bool, err error)
	// SetConvergeCursor records the cursor if the group's generation is
	// still the given one, and reports whether it was.
	SetConvergeCursor(ctx context.Context, group, generation string, cursor time.Time) (bool, error)
}

// converger returns the consumer's converger, or nil when it has no
// RunHeads or convergence is off.
func (c *Consumer) converger() (*converge.Converger, func(), error) {
	if c.cfg.Heads == nil || c.cfg.DisableConvergence {
		return nil, func() {}, nil
	}
	state := c.cfg.ConvergeState
	if state == nil {
		s, ok := c.cfg.Checkpoints.(ConvergeState)
		if !ok {
			return nil, nil, errors.New("consumer: Heads is set but the checkpoints keep no convergence cursor: set ConvergeState")
		}
		state = s
	}
	admin, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.cfg.Brokers...)}, c.cfg.ClientOptions...)...)
	if err != nil {
		return nil, nil, fmt.Errorf("consumer: creating the Kafka client for convergence: %w", err)
	}
	conv, err := converge.New(converge.Config{
		Consumer: c.cfg.ConvergeName, Interval: c.cfg.ConvergeInterval, Grace: c.cfg.ConvergeGrace,
		Unread: func(ctx context.Context) (time.Time, error) {
			rep, err := lag.Measure(ctx, admin, c.cfg.Group)
			if err != nil {
				return time.Time{}, err
			}
			return rep.UnreadSince()
		},
		Registerer: c.cfg.Registerer, Logger: c.log,
	}, c.cfg.Heads, &convergeTarget{c: c, state: state})
	if err != nil {
		admin.Close()
		return nil, nil, err
	}
	return conv, admin.Close, nil
}

// convergeTarget is the consumer's side of convergence: checkpoints
// compared with the store's heads, and a run behind brought up to date by
// handing its handler the events it missed, exactly as a gap is filled.
type convergeTarget struct {
	c     *Consumer
	state ConvergeState
	gen   string
}

func (t *convergeTarget) Lease(ctx context.Context, owner string, ttl time.Duration) (bool, error) {
	return t.state.ConvergeLease(ctx, t.c.cfg.Group, owner, ttl)
}

func (t *convergeTarget) Cursor(ctx context.Context) (time.Time, bool, error) {
	cur, gen, ok, err := t.state.ConvergeCursor(ctx, t.c.cfg.Group)
	t.gen = gen
	return cur, ok, err
}

func (t *convergeTarget) SetCursor(ctx context.Context, cur time.Time) error {
	ok, err := t.state.SetConvergeCursor(ctx, t.c.cfg.Group, t.gen, cur)
	if err != nil {
		return err
	}
	if !ok {
		return converge.ErrStateLost
	}
	return nil
}

// Repair reads the runs' checkpoints and, for each run behind the store,
// hands the handler its last event in a checkpoint transaction: the jump
// from the checkpoint is a gap like any other, so the gap filler brings
// the events between, in order, and the checkpoint moves to the store's
// last runSeq. Runs whose handler fails are retried one transaction each;
// those that still fail are reported, and the pass will try them again.
func (t *convergeTarget) Repair(ctx context.Context, heads []store.RunHead) (map[string]int, int, error) {
	ids := make([]string, len(heads))
	for i, h := range heads {
		ids[i] = h.RunID
	}
	var cps map[string]int64
	err := t.c.cfg.Checkpoints.Transact(ctx, t.c.cfg.Group, func(ctx context.Context, tx CheckpointTx) error {
		var err error
		cps, err = tx.Get(ctx, ids)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("reading checkpoints: %w", err)
	}
	found := map[string]int{}
	var items []item
	for _, h := range heads {
		cp := cps[h.RunID]
		if cp >= h.LastSeq {
			continue
		}
		cause := "behind"
		if cp == 0 {
			cause = "missing"
		}
		last, err := t.c.cfg.OnGap(ctx, h.RunID, h.LastSeq-1, h.LastSeq+1)
		if err != nil {
			return nil, 0, fmt.Errorf("fetching the last event of run %q: %w", h.RunID, err)
		}
		if len(last) == 0 || last[len(last)-1].RunSeq != h.LastSeq {
			continue // not there (any more): nothing to deliver
		}
		found[cause]++
		t.c.log.Info("run behind the store; delivering the events it missed", "runId", h.RunID, "cause", cause,
			"checkpoint", cp, "storeLastSeq", h.LastSeq)
		rec := last[len(last)-1]
		raw, _ := json.Marshal(&rec)
		items = append(items, item{ev: Event{RunEventRecord: rec, Raw: raw, Offset: -1}, decoded: true})
	}
	if len(items) == 0 {
		return found, 0, nil
	}
	if err := t.c.batch(ctx, items); err == nil {
		return found, 0, nil
	} else if ctx.Err() != nil {
		return nil, 0, err
	}
	failed := 0
	for i := range items {
		if err := t.c.batch(ctx, items[i:i+1]); err != nil {
			if ctx.Err() != nil {
				return nil, 0, err
			}
			failed++
			t.c.log.Warn("bringing a run up to the store failed; the next convergence pass retries it",
				"runId", items[i].ev.RunID, "err", err)
		}
	}
	return found, failed, nil
}

// memConverge is MemoryCheckpoints' convergence state.
type memConverge struct {
	mu     sync.Mutex
	groups map[string]*memCursor
}

type memCursor struct {
	gen        string
	cursor     time.Time
	ok         bool
	owner      string
	leaseUntil time.Time
}

func (m *memConverge) group(g string) *memCursor {
	if m.groups == nil {
		m.groups = map[string]*memCursor{}
	}
	c := m.groups[g]
	if c == nil {
		c = &memCursor{gen: fmt.Sprint(time.Now().UnixNano())}
		m.groups[g] = c
	}
	return c
}

// ConvergeLease implements [ConvergeState].
func (m *MemoryCheckpoints) ConvergeLease(_ context.Context, group, owner string, ttl time.Duration) (bool, error) {
	m.conv.mu.Lock()
	defer m.conv.mu.Unlock()
	c := m.conv.group(group)
	if c.owner != owner && time.Now().Before(c.leaseUntil) {
		return false, nil
	}
	c.owner, c.leaseUntil = owner, time.Now().Add(ttl)
	return true, nil
}

// ConvergeCursor implements [ConvergeState].
func (m *MemoryCheckpoints) ConvergeCursor(_ context.Context, group string) (time.Time, string, bool, error) {
	m.conv.mu.Lock()
	defer m.conv.mu.Unlock()
	c := m.conv.group(group)
	return c.cursor, c.gen, c.ok, nil
}

// SetConvergeCursor implements [ConvergeState].
func (m *MemoryCheckpoints) SetConvergeCursor(_ context.Context, group, gen string, cursor time.Time) (bool, error) {
	m.conv.mu.Lock()
	defer m.conv.mu.Unlock()
	c := m.conv.group(group)
	if c.gen != gen {
		return false, nil
	}
	c.cursor, c.ok = cursor, true
	return true, nil
}
