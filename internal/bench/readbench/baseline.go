package readbench

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// baseline is the SSE phase's raw fan-out: a minimal Go
// server, net/http and go-redis and nothing of runstream on the hot path,
// that writes the same bytes to the same number of loopback connections
// on the same trigger. It subscribes to the same Redis channel as the
// API's hub; a message there is looked up (a map read) in the frames the
// driver prepared for this round, the same SSE frame bytes the API sends
// for that change, and each of the run's connections gets them from its
// own goroutine with one write system call, as the API's streams do. What
// it leaves out is what runstream adds: reading the changed snapshot from
// Redis, checking the notification and the snapshot's head, framing the
// event, the hub's registry, limits, heartbeats and hang-up detection.
type baseline struct {
	srv    *http.Server
	ln     net.Listener
	served chan error
	sub    *redis.PubSub
	subWG  sync.WaitGroup

	mu      sync.Mutex
	initial map[string][]byte             // run ID -> its current frame, sent first
	frames  map[string]baselineChange     // notification payload -> change
	conns   map[string]map[*baseConn]bool // run ID -> its connections
	all     map[*baseConn]bool
	closed  bool

	// foreign counts the messages that were not a change of the round.
	foreign atomic.Int64
}

type baselineChange struct {
	run   string
	frame []byte
}

type baseConn struct {
	conn  net.Conn
	queue chan []byte
}

// baseQueue is each connection's queue of frames: a change waits there
// while its writer still writes the previous ones.
const baseQueue = 8

// sseHead is the response head both servers' streams start with (what the
// API writes, less its Date and X-Request-Id).
const sseHead = "HTTP/1.1 200 OK\r\nCache-Control: no-cache\r\nConnection: close\r\nContent-Type: text/event-stream\r\nX-Accel-Buffering: no\r\n\r\n"

// startBaseline listens on loopback, subscribes to channel and serves GET
// /v1/runs/{runId}/watch: initial[runId], then every frame of that run.
func startBaseline(ctx context.Context, rdb *redis.Client, channel string, initial map[string][]byte) (*baseline, error) {
	b := &baseline{initial: initial, frames: map[string]baselineChange{}, conns: map[string]map[*baseConn]bool{},
		all: map[*baseConn]bool{}, served: make(chan error, 1)}
	b.sub = rdb.Subscribe(ctx, channel)
	if _, err := b.sub.Receive(ctx); err != nil {
		_ = b.sub.Close()
		return nil, err
	}
	ch := b.sub.Channel(redis.WithChannelSize(1024))
	b.subWG.Add(1)
	go func() {
		defer b.subWG.Done()
		for msg := range ch {
			b.dispatch(msg.Payload)
		}
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = b.sub.Close()
		return nil, err
	}
	b.ln = ln
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/runs/{runId}/watch", b.watch)
	b.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { b.served <- b.srv.Serve(ln) }()
	return b, nil
}

func (b *baseline) addr() string { return b.ln.Addr().String() }

// setChanges makes frames (notification payload -> change) the changes
// of the round to come.
func (b *baseline) setChanges(frames map[string]baselineChange) {
	b.mu.Lock()
	b.frames = frames
	b.mu.Unlock()
}

func (b *baseline) dispatch(payload string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, ok := b.frames[payload]
	if !ok {
		b.foreign.Add(1)
		return
	}
	for bc := range b.conns[c.run] {
		select {
		case bc.queue <- c.frame:
		default: // a full queue: the watcher misses this change, and the report says so
		}
	}
}

func (b *baseline) watch(w http.ResponseWriter, r *http.Request) {
	run := r.PathValue("runId")
	b.mu.Lock()
	first, ok := b.initial[run]
	b.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if _, err := conn.Write(append([]byte(sseHead), first...)); err != nil {
		_ = conn.Close()
		return
	}
	bc := &baseConn{conn: conn, queue: make(chan []byte, baseQueue)}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		_ = conn.Close()
		return
	}
	if b.conns[run] == nil {
		b.conns[run] = map[*baseConn]bool{}
	}
	b.conns[run][bc] = true
	b.all[bc] = true
	b.mu.Unlock()
	for frame := range bc.queue {
		if _, err := conn.Write(frame); err != nil {
			break
		}
	}
	_ = conn.Close()
}

// close ends the subscription, the streams and the server.
func (b *baseline) close() error {
	_ = b.sub.Close()
	b.subWG.Wait()
	b.mu.Lock()
	b.closed = true
	for bc := range b.all {
		close(bc.queue)
		_ = bc.conn.Close()
	}
	b.all, b.conns = map[*baseConn]bool{}, map[string]map[*baseConn]bool{}
	b.mu.Unlock()
	err := b.srv.Close()
	if serr := <-b.served; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
