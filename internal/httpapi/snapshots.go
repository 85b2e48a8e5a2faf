package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
)

// The snapshot routes: GET /v1/runs/{runId}/snapshot, from Redis or,
// consistent, from the store, and POST /v1/runs/{runId}/resync; and the
// snapshot reads the list and watch routes share.

func etag(h snapshots.Head) string {
	if h.Stale {
		return fmt.Sprintf(`"%d-stale"`, h.LastEventSeq)
	}
	return fmt.Sprintf(`"%d"`, h.LastEventSeq)
}

// Snapshot sources, the X-Runstream-Snapshot-Source header of every
// snapshot answer.
const (
	sourceHeader = "X-Runstream-Snapshot-Source"
	sourceRedis  = "redis"
	sourceStore  = "store"
)

// getSnapshot: GET /v1/runs/{runId}/snapshot[?consistent=true]. Redis
// answers; a run it does not hold (a terminal run past --snapshot-ttl, one
// the projector has not reached, one Redis lost) is projected from the
// store, so a link to an old run keeps working. Redis unreachable is 503,
// not a store read per request.
func (s *Server) getSnapshot(w http.ResponseWriter, r *http.Request) error {
	id, err := runID(r)
	if err != nil {
		return err
	}
	tenant := tenantOf(r.Context())
	var body []byte
	var head snapshots.Head
	source := sourceRedis
	q, err := query(r)
	if err != nil {
		return err
	}
	switch c := q.Get("consistent"); c {
	case "true", "1":
		source = sourceStore
		if body, head, err = s.storeSnapshotBody(r, id, "or read the snapshot without ?consistent=true"); err != nil {
			return err
		}
	case "", "false", "0":
		if s.redis == nil {
			return &store.Error{Code: store.CodeUnavailable, Message: "no Redis configured (RUNSTREAM_REDIS_URL); use ?consistent=true"}
		}
		body, err = s.redisSnapshotOf(r.Context(), id, tenant)
		if errors.Is(err, redis.Nil) || errors.Is(err, errNotTheirs) {
			// Not in Redis, or another tenant's: the store answers both
			// alike (404 for the other tenant's, its ownership checked in
			// the projection's one statement), so neither the answer nor
			// its cost tells them apart.
			source = sourceStore
			if body, head, err = s.storeSnapshotBody(r, id, "with backoff"); err != nil {
				return err
			}
			break
		}
		if err != nil {
			return &store.Error{Code: store.CodeUnavailable, Message: "the snapshot cache (Redis) is unavailable; retry or use ?consistent=true", Err: err}
		}
		if head, err = snapshots.ParseHead(body); err != nil {
			return fmt.Errorf("decoding the Redis snapshot of run %q: %w", id, err)
		}
		if tenant != "" && head.TenantID != tenant {
			source = sourceStore
			if body, head, err = s.storeSnapshotBody(r, id, "with backoff"); err != nil {
				return err
			}
		}
	default:
		return badRequest("consistent", fmt.Sprintf("consistent must be true or false, got %q", c))
	}
	if tenant != "" && head.TenantID != tenant {
		return notFound(id)
	}
	tag := etag(head)
	// A snapshot stored compressed (--snapshot-encoding gzip) goes as it
	// is to a client that accepts gzip, and decompressed to the others:
	// the two representations have ETags of their own.
	gz, compressed := snapshots.Gzipped(body)
	if compressed {
		w.Header().Set("Vary", "Accept-Encoding")
		if acceptsGzip(r) {
			tag = strings.TrimSuffix(tag, `"`) + `-gzip"`
		} else {
			compressed = false
			if body, err = snapshots.JSON(body); err != nil {
				return fmt.Errorf("decompressing the Redis snapshot of run %q: %w", id, err)
			}
		}
	}
	w.Header().Set("ETag", tag)
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set(sourceHeader, source)
	if match := r.Header.Get("If-None-Match"); match != "" && match == tag {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	if compressed {
		w.Header().Set("Content-Encoding", "gzip")
		body = gz
	}
	w.Header().Set("Content-Type", "application/json")
	// A known length: one plain body instead of chunks.
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	return nil
}

// errNotTheirs is redisSnapshotOf's answer for another tenant's run.
var errNotTheirs = errors.New("another tenant's run")

// redisSnapshotOf reads run id's snapshot from Redis for tenant ("" for
// an operator, or without tokens: any run's). For a tenant it reads the
// snapshot's first bytes first and, when they are another tenant's,
// answers errNotTheirs without reading the rest: a large snapshot of
// another tenant's run costs what a small one does, and the caller then
// answers as for a run Redis does not hold. A snapshot that fits in those
// bytes (most do) is read in the one request.
func (s *Server) redisSnapshotOf(ctx context.Context, id, tenant string) ([]byte, error) {
	if tenant == "" {
		return s.getter.Get(ctx, id)
	}
	b, err := s.getter.GetPrefix(ctx, id, snapshotPeek)
	if err != nil || len(b) < snapshotPeek {
		return b, err // all of it, or none
	}
	if owner, ok := snapshots.PeekTenant(b); ok && owner != tenant {
		return nil, errNotTheirs
	}
	return s.getter.Get(ctx, id)
}

// snapshotPeek is the first read of a tenant's snapshot read: the head
// PeekTenant needs, and the whole of most snapshots.
const snapshotPeek = 16 << 10

// storeSnapshot projects run id's snapshot from the store for the caller,
// in one of the --max-consistent-reads slots (acquireStoreRead, hint ends
// its 503's message). The ownership check is part of the projection's one
// statement (store ProjectSnapshotFor): another tenant's run reads no
// events and answers exactly as an unknown one. A large projection may
// take a large-work slot (acquireLargeWork) to decode and reduce, and a
// run found large takes it before the statement next time (largeRuns);
// the caller calls done, which gives it back, once it has encoded the
// snapshot.
func (s *Server) storeSnapshot(r *http.Request, id, hint string) (snap store.RunSnapshot, done func(), err error) {
	if err := s.acquireStoreRead(r.Context(), hint); err != nil {
		return store.RunSnapshot{}, nil, err
	}
	defer s.releaseStoreRead(r.Context())
	done = func() {}
	held, large := false, false
	if s.largeRuns.has(id) {
		release, err := s.acquireLargeWork(r.Context())
		if err != nil {
			return store.RunSnapshot{}, nil, err
		}
		done, held = release, true
	}
	snap, err = s.store.ProjectSnapshotFor(r.Context(), id, tenantOf(r.Context()), func(ctx context.Context) error {
		large = true
		if held {
			return nil
		}
		release, err := s.acquireLargeWork(ctx)
		if err == nil {
			done = release
		}
		return err
	})
	switch {
	case large:
		s.largeRuns.add(id)
	case held:
		s.largeRuns.remove(id)
	}
	if err != nil {
		done()
		if errors.Is(err, store.ErrNotFound) {
			return store.RunSnapshot{}, nil, notFound(id)
		}
		return store.RunSnapshot{}, nil, err
	}
	return snap, done, nil
}

// storeSnapshotBody is storeSnapshot as the JSON body and head an answer
// sends.
func (s *Server) storeSnapshotBody(r *http.Request, id, hint string) ([]byte, snapshots.Head, error) {
	snap, done, err := s.storeSnapshot(r, id, hint)
	if err != nil {
		return nil, snapshots.Head{}, err
	}
	defer done()
	// The projector's encoder: json.Marshal's bytes without reflection.
	body := snapshots.Append(make([]byte, 0, 4096), &snap)
	return body, snapshots.Head{TenantID: snap.TenantID, LastEventSeq: snap.LastEventSeq, Stale: snap.Stale}, nil
}

// acceptsGzip reports whether the request's Accept-Encoding takes gzip
// (named, or "*", without q=0).
func acceptsGzip(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept-Encoding") {
		for part := range strings.SplitSeq(v, ",") {
			coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			coding = strings.ToLower(strings.TrimSpace(coding))
			if coding != "gzip" && coding != "*" {
				continue
			}
			q := strings.ReplaceAll(strings.ToLower(params), " ", "")
			if q == "q=0" || q == "q=0.0" || q == "q=0.00" || q == "q=0.000" {
				return false
			}
			return true
		}
	}
	return false
}

// errNoRedis answers a route that reads snapshots when the API has no
// Redis.
var errNoRedis = &store.Error{Code: store.CodeUnavailable, Message: "no Redis configured (RUNSTREAM_REDIS_URL)"}

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
	reason, err := s.optionalReason(r)
	if err != nil {
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
	s.recordAction(r, actionResync, "run "+id, 1, reason)
	writeJSON(w, http.StatusOK, map[string]any{"runId": id, "lastEventSeq": snap.LastEventSeq, "status": snap.Status})
	return nil
}

// snapshotPolicy is how the snapshots this API writes are kept.
func (s *Server) snapshotPolicy() snapshots.Policy {
	return snapshots.Policy{TTL: s.cfg.SnapshotTTL, Encoding: s.cfg.SnapshotEncoding}
}
