package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/snapshots"
)

// hub fans the Redis update channel out to SSE watchers: one SUBSCRIBE per
// API process, shared by every client. The channel is the deployment's
// (snapshots.UpdatesChannelOf: Redis pub/sub ignores the database number),
// and anything that reaches it is checked before a watcher sees it: a
// message that is not a valid notification is dropped, counted and
// logged (sampled), and tenants get the notification re-encoded, never the
// bytes as they arrived. For a run's watchers it reads the
// changed snapshot once and hands the same bytes to each; a watcher keeps
// only the latest snapshot (a slow client skips intermediate states, never
// blocks the hub, and costs bounded memory). Tenant watchers get every
// notification through a bounded queue; one that overflows is told to
// reload.
type hub struct {
	rdb redis.UniversalClient
	log *slog.Logger

	dropped *prometheus.CounterVec // set by start
	dropLog sampledLog

	once    sync.Once
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	runs    map[string]map[*runWatcher]struct{}
	tenants map[string]map[*tenantWatcher]struct{}
	ready   chan struct{} // closed once the subscription is confirmed
	health  hubHealth     // hubhealth.go
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
	return &hub{rdb: rdb, log: log, ctx: ctx, cancel: cancel, dropLog: sampledLog{every: dropLogEvery},
		runs: map[string]map[*runWatcher]struct{}{}, tenants: map[string]map[*tenantWatcher]struct{}{},
		ready: make(chan struct{}), health: newHubHealth()}
}

// dropLogEvery bounds the WARN lines about dropped notifications.
const dropLogEvery = time.Minute

// start subscribes on first use, counting what it drops in m; the
// subscription lives until close.
func (h *hub) start(m *metrics) {
	h.once.Do(func() {
		h.dropped = m.notificationsDropped
		h.wg.Add(2)
		go func() {
			defer h.wg.Done()
			h.run()
		}()
		go func() {
			defer h.wg.Done()
			h.monitor()
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
		sub := h.rdb.Subscribe(h.ctx, snapshots.UpdatesChannelOf(h.rdb))
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
		h.markSubscribed()
		ch := sub.Channel(redis.WithChannelSize(1024))
	recv:
		for {
			select {
			case <-h.ctx.Done():
				break recv
			case <-h.health.resub:
				break recv // Redis came back: subscribe anew (hubhealth.go)
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

// dispatch hands a notification that snapshots.ParseNotification accepted
// to the tenant's watchers, re-encoded, and the changed snapshot to the
// run's watchers; it drops anything else.
func (h *hub) dispatch(payload []byte) {
	n, err := snapshots.ParseNotification(payload)
	if err != nil {
		h.drop(payload, err)
		return
	}
	h.mu.Lock()
	tw := h.tenants[n.TenantID]
	var note []byte
	if len(tw) > 0 {
		note = n.Append(make([]byte, 0, len(payload)))
	}
	for w := range tw {
		select {
		case w.updates <- note:
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
	// Once per change, for every watcher: the streams carry the JSON.
	if body, err = snapshots.JSON(body); err != nil {
		h.log.Warn("a changed snapshot does not decompress; its watchers keep the previous state", "runId", n.RunID, "err", err)
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

// drop counts a message of the updates channel that is not a valid
// notification, and logs at most one a minute: whoever can publish on the
// Redis server can send them.
func (h *hub) drop(payload []byte, err error) {
	reason := "malformed"
	var ne *snapshots.NotificationError
	if errors.As(err, &ne) && ne.Field != "" {
		reason = "invalid"
	}
	h.dropped.WithLabelValues(reason).Inc()
	if ok, suppressed := h.dropLog.allow(time.Now()); ok {
		if len(payload) > 200 {
			payload = payload[:200]
		}
		h.log.Warn("dropped a message of the Redis updates channel that is not a valid notification; is another deployment or client publishing on this Redis server?",
			"channel", snapshots.UpdatesChannelOf(h.rdb), "reason", reason, "err", err, "message", string(payload), "suppressed", suppressed)
	}
}

func (h *hub) watchRun(runID string, m *metrics) (*runWatcher, func()) {
	h.start(m)
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

func (h *hub) watchTenant(tenant string, m *metrics) (*tenantWatcher, func()) {
	h.start(m)
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
