package postgres

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/runstream/runstream/internal/tracing"
	"github.com/runstream/runstream/store"
)

// appendGroups lets concurrent single appends share transactions once the
// pool is saturated, as a database's group commit does for WAL flushes.
//
// Up to limit appends (the pool's connections) run as before, one
// transaction each. An append that finds them all busy would otherwise
// wait for a connection; it waits in a queue instead, and when an append
// finishes, its slot takes the whole queue (up to maxGroup) as one
// pipelined transaction through appendValidatedBatch: the same function
// per event, runSeq in arrival order per run, a per-event result (a
// duplicate or another tenant's run answers its own caller only), and a
// failed group retried one transaction per event. Each caller still
// returns only after its event committed. Under load this turns many small
// transactions, each a commit, a WAL flush and a few context switches,
// into a few larger ones; without load nothing changes.
type appendGroups struct {
	s     *Store
	limit int

	mu     sync.Mutex
	active int // appends and groups running, at most limit
	queue  []*queuedAppend
}

// maxGroup bounds one shared transaction.
const maxGroup = 256

// groupTimeout bounds a shared transaction: it serves several callers, so
// it runs on none of their contexts.
const groupTimeout = 30 * time.Second

type queuedAppend struct {
	w      *store.RunEventWrite
	parent string // the caller's trace parent (see appendCall)
	res    store.AppendResult
	err    error
	done   chan struct{} // closed once res and err are set
}

func (g *appendGroups) append(ctx context.Context, w *store.RunEventWrite) (store.AppendResult, error) {
	parent := tracing.Parent(ctx)
	g.mu.Lock()
	if g.active < g.limit {
		g.active++
		g.mu.Unlock()
		res, err := g.s.appendOne(ctx, w, parent)
		g.release()
		return res, err
	}
	q := &queuedAppend{w: w, parent: parent, done: make(chan struct{})}
	g.queue = append(g.queue, q)
	g.mu.Unlock()
	select {
	case <-q.done:
		return q.res, q.err
	case <-ctx.Done():
	}
	// Gone before its group started: it is not appended. Otherwise it is
	// being appended; the caller learns no more than a cancelled single
	// append would (a retry with the same idempotency key is safe).
	g.mu.Lock()
	if i := slices.Index(g.queue, q); i >= 0 {
		g.queue = slices.Delete(g.queue, i, i+1)
	}
	g.mu.Unlock()
	return store.AppendResult{}, classify(fmt.Errorf("appending event %s to run %q: %w", w.EventID, w.RunID, ctx.Err()))
}

// release frees a slot, or hands it to the queue.
func (g *appendGroups) release() {
	g.mu.Lock()
	if len(g.queue) == 0 {
		g.active--
		g.mu.Unlock()
		return
	}
	n := min(len(g.queue), maxGroup)
	group := slices.Clone(g.queue[:n])
	g.queue = slices.Delete(g.queue, 0, n)
	g.mu.Unlock()
	go func() {
		g.run(group)
		g.release()
	}()
}

// run appends a group in one transaction and answers each caller.
func (g *appendGroups) run(group []*queuedAppend) {
	ctx, cancel := context.WithTimeout(context.Background(), groupTimeout)
	defer cancel()
	if len(group) == 1 {
		q := group[0]
		q.res, q.err = g.s.appendOne(ctx, q.w, q.parent)
		close(q.done)
		return
	}
	writes := make([]store.RunEventWrite, len(group))
	valid := make([]int, len(group))
	parents := make([]string, len(group))
	for i, q := range group {
		writes[i], valid[i], parents[i] = *q.w, i, q.parent
	}
	out := make([]BatchResult, len(group))
	g.s.appendValidatedBatch(ctx, writes, valid, out, parents, nil)
	for i, q := range group {
		q.res, q.err = out[i].Result, out[i].Err
		close(q.done)
	}
}
