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

// CatalogExpiryKey is the tenant's terminal runs by the time (unix ms)
// their retention ends: the catalog script drops them from every catalog
// key once it has passed.
func CatalogExpiryKey(tenantID string) string { return IndexKey(tenantID) + ":expiry" }

// ExpiringTenantsKey is the set of tenants whose catalogs hold runs that
// will expire: [SweepExpired] sweeps each of them.
const ExpiringTenantsKey = "runstream:expiring"

// CatalogPlanKey is the tenant's runs of one plan by updatedAt.
func CatalogPlanKey(tenantID, planID string) string {
	return IndexKey(tenantID) + ":plan:" + planID
}

// RunStatuses are the statuses the catalog counts, in the order the
// contract lists them.
var RunStatuses = []string{store.RunPending, store.RunApproved, store.RunRunning, store.RunPaused,
	store.RunCompleted, store.RunFailed, store.RunCancelled}

// catalogScript files snapshots in their tenant's catalog, and takes out
// the runs whose retention ended. Filing is idempotent and order-safe: a
// write whose lastEventSeq is not above the catalogued one changes nothing
// but the run index (ZADD GT, which never moves back), so replayed and
// reordered writes (a rebalance, a rebuild racing a projector) leave the
// catalog at the highest watermark offered. The snapshot write itself is
// another key (another slot on a cluster), so the two are not atomic
// together: the catalog may be ahead of a snapshot whose guarded write
// lost, never behind one that landed. Writes at one watermark describe
// the same state (the reduction is deterministic), so the catalog then
// describes the snapshot that lands when the writer retries.
//
// Expiry: a run filed with an expiry time ([ExpireAt]) is also in the
// tenant's [CatalogExpiryKey] at that time. Every call, with or without
// runs to file, then drops up to sweepBatch runs whose time has come
// (Redis's clock, the one the snapshot's PXAT is judged by) from every
// catalog key; a run offered already expired is dropped instead of filed.
// The due runs are found by score in one sorted set: no scan, no timer.
//
// KEYS[1] the tenant's run index, KEYS[2] its catalog hash; the other
// catalog keys are KEYS[1] plus a suffix (same hash tag, same slot). ARGV
// holds 8 values per run, any number of runs of the tenant: runId,
// lastEventSeq, status, updatedAt ms, startedAt ms or "", planId or "",
// engineRunRef or "", expiry unix ms or "". Returns {filed, dropped,
// more}: how many runs it catalogued (the others were already catalogued
// at their watermark or a higher one), how many it dropped, and 1 when
// more runs are due than one call drops.
var catalogScript = redis.NewScript(`
local p = KEYS[1]
local meta = KEYS[2]
local expiry = p .. ':expiry'
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function parse(cur)
  return string.match(cur, '^(%-?%d+)|([^|]*)|[^|]*|([^|]*)|([^|]*)|(.*)$')
end
local function drop(id)
  local cur = redis.call('HGET', meta, id)
  if cur then
    local _, cst, _, cplan, cref = parse(cur)
    if cst then
      redis.call('ZREM', p .. ':status:' .. cst, id)
    end
    if cplan and cplan ~= '' then
      redis.call('ZREM', p .. ':plan:' .. cplan, id)
    end
    if cref and cref ~= '' then
      redis.call('ZREM', p .. ':ref', cref .. '\0' .. id)
    end
    redis.call('HDEL', meta, id)
  end
  redis.call('ZREM', p .. ':started', id)
  redis.call('ZREM', p .. ':ids', id)
  redis.call('ZREM', p, id)
  redis.call('ZREM', expiry, id)
end
local filed, dropped = 0, 0
for i = 1, #ARGV, 8 do
  local id = ARGV[i]
  local exp = ARGV[i + 7]
  if exp ~= '' and tonumber(exp) <= now then
    drop(id)
    dropped = dropped + 1
  else
    local upd = tonumber(ARGV[i + 3])
    local st, started, plan, ref = ARGV[i + 2], ARGV[i + 4], ARGV[i + 5], ARGV[i + 6]
    redis.call('ZADD', p, 'GT', upd, id)
    local cur = redis.call('HGET', meta, id)
    local cseq, cst, cstart, cplan, cref = nil, nil, '', '', ''
    if cur then
      cseq, cst, cstart, cplan, cref = parse(cur)
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
      redis.call('HSET', meta, id, ARGV[i + 1] .. '|' .. st .. '|' .. ARGV[i + 3] .. '|' .. started .. '|' .. plan .. '|' .. ref)
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
    if exp ~= '' then
      redis.call('ZADD', expiry, tonumber(exp), id)
    end
  end
end
local due = redis.call('ZRANGEBYSCORE', expiry, '-inf', now, 'LIMIT', 0, ` + sweepBatchLua + `)
for _, id in ipairs(due) do
  drop(id)
  dropped = dropped + 1
end
local more = 0
if #due == ` + sweepBatchLua + ` then
  more = 1
end
return {filed, dropped, more}
`)

// sweepBatch bounds the expired runs one catalog script call drops (Redis
// runs nothing else while a script runs); sweepBatchLua is it in the
// script's text.
const (
	sweepBatch    = 100
	sweepBatchLua = "100"
)

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
type catalogBatch struct {
	args     map[string][]any
	expiring map[string]bool // tenants whose SADD to ExpiringTenantsKey is queued
}

func newCatalogBatch() catalogBatch {
	return catalogBatch{args: map[string][]any{}, expiring: map[string]bool{}}
}

// catalogBatchRuns bounds the runs of one catalog script call (Redis runs
// nothing else while a script runs).
const catalogBatchRuns = 32

// add gathers s (skipped without a tenant) with its expiry time (unix ms,
// 0: never), queueing the tenant's call on pipe once it holds
// catalogBatchRuns runs. The first expiring run of a tenant also queues
// its SADD to [ExpiringTenantsKey].
func (b catalogBatch) add(ctx context.Context, pipe redis.Pipeliner, s *store.RunSnapshot, exp int64) {
	if s.TenantID == "" {
		return
	}
	e := CatalogEntryOf(s)
	started := ""
	if e.StartedMs >= 0 {
		started = strconv.FormatInt(e.StartedMs, 10)
	}
	expires := ""
	if exp > 0 {
		expires = strconv.FormatInt(exp, 10)
		if !b.expiring[s.TenantID] {
			b.expiring[s.TenantID] = true
			pipe.SAdd(ctx, ExpiringTenantsKey, s.TenantID)
		}
	}
	args := append(b.args[s.TenantID], s.RunID, e.LastEventSeq, e.Status, e.UpdatedMs, started, e.PlanID, e.EngineRunRef, expires)
	if len(args) >= 8*catalogBatchRuns {
		queueCatalogCall(ctx, pipe, s.TenantID, args)
		args = nil
	}
	b.args[s.TenantID] = args
}

// flush queues the calls of what add gathered.
func (b catalogBatch) flush(ctx context.Context, pipe redis.Pipeliner) {
	for tenant, args := range b.args {
		if len(args) > 0 {
			queueCatalogCall(ctx, pipe, tenant, args)
		}
		delete(b.args, tenant)
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
// Snapshots without a tenant are skipped. A terminal snapshot is filed
// with its expiry under a retention of ttl ([ExpireAt]; 0 keeps it), and
// one already past it is dropped from the catalog instead.
func Catalog(ctx context.Context, rdb redis.UniversalClient, snaps []store.RunSnapshot, ttl time.Duration) error {
	run := func() error {
		pipe := rdb.Pipeline()
		batch := newCatalogBatch()
		for i := range snaps {
			batch.add(ctx, pipe, &snaps[i], ExpireAt(&snaps[i], ttl))
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

// SweepExpired drops from every tenant's catalog the runs whose retention
// ended (their snapshots are gone already: Redis expired them). The
// catalog script drops some on every write of a tenant; this is for the
// tenants that write nothing for a while, so the list and its counts
// follow the snapshots within one sweep interval. It runs the catalog
// script with no runs for each tenant of [ExpiringTenantsKey], again for
// those that had more due than one call drops, and returns how many runs
// it dropped.
func SweepExpired(ctx context.Context, rdb redis.UniversalClient) (int, error) {
	tenants, err := rdb.SMembers(ctx, ExpiringTenantsKey).Result()
	if err != nil {
		return 0, fmt.Errorf("listing the tenants with expiring runs: %w", err)
	}
	dropped := 0
	// Each round drops up to sweepBatch runs per tenant still due; the
	// rounds are bounded so a pass ends even against a huge backlog (the
	// next pass goes on).
	for round := 0; round < 20 && len(tenants) > 0; round++ {
		var cmds []*redis.Cmd
		err := withScript(ctx, rdb, catalogScript, "catalog", func() error {
			pipe := rdb.Pipeline()
			cmds = make([]*redis.Cmd, len(tenants))
			for i, t := range tenants {
				cmds[i] = catalogScript.EvalSha(ctx, pipe, []string{IndexKey(t), CatalogMetaKey(t)})
			}
			_, err := pipe.Exec(ctx)
			return err
		})
		if err != nil {
			return dropped, fmt.Errorf("sweeping expired runs from the catalogs: %w", err)
		}
		var more []string
		for i, c := range cmds {
			vals, err := c.Int64Slice()
			if err != nil || len(vals) != 3 {
				return dropped, fmt.Errorf("sweeping the catalog of tenant %q: %v", tenants[i], err)
			}
			dropped += int(vals[1])
			if vals[2] == 1 {
				more = append(more, tenants[i])
			}
		}
		tenants = more
	}
	return dropped, nil
}

// Expiry is when a run's snapshot and catalog entries expire.
type Expiry struct {
	RunID, TenantID string
	// At is in unix milliseconds.
	At int64
}

// SetExpiry gives snapshots that Redis holds without an expiry (written
// before the retention was set, or while it was 0) the expiry they should
// have, and their catalog entries with them, in one pipeline. A snapshot
// Redis does not hold is left alone (PEXPIREAT of a missing key does
// nothing), and a time already past removes it at once.
func SetExpiry(ctx context.Context, rdb redis.UniversalClient, es []Expiry) error {
	if len(es) == 0 {
		return nil
	}
	pipe := rdb.Pipeline()
	tenants := map[string]bool{}
	for _, e := range es {
		pipe.PExpireAt(ctx, Key(e.RunID), time.UnixMilli(e.At))
		pipe.ZAdd(ctx, CatalogExpiryKey(e.TenantID), redis.Z{Score: float64(e.At), Member: e.RunID})
		if !tenants[e.TenantID] {
			tenants[e.TenantID] = true
			pipe.SAdd(ctx, ExpiringTenantsKey, e.TenantID)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("setting the expiry of %d snapshots: %w", len(es), err)
	}
	return nil
}

// Now reads Redis's clock: the one snapshot expiry (PXAT) and the catalog
// script judge retention by, so a caller deciding whether a run has
// expired agrees with them whatever its own clock says.
func Now(ctx context.Context, rdb redis.UniversalClient) (time.Time, error) {
	t, err := rdb.Time(ctx).Result()
	if err != nil {
		return time.Time{}, fmt.Errorf("reading Redis's clock: %w", err)
	}
	return t, nil
}
