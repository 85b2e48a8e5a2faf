package steadybench

import (
	"context"
	"sync"
	"time"

	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// timedHeads is the projector's store with the two statements of each
// convergence window timed: SummarizeNewEvents (the persisted_at BRIN's
// new ranges) and ChangedRuns (the window's runs). Their cost must stay
// flat as the store grows and while appends burst; the samples say
// whether it does. Every other method is the store's own.
type timedHeads struct {
	*postgres.Store

	mu  sync.Mutex
	cur QueryTimes
}

// QueryTimes are the convergence window statements' timings over a
// sample's interval (or, in the report, the whole run): how many
// ChangedRuns queries ran, their mean and slowest duration, and the same
// for the summaries that precede each window.
type QueryTimes struct {
	Windows      int64   `json:"windows"`
	QueryMeanMs  float64 `json:"changedRunsMeanMs"`
	QueryMaxMs   float64 `json:"changedRunsMaxMs"`
	Summaries    int64   `json:"summaries"`
	SummaryMaxMs float64 `json:"summarizeMaxMs"`

	querySum time.Duration
}

func (h *timedHeads) ChangedRuns(ctx context.Context, from, to time.Time) ([]store.RunHead, error) {
	t0 := time.Now()
	heads, err := h.Store.ChangedRuns(ctx, from, to)
	d := time.Since(t0)
	h.mu.Lock()
	h.cur.Windows++
	h.cur.querySum += d
	h.cur.QueryMaxMs = max(h.cur.QueryMaxMs, ms(d))
	h.mu.Unlock()
	return heads, err
}

func (h *timedHeads) SummarizeNewEvents(ctx context.Context) (int, error) {
	t0 := time.Now()
	n, err := h.Store.SummarizeNewEvents(ctx)
	d := time.Since(t0)
	h.mu.Lock()
	h.cur.Summaries++
	h.cur.SummaryMaxMs = max(h.cur.SummaryMaxMs, ms(d))
	h.mu.Unlock()
	return n, err
}

// take returns the timings since the last take and starts over.
func (h *timedHeads) take() QueryTimes {
	h.mu.Lock()
	defer h.mu.Unlock()
	var q QueryTimes
	q.add(h.cur) // and its mean
	h.cur = QueryTimes{}
	return q
}

// add folds a sample's timings into a run's.
func (q *QueryTimes) add(x QueryTimes) {
	q.querySum += x.querySum
	q.Windows += x.Windows
	q.Summaries += x.Summaries
	q.QueryMaxMs = max(q.QueryMaxMs, x.QueryMaxMs)
	q.SummaryMaxMs = max(q.SummaryMaxMs, x.SummaryMaxMs)
	if q.Windows > 0 {
		q.QueryMeanMs = ms(q.querySum / time.Duration(q.Windows))
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
