package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/validate"
)

// readBody reads the whole body, within the size limit (413) and the
// request deadline (408); a client that hangs up is not our error (499).
func (s *Server) readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, s.classifyBodyError(r, err)
	}
	return b, nil
}

// checkTenant refuses a write for another tenant than the caller's.
func checkTenant(r *http.Request, w *store.RunEventWrite) error {
	if principalOf(r.Context()).operator {
		return &store.Error{Code: store.CodeForbidden, Message: "an operator's token reads and repairs; appends need the tenant's own token"}
	}
	tenant := tenantOf(r.Context())
	if tenant == "" || w.TenantID == tenant {
		return nil
	}
	return &store.Error{Code: store.CodeForbidden, Field: "tenantId",
		Message: fmt.Sprintf("your credentials are for tenant %q; you cannot append events for tenant %q", tenant, w.TenantID)}
}

func (s *Server) decode(r *http.Request, raw []byte) (store.RunEventWrite, error) {
	w, info, err := validate.DecodeWrite(raw)
	if err != nil {
		return w, err
	}
	if len(info.UnknownFields) > 0 {
		s.metrics.ignoredFields.Add(float64(len(info.UnknownFields)))
		s.log.Debug("ignored unknown fields", "requestId", requestID(r.Context()), "fields", info.UnknownFields)
	}
	return w, checkTenant(r, &w)
}

// appendEvent: POST /v1/events.
func (s *Server) appendEvent(w http.ResponseWriter, r *http.Request) error {
	raw, err := s.readBody(r)
	if err != nil {
		return err
	}
	ev, err := s.decode(r, raw)
	if err != nil {
		return err
	}
	if err := s.acquireAppend(); err != nil {
		return err
	}
	defer s.appends.release()
	res, err := s.store.AppendValidated(r.Context(), &ev)
	if err != nil {
		s.noteConflict(r, &ev, err)
		return err
	}
	status := http.StatusCreated
	if res.Idempotent {
		status = http.StatusOK
	}
	writeJSON(w, status, res)
	return nil
}

type batchRequest struct {
	Events []json.RawMessage `json:"events"`
}

// decodeBatch reads a batch body as strictly as validate.DecodeWrite reads
// one event: one JSON object whose "events" is spelled exactly and given
// once (encoding/json would keep the last of two, and take "Events" too).
func decodeBatch(raw []byte) (batchRequest, error) {
	members, err := validate.Object(raw, `a batch {"events": [RunEventWrite, ...]}`)
	if err != nil {
		return batchRequest{}, err
	}
	var req batchRequest
	if events, ok := members["events"]; ok {
		if err := json.Unmarshal(events, &req.Events); err != nil {
			return batchRequest{}, badRequest("events", `"events" must be an array of RunEventWrite objects`)
		}
	}
	return req, nil
}

// batchItem is one entry of a batch answer: an AppendResult, or an error.
type batchItem struct {
	*store.AppendResult
	Error *errorDetail `json:"error,omitempty"`
}

// appendBatch: POST /v1/events:batch.
func (s *Server) appendBatch(w http.ResponseWriter, r *http.Request) error {
	raw, err := s.readBody(r)
	if err != nil {
		return err
	}
	req, err := decodeBatch(raw)
	if err != nil {
		return err
	}
	if len(req.Events) == 0 {
		return badRequest("events", `"events" must be a non-empty array of RunEventWrite objects`)
	}
	if len(req.Events) > s.cfg.MaxBatchEvents {
		return badRequest("events", fmt.Sprintf("a batch holds at most %d events, got %d; split it", s.cfg.MaxBatchEvents, len(req.Events)))
	}
	writes := make([]store.RunEventWrite, len(req.Events))
	errs := make([]error, len(req.Events))
	for i, item := range req.Events {
		writes[i], errs[i] = s.decode(r, item)
		if errs[i] != nil {
			var se *store.Error
			if errors.As(errs[i], &se) && se.Field != "" {
				// Say which item: events[3].runId.
				c := *se
				c.Field = fmt.Sprintf("events[%d].%s", i, se.Field)
				errs[i] = &c
			}
		}
	}
	if err := s.acquireAppend(); err != nil {
		return err
	}
	defer s.appends.release()
	results := s.store.AppendValidatedBatch(r.Context(), writes, errs)
	out := make([]batchItem, len(results))
	for i, res := range results {
		if res.Err != nil {
			if errs[i] == nil {
				s.noteConflict(r, &writes[i], res.Err)
			}
			d, st := toDetail(res.Err)
			if st >= 500 {
				// Unavailable for all: answer the whole request as 503 so
				// the producer retries the batch.
				if errors.Is(res.Err, store.ErrUnavailable) {
					return res.Err
				}
				s.log.Error("batch item failed", "requestId", requestID(r.Context()), "index", i, "err", res.Err)
			}
			out[i] = batchItem{Error: &d}
			continue
		}
		out[i] = batchItem{AppendResult: &results[i].Result}
	}
	writeJSON(w, http.StatusOK, map[string]any{"results": out})
	return nil
}

// runID reads the {runId} path segment, an identifier like a body's
// runId (DESIGN.md 1.5): 400 naming runId, never a lookup of bytes
// Postgres refuses.
func runID(r *http.Request) (string, error) {
	id := r.PathValue("runId")
	if err := validate.Identifier("runId", id); err != nil {
		return "", err
	}
	return id, nil
}

// notFound is the answer for an unknown run and for another tenant's run
// alike (DESIGN.md 1.11), so existence does not leak.
func notFound(id string) error {
	return &store.Error{Code: store.CodeNotFound, Field: "runId", Message: fmt.Sprintf("run %q not found", id)}
}

// authorizeRun answers NOT_FOUND unless the caller may read the run.
func (s *Server) authorizeRun(r *http.Request, id string) error {
	tenant := tenantOf(r.Context())
	owner, err := s.store.RunTenant(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return notFound(id)
	}
	if err != nil {
		return err
	}
	if tenant != "" && owner != tenant {
		return notFound(id)
	}
	return nil
}

func intParam(q url.Values, name string, def, min, max int64) (int64, error) {
	v := q.Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < min || n > max {
		return 0, badRequest(name, fmt.Sprintf("%s must be an integer from %d to %d, got %q", name, min, max, v))
	}
	return n, nil
}

// fetchEvents: GET /v1/runs/{runId}/events?afterSeq=N&limit=M.
func (s *Server) fetchEvents(w http.ResponseWriter, r *http.Request) error {
	id, err := runID(r)
	if err != nil {
		return err
	}
	q, err := query(r)
	if err != nil {
		return err
	}
	after, err := intParam(q, "afterSeq", 0, 0, 1<<62)
	if err != nil {
		return err
	}
	limit, err := intParam(q, "limit", 100, 1, 1000)
	if err != nil {
		return err
	}
	if err := s.authorizeRun(r, id); err != nil {
		return err
	}
	events, err := s.store.FetchEvents(r.Context(), id, store.FetchOptions{AfterSeq: after, Limit: int(limit)})
	if err != nil {
		return err
	}
	if events == nil {
		events = []store.RunEventRecord{}
	}
	out := map[string]any{"events": events}
	// A run whose partition retention took out says where its events
	// went, so an empty page never reads as a run without events; asked
	// on a run's last page only.
	if len(events) < int(limit) {
		gone, err := s.store.RunArchive(r.Context(), id)
		if err != nil {
			return err
		}
		if gone != nil {
			out["archived"] = toArchivedRange(*gone)
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

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
		body, err = s.getter.Get(r.Context(), id)
		if errors.Is(err, redis.Nil) {
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

// storeSnapshot projects run id's snapshot from the store for the caller,
// in one of the --max-consistent-reads slots (acquireStoreRead, hint ends
// its 503's message). The ownership check is part of the projection's one
// statement (store ProjectSnapshotOf): another tenant's run reads no
// events and answers exactly as an unknown one.
func (s *Server) storeSnapshot(r *http.Request, id, hint string) (store.RunSnapshot, error) {
	if err := s.acquireStoreRead(r.Context(), hint); err != nil {
		return store.RunSnapshot{}, err
	}
	defer s.storeReads.release()
	snap, err := s.store.ProjectSnapshotOf(r.Context(), id, tenantOf(r.Context()))
	if errors.Is(err, store.ErrNotFound) {
		return store.RunSnapshot{}, notFound(id)
	}
	if err != nil {
		return store.RunSnapshot{}, err
	}
	return snap, nil
}

// storeSnapshotBody is storeSnapshot as the JSON body and head an answer
// sends.
func (s *Server) storeSnapshotBody(r *http.Request, id, hint string) ([]byte, snapshots.Head, error) {
	snap, err := s.storeSnapshot(r, id, hint)
	if err != nil {
		return nil, snapshots.Head{}, err
	}
	body, err := json.Marshal(snap)
	if err != nil {
		return nil, snapshots.Head{}, fmt.Errorf("encoding the store's snapshot of run %q: %w", id, err)
	}
	return body, snapshots.Head{TenantID: snap.TenantID, LastEventSeq: snap.LastEventSeq, Stale: snap.Stale}, nil
}

// acquireStoreRead takes one of the --max-consistent-reads slots of
// snapshot reads from the store, waiting up to cfg.storeReadWait for one:
// a burst of readers of runs Redis no longer holds (a hundred links to old
// runs opened at once) queues for a few projections' time instead of
// failing at once, and still never waits unbounded. Past the wait, 503
// with Retry-After.
func (s *Server) acquireStoreRead(ctx context.Context, hint string) error {
	if s.storeReads.tryAcquire() {
		return nil
	}
	if s.cfg.storeReadWaiting != nil {
		s.cfg.storeReadWaiting()
	}
	ok, err := s.storeReads.acquireWithin(ctx, s.cfg.storeReadWait)
	if err != nil {
		return fmt.Errorf("waiting for a store read slot: %w", err)
	}
	if ok {
		return nil
	}
	s.metrics.rejected.WithLabelValues("consistent_reads").Inc()
	return limitError(http.StatusServiceUnavailable, 1,
		"%d snapshot reads from the store are running on this API process, its limit (--max-consistent-reads), and none ended within %v; retry %s",
		cap(s.storeReads), s.cfg.storeReadWait, hint)
}

// acquireAppend takes an in-flight append slot, or answers 503 at once.
// Taken after the body is read: a slow client holds a connection (bounded
// by --max-connections and --request-timeout), never a store slot.
func (s *Server) acquireAppend() error {
	if s.appends.tryAcquire() {
		return nil
	}
	s.metrics.rejected.WithLabelValues("appends").Inc()
	return limitError(http.StatusServiceUnavailable, 1,
		"%d appends are in flight on this API process, its limit (--max-inflight-appends); retry with backoff", cap(s.appends))
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
