package httpapi

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
)

// maxEngineRunRefBytes bounds the engineRunRef a list may search for.
const maxEngineRunRefBytes = 1024

// storeRunsTimeout bounds the store's count of a tenant's runs: the list
// answers from Redis without it (storeRuns null) rather than wait.
const storeRunsTimeout = 300 * time.Millisecond

// runCounter is what the list needs of the store for storeRuns;
// *postgres.Store satisfies it.
type runCounter interface {
	RunCount(ctx context.Context, tenantID string) (int64, error)
}

// listQuery is a parsed GET /v1/runs.
type listQuery struct {
	snapshots.CatalogQuery
	// key identifies the query a cursor belongs to (every parameter but
	// limit and cursor).
	key uint64
}

// parseListQuery validates every parameter of GET /v1/runs: 400 naming
// the first wrong one.
func parseListQuery(q url.Values, tenant string) (*listQuery, error) {
	lq := &listQuery{CatalogQuery: snapshots.CatalogQuery{TenantID: tenant}}
	c := &lq.CatalogQuery
	if v := q.Get("status"); v != "" {
		if !runStatuses[v] {
			return nil, badRequest("status", fmt.Sprintf("status must be one of PENDING, APPROVED, RUNNING, PAUSED, COMPLETED, FAILED, CANCELLED; got %q", v))
		}
		c.Status = v
	}
	var err error
	// A runId prefix is checked as runIds are: any prefix
	// of a valid runId is one.
	if c.RunIDPrefix, err = queryIdentifier(q, "runIdPrefix"); err != nil {
		return nil, err
	}
	if c.PlanID, err = queryIdentifier(q, "planId"); err != nil {
		return nil, err
	}
	if v := q.Get("engineRunRef"); v != "" {
		if len(v) > maxEngineRunRefBytes || !utf8.ValidString(v) || hasControl(v) {
			return nil, badRequest("engineRunRef", fmt.Sprintf("engineRunRef must be 1 to %d bytes of UTF-8 without control characters", maxEngineRunRefBytes))
		}
		c.EngineRunRef = v
	}
	switch v := q.Get("sort"); v {
	case "", "updatedAt":
	case "startedAt":
		c.ByStarted = true
	default:
		return nil, badRequest("sort", fmt.Sprintf("sort must be updatedAt or startedAt; got %q", v))
	}
	switch v := q.Get("order"); v {
	case "", "desc":
	case "asc":
		c.Asc = true
	default:
		return nil, badRequest("order", fmt.Sprintf("order must be desc or asc; got %q", v))
	}
	if c.From, c.HasFrom, err = listTimeParam(q, "from"); err != nil {
		return nil, err
	}
	if c.To, c.HasTo, err = listTimeParam(q, "to"); err != nil {
		return nil, err
	}
	if c.HasFrom && c.HasTo && c.From >= c.To {
		return nil, badRequest("to", "to must be after from (from is inclusive, to exclusive)")
	}
	limit, err := intParam(q, "limit", 50, 1, 200)
	if err != nil {
		return nil, err
	}
	c.Limit = int(limit)
	h := fnv.New64a()
	// The parsed values, not the raw ones: sort=updatedAt and no sort, or
	// two spellings of one instant, are the same query.
	for _, p := range []string{tenant, c.Status, c.RunIDPrefix, c.EngineRunRef, c.PlanID,
		strconv.FormatBool(c.ByStarted), strconv.FormatBool(c.Asc),
		fmt.Sprint(c.HasFrom, c.From), fmt.Sprint(c.HasTo, c.To)} {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	lq.key = h.Sum64()
	if v := q.Get("cursor"); v != "" {
		pos, err := lq.decodeCursor(v)
		if err != nil {
			return nil, err
		}
		c.After = pos
	}
	return lq, nil
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) {
			return true
		}
	}
	return false
}

// listTimeParam reads an RFC 3339 time (audit's rule) as unix
// milliseconds, the catalog's precision.
func listTimeParam(q url.Values, name string) (int64, bool, error) {
	t, ok, err := timeParam(q, name)
	return t.UnixMilli(), ok, err
}

// listCursor is where a page ended, bound to its query by the query's key.
type listCursor struct {
	Key   string `json:"q"`
	Score int64  `json:"s"`
	RunID string `json:"r"`
}

func (lq *listQuery) keyString() string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], lq.key)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func (lq *listQuery) encodeCursor(p *snapshots.CatalogPos) string {
	if p == nil {
		return ""
	}
	b, _ := json.Marshal(listCursor{Key: lq.keyString(), Score: p.Score, RunID: p.RunID})
	return base64.RawURLEncoding.EncodeToString(b)
}

func (lq *listQuery) decodeCursor(v string) (*snapshots.CatalogPos, error) {
	var c listCursor
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err == nil && len(v) <= 1024 {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || len(v) > 1024 || !store.ValidIdentifier(c.RunID) {
		return nil, badRequest("cursor", "cursor is not one this API returned; start again without it")
	}
	if c.Key != lq.keyString() {
		return nil, badRequest("cursor", "cursor belongs to another query (a different tenant, filter, sort, order or time range); start again without it")
	}
	return &snapshots.CatalogPos{Score: c.Score, RunID: c.RunID}, nil
}

// listRuns: GET /v1/runs, a page of the tenant's runs from its catalog in
// Redis (snapshots.QueryCatalog), with the exact counts per status the
// projector keeps there, the store's count of the tenant's runs, and the
// retention that bounds what Redis keeps.
func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) error {
	if s.redis == nil {
		return errNoRedis
	}
	q, err := query(r)
	if err != nil {
		return err
	}
	tenant, err := s.listTenant(r, q)
	if err != nil {
		return err
	}
	lq, err := parseListQuery(q, tenant)
	if err != nil {
		return err
	}
	ctx := r.Context()
	// The store's count runs beside the Redis reads, bounded: a slow or
	// unreachable store makes it null, never the list late.
	storeRuns := make(chan *int64, 1)
	go func() { storeRuns <- s.storeRunCount(ctx, tenant) }()

	page, err := snapshots.QueryCatalog(ctx, s.redis, lq.CatalogQuery)
	if err != nil {
		return s.redisErr(err)
	}
	ids := make([]string, len(page.Entries))
	for i, e := range page.Entries {
		ids[i] = e.RunID
	}
	snaps, err := s.getSnapshots(ctx, ids)
	if err != nil {
		return err
	}
	out := make([]runSummary, 0, len(snaps))
	for _, snap := range snaps {
		if snap != nil && snap.TenantID == tenant {
			out = append(out, summarize(snap))
		}
	}
	counts, total, err := snapshots.CatalogCounts(ctx, s.redis, tenant)
	if err != nil {
		return s.redisErr(err)
	}
	var matched *int64
	if page.Matched >= 0 {
		matched = &page.Matched
	}
	writeJSON(w, http.StatusOK, map[string]any{"runs": out, "nextCursor": lq.encodeCursor(page.Next), "counts": counts,
		"total": total, "storeRuns": <-storeRuns, "matched": matched, "scanLimited": page.ScanLimited,
		"retention": s.retention()})
	return nil
}

// listRetention is the runs list's word on what it covers: the runs Redis
// keeps, which are every open run and the terminal runs whose terminal
// event is at most TerminalRunsSeconds old (--snapshot-ttl); 0 means every
// run. An older run is not listed, but its snapshot and watch are served
// from the store.
type listRetention struct {
	TerminalRunsSeconds int64 `json:"terminalRunsSeconds"`
}

func (s *Server) retention() listRetention {
	// Rounded up: a TTL under a second is not "kept forever" (0).
	return listRetention{TerminalRunsSeconds: int64((s.cfg.SnapshotTTL + time.Second - 1) / time.Second)}
}

// storeRunsMaxAge is how long a tenant's storeRuns is reused: counting a
// tenant of 100,000 runs costs the store milliseconds, and storeRuns only
// has to tell the console that runs are missing, not the last second's
// count.
const storeRunsMaxAge = 5 * time.Second

// maxCachedRunCounts bounds the tenants whose storeRuns is remembered.
const maxCachedRunCounts = 4096

// runCountCache remembers each tenant's storeRuns for storeRunsMaxAge.
type runCountCache struct {
	mu sync.Mutex
	m  map[string]runCount
}

type runCount struct {
	n  int64
	at time.Time
}

func (c *runCountCache) get(tenant string, now time.Time) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[tenant]
	if !ok || now.Sub(e.at) > storeRunsMaxAge {
		return 0, false
	}
	return e.n, true
}

func (c *runCountCache) put(tenant string, n int64, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedRunCounts {
		c.m = map[string]runCount{} // forget all: bounded, and refilled within storeRunsMaxAge
	}
	c.m[tenant] = runCount{n: n, at: now}
}

// storeRunCount is the store's count of the tenant's runs (at most
// storeRunsMaxAge old), or nil when the store cannot say within
// storeRunsTimeout.
func (s *Server) storeRunCount(ctx context.Context, tenant string) *int64 {
	rc, ok := s.store.(runCounter)
	if !ok || rc == nil {
		return nil
	}
	if n, ok := s.runCounts.get(tenant, time.Now()); ok {
		return &n
	}
	ctx, cancel := context.WithTimeout(ctx, storeRunsTimeout)
	defer cancel()
	n, err := rc.RunCount(ctx, tenant)
	if err != nil {
		s.log.Debug("the store did not count the tenant's runs; storeRuns is null", "tenantId", tenant, "err", err)
		return nil
	}
	s.runCounts.put(tenant, n, time.Now())
	return &n
}

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
