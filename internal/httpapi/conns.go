package httpapi

import (
	"container/list"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The connection budget, --max-connections. Work in progress is never
// starved by connections doing nothing: when the budget is full, a new
// connection takes the slot of one that holds it idle, in this order:
//
//  1. an idle keep-alive connection that never carried an authenticated
//     request, the one idle longest first;
//  2. a connection that has not sent a whole request header for
//     silentGrace (a client that connects and waits, or trickles);
//  3. an idle connection that carried an authenticated request, the one
//     idle longest first.
//
// Connections serving a request or a stream are never taken. When none can
// be, probeConns more connections are accepted past the budget for
// /healthz, /readyz and /metrics alone (each closed after its answer, and
// after probeConnLife at most), so the probes say how the process is, not
// how full its budget is; past those, a bare 503 and the connection is
// closed.

const (
	// probeConns are the connections past --max-connections that may ask
	// for health, readiness and metrics.
	probeConns = 16
	// probeConnLife bounds how long such a connection stays open.
	probeConnLife = 5 * time.Second
	// silentGrace is how long a new connection may take to send its first
	// request header before its slot may be taken.
	silentGrace = time.Second
)

// Reclaimed connections, the kind label of
// runstream_api_connections_reclaimed_total.
const (
	reclaimedIdle              = "idle"
	reclaimedSilent            = "silent"
	reclaimedIdleAuthenticated = "idle_authenticated"
)

// connBudget is the listener enforcing the budget; track is the
// http.Server's ConnState hook that tells it which connections wait.
type connBudget struct {
	net.Listener
	max       int
	now       func() time.Time
	gauge     func(delta float64)
	rejected  func()
	reclaimed func(kind string)

	mu     sync.Mutex
	open   int // connections in the budget
	probes int // connections past it, for probes
	// Connections whose slot may be taken, each list oldest first.
	idle, idleAuthed, silent list.List
}

// budgetConn is an accepted connection; it gives its slot back once,
// however often it is closed (also when an SSE handler that hijacked it
// closes it).
type budgetConn struct {
	net.Conn
	b      *connBudget
	probe  bool
	authed atomic.Bool // it carried an authenticated request
	once   sync.Once

	// Guarded by b.mu: the list the connection waits in, if any.
	in    *list.List
	elem  *list.Element
	since time.Time
}

func newConnBudget(ln net.Listener, max int, m *metrics) *connBudget {
	return &connBudget{Listener: ln, max: max, now: time.Now, gauge: m.connections.Add,
		rejected:  func() { m.rejected.WithLabelValues("connections").Inc() },
		reclaimed: func(kind string) { m.reclaimed.WithLabelValues(kind).Inc() }}
}

// connRefusal is the whole answer to a connection past the budget and the
// probes' connections.
var connRefusal = func() string {
	body := `{"error":{"code":"UNAVAILABLE","message":"too many open connections to this API process (--max-connections); retry"}}` + "\n"
	return "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: application/json\r\nConnection: close\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}()

func (b *connBudget) Accept() (net.Conn, error) {
	for {
		c, err := b.Listener.Accept()
		if err != nil {
			return nil, err
		}
		bc := &budgetConn{Conn: c, b: b}
		now := b.now()
		b.mu.Lock()
		var victim *budgetConn
		var kind string
		if b.open >= b.max {
			victim, kind = b.victimLocked(now)
		}
		admit := b.open < b.max || victim != nil
		switch {
		case admit:
			b.open++ // the victim's Close gives one back
			b.waitLocked(bc, &b.silent, now)
		case b.probes < probeConns:
			b.probes++
			bc.probe = true
		}
		b.mu.Unlock()
		if victim != nil {
			_ = victim.Close()
			b.reclaimed(kind)
		}
		switch {
		case admit:
			b.gauge(1)
			return bc, nil
		case bc.probe:
			time.AfterFunc(probeConnLife, func() { _ = bc.Close() })
			return bc, nil
		}
		b.rejected()
		_ = c.SetWriteDeadline(now.Add(time.Second))
		_, _ = io.WriteString(c, connRefusal)
		_ = c.Close()
	}
}

// victimLocked takes the connection whose slot a new one gets, out of its
// list; nil when every connection is at work.
func (b *connBudget) victimLocked(now time.Time) (*budgetConn, string) {
	if e := b.idle.Front(); e != nil {
		return b.takeLocked(e), reclaimedIdle
	}
	if e := b.silent.Front(); e != nil && now.Sub(e.Value.(*budgetConn).since) >= silentGrace {
		return b.takeLocked(e), reclaimedSilent
	}
	if e := b.idleAuthed.Front(); e != nil {
		return b.takeLocked(e), reclaimedIdleAuthenticated
	}
	return nil, ""
}

func (b *connBudget) takeLocked(e *list.Element) *budgetConn {
	bc := e.Value.(*budgetConn)
	b.leaveLocked(bc)
	return bc
}

// waitLocked puts bc at the back of l (it waits since now).
func (b *connBudget) waitLocked(bc *budgetConn, l *list.List, now time.Time) {
	b.leaveLocked(bc)
	bc.in, bc.elem, bc.since = l, l.PushBack(bc), now
}

func (b *connBudget) leaveLocked(bc *budgetConn) {
	if bc.in != nil {
		bc.in.Remove(bc.elem)
		bc.in, bc.elem = nil, nil
	}
}

// track is the http.Server's ConnState hook: an idle connection waits in
// its list, one at work in none.
func (b *connBudget) track(c net.Conn, state http.ConnState) {
	bc, ok := c.(*budgetConn)
	if !ok || bc.probe {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch state {
	case http.StateIdle:
		l := &b.idle
		if bc.authed.Load() {
			l = &b.idleAuthed
		}
		b.waitLocked(bc, l, b.now())
	case http.StateActive, http.StateHijacked, http.StateClosed:
		b.leaveLocked(bc)
	}
}

func (c *budgetConn) Close() error {
	c.once.Do(func() {
		b := c.b
		b.mu.Lock()
		if c.probe {
			b.probes--
		} else {
			b.open--
			b.leaveLocked(c)
		}
		b.mu.Unlock()
		if !c.probe {
			b.gauge(-1)
		}
	})
	return c.Conn.Close()
}

type connKeyType struct{}

var connKey connKeyType

// withConn is the http.Server's ConnContext hook: handlers find their
// connection's budget entry.
func withConn(ctx context.Context, c net.Conn) context.Context {
	if bc, ok := c.(*budgetConn); ok {
		return context.WithValue(ctx, connKey, bc)
	}
	return ctx
}

// markAuthenticated notes that the request's connection carried an
// authenticated request: idle, it is taken after the others.
func markAuthenticated(ctx context.Context) {
	if bc, ok := ctx.Value(connKey).(*budgetConn); ok {
		bc.authed.Store(true)
	}
}

// probeOnly serves a connection accepted past the budget health,
// readiness and metrics alone, and closes it after the answer.
func (s *Server) probeOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bc, _ := r.Context().Value(connKey).(*budgetConn)
		if bc == nil || !bc.probe {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Connection", "close")
		switch r.URL.Path {
		case "/healthz", "/readyz", "/metrics":
			next.ServeHTTP(w, r)
			return
		}
		s.metrics.rejected.WithLabelValues("connections").Inc()
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: errorDetail{Code: "UNAVAILABLE",
			Message: "too many open connections to this API process (--max-connections), all at work; this one answers health, readiness and metrics only; retry"}})
	})
}
