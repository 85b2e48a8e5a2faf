package snapshots

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/store"
)

// The runs catalog: per tenant, what the runs list searches, sorts and
// counts by, kept by every snapshot write. Its keys all start with the
// tenant's [IndexKey], so they carry the same hash tag and a Redis Cluster
// keeps them in the tenant's slot, where one script updates them all:
//
//   - [CatalogMetaKey]: a hash, runId -> "lastEventSeq|status|updatedMs|
//     startedMs|planId|engineRunRef" (startedMs empty when not started);
//   - [CatalogStatusKey]: one sorted set per status, runIds by updatedAt ms;
//   - [CatalogStartedKey]: runIds by startedAt ms (started runs only);
//   - [CatalogIDsKey]: runIds, all scored 0 (ZRANGEBYLEX: runId prefixes);
//   - [CatalogRefKey]: "engineRunRef\x00runId", all scored 0;
//   - [CatalogPlanKey]: one sorted set per planId, runIds by updatedAt ms.
//
// The tenant's run index ([IndexKey]) is updated by the same script.

// CatalogMetaKey is the tenant's catalog hash: runId -> its catalog entry.
func CatalogMetaKey(tenantID string) string { return IndexKey(tenantID) + ":meta" }

// CatalogStatusKey is the tenant's runs of one status by updatedAt.
func CatalogStatusKey(tenantID, status string) string {
	return IndexKey(tenantID) + ":status:" + status
}

// CatalogStartedKey is the tenant's started runs by startedAt.
func CatalogStartedKey(tenantID string) string { return IndexKey(tenantID) + ":started" }

// CatalogIDsKey is the tenant's runIds in lexicographic order.
func CatalogIDsKey(tenantID string) string { return IndexKey(tenantID) + ":ids" }

// CatalogRefKey is the tenant's "engineRunRef\x00runId" members in
// lexicographic order.
func CatalogRefKey(tenantID string) string { return IndexKey(tenantID) + ":ref" }

// CatalogPlanKey is the tenant's runs of one plan by updatedAt.
func CatalogPlanKey(tenantID, planID string) string {
	return IndexKey(tenantID) + ":plan:" + planID
}

// RunStatuses are the statuses the catalog counts, in the order the
// contract lists them.
var RunStatuses = []string{store.RunPending, store.RunApproved, store.RunRunning, store.RunPaused,
	store.RunCompleted, store.RunFailed, store.RunCancelled}

// catalogScript files one snapshot in its tenant's catalog. It is
// idempotent and order-safe: a write whose lastEventSeq is not above the
// catalogued one changes nothing but the run index (ZADD GT, which never
// moves back), so replayed and reordered writes (a rebalance, a rebuild
// racing a projector) leave the catalog at the highest watermark offered.
// The snapshot write itself is another key (another slot on a cluster), so
// the two are not atomic together: the catalog may be ahead of a snapshot
// whose guarded write lost, never behind one that landed. Writes at one
// watermark describe the same state (the reduction is deterministic), so
// the catalog then describes the snapshot that lands when the writer
// retries.
//
// KEYS[1] the tenant's run index, KEYS[2] its catalog hash; the other
// catalog keys are KEYS[1] plus a suffix (same hash tag, same slot). ARGV
// holds 7 values per run, any number of runs of the tenant: runId,
// lastEventSeq, status, updatedAt ms, startedAt ms or "", planId or "",
// engineRunRef or "". Returns how many runs it catalogued (the others
// were already catalogued at their watermark or a higher one).
var catalogScript = redis.NewScript(`
local p = KEYS[1]
local filed = 0
for i = 1, #ARGV, 7 do
  local id = ARGV[i]
  local upd = tonumber(ARGV[i + 3])
  local st, started, plan, ref = ARGV[i + 2], ARGV[i + 4], ARGV[i + 5], ARGV[i + 6]
  redis.call('ZADD', p, 'GT', upd, id)
  local cur = redis.call('HGET', KEYS[2], id)
  local cseq, cst, cstart, cplan, cref = nil, nil, '', '', ''
  if cur then
    cseq, cst, cstart, cplan, cref = string.match(cur, '^(%-?%d+)|([^|]*)|[^|]*|([^|]*)|([^|]*)|(.*)$')
  end
  if not (cseq and tonumber(cseq) >= tonumber(ARGV[i + 1])) then
    if cur then
      if cst and cst ~= st then
        redis.call('ZREM', p .. ':status:' .. cst, id)
      end
      if cplan and cplan ~= '' and cplan ~= plan then
        redis.call('ZREM', p .. ':plan:' .. cplan, id)
      end
      if cref and cref ~= '' and cref ~= ref then
        redis.call('ZREM', p .. ':ref', cref .. '\0' .. id)
      end
      if cstart and cstart ~= '' and started == '' then
        redis.call('ZREM', p .. ':started', id)
      end
    else
      redis.call('ZADD', p .. ':ids', 0, id)
    end
    redis.call('HSET', KEYS[2], id, ARGV[i + 1] .. '|' .. st .. '|' .. ARGV[i + 3] .. '|' .. started .. '|' .. plan .. '|' .. ref)
    redis.call('ZADD', p .. ':status:' .. st, upd, id)
    if plan ~= '' then
      redis.call('ZADD', p .. ':plan:' .. plan, upd, id)
    end
    -- The ref and startedAt rarely change: written only when they do.
    if ref ~= '' and ref ~= cref then
      redis.call('ZADD', p .. ':ref', 0, ref .. '\0' .. id)
    end
    if started ~= '' and started ~= cstart then
      redis.call('ZADD', p .. ':started', tonumber(started), id)
    end
    filed = filed + 1
  end
end
return filed
`)

// CatalogEntry is one run's entry in its tenant's catalog.
type CatalogEntry struct {
	RunID        string
	LastEventSeq int64
	Status       string
	// UpdatedMs and StartedMs are unix milliseconds; StartedMs is -1 for a
	// run not started.
	UpdatedMs, StartedMs int64
	PlanID               string
	EngineRunRef         string
}

// CatalogEntryOf is the catalog entry of a snapshot.
func CatalogEntryOf(s *store.RunSnapshot) CatalogEntry {
	e := CatalogEntry{RunID: s.RunID, LastEventSeq: s.LastEventSeq, Status: s.Status,
		UpdatedMs: int64(scoreOf(s)), StartedMs: -1, PlanID: s.PlanID, EngineRunRef: s.EngineRunRef}
	if s.StartedAt != "" {
		if t, err := time.Parse(time.RFC3339Nano, s.StartedAt); err == nil {
			e.StartedMs = t.UnixMilli()
		}
	}
	return e
}

// parseCatalogEntry reads a catalog hash value.
func parseCatalogEntry(runID, v string) (CatalogEntry, bool) {
	parts := strings.SplitN(v, "|", 6)
	if len(parts) != 6 {
		return CatalogEntry{}, false
	}
	e := CatalogEntry{RunID: runID, Status: parts[1], PlanID: parts[4], EngineRunRef: parts[5], StartedMs: -1}
	var err1, err2 error
	e.LastEventSeq, err1 = strconv.ParseInt(parts[0], 10, 64)
	e.UpdatedMs, err2 = strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil {
		return CatalogEntry{}, false
	}
	if parts[3] != "" {
		n, err := strconv.ParseInt(parts[3], 10, 64)
		if err != nil {
			return CatalogEntry{}, false
		}
		e.StartedMs = n
	}
	return e, true
}

// catalogBatch gathers the catalog script's arguments per tenant, so a
// pipeline sends one EVALSHA per tenant and catalogBatchRuns runs rather
// than one per write: the script's call overhead is most of its cost.
type catalogBatch map[string][]any

// catalogBatchRuns bounds the runs of one catalog script call (Redis runs
// nothing else while a script runs).
const catalogBatchRuns = 32

// add gathers s (skipped without a tenant), queueing the tenant's call on
// pipe once it holds catalogBatchRuns runs.
func (b catalogBatch) add(ctx context.Context, pipe redis.Pipeliner, s *store.RunSnapshot) {
	if s.TenantID == "" {
		return
	}
	e := CatalogEntryOf(s)
	started := ""
	if e.StartedMs >= 0 {
		started = strconv.FormatInt(e.StartedMs, 10)
	}
	args := append(b[s.TenantID], s.RunID, e.LastEventSeq, e.Status, e.UpdatedMs, started, e.PlanID, e.EngineRunRef)
	if len(args) >= 7*catalogBatchRuns {
		queueCatalogCall(ctx, pipe, s.TenantID, args)
		args = nil
	}
	b[s.TenantID] = args
}

// flush queues the calls of what add gathered.
func (b catalogBatch) flush(ctx context.Context, pipe redis.Pipeliner) {
	for tenant, args := range b {
		if len(args) > 0 {
			queueCatalogCall(ctx, pipe, tenant, args)
		}
		delete(b, tenant)
	}
}

func queueCatalogCall(ctx context.Context, pipe redis.Pipeliner, tenant string, args []any) {
	catalogScript.EvalSha(ctx, pipe, []string{IndexKey(tenant), CatalogMetaKey(tenant)}, args...)
}

// loadScripts loads the snapshot write and catalog scripts.
func loadScripts(ctx context.Context, rdb redis.UniversalClient) error {
	if err := writeScript.Load(ctx, rdb).Err(); err != nil {
		return fmt.Errorf("loading the snapshot script: %w", err)
	}
	if err := catalogScript.Load(ctx, rdb).Err(); err != nil {
		return fmt.Errorf("loading the catalog script: %w", err)
	}
	return nil
}

// Catalog files snapshots in their tenants' catalogs (and run indexes),
// in one pipeline, without writing the snapshots: convergence and tests
// use it for runs whose snapshot is there but whose catalog entry is not.
// Snapshots without a tenant are skipped.
func Catalog(ctx context.Context, rdb redis.UniversalClient, snaps []store.RunSnapshot) error {
	run := func() error {
		pipe := rdb.Pipeline()
		batch := catalogBatch{}
		for i := range snaps {
			batch.add(ctx, pipe, &snaps[i])
		}
		batch.flush(ctx, pipe)
		if pipe.Len() == 0 {
			return nil
		}
		_, err := pipe.Exec(ctx)
		return err
	}
	err := run()
	if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		if err := loadScripts(ctx, rdb); err != nil {
			return err
		}
		err = run()
	}
	if err != nil {
		return fmt.Errorf("cataloguing runs: %w", err)
	}
	return nil
}

// CatalogCounts reads the tenant's exact number of runs per status (every
// status of [RunStatuses], zeros included) and its runs in the catalog
// (its run index's size: every run the list can show; the counts cover
// fewer only while convergence catalogues runs indexed before the catalog
// existed), in one pipeline.
func CatalogCounts(ctx context.Context, rdb redis.UniversalClient, tenantID string) (map[string]int64, int64, error) {
	pipe := rdb.Pipeline()
	cards := make([]*redis.IntCmd, len(RunStatuses))
	for i, st := range RunStatuses {
		cards[i] = pipe.ZCard(ctx, CatalogStatusKey(tenantID, st))
	}
	total := pipe.ZCard(ctx, IndexKey(tenantID))
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, 0, err
	}
	counts := make(map[string]int64, len(RunStatuses))
	for i, st := range RunStatuses {
		counts[st] = cards[i].Val()
	}
	return counts, total.Val(), nil
}

// CatalogEntries reads the catalog entries of runIDs (one HMGET); a run
// without an entry (or with one that cannot be read) is absent from the
// answer.
func CatalogEntries(ctx context.Context, rdb redis.UniversalClient, tenantID string, runIDs []string) (map[string]CatalogEntry, error) {
	out := make(map[string]CatalogEntry, len(runIDs))
	if len(runIDs) == 0 {
		return out, nil
	}
	vals, err := rdb.HMGet(ctx, CatalogMetaKey(tenantID), runIDs...).Result()
	if err != nil {
		return nil, err
	}
	for i, v := range vals {
		s, ok := v.(string)
		if !ok {
			continue
		}
		if e, ok := parseCatalogEntry(runIDs[i], s); ok {
			out[runIDs[i]] = e
		}
	}
	return out, nil
}

// DeleteCatalog deletes a tenant's run index and every catalog key (for
// benchmarks and tests that clean up after themselves). It scans the
// tenant's slot for them: the plan keys are not known in advance.
func DeleteCatalog(ctx context.Context, rdb redis.UniversalClient, tenantID string) error {
	keys := []string{IndexKey(tenantID)}
	match := globEscape(IndexKey(tenantID)) + ":*"
	scan := func(ctx context.Context, c *redis.Client) error {
		it := c.Scan(ctx, 0, match, 1000).Iterator()
		for it.Next(ctx) {
			keys = append(keys, it.Val())
		}
		return it.Err()
	}
	var err error
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		var mu sync.Mutex
		err = c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			var found []string
			it := n.Scan(ctx, 0, match, 1000).Iterator()
			for it.Next(ctx) {
				found = append(found, it.Val())
			}
			mu.Lock()
			keys = append(keys, found...)
			mu.Unlock()
			return it.Err()
		})
	case *redis.Client:
		err = scan(ctx, c)
	default:
		return errors.New("DeleteCatalog: unsupported Redis client")
	}
	if err != nil {
		return err
	}
	for lo := 0; lo < len(keys); lo += 500 {
		if err := rdb.Del(ctx, keys[lo:min(lo+500, len(keys))]...).Err(); err != nil {
			return err
		}
	}
	return nil
}

// globEscape escapes the characters SCAN MATCH reads as a pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
