package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/snapshots"
)

// hub fans the Redis update channel out to SSE watchers: one SUBSCRIBE per
// API process, shared by every client. For a run's watchers it reads the
// changed snapshot once and hands the same bytes to each; a watcher keeps
// only the latest snapshot (a slow client skips intermediate states, never
// blocks the hub, and costs bounded memory). Tenant watchers get every
// notification through a bounded queue; one that overflows is told to
// reload.
type hub struct {
	rdb redis.UniversalClient
	log *slog.Logger

	once    sync.Once
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	runs    map[string]map[*runWatcher]struct{}
	tenants map[string]map[*tenantWatcher]struct{}
	ready   chan struct{} // closed once the subscription is confirmed
}

// runWatcher receives the latest change of one run.
type runWatcher struct {
	latest chan *runChange // capacity 1: latest wins
}

// runChange is a changed snapshot, prepared once for all of its run's
// watchers: its head parsed and its SSE event framed, so a thousand watchers
// cost a thousand writes of the same bytes and nothing else.
type runChange struct {
	head  snapshots.Head
	frame []byte
}

func newRunChange(head snapshots.Head, body []byte) *runChange {
	return &runChange{head: head, frame: sseFrame("snapshot", strconv.FormatInt(head.LastEventSeq, 10), body)}
}

// tenantWatcher receives update notifications of one tenant.
type tenantWatcher struct {
	updates  chan []byte
	overflow chan struct{} // capacity 1: set when updates was full
}

func newHub(rdb redis.UniversalClient, log *slog.Logger) *hub {
	ctx, cancel := context.WithCancel(context.Background())
	return &hub{rdb: rdb, log: log, ctx: ctx, cancel: cancel,
		runs: map[string]map[*runWatcher]struct{}{}, tenants: map[string]map[*tenantWatcher]struct{}{},
		ready: make(chan struct{})}
}

// start subscribes on first use; the subscription lives until close.
func (h *hub) start() {
	h.once.Do(func() {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			h.run()
		}()
	})
}

// waitReady waits (bounded) until the subscription is live, so a watcher
// registered before it misses nothing published after.
func (h *hub) waitReady(ctx context.Context) {
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	select {
	case <-h.ready:
	case <-ctx.Done():
	case <-t.C:
	}
}

func (h *hub) close() {
	h.cancel()
	h.wg.Wait()
}

func (h *hub) run() {
	readyOnce := sync.Once{}
	for attempt := 0; h.ctx.Err() == nil; attempt++ {
		sub := h.rdb.Subscribe(h.ctx, snapshots.UpdatesChannel)
		if _, err := sub.Receive(h.ctx); err != nil {
			_ = sub.Close()
			if h.ctx.Err() != nil {
				return
			}
			h.log.Warn("subscribing to the update channel failed; retrying", "err", err)
			t := time.NewTimer(min(time.Duration(attempt+1)*200*time.Millisecond, 5*time.Second))
			select {
			case <-h.ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		attempt = 0
		readyOnce.Do(func() { close(h.ready) })
		ch := sub.Channel(redis.WithChannelSize(1024))
	recv:
		for {
			select {
			case <-h.ctx.Done():
				break recv
			case msg, ok := <-ch:
				if !ok {
					break recv
				}
				h.dispatch([]byte(msg.Payload))
			}
		}
		_ = sub.Close()
	}
}

// dispatch hands a notification to the tenant's watchers as it is, once
// snapshots.ParseNotification accepted it, and the changed snapshot to the
// run's watchers.
func (h *hub) dispatch(payload []byte) {
	n, err := snapshots.ParseNotification(payload)
	if err != nil {
		return
	}
	h.mu.Lock()
	tw := h.tenants[n.TenantID]
	for w := range tw {
		select {
		case w.updates <- payload:
		default:
			select {
			case w.overflow <- struct{}{}:
			default:
			}
		}
	}
	watching := len(h.runs[n.RunID]) > 0
	h.mu.Unlock()
	if !watching {
		return
	}
	ctx, cancel := context.WithTimeout(h.ctx, 2*time.Second)
	body, err := h.rdb.Get(ctx, snapshots.Key(n.RunID)).Bytes()
	cancel()
	if err != nil {
		if !errors.Is(err, redis.Nil) {
			h.log.Warn("reading a changed snapshot failed", "runId", n.RunID, "err", err)
		}
		return
	}
	head, err := snapshots.ParseHead(body)
	if err != nil {
		h.log.Warn("a changed snapshot is not valid JSON; its watchers keep the previous state", "runId", n.RunID, "err", err)
		return
	}
	c := newRunChange(head, body)
	h.mu.Lock()
	for w := range h.runs[n.RunID] {
		select {
		case <-w.latest: // drop the older state
		default:
		}
		w.latest <- c
	}
	h.mu.Unlock()
}

func (h *hub) watchRun(runID string) (*runWatcher, func()) {
	h.start()
	w := &runWatcher{latest: make(chan *runChange, 1)}
	h.mu.Lock()
	if h.runs[runID] == nil {
		h.runs[runID] = map[*runWatcher]struct{}{}
	}
	h.runs[runID][w] = struct{}{}
	h.mu.Unlock()
	return w, func() {
		h.mu.Lock()
		delete(h.runs[runID], w)
		if len(h.runs[runID]) == 0 {
			delete(h.runs, runID)
		}
		h.mu.Unlock()
	}
}

func (h *hub) watchTenant(tenant string) (*tenantWatcher, func()) {
	h.start()
	w := &tenantWatcher{updates: make(chan []byte, 256), overflow: make(chan struct{}, 1)}
	h.mu.Lock()
	if h.tenants[tenant] == nil {
		h.tenants[tenant] = map[*tenantWatcher]struct{}{}
	}
	h.tenants[tenant][w] = struct{}{}
	h.mu.Unlock()
	return w, func() {
		h.mu.Lock()
		delete(h.tenants[tenant], w)
		if len(h.tenants[tenant]) == 0 {
			delete(h.tenants, tenant)
		}
		h.mu.Unlock()
	}
}
