package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/validate"
)

// Rebuilds write the store's projection of many runs to Redis in the
// background (snapshots.Rebuild: never over a newer snapshot). Their state
// is kept in memory by the API process that runs them: another replica,
// or this one after a restart, does not know them. One runs at a time per
// process; shutdown cancels it.
const (
	maxRebuildRunIDs = 1000 // runIds of one POST /v1/rebuilds
	rebuildPageRuns  = 200  // runs read from the store and written at once
	rebuildWorkers   = 4    // concurrent store reads of a page
	keptRebuilds     = 20   // finished rebuilds GET /v1/rebuilds remembers
)

// rebuildState is a rebuild's state on the wire.
type rebuildState struct {
	ID string `json:"id"`
	// State is running, done or failed.
	State string `json:"state"`
	// TenantID is the tenant whose runs are rebuilt; empty for a list of
	// runIds.
	TenantID string `json:"tenantId,omitempty"`
	// Total is the runs to rebuild (a tenant's count when it started; it
	// grows if the tenant starts runs meanwhile).
	Total int64 `json:"total"`
	// Done is the runs handled so far, Failed those of them that could
	// not be rebuilt, Written those whose snapshot was written (the others
	// were current already, or unknown to the store).
	Done       int64      `json:"done"`
	Failed     int64      `json:"failed"`
	Written    int64      `json:"written"`
	StartedAt  time.Time  `json:"startedAt"`
	FinishedAt *time.Time `json:"finishedAt"`
	Error      *string    `json:"error"`
	// Process is the API process that runs it and keeps its state in
	// memory (host and pid); Note says so in words.
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

// rebuilds is the process's rebuilds: the running one and the last few.
type rebuilds struct {
	mu      sync.Mutex
	list    []*rebuildState // oldest first, at most keptRebuilds finished + 1 running
	running *rebuildState
	ctx     context.Context // cancelled at shutdown
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

func newRebuilds() *rebuilds {
	ctx, cancel := context.WithCancel(context.Background())
	return &rebuilds{ctx: ctx, cancel: cancel}
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
	rb := &rebuildState{ID: uuid.NewString(), State: "running", TenantID: tenant, Total: total, StartedAt: time.Now().UTC(),
		Process: thisProcess,
		Note:    "kept in the memory of API process " + thisProcess + ": ask it for progress; another replica, or this one after a restart, does not know this rebuild, and a shutdown cancels it"}
	b.running = rb
	b.list = append(b.list, rb)
	if len(b.list) > keptRebuilds+1 {
		b.list = slices.Delete(b.list, 0, len(b.list)-keptRebuilds-1)
	}
	b.wg.Add(1)
	return rb, nil
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

// get returns a copy of rebuild id.
func (b *rebuilds) get(id string) (rebuildState, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, rb := range b.list {
		if rb.ID == id {
			return *rb, true
		}
	}
	return rebuildState{}, false
}

// all returns copies of the rebuilds, newest first.
func (b *rebuilds) all() []rebuildState {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]rebuildState, 0, len(b.list))
	for i := len(b.list) - 1; i >= 0; i-- {
		out = append(out, *b.list[i])
	}
	return out
}

// rebuildRequest is POST /v1/rebuilds's body.
type rebuildRequest struct {
	TenantID string   `json:"tenantId"`
	RunIDs   []string `json:"runIds"`
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
	switch {
	case req.TenantID != "" && req.RunIDs != nil:
		return badRequest("runIds", `give either {"tenantId":"t"} (every run of the tenant) or {"runIds":[...]}, not both`)
	case req.TenantID == "" && len(req.RunIDs) == 0:
		return badRequest("tenantId", `say what to rebuild: {"tenantId":"t"} (every run of the tenant) or {"runIds":["r1","r2"]} (1 to 1000 runs)`)
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
	rb, err := s.rebuilds.start(req.TenantID, total)
	if err != nil {
		return err
	}
	s.log.Info("operator rebuild started", "rebuild", rb.ID, "tenantId", req.TenantID, "runs", total, "requestId", requestID(r.Context()))
	go func() {
		defer s.rebuilds.wg.Done()
		err := s.runRebuild(s.rebuilds.ctx, rb, req.TenantID, ids)
		s.rebuilds.finish(rb, err)
		final, _ := s.rebuilds.get(rb.ID)
		if err != nil {
			s.log.Warn("operator rebuild failed", "rebuild", rb.ID, "done", final.Done, "failed", final.Failed, "err", err)
		} else {
			s.log.Info("operator rebuild done", "rebuild", rb.ID, "done", final.Done, "written", final.Written, "failed", final.Failed)
		}
	}()
	got, _ := s.rebuilds.get(rb.ID)
	writeJSON(w, http.StatusAccepted, map[string]rebuildState{"rebuild": got})
	return nil
}

// runRebuild rebuilds the given runs, or every run of tenant page by
// page, updating rb's progress after each page.
func (s *Server) runRebuild(ctx context.Context, rb *rebuildState, tenant string, ids []string) error {
	after := ""
	for {
		var page []string
		if tenant == "" {
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
		written, failed, err := s.rebuildPage(ctx, page)
		s.rebuilds.update(rb, func(rb *rebuildState) {
			if err == nil {
				rb.Done += int64(len(page))
			} else {
				rb.Done += int64(written + failed) // the runs handled before it stopped
			}
			rb.Written += int64(written)
			rb.Failed += int64(failed)
			rb.Total = max(rb.Total, rb.Done)
		})
		if err != nil {
			return rebuildStopped(ctx, err)
		}
	}
}

// rebuildPage rebuilds a page of runs. When the page fails as a whole each
// run is tried alone, so one bad run is counted and the others written;
// it returns an error, ending the rebuild, when the first runs tried alone
// all fail too (Redis or Postgres down: trying the page's other runs one
// by one would only wait out their timeouts).
func (s *Server) rebuildPage(ctx context.Context, page []string) (written, failed int, err error) {
	n, err := snapshots.Rebuild(ctx, s.redis, s.store, page, rebuildWorkers)
	if err == nil || ctx.Err() != nil {
		return n, 0, err
	}
	const firstAlone = 3
	for i, id := range page {
		n, err := snapshots.Rebuild(ctx, s.redis, s.store, []string{id}, 1)
		if ctx.Err() != nil {
			return written, failed, ctx.Err()
		}
		if err != nil {
			failed++
			s.log.Warn("rebuilding a run failed", "runId", id, "err", err)
			if failed == i+1 && (failed == firstAlone || failed == len(page)) {
				// Stopped here: the page's untried runs are neither done nor failed.
				return written, failed, fmt.Errorf("rebuilding runs failed, one by one too (is Redis or Postgres down?): %w", err)
			}
			continue
		}
		written += n
	}
	return written, failed, nil
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
	rb, ok := s.rebuilds.get(id)
	if !ok {
		return &store.Error{Code: store.CodeNotFound, Field: "id",
			Message: fmt.Sprintf("no rebuild %s in this API process: rebuilds are kept in the memory of the process that runs them (the last %d), not across restarts or replicas", id, keptRebuilds)}
	}
	writeJSON(w, http.StatusOK, map[string]rebuildState{"rebuild": rb})
	return nil
}

// listRebuilds: GET /v1/rebuilds, this process's rebuilds, newest first.
func (s *Server) listRebuilds(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string][]rebuildState{"rebuilds": s.rebuilds.all()})
	return nil
}
