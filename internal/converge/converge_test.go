package converge

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/runstream/runstream/store"
)

// fakeStore is a store of run heads on a simulated clock.
type fakeStore struct {
	now   time.Time
	heads map[string]store.RunHead
	// hold keeps the horizon at or below this time when set (an old
	// outbox row, an open transaction).
	hold time.Time
}

func (s *fakeStore) ConvergenceHorizon(_ context.Context, grace time.Duration) (time.Time, error) {
	h := s.now.Add(-grace)
	if !s.hold.IsZero() && s.hold.Before(h) {
		h = s.hold
	}
	return h, nil
}

func (s *fakeStore) ChangedRuns(_ context.Context, from, to time.Time) ([]store.RunHead, error) {
	var out []store.RunHead
	for _, h := range s.heads {
		if !h.LastPersistedAt.Before(from) && h.LastPersistedAt.Before(to) {
			out = append(out, h)
		}
	}
	return out, nil
}

func (s *fakeStore) RunsBefore(_ context.Context, after string, before time.Time, limit int) ([]store.RunHead, error) {
	var out []store.RunHead
	for _, h := range s.heads {
		if h.RunID > after && h.LastPersistedAt.Before(before) {
			out = append(out, h)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].RunID < out[j].RunID })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// fakeTarget is a consumer's state: a watermark per run, a cursor and its
// generation. lose empties it, as a Redis restarted empty does.
type fakeTarget struct {
	marks   map[string]int64
	cursor  time.Time
	hasCur  bool
	gen     int
	seenGen int
	leased  string
	// beforeSet runs before each SetCursor (to lose the state mid-pass).
	beforeSet func()
	// failing runs are never repaired.
	failing map[string]bool
}

func newFakeTarget() *fakeTarget {
	return &fakeTarget{marks: map[string]int64{}, failing: map[string]bool{}}
}

func (t *fakeTarget) lose() {
	t.marks = map[string]int64{}
	t.hasCur, t.cursor = false, time.Time{}
	t.gen++
}

func (t *fakeTarget) Lease(_ context.Context, owner string, _ time.Duration) (bool, error) {
	if t.leased != "" && t.leased != owner {
		return false, nil
	}
	t.leased = owner
	return true, nil
}

func (t *fakeTarget) Cursor(context.Context) (time.Time, bool, error) {
	t.seenGen = t.gen
	return t.cursor, t.hasCur, nil
}

func (t *fakeTarget) SetCursor(_ context.Context, c time.Time) error {
	if t.beforeSet != nil {
		t.beforeSet()
	}
	if t.gen != t.seenGen {
		return ErrStateLost
	}
	t.cursor, t.hasCur = c, true
	return nil
}

func (t *fakeTarget) Repair(_ context.Context, heads []store.RunHead) (map[string]int, int, error) {
	found := map[string]int{}
	failed := 0
	for _, h := range heads {
		m, ok := t.marks[h.RunID]
		switch {
		case !ok:
			found["missing"]++
		case m < h.LastSeq:
			found["behind"]++
		default:
			continue
		}
		if t.failing[h.RunID] {
			failed++
			continue
		}
		t.marks[h.RunID] = h.LastSeq
	}
	return found, failed, nil
}

func newTestConverger(t *testing.T, st Heads, tg *fakeTarget) *Converger {
	t.Helper()
	c, err := New(Config{Consumer: "test", Interval: time.Second, Grace: 5 * time.Second, PageSize: 3}, st, tg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func seed(t *testing.T) uint64 {
	s := uint64(time.Now().UnixNano())
	if v := os.Getenv("CONVERGE_SEED"); v != "" {
		s, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (rerun with CONVERGE_SEED=%d)", s, s)
	return s
}

// TestConverge_Property: runs append events on a simulated clock; the
// consumer receives each event only with some probability (dead letters,
// lost records), and at random moments loses its whole state, sometimes
// in the middle of a pass (between its checks and recording the cursor).
// Passes run at random intervals, sometimes with the horizon held back.
// Once the clock is past every event by more than the grace, one more pass
// must leave every run at the store's last runSeq, whatever happened.
func TestConverge_Property(t *testing.T) {
	s := seed(t)
	for round := range 200 {
		rng := rand.New(rand.NewPCG(s, uint64(round)))
		st := &fakeStore{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), heads: map[string]store.RunHead{}}
		tg := newFakeTarget()
		c := newTestConverger(t, st, tg)
		ctx := context.Background()
		runs := 1 + rng.IntN(12)
		for step := range 300 {
			st.now = st.now.Add(time.Duration(rng.IntN(1500)) * time.Millisecond)
			switch x := rng.Float64(); {
			case x < 0.5: // an event
				id := fmt.Sprintf("run-%02d", rng.IntN(runs))
				h := st.heads[id]
				h.RunID, h.LastSeq, h.LastPersistedAt = id, h.LastSeq+1, st.now
				st.heads[id] = h
				if rng.Float64() < 0.8 && tg.marks[id] == h.LastSeq-1 {
					tg.marks[id] = h.LastSeq // delivered the normal way
				}
			case x < 0.53:
				tg.lose()
			case x < 0.56:
				tg.beforeSet = func() { tg.lose(); tg.beforeSet = nil }
			case x < 0.6:
				st.hold = st.now.Add(-time.Duration(rng.IntN(60)) * time.Second)
			case x < 0.65:
				st.hold = time.Time{}
			default:
				if _, err := c.Pass(ctx); err != nil && !errors.Is(err, ErrStateLost) {
					t.Fatalf("round %d step %d: %v", round, step, err)
				}
			}
		}
		st.hold, tg.beforeSet = time.Time{}, nil
		st.now = st.now.Add(10 * time.Second)
		// A pass after a loss mid-pass may only clear the way: two at most.
		for range 2 {
			if _, err := c.Pass(ctx); err != nil && !errors.Is(err, ErrStateLost) {
				t.Fatalf("round %d: final pass: %v", round, err)
			}
		}
		for id, h := range st.heads {
			if tg.marks[id] != h.LastSeq {
				t.Fatalf("round %d: run %s is at %d after the final passes, the store at %d", round, id, tg.marks[id], h.LastSeq)
			}
		}
	}
}

// TestConverge_UnrepairedRunsHoldTheCursor: a run that cannot be repaired
// keeps the cursor before it, so the next pass tries it again; once it
// can be, the cursor moves on.
func TestConverge_UnrepairedRunsHoldTheCursor(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := &fakeStore{now: t0, heads: map[string]store.RunHead{}}
	tg := newFakeTarget()
	c := newTestConverger(t, st, tg)
	ctx := context.Background()
	if res, err := c.Pass(ctx); err != nil || !res.Full {
		t.Fatalf("first pass: %+v, %v; want a full pass", res, err)
	}
	st.heads["a"] = store.RunHead{RunID: "a", LastSeq: 3, LastPersistedAt: t0.Add(time.Second)}
	st.now = t0.Add(time.Minute)
	tg.failing["a"] = true
	if _, err := c.Pass(ctx); err == nil {
		t.Fatal("a pass with an unrepaired run reported no error")
	}
	if tg.cursor.After(t0.Add(time.Second)) {
		t.Fatalf("cursor moved to %v past the unrepaired run", tg.cursor)
	}
	delete(tg.failing, "a")
	res, err := c.Pass(ctx)
	if err != nil || res.Found["missing"] != 1 || tg.marks["a"] != 3 {
		t.Fatalf("retry pass: %+v, %v, mark %d", res, err, tg.marks["a"])
	}
	if !tg.cursor.Equal(st.now.Add(-5 * time.Second)) {
		t.Fatalf("cursor %v, want the horizon %v", tg.cursor, st.now.Add(-5*time.Second))
	}
}

// TestConverge_OnlyTheLeaseHolderPasses: a second converger on the same
// target does nothing while the first holds the lease.
func TestConverge_OnlyTheLeaseHolderPasses(t *testing.T) {
	st := &fakeStore{now: time.Now(), heads: map[string]store.RunHead{}}
	tg := newFakeTarget()
	a, b := newTestConverger(t, st, tg), newTestConverger(t, st, tg)
	if res, err := a.Pass(context.Background()); err != nil || !res.Leader {
		t.Fatalf("a: %+v, %v", res, err)
	}
	if res, err := b.Pass(context.Background()); err != nil || res.Leader {
		t.Fatalf("b passed while a holds the lease: %+v, %v", res, err)
	}
}

func TestConfig_Validate(t *testing.T) {
	for _, c := range []Config{{}, {Consumer: "x", Interval: -1}, {Consumer: "x", Grace: -1}, {Consumer: "x", PageSize: -1}} {
		if c.Validate() == nil {
			t.Errorf("%+v: no error", c)
		}
	}
	if err := (Config{Consumer: "x"}).Validate(); err != nil {
		t.Errorf("zero config: %v", err)
	}
}

// summarizingStore is a store whose window query reads an index that needs
// summarizing: it records the order of its calls.
type summarizingStore struct {
	fakeStore
	calls []string
	fail  bool
}

func (s *summarizingStore) SummarizeNewEvents(context.Context) (int, error) {
	s.calls = append(s.calls, "summarize")
	if s.fail {
		return 0, errors.New("permission denied for table run_events_x")
	}
	return 1, nil
}

func (s *summarizingStore) ChangedRuns(ctx context.Context, from, to time.Time) ([]store.RunHead, error) {
	s.calls = append(s.calls, "changed")
	return s.fakeStore.ChangedRuns(ctx, from, to)
}

// TestConverge_WindowSummarizesFirst: a window pass asks a store that can
// to summarize its new events before the window query, once per pass; a
// failing summary (a role that does not own the tables) leaves the pass
// as it was.
func TestConverge_WindowSummarizesFirst(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, fail := range []bool{false, true} {
		st := &summarizingStore{fakeStore: fakeStore{now: t0, heads: map[string]store.RunHead{}}, fail: fail}
		tg := newFakeTarget()
		c := newTestConverger(t, st, tg)
		ctx := context.Background()
		if res, err := c.Pass(ctx); err != nil || !res.Full {
			t.Fatalf("first pass: %+v, %v; want a full pass", res, err)
		}
		st.calls = nil
		st.heads["a"] = store.RunHead{RunID: "a", LastSeq: 3, LastPersistedAt: t0.Add(time.Second)}
		st.now = t0.Add(time.Minute)
		res, err := c.Pass(ctx)
		if err != nil || res.Found["missing"] != 1 {
			t.Fatalf("failing summary %v: window pass %+v, %v; want run a repaired", fail, res, err)
		}
		if len(st.calls) < 2 || st.calls[0] != "summarize" || slices.Index(st.calls[1:], "summarize") >= 0 {
			t.Fatalf("failing summary %v: calls %v; want one summary before the window queries", fail, st.calls)
		}
	}
}
