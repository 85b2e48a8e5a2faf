package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
)

// The watch routes (Server-Sent Events): a run's changes
// (GET /v1/runs/{runId}/watch) and a tenant's (GET /v1/runs/watch), their
// heartbeat and the watcher limits.

// heartbeatEvery is the SSE comment heartbeat, so proxies keep the stream
// open and clients notice a dead one.
const heartbeatEvery = 15 * time.Second

var heartbeatFrame = []byte(": heartbeat\n\n")

// watchRun: GET /v1/runs/{runId}/watch. The current snapshot, then each
// change; `stale` and `recovered` events when the stale flag flips
// (ExecutionSemantics v1 1.1 UI rule); heartbeats; Last-Event-ID (a
// lastEventSeq) skips a snapshot the client already has. A run Redis does
// not hold is read from the store: a terminal one (past --snapshot-ttl)
// gets its final snapshot and an `end` event (endRunStream), an open one
// (the projector has not reached it yet) its snapshot and then the live
// stream, which the projector's writes feed as for any run.
func (s *Server) watchRun(w http.ResponseWriter, r *http.Request) error {
	id, err := runID(r)
	if err != nil {
		return err
	}
	if s.redis == nil {
		return errNoRedis
	}
	// Register before reading the current state, so no change between the
	// two is missed.
	watcher, stop := s.hub.watchRun(id, s.metrics)
	defer stop()
	s.hub.waitReady(r.Context())
	lastSeq := int64(-1)
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		if n, err := strconv.ParseInt(strings.TrimSuffix(v, "s"), 10, 64); err == nil {
			lastSeq = n
		}
	}
	// Another tenant's run is answered as one Redis does not hold (404
	// from the store), without reading its snapshot.
	body, err := s.redisSnapshotOf(r.Context(), id, tenantOf(r.Context()))
	if errors.Is(err, errNotTheirs) {
		err = redis.Nil
	}
	if err == nil {
		body, err = snapshots.JSON(body) // a stream carries the JSON
	}
	switch {
	case errors.Is(err, redis.Nil) && r.Method == http.MethodHead:
		// The stream opens for any run the caller may read: no projection.
		if err := s.authorizeRun(r, id); err != nil {
			return err
		}
		return headOfStream(w)
	case errors.Is(err, redis.Nil):
		snap, done, err := s.storeSnapshot(r, id, "with backoff")
		if err != nil {
			return err
		}
		body = snapshots.Append(make([]byte, 0, 4096), &snap)
		done()
		if store.IsTerminalRunStatus(snap.Status) {
			return s.endRunStream(w, r, &snap, body, lastSeq)
		}
		// Open: the stream starts from its store snapshot.
	case err != nil:
		return s.redisErr(err)
	}
	head, err := snapshots.ParseHead(body)
	if err != nil {
		return fmt.Errorf("decoding the Redis snapshot of run %q: %w", id, err)
	}
	if t := tenantOf(r.Context()); t != "" && head.TenantID != t {
		return notFound(id)
	}
	if r.Method == http.MethodHead {
		return headOfStream(w)
	}
	if err := s.acquireWatcher(head.TenantID); err != nil {
		return err
	}
	defer s.releaseWatcher(head.TenantID)
	st, err := openSSE(w, r)
	if err != nil {
		return nil // client gone
	}
	defer st.close()
	lastStale := false
	send := func(c *runChange) error {
		h := c.head
		if h.Stale != lastStale {
			ev := "recovered"
			if h.Stale {
				ev = "stale"
			}
			note, _ := json.Marshal(map[string]any{"runId": id, "lastEventSeq": h.LastEventSeq})
			if err := st.event(ev, "", note); err != nil {
				return err
			}
			lastStale = h.Stale
		} else if h.LastEventSeq <= lastSeq {
			return nil
		}
		lastSeq = h.LastEventSeq
		return st.write(c.frame)
	}
	if err := send(newRunChange(head, body)); err != nil {
		return nil
	}
	// What the stream last said of its state (hubhealth.go): live until
	// Redis goes away or the run's snapshot vanishes.
	said := stateLive
	say := func(state []byte) error {
		if bytes.Equal(state, said) {
			return nil
		}
		said = state
		return st.event("state", "", state)
	}
	_, changed := s.hub.connState()
	hb := time.NewTicker(heartbeatEvery)
	defer hb.Stop()
	for {
		select {
		case <-st.done:
			return nil
		case <-s.closing:
			return nil
		case <-hb.C:
			if st.write(heartbeatFrame) != nil {
				return nil
			}
		case <-changed:
			var degraded bool
			degraded, changed = s.hub.connState()
			if degraded {
				if say(stateRedisDown) != nil {
					return nil
				}
				continue
			}
			// Back: changes published meanwhile were lost; read it again.
			if s.resendRun(r.Context(), id, send, say) != nil {
				return nil
			}
		case c := <-watcher.latest:
			if say(stateLive) != nil || send(c) != nil {
				return nil
			}
		}
	}
}

// endRunStream answers the watch of a terminal run Redis no longer holds
// (its snapshot expired --snapshot-ttl after its terminal event, or Redis
// lost it): nothing will change it, so the stream is its snapshot from the
// store (the `snapshot` event every stream starts with) and an `end`
// event, then the server closes it. A client that reconnects anyway
// (EventSource does unless it handles `end` and closes) with a
// Last-Event-ID at the run's lastEventSeq gets 204 No Content, which makes
// an EventSource stop: the stream never turns into a reconnect loop. The
// stream takes no watcher slot: it holds its connection for two events.
func (s *Server) endRunStream(w http.ResponseWriter, r *http.Request, snap *store.RunSnapshot, body []byte, lastSeq int64) error {
	if lastSeq >= snap.LastEventSeq {
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	end, _ := json.Marshal(map[string]any{"runId": snap.RunID, "lastEventSeq": snap.LastEventSeq, "status": snap.Status, "reason": "terminal"})
	frames := newRunChange(snapshots.Head{TenantID: snap.TenantID, LastEventSeq: snap.LastEventSeq}, body).frame
	frames = append(frames, sseFrame("end", "", end)...)
	st, err := openSSE(w, r)
	if err != nil {
		return nil // client gone
	}
	defer st.close()
	_ = st.write(frames)
	return nil
}

// resendRun reads a run's snapshot after Redis came back and sends it
// (send skips it when the stream already has it), or says it is missing.
func (s *Server) resendRun(ctx context.Context, id string, send func(*runChange) error, say func([]byte) error) error {
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	body, err := s.redis.Get(rctx, snapshots.Key(id)).Bytes()
	cancel()
	switch {
	case errors.Is(err, redis.Nil):
		return say(stateSnapshotMissing)
	case err != nil:
		return say(stateRedisDown) // the monitor will say so too
	}
	if body, err = snapshots.JSON(body); err != nil {
		return say(stateSnapshotMissing)
	}
	head, err := snapshots.ParseHead(body)
	if err != nil {
		return say(stateSnapshotMissing)
	}
	if err := say(stateLive); err != nil {
		return err
	}
	return send(newRunChange(head, body))
}

// watchTenant: GET /v1/runs/watch. Every change of the tenant's runs as
// `update` events ({"runId","tenantId","lastEventSeq","status"}); a
// `reset` event when the client fell behind and should reload its list.
func (s *Server) watchTenant(w http.ResponseWriter, r *http.Request) error {
	q, err := query(r)
	if err != nil {
		return err
	}
	tenant, err := s.listTenant(r, q)
	if err != nil {
		return err
	}
	if s.redis == nil {
		return errNoRedis
	}
	if r.Method == http.MethodHead {
		return headOfStream(w)
	}
	if err := s.acquireWatcher(tenant); err != nil {
		return err
	}
	defer s.releaseWatcher(tenant)
	watcher, stop := s.hub.watchTenant(tenant, s.metrics)
	defer stop()
	s.hub.waitReady(r.Context())
	st, err := openSSE(w, r)
	if err != nil {
		return nil
	}
	defer st.close()
	if st.write([]byte(": watching tenant "+tenant+"\n\n")) != nil {
		return nil
	}
	_, changed := s.hub.connState()
	hb := time.NewTicker(heartbeatEvery)
	defer hb.Stop()
	for {
		select {
		case <-st.done:
			return nil
		case <-s.closing:
			return nil
		case <-hb.C:
			if st.write(heartbeatFrame) != nil {
				return nil
			}
		case <-changed:
			var degraded bool
			degraded, changed = s.hub.connState()
			if degraded {
				if st.event("state", "", stateRedisDown) != nil {
					return nil
				}
				continue
			}
			// Back: updates published meanwhile were lost: reload.
			if st.event("state", "", stateLive) != nil || st.event("reset", "", []byte(`{}`)) != nil {
				return nil
			}
		case <-watcher.overflow:
			if st.event("reset", "", []byte(`{}`)) != nil {
				return nil
			}
		case u := <-watcher.updates:
			if st.event("update", "", u) != nil {
				return nil
			}
		}
	}
}

// acquireWatcher takes a live-stream slot for tenant, or says why not.
// The streams gauge counts held slots, so it is up before the client sees
// the stream's headers and cannot lag behind a 429/503 it explains.
func (s *Server) acquireWatcher(tenant string) error {
	err := s.watchers.acquire(s.cfg.Limits, tenant)
	var he *httpError
	if errors.As(err, &he) {
		limit := "watchers"
		if he.status == http.StatusTooManyRequests {
			limit = "tenant_watchers"
		}
		s.metrics.rejected.WithLabelValues(limit).Inc()
	}
	if err == nil {
		s.metrics.watchers.Inc()
	}
	return err
}

// releaseWatcher gives back a slot taken by acquireWatcher.
func (s *Server) releaseWatcher(tenant string) {
	s.watchers.release(tenant)
	s.metrics.watchers.Dec()
}

// headOfStream answers HEAD on a watch route: the stream's headers, no
// stream.
func headOfStream(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return nil
}
