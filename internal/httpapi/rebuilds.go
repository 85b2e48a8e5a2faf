package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/internal/retry"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/validate"
)

// Rebuilds write the store's projection of many runs to Redis in the
// background (snapshots.Rebuild: never over a newer snapshot). A rebuild
// runs in the API process that accepted it (one at a time per process;
// shutdown cancels it), and that process publishes its state to Redis as it
// goes, so every replica behind a load balancer answers GET
// /v1/rebuilds/{id} alike. While it runs the process renews a lease key;
// a rebuild still "running" whose lease expired was abandoned (its process
// was killed, or lost Redis) and reads as failed.
const (
	maxRebuildRunIDs = 1000 // runIds of one POST /v1/rebuilds
	rebuildPageRuns  = 200  // runs read from the store and written at once
	rebuildWorkers   = 4    // concurrent store reads of a page
	keptRebuilds     = 20   // rebuilds GET /v1/rebuilds lists, newest first

	// The registry's keys share one hash tag, so a pipeline of them is one
	// slot on Redis Cluster.
	rebuildKeyPrefix  = "runstream:rebuilds:{rebuilds}:"
	rebuildIndexKey   = rebuildKeyPrefix + "index" // sorted set: id by start (unix ms)
	rebuildIndexed    = 100                        // ids the index keeps
	rebuildKeptFor    = 7 * 24 * time.Hour         // a rebuild's state key lives this long
	rebuildKeptSaid   = "7 days"                   // rebuildKeptFor in messages
	defaultLease      = 15 * time.Second           // a running rebuild's lease
	rebuildPublishTry = 3 * time.Second            // one publish's Redis budget
)

func rebuildStateKey(id string) string { return rebuildKeyPrefix + id }
func rebuildLeaseKey(id string) string { return rebuildKeyPrefix + id + ":lease" }

// rebuildState is a rebuild's state on the wire.
type rebuildState struct {
	ID string `json:"id"`
	// State is running, done or failed.
	State string `json:"state"`
	// TenantID is the tenant whose runs are rebuilt; empty for a list of
	// runIds.
	TenantID string `json:"tenantId,omitempty"`
	// Search is the runs list's query whose matching runs are rebuilt (a
	// bulk action on the console's search), and Position the list's
	// cursor after the last page done: a rebuild that stopped (a shutdown,
	// a dead process) is continued by a new one with the same search and
	// "cursor": Position.
	Search   string `json:"search,omitempty"`
	Position string `json:"position,omitempty"`
	// Total is the runs to rebuild (a tenant's count when it started; it
	// grows if the tenant starts runs meanwhile).
	Total int64 `json:"total"`
	// Done is the runs handled so far, Failed those of them that could
	// not be rebuilt, Written those whose snapshot was written. The others
	// were skipped: Current, Redis held a snapshot as new already;
	// Expired, the run ended longer ago than the snapshot TTL, so Redis
	// keeps it no more; Unknown, the store has no events of it.
	Done       int64      `json:"done"`
	Failed     int64      `json:"failed"`
	Written    int64      `json:"written"`
	Current    int64      `json:"current"`
	Expired    int64      `json:"expired"`
	Unknown    int64      `json:"unknown"`
	StartedAt  time.Time  `json:"startedAt"`
	FinishedAt *time.Time `json:"finishedAt"`
	Error      *string    `json:"error"`
	// Process is the API process that runs it (host and pid); Note says
	// where its state is kept, in words.
	Process string `json:"process"`
	Note    string `json:"note"`
}

// thisProcess names this API process in a rebuild's state.
var thisProcess = func() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return fmt.Sprintf("%s/%d", host, os.Getpid())
}()

// rebuilds is the process's rebuilds (the running one and the last few,
// the answer when Redis does not) and the registry in Redis they are
// published to.
type rebuilds struct {
	rdb   redis.UniversalClient // nil: memory only
	log   *slog.Logger
	lease time.Duration

	mu      sync.Mutex
	list    []*rebuildState // oldest first, at most keptRebuilds finished + 1 running
	running *rebuildState
	ctx     context.Context // cancelled at shutdown
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	publishMu sync.Mutex // one publish at a time, so a later state is never overwritten by an earlier one
}

func newRebuilds(rdb redis.UniversalClient, log *slog.Logger, lease time.Duration) *rebuilds {
	if lease <= 0 {
		lease = defaultLease
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &rebuilds{rdb: rdb, log: log, lease: lease, ctx: ctx, cancel: cancel}
}

// shutdown cancels the running rebuild and waits for it to stop.
func (b *rebuilds) shutdown() {
	b.cancel()
	b.wg.Wait()
}

// start registers a new running rebuild, or says which one runs.
func (b *rebuilds) start(tenant string, total int64) (*rebuildState, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if rb := b.running; rb != nil {
		return nil, &store.Error{Code: store.CodeConflict,
			Message: fmt.Sprintf("rebuild %s is running (%d of %d runs done): one rebuild runs at a time per API process; follow it with GET /v1/rebuilds/%s and start this one when it is done", rb.ID, rb.Done, rb.Total, rb.ID)}
	}
	if b.ctx.Err() != nil {
		return nil, &store.Error{Code: store.CodeUnavailable, Message: "the API process is shutting down; start the rebuild on another"}
	}
	// startRebuild refuses without Redis, so the state is always published.
	note := fmt.Sprintf("runs in API process %s; its state is kept in Redis for %s, so any API replica answers for it; a shutdown of that process cancels it, and if the process dies it reads as failed (abandoned) within %s",
		thisProcess, rebuildKeptSaid, b.lease)
	rb := &rebuildState{ID: uuid.NewString(), State: "running", TenantID: tenant, Total: total, StartedAt: time.Now().UTC(),
		Process: thisProcess, Note: note}
	b.running = rb
	b.list = append(b.list, rb)
	if len(b.list) > keptRebuilds+1 {
		b.list = slices.Delete(b.list, 0, len(b.list)-keptRebuilds-1)
	}
	b.wg.Add(1)
	return rb, nil
}

// abandonStart undoes start when the rebuild could not be published.
func (b *rebuilds) abandonStart(rb *rebuildState) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.running = nil
	b.list = slices.DeleteFunc(b.list, func(x *rebuildState) bool { return x == rb })
	b.wg.Done()
}

// update changes rb under the lock.
func (b *rebuilds) update(rb *rebuildState, f func(rb *rebuildState)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f(rb)
}

// finish ends rb: done, or failed with err.
func (b *rebuilds) finish(rb *rebuildState, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now().UTC()
	rb.FinishedAt = &now
	rb.State = "done"
	if err != nil {
		msg := err.Error()
		rb.State, rb.Error = "failed", &msg
	}
	b.running = nil
}

// local returns a copy of rebuild id from this process's memory.
func (b *rebuilds) local(id string) (rebuildState, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, rb := range b.list {
		if rb.ID == id {
			return *rb, true
		}
	}
	return rebuildState{}, false
}

// publish writes rb's state to the registry: with its lease renewed while
// it runs, its lease deleted once it ended; first also indexes it.
func (b *rebuilds) publish(ctx context.Context, rb *rebuildState, first bool) error {
	if b.rdb == nil {
		return nil
	}
	b.publishMu.Lock()
	defer b.publishMu.Unlock()
	b.mu.Lock()
	cp := *rb
	b.mu.Unlock()
	body, err := json.Marshal(cp)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, rebuildPublishTry)
	defer cancel()
	_, err = b.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, rebuildStateKey(cp.ID), body, rebuildKeptFor)
		if cp.State == "running" {
			p.Set(ctx, rebuildLeaseKey(cp.ID), cp.Process, b.lease)
		} else {
			p.Del(ctx, rebuildLeaseKey(cp.ID))
		}
		if first {
			p.ZAdd(ctx, rebuildIndexKey, redis.Z{Score: float64(cp.StartedAt.UnixMilli()), Member: cp.ID})
			p.ZRemRangeByRank(ctx, rebuildIndexKey, 0, -rebuildIndexed-1)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("publishing rebuild %s to Redis: %w", cp.ID, err)
	}
	return nil
}

// publishFinal publishes rb's final state, retrying for a while: until it
// lands, other replicas see the rebuild running and then abandoned.
func (b *rebuilds) publishFinal(rb *rebuildState) {
	tries := 4 // waits of at most 0.25, 0.5 and 1 s between them
	if b.ctx.Err() != nil {
		tries = 1 // shutting down: do not hold the process up
	}
	var err error
	for try := range tries {
		if err = b.publish(context.Background(), rb, false); err == nil {
			return
		}
		// A shutdown that begins during the wait ends it: the attempt
		// just made was the last.
		if try == tries-1 || !retry.Sleep(b.ctx, retry.Backoff(250*time.Millisecond, time.Second, try+1)) {
			break
		}
	}
	b.log.Warn("the rebuild's final state did not reach Redis: other API replicas will report it abandoned once its lease expires", "rebuild", rb.ID, "err", err)
}

// heartbeat republishes rb (renewing its lease) every third of the lease
// until stop is closed.
func (b *rebuilds) heartbeat(rb *rebuildState, stop <-chan struct{}) {
	t := time.NewTicker(b.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if err := b.publish(context.Background(), rb, false); err != nil {
				b.log.Warn("renewing the rebuild's lease failed", "rebuild", rb.ID, "err", err)
			}
		}
	}
}

// read returns the registry's states of ids (a missing one left out, an
// abandoned one turned failed), in the order of ids.
func (b *rebuilds) read(ctx context.Context, ids []string) ([]rebuildState, error) {
	if len(ids) == 0 {
		return []rebuildState{}, nil
	}
	// Each lease is read before its state: a rebuild that ended published
	// its final state before it deleted its lease, so a running state
	// read after a missing lease was really left running.
	leases := make([]*redis.IntCmd, len(ids))
	states := make([]*redis.StringCmd, len(ids))
	_, err := b.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			leases[i] = p.Exists(ctx, rebuildLeaseKey(id))
			states[i] = p.Get(ctx, rebuildStateKey(id))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	out := make([]rebuildState, 0, len(ids))
	for i := range ids {
		body, err := states[i].Bytes()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var rb rebuildState
		if err := json.Unmarshal(body, &rb); err != nil {
			return nil, fmt.Errorf("rebuild state %s in Redis is not JSON: %w", ids[i], err)
		}
		if rb.State == "running" && leases[i].Val() == 0 {
			msg := fmt.Sprintf("abandoned: API process %s stopped renewing the rebuild's lease after %d of %d runs (it was killed, crashed, or lost Redis); start the rebuild again", rb.Process, rb.Done, rb.Total)
			rb.State, rb.Error = "failed", &msg
		}
		out = append(out, rb)
	}
	return out, nil
}

// get returns rebuild id from the registry, or from this process's memory
// when Redis does not answer.
func (b *rebuilds) get(ctx context.Context, id string) (rebuildState, bool, error) {
	if b.rdb != nil {
		rbs, err := b.read(ctx, []string{id})
		if err == nil {
			if len(rbs) == 0 {
				return rebuildState{}, false, nil
			}
			return rbs[0], true, nil
		}
		if rb, ok := b.local(id); ok {
			return rb, true, nil
		}
		return rebuildState{}, false, err
	}
	rb, ok := b.local(id)
	return rb, ok, nil
}

// all returns the newest rebuilds of the registry (none without Redis:
// startRebuild refuses to start one).
func (b *rebuilds) all(ctx context.Context) ([]rebuildState, error) {
	if b.rdb == nil {
		return []rebuildState{}, nil
	}
	ids, err := b.rdb.ZRevRange(ctx, rebuildIndexKey, 0, keptRebuilds-1).Result()
	if err != nil {
		return nil, err
	}
	return b.read(ctx, ids)
}

// rebuildRequest is POST /v1/rebuilds's body.
type rebuildRequest struct {
	TenantID string   `json:"tenantId"`
	RunIDs   []string `json:"runIds"`
	// Search is a GET /v1/runs query string (tenantId required; limit is
	// ignored): every run it matches, page by page; Cursor continues a
	// stopped one from its position.
	Search string `json:"search"`
	Cursor string `json:"cursor"`
	Reason string `json:"reason"`
}

// maxRebuildSearchBytes bounds a rebuild's search string.
const maxRebuildSearchBytes = 4096

// parseRebuildSearch parses a rebuild's search as GET /v1/runs parses its
// query, pages of rebuildPageRuns; cursor, when given, is where it goes on.
func parseRebuildSearch(search, cursor string) (*listQuery, error) {
	if len(search) > maxRebuildSearchBytes {
		return nil, badRequest("search", fmt.Sprintf("search is at most %d bytes", maxRebuildSearchBytes))
	}
	q, err := url.ParseQuery(search)
	if err != nil {
		return nil, badRequest("search", fmt.Sprintf("search is a GET /v1/runs query string (tenantId=t&status=FAILED...): %v", err))
	}
	tenant := q.Get("tenantId")
	if tenant == "" {
		return nil, badRequest("search", "search names the tenant whose runs it matches: tenantId=t")
	}
	if err := validate.Identifier("search.tenantId", tenant); err != nil {
		return nil, err
	}
	q.Del("limit")
	q.Del("cursor")
	q.Set("limit", strconv.Itoa(rebuildPageRuns))
	lq, err := parseListQuery(q, tenant)
	if err != nil {
		return nil, err
	}
	if cursor != "" {
		if lq.After, err = lq.decodeCursor(cursor); err != nil {
			return nil, err
		}
	}
	return lq, nil
}

// startRebuild: POST /v1/rebuilds with {"tenantId":"t"} (every run of the
// tenant) or {"runIds":[...]} (at most 1000) starts a rebuild: 202 with
// its state, 409 CONFLICT while another runs in this process.
func (s *Server) startRebuild(w http.ResponseWriter, r *http.Request) error {
	if s.ops == nil {
		return opsUnavailable
	}
	if s.redis == nil {
		return &store.Error{Code: store.CodeUnavailable, Message: "no Redis configured (RUNSTREAM_REDIS_URL): rebuilds write snapshots there"}
	}
	raw, err := s.readBody(r)
	if err != nil {
		return err
	}
	var req rebuildRequest
	if err := decodeStrict(raw, &req); err != nil {
		return err
	}
	given := countTrue(req.TenantID != "", req.RunIDs != nil, req.Search != "")
	switch {
	case given > 1:
		return badRequest("runIds", `give one of {"tenantId":"t"} (every run of the tenant), {"runIds":[...]} or {"search":"tenantId=t&status=FAILED"} (every run a runs-list search matches), not several`)
	case given == 0 || req.RunIDs != nil && len(req.RunIDs) == 0:
		return badRequest("tenantId", `say what to rebuild: {"tenantId":"t"} (every run of the tenant), {"runIds":["r1","r2"]} (1 to 1000 runs) or {"search":"tenantId=t&status=FAILED"} (the runs a GET /v1/runs query matches)`)
	case req.Cursor != "" && req.Search == "":
		return badRequest("cursor", "cursor continues a search rebuild: give it with the same search")
	case len(req.RunIDs) > maxRebuildRunIDs:
		return badRequest("runIds", fmt.Sprintf("at most %d runIds per rebuild, got %d; rebuild a whole tenant with tenantId, or send several rebuilds one after another", maxRebuildRunIDs, len(req.RunIDs)))
	}
	if req.TenantID != "" {
		if err := validate.Identifier("tenantId", req.TenantID); err != nil {
			return err
		}
	}
	for i, id := range req.RunIDs {
		if err := validate.Identifier(fmt.Sprintf("runIds[%d]", i), id); err != nil {
			return err
		}
	}
	if err := checkReason(req.Reason); err != nil {
		return err
	}
	var search *listQuery
	if req.Search != "" {
		if search, err = parseRebuildSearch(req.Search, req.Cursor); err != nil {
			return err
		}
	}
	ids := slices.Compact(slices.Sorted(slices.Values(req.RunIDs)))
	total := int64(len(ids))
	ctx, cancel := context.WithTimeout(r.Context(), operatorTimeout)
	defer cancel()
	// A rebuild that cannot write is refused now rather than failing later.
	if err := s.redis.Ping(ctx).Err(); err != nil {
		if r.Context().Err() != nil {
			return r.Context().Err()
		}
		return &store.Error{Code: store.CodeUnavailable, Message: "Redis (the snapshots) did not answer, so a rebuild could not write; retry when it is back", Err: err}
	}
	if req.TenantID != "" {
		if total, err = s.ops.RunCount(ctx, req.TenantID); err != nil {
			return storeUnavailable(r, err)
		}
	}
	if search != nil && search.After == nil {
		// The catalog's count when one index answers the search (the
		// console's "N runs match"); else, and when continuing from a
		// cursor, it grows as pages are done.
		first := search.CatalogQuery
		first.Limit = 1
		page, err := snapshots.QueryCatalog(ctx, s.redis, first)
		if err != nil {
			return s.redisErr(err)
		}
		total = max(page.Matched, 0)
	}
	b := s.rebuilds
	rb, err := b.start(req.TenantID, total)
	if err != nil {
		return err
	}
	if search != nil {
		b.update(rb, func(rb *rebuildState) { rb.Search, rb.Position = req.Search, req.Cursor })
	}
	// Published before it is acknowledged, so any replica asked next knows it.
	if err := b.publish(ctx, rb, true); err != nil {
		b.abandonStart(rb)
		if r.Context().Err() != nil {
			return r.Context().Err()
		}
		return &store.Error{Code: store.CodeUnavailable, Message: "Redis did not take the rebuild's state, so no API replica could report its progress; retry when Redis answers", Err: err}
	}
	s.log.Info("operator rebuild started", "rebuild", rb.ID, "tenantId", req.TenantID, "runs", total, "requestId", requestID(r.Context()))
	target := fmt.Sprintf("rebuild %s: every run of tenant %s", rb.ID, req.TenantID)
	switch {
	case search != nil:
		target = fmt.Sprintf("rebuild %s: the runs matching %s", rb.ID, req.Search)
	case req.TenantID == "":
		target = fmt.Sprintf("rebuild %s: %d runs by id", rb.ID, len(ids))
	}
	s.recordAction(r, actionRebuild, target, total, req.Reason)
	started, _ := b.local(rb.ID)
	go func() {
		defer b.wg.Done()
		stop := make(chan struct{})
		beat := make(chan struct{})
		go func() { defer close(beat); b.heartbeat(rb, stop) }()
		err := s.runRebuild(b.ctx, rb, req.TenantID, ids, search)
		close(stop)
		<-beat
		b.finish(rb, err)
		b.publishFinal(rb)
		final, _ := b.local(rb.ID)
		if err != nil {
			s.log.Warn("operator rebuild failed", "rebuild", rb.ID, "done", final.Done, "failed", final.Failed, "err", err)
		} else {
			s.log.Info("operator rebuild done", "rebuild", rb.ID, "tenantId", final.TenantID, "done", final.Done, "written", final.Written,
				"current", final.Current, "expired", final.Expired, "unknown", final.Unknown, "failed", final.Failed)
		}
	}()
	writeJSON(w, http.StatusAccepted, map[string]rebuildState{"rebuild": started})
	return nil
}

// runRebuild rebuilds the given runs, or every run of tenant page by
// page, updating rb's progress after each page.
func (s *Server) runRebuild(ctx context.Context, rb *rebuildState, tenant string, ids []string, search *listQuery) error {
	after := ""
	for {
		var page []string
		var position string
		last := false // the search's last page
		if search != nil {
			cp, err := snapshots.QueryCatalog(ctx, s.redis, search.CatalogQuery)
			if err != nil {
				return rebuildStopped(ctx, fmt.Errorf("reading the runs list's search from Redis: %w", err))
			}
			for _, e := range cp.Entries {
				page = append(page, e.RunID)
			}
			if last = cp.Next == nil; !last {
				search.After = cp.Next
				position = search.encodeCursor(cp.Next)
				if len(page) == 0 { // a scan-limited page: go on
					s.rebuilds.update(rb, func(rb *rebuildState) { rb.Position = position })
					continue
				}
			}
		} else if tenant == "" {
			page, ids = ids[:min(rebuildPageRuns, len(ids))], ids[min(rebuildPageRuns, len(ids)):]
		} else {
			var err error
			if page, err = s.ops.ListTenantRuns(ctx, tenant, after, rebuildPageRuns); err != nil {
				return rebuildStopped(ctx, fmt.Errorf("listing the runs of tenant %q from the store: %w", tenant, err))
			}
		}
		if len(page) == 0 {
			return nil
		}
		after = page[len(page)-1]
		res, failed, err := s.rebuildPage(ctx, page)
		s.rebuilds.update(rb, func(rb *rebuildState) {
			if err == nil {
				rb.Done += int64(len(page))
			} else {
				// The runs handled before it stopped.
				rb.Done += int64(res.Written + res.Current + res.Expired + res.Unknown + failed)
			}
			rb.Written += int64(res.Written)
			rb.Current += int64(res.Current)
			rb.Expired += int64(res.Expired)
			rb.Unknown += int64(res.Unknown)
			rb.Failed += int64(failed)
			rb.Total = max(rb.Total, rb.Done)
			if err == nil && rb.Search != "" {
				rb.Position = position
			}
		})
		if err != nil {
			return rebuildStopped(ctx, err)
		}
		if err := s.rebuilds.publish(ctx, rb, false); err != nil && ctx.Err() == nil {
			s.log.Warn("publishing the rebuild's progress failed", "rebuild", rb.ID, "err", err)
		}
		if last {
			return nil
		}
	}
}

// rebuildPage rebuilds a page of runs. When the page fails as a whole each
// run is tried alone, so one bad run is counted and the others written;
// it returns an error, ending the rebuild, when the first runs tried alone
// all fail too (Redis or Postgres down: trying the page's other runs one
// by one would only wait out their timeouts).
func (s *Server) rebuildPage(ctx context.Context, page []string) (res snapshots.RebuildResult, failed int, err error) {
	res, err = snapshots.RebuildRuns(ctx, s.redis, s.store, page, rebuildWorkers, s.snapshotPolicy())
	if err == nil || ctx.Err() != nil {
		return res, 0, err
	}
	res = snapshots.RebuildResult{}
	const firstAlone = 3
	for i, id := range page {
		one, err := snapshots.RebuildRuns(ctx, s.redis, s.store, []string{id}, 1, s.snapshotPolicy())
		if ctx.Err() != nil {
			return res, failed, ctx.Err()
		}
		if err != nil {
			failed++
			s.log.Warn("rebuilding a run failed", "runId", id, "err", err)
			if failed == i+1 && (failed == firstAlone || failed == len(page)) {
				// Stopped here: the page's untried runs are neither done nor failed.
				return res, failed, fmt.Errorf("rebuilding runs failed, one by one too (is Redis or Postgres down?): %w", err)
			}
			continue
		}
		res = res.Add(one)
	}
	return res, failed, nil
}

// rebuildStopped names why a rebuild stopped early.
func rebuildStopped(ctx context.Context, err error) error {
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return errors.New("cancelled: the API process shut down; start the rebuild again")
	}
	return err
}

// getRebuild: GET /v1/rebuilds/{id}.
func (s *Server) getRebuild(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := uuid.Validate(id); err != nil {
		return badRequest("id", fmt.Sprintf("a rebuild's id is the UUID POST /v1/rebuilds returned, got %q", id))
	}
	ctx, cancel := context.WithTimeout(r.Context(), operatorTimeout)
	defer cancel()
	rb, ok, err := s.rebuilds.get(ctx, id)
	if err != nil {
		return rebuildsUnavailable(r, err)
	}
	if !ok {
		return &store.Error{Code: store.CodeNotFound, Field: "id",
			Message: fmt.Sprintf("no rebuild %s: it was never started, or its state expired (kept in Redis for %s)", id, rebuildKeptSaid)}
	}
	writeJSON(w, http.StatusOK, map[string]rebuildState{"rebuild": rb})
	return nil
}

// listRebuilds: GET /v1/rebuilds, the newest rebuilds of every API
// replica (of this process when there is no Redis), newest first.
func (s *Server) listRebuilds(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), operatorTimeout)
	defer cancel()
	rbs, err := s.rebuilds.all(ctx)
	if err != nil {
		return rebuildsUnavailable(r, err)
	}
	writeJSON(w, http.StatusOK, map[string][]rebuildState{"rebuilds": rbs})
	return nil
}

// rebuildsUnavailable is the answer when Redis, which keeps the rebuilds'
// state, did not answer.
func rebuildsUnavailable(r *http.Request, err error) error {
	if r.Context().Err() != nil {
		return r.Context().Err()
	}
	return &store.Error{Code: store.CodeUnavailable, Message: "Redis, which keeps the rebuilds' state, did not answer; retry when it is back", Err: err}
}
