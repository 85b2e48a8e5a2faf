package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
)

// heartbeatEvery is the SSE comment heartbeat, so proxies keep the stream
// open and clients notice a dead one.
const heartbeatEvery = 15 * time.Second

var heartbeatFrame = []byte(": heartbeat\n\n")

// listTenant is the tenant a list or tenant-wide watch reads: the caller's
// (with credentials), else ?tenantId= (an identifier: it is echoed into
// event streams), else Config.DefaultTenant.
func (s *Server) listTenant(r *http.Request, q url.Values) (string, error) {
	if t := tenantOf(r.Context()); t != "" {
		return t, nil
	}
	if t, err := queryIdentifier(q, "tenantId"); err != nil || t != "" {
		return t, err
	}
	if s.cfg.DefaultTenant != "" {
		return s.cfg.DefaultTenant, nil
	}
	return "", badRequest("tenantId", "tenantId is required when authentication is off (RUNSTREAM_AUTH_TOKENS unset)")
}

// errNoRedis answers a route that reads snapshots when the API has no
// Redis.
var errNoRedis = &store.Error{Code: store.CodeUnavailable, Message: "no Redis configured (RUNSTREAM_REDIS_URL)"}

var runStatuses = map[string]bool{store.RunPending: true, store.RunApproved: true, store.RunRunning: true,
	store.RunPaused: true, store.RunCompleted: true, store.RunFailed: true, store.RunCancelled: true}

// runSummary is one entry of the runs list.
type runSummary struct {
	RunID           string `json:"runId"`
	TenantID        string `json:"tenantId"`
	Status          string `json:"status"`
	Substatus       string `json:"substatus,omitempty"`
	LastEventSeq    int64  `json:"lastEventSeq"`
	UpdatedAt       string `json:"updatedAt"`
	StartedAt       string `json:"startedAt,omitempty"`
	CompletedAt     string `json:"completedAt,omitempty"`
	TotalDurationMs *int64 `json:"totalDurationMs,omitempty"`
	FailedSteps     int    `json:"failedSteps"`
	Stale           bool   `json:"stale"`
	PlanID          string `json:"planId"`
	PlanVersion     string `json:"planVersion"`
	EngineRunRef    string `json:"engineRunRef,omitempty"`
	Steps           int    `json:"steps"`
}

func summarize(s *store.RunSnapshot) runSummary {
	return runSummary{RunID: s.RunID, TenantID: s.TenantID, Status: s.Status, Substatus: s.Substatus,
		LastEventSeq: s.LastEventSeq, UpdatedAt: s.UpdatedAt, StartedAt: s.StartedAt, CompletedAt: s.CompletedAt,
		TotalDurationMs: s.TotalDurationMs, FailedSteps: s.FailedSteps, Stale: s.Stale, PlanID: s.PlanID,
		PlanVersion: s.PlanVersion, EngineRunRef: s.EngineRunRef, Steps: len(s.Steps)}
}

func (s *Server) redisErr(err error) error {
	return &store.Error{Code: store.CodeUnavailable, Message: "the snapshot cache (Redis) is unavailable; retry", Err: err}
}

// getSnapshots reads snapshots in one pipeline (snapshots.Load); missing
// and undecodable ones are nil.
func (s *Server) getSnapshots(ctx context.Context, ids []string) ([]*store.RunSnapshot, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	snaps, _, err := snapshots.Load(ctx, s.redis, ids)
	if err != nil {
		return nil, s.redisErr(err)
	}
	out := make([]*store.RunSnapshot, len(ids))
	for i, id := range ids {
		if snap, ok := snaps[id]; ok {
			out[i] = &snap
		}
	}
	return out, nil
}

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
	body, err := s.redis.Get(r.Context(), snapshots.Key(id)).Bytes()
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
		snap, err := s.storeSnapshot(r, id, "with backoff")
		if err != nil {
			return err
		}
		if body, err = json.Marshal(snap); err != nil {
			return fmt.Errorf("encoding the store's snapshot of run %q: %w", id, err)
		}
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

// resyncRun: POST /v1/runs/{runId}/resync, a FULL resync of the run's
// snapshot: any run for an operator, its own runs (rate-limited) for a
// tenant.
func (s *Server) resyncRun(w http.ResponseWriter, r *http.Request) error {
	id, err := runID(r)
	if err != nil {
		return err
	}
	if s.redis == nil {
		return errNoRedis
	}
	if err := s.authorizeRun(r, id); err != nil {
		return err
	}
	if !s.isOperator(r.Context()) {
		// A tenant may resync its own runs, at a bounded rate: each is a
		// full rebuild from the store.
		if ok, after := s.resyncs.allow(tenantOf(r.Context())); !ok {
			s.metrics.rejected.WithLabelValues("resyncs").Inc()
			return limitError(http.StatusTooManyRequests, after,
				"at most %d resyncs a minute per tenant (--tenant-resyncs-per-minute); an operator's token is not limited", s.cfg.Limits.TenantResyncsPerMinute)
		}
	}
	snap, err := snapshots.Resync(r.Context(), s.redis, s.store, id, s.snapshotPolicy())
	if errors.Is(err, store.ErrNotFound) {
		return notFound(id)
	}
	if errors.Is(err, snapshots.ErrExpired) {
		return &store.Error{Code: store.CodeConflict, Field: "runId", Message: fmt.Sprintf(
			"run %q ended more than --snapshot-ttl (%v) ago, so Redis no longer keeps its snapshot and a resync writes nothing; GET /v1/runs/%s/snapshot answers it from the store", id, s.cfg.SnapshotTTL, id)}
	}
	if err != nil {
		return err
	}
	s.log.Info("operator resync", "runId", id, "lastEventSeq", snap.LastEventSeq, "requestId", requestID(r.Context()))
	writeJSON(w, http.StatusOK, map[string]any{"runId": id, "lastEventSeq": snap.LastEventSeq, "status": snap.Status})
	return nil
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
