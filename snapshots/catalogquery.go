package snapshots

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// CatalogQuery is one page of a tenant's runs from its catalog (the runs
// list, GET /v1/runs). Its strings are validated by the caller: they are
// the tenant's own identifiers, never patterns.
type CatalogQuery struct {
	TenantID string
	// Status, PlanID, EngineRunRef: exact matches when set; RunIDPrefix: a
	// prefix of the runId.
	Status, RunIDPrefix, EngineRunRef, PlanID string
	// ByStarted sorts by startedAt (runs not started are not listed), else
	// by updatedAt; Asc is oldest first, else newest first.
	ByStarted, Asc bool
	// From (inclusive) and To (exclusive) bound the sort field, in unix
	// milliseconds, when HasFrom / HasTo.
	From, To       int64
	HasFrom, HasTo bool
	// Limit is the page size (> 0).
	Limit int
	// After is the position the previous page ended at; nil for the first.
	After *CatalogPos
	// MaxScan bounds the index entries one page reads when filters no
	// single index answers must be checked entry by entry (0: 5000).
	MaxScan int
}

// CatalogPos is a position in a sorted runs list: the sort field's value
// in unix milliseconds and the runId (ties are ordered by runId, in the
// list's direction).
type CatalogPos struct {
	Score int64
	RunID string
}

// CatalogPage is one page of a [CatalogQuery].
type CatalogPage struct {
	// Entries are the page's runs, in order.
	Entries []CatalogEntry
	// Next is where the next page starts; nil when the list ended.
	Next *CatalogPos
	// Matched is the exact number of runs matching the query (every page,
	// not only this one) when one index answers it; -1 when not known.
	Matched int64
	// ScanLimited: the page stopped at MaxScan index entries before it was
	// full; Next continues the scan.
	ScanLimited bool
}

// lexSetMax is the largest runId-prefix or engineRunRef match the query
// reads whole (and sorts itself); beyond it, it scans a sorted index.
const lexSetMax = 2000

// wholeSetMax is the largest status or plan set a query with other
// filters reads whole (and sorts itself); beyond it, it scans the sort
// field's index.
const wholeSetMax = 5000

// QueryCatalog answers q from the tenant's catalog. The plan, most
// selective first: an engineRunRef or runIdPrefix matching at most
// lexSetMax runs (or, with other filters, a status or plan set of at most
// wholeSetMax) is read whole (ZRANGEBYLEX, then the catalog entries) and
// filtered and sorted here; otherwise one sorted index, by the sort field,
// is walked from the page's start by rank (the cursor's run is found with
// ZRANK, so a page costs the same at any depth): the tenant's status or
// plan index (the smaller when both are asked) or the whole run index for
// updatedAt, the started index for startedAt. Filters that index does not
// answer are checked against the catalog entries, at most MaxScan entries
// a page (ScanLimited, when it stops short).
func QueryCatalog(ctx context.Context, rdb redis.UniversalClient, q CatalogQuery) (CatalogPage, error) {
	if q.MaxScan <= 0 {
		q.MaxScan = 5000
	}
	if q.EngineRunRef != "" || q.RunIDPrefix != "" {
		page, ok, err := queryLex(ctx, rdb, &q)
		if err != nil || ok {
			return page, err
		}
	}
	return queryScored(ctx, rdb, &q)
}

// lexRange is the ZRANGEBYLEX range of the members starting with prefix:
// "[prefix" up to, excluded, the first string after every string with
// that prefix. The bounds' first byte is the inclusive/exclusive marker,
// added here: the prefix's own bytes ('[', '(', '-', '+' included) are
// literal after it.
func lexRange(prefix string) (min, max string) {
	b := []byte(prefix)
	for len(b) > 0 && b[len(b)-1] == 0xff {
		b = b[:len(b)-1]
	}
	if len(b) == 0 {
		return "[" + prefix, "+"
	}
	b[len(b)-1]++
	return "[" + prefix, "(" + string(b)
}

// queryLex answers q from the runId or engine run ref lex index when its
// range holds at most lexSetMax runs; ok is false when it holds more.
func queryLex(ctx context.Context, rdb redis.UniversalClient, q *CatalogQuery) (page CatalogPage, ok bool, err error) {
	key, prefix := CatalogIDsKey(q.TenantID), q.RunIDPrefix
	if q.EngineRunRef != "" {
		key, prefix = CatalogRefKey(q.TenantID), q.EngineRunRef+"\x00"
	}
	lo, hi := lexRange(prefix)
	n, err := rdb.ZLexCount(ctx, key, lo, hi).Result()
	if err != nil || n > lexSetMax {
		return page, false, err
	}
	members, err := rdb.ZRangeByLex(ctx, key, &redis.ZRangeBy{Min: lo, Max: hi}).Result()
	if err != nil {
		return page, false, err
	}
	ids := members
	if q.EngineRunRef != "" {
		ids = make([]string, len(members))
		for i, m := range members {
			ids[i] = m[strings.LastIndexByte(m, 0)+1:]
		}
	}
	page, err = queryWhole(ctx, rdb, q, ids)
	return page, err == nil, err
}

// queryWhole answers q from ids, every run that may match: their catalog
// entries are read (HMGET, in pipelined chunks), filtered, sorted and
// paged here, and matched is exact.
func queryWhole(ctx context.Context, rdb redis.UniversalClient, q *CatalogQuery, ids []string) (CatalogPage, error) {
	var page CatalogPage
	pipe := rdb.Pipeline()
	var cmds []*redis.SliceCmd
	for lo := 0; lo < len(ids); lo += 1000 {
		cmds = append(cmds, pipe.HMGet(ctx, CatalogMetaKey(q.TenantID), ids[lo:min(lo+1000, len(ids))]...))
	}
	if len(cmds) > 0 {
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return page, err
		}
	}
	var match []CatalogEntry
	for c, cmd := range cmds {
		for i, v := range cmd.Val() {
			str, ok := v.(string)
			if !ok {
				continue
			}
			if e, ok := parseCatalogEntry(ids[c*1000+i], str); ok && q.matches(&e, true) {
				match = append(match, e)
			}
		}
	}
	slices.SortFunc(match, func(a, b CatalogEntry) int {
		c := compareEntries(q.score(&a), a.RunID, q.score(&b), b.RunID)
		if !q.Asc {
			c = -c
		}
		return c
	})
	page.Matched = int64(len(match))
	start := 0
	if q.After != nil {
		start = len(match)
		for i := range match {
			c := compareEntries(q.score(&match[i]), match[i].RunID, q.After.Score, q.After.RunID)
			if (q.Asc && c > 0) || (!q.Asc && c < 0) {
				start = i
				break
			}
		}
	}
	end := min(len(match), start+q.Limit)
	page.Entries = match[start:end]
	if end < len(match) && len(page.Entries) > 0 {
		last := page.Entries[len(page.Entries)-1]
		page.Next = &CatalogPos{Score: q.score(&last), RunID: last.RunID}
	}
	return page, nil
}

func compareEntries(s1 int64, id1 string, s2 int64, id2 string) int {
	switch {
	case s1 < s2:
		return -1
	case s1 > s2:
		return 1
	}
	return strings.Compare(id1, id2)
}

// score is e's value of the sort field.
func (q *CatalogQuery) score(e *CatalogEntry) int64 {
	if q.ByStarted {
		return e.StartedMs
	}
	return e.UpdatedMs
}

// matches reports whether e passes q's filters; withRange also checks the
// sort field's range (a sorted index's range already did).
func (q *CatalogQuery) matches(e *CatalogEntry, withRange bool) bool {
	if (q.Status != "" && e.Status != q.Status) || (q.PlanID != "" && e.PlanID != q.PlanID) ||
		(q.EngineRunRef != "" && e.EngineRunRef != q.EngineRunRef) ||
		(q.RunIDPrefix != "" && !strings.HasPrefix(e.RunID, q.RunIDPrefix)) {
		return false
	}
	if q.ByStarted && e.StartedMs < 0 {
		return false
	}
	if withRange {
		s := q.score(e)
		if (q.HasFrom && s < q.From) || (q.HasTo && s >= q.To) {
			return false
		}
	}
	return true
}

// queryScored walks one sorted index of the sort field.
func queryScored(ctx context.Context, rdb redis.UniversalClient, q *CatalogQuery) (CatalogPage, error) {
	page := CatalogPage{Matched: -1}
	key := IndexKey(q.TenantID)
	// residual: filters the chosen index does not answer.
	residual := *q
	switch {
	case q.ByStarted:
		key = CatalogStartedKey(q.TenantID)
	case q.Status != "" && q.PlanID != "":
		pipe := rdb.Pipeline()
		sc := pipe.ZCard(ctx, CatalogStatusKey(q.TenantID, q.Status))
		pc := pipe.ZCard(ctx, CatalogPlanKey(q.TenantID, q.PlanID))
		if _, err := pipe.Exec(ctx); err != nil {
			return page, err
		}
		if sc.Val() <= pc.Val() {
			key, residual.Status = CatalogStatusKey(q.TenantID, q.Status), ""
		} else {
			key, residual.PlanID = CatalogPlanKey(q.TenantID, q.PlanID), ""
		}
	case q.Status != "":
		key, residual.Status = CatalogStatusKey(q.TenantID, q.Status), ""
	case q.PlanID != "":
		key, residual.PlanID = CatalogPlanKey(q.TenantID, q.PlanID), ""
	}
	filtered := residual.Status != "" || residual.PlanID != "" || residual.RunIDPrefix != "" || residual.EngineRunRef != ""
	residual.ByStarted = false // the index holds only started runs
	// A runId prefix alone is checked on the index's members.
	needMeta := residual.Status != "" || residual.PlanID != "" || residual.EngineRunRef != ""
	if filtered && (q.Status != "" || q.PlanID != "") {
		// The other filters need each run's entry anyway: when the status
		// or plan set (the smaller) is small, read it whole and sort here
		// rather than scan the sort field's index for its few runs.
		pipe := rdb.Pipeline()
		var sets []string
		var cards []*redis.IntCmd
		if q.Status != "" {
			sets = append(sets, CatalogStatusKey(q.TenantID, q.Status))
			cards = append(cards, pipe.ZCard(ctx, sets[len(sets)-1]))
		}
		if q.PlanID != "" {
			sets = append(sets, CatalogPlanKey(q.TenantID, q.PlanID))
			cards = append(cards, pipe.ZCard(ctx, sets[len(sets)-1]))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return page, err
		}
		set, n := sets[0], cards[0].Val()
		if len(sets) == 2 && cards[1].Val() < n {
			set, n = sets[1], cards[1].Val()
		}
		if n <= wholeSetMax {
			ids, err := rdb.ZRange(ctx, set, 0, -1).Result()
			if err != nil {
				return page, err
			}
			return queryWhole(ctx, rdb, q, ids)
		}
	}

	lo, hi := "-inf", "+inf"
	if q.HasFrom {
		lo = strconv.FormatInt(q.From, 10)
	}
	if q.HasTo {
		hi = "(" + strconv.FormatInt(q.To, 10)
	}
	// Where the page starts: the rank after the cursor's run, found by
	// ZRANK when the run is still where the cursor saw it; else (it moved
	// or left the index) the rank of the cursor's score, skipping the
	// ties already listed. Without a cursor: the range's first rank.
	var start int64
	var tie *CatalogPos
	pipe := rdb.Pipeline()
	var scoreCmd *redis.FloatCmd
	var rankCmd, startCmd, matchedCmd *redis.IntCmd
	if q.After != nil {
		scoreCmd = pipe.ZScore(ctx, key, q.After.RunID)
		if q.Asc {
			rankCmd = pipe.ZRank(ctx, key, q.After.RunID)
			startCmd = pipe.ZCount(ctx, key, "-inf", "("+strconv.FormatInt(q.After.Score, 10))
		} else {
			rankCmd = pipe.ZRevRank(ctx, key, q.After.RunID)
			startCmd = pipe.ZCount(ctx, key, "("+strconv.FormatInt(q.After.Score, 10), "+inf")
		}
	} else if q.Asc && q.HasFrom {
		startCmd = pipe.ZCount(ctx, key, "-inf", "("+lo)
	} else if !q.Asc && q.HasTo {
		startCmd = pipe.ZCount(ctx, key, strconv.FormatInt(q.To, 10), "+inf")
	}
	if !filtered {
		matchedCmd = pipe.ZCount(ctx, key, lo, hi)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return page, err
	}
	if startCmd != nil {
		start = startCmd.Val()
	}
	if q.After != nil {
		if s, err := scoreCmd.Result(); err == nil && int64(s) == q.After.Score {
			start = rankCmd.Val() + 1
		} else {
			tie = q.After
		}
	}
	if matchedCmd != nil {
		page.Matched = matchedCmd.Val()
	}

	chunk := int64(q.Limit)
	if filtered {
		chunk = min(200, int64(q.MaxScan))
	}
	scanned := 0
	var last CatalogPos
	for {
		var zs []redis.Z
		var err error
		if q.Asc {
			zs, err = rdb.ZRangeWithScores(ctx, key, start, start+chunk-1).Result()
		} else {
			zs, err = rdb.ZRevRangeWithScores(ctx, key, start, start+chunk-1).Result()
		}
		if err != nil {
			return page, err
		}
		start += int64(len(zs))
		var ids []string
		var scores []int64
		ended := len(zs) < int(chunk)
		for _, z := range zs {
			s := int64(z.Score)
			id, _ := z.Member.(string)
			if (q.Asc && q.HasTo && s >= q.To) || (!q.Asc && q.HasFrom && s < q.From) {
				ended = true
				break
			}
			scanned++
			last = CatalogPos{Score: s, RunID: id}
			if tie != nil && s == tie.Score && ((q.Asc && id <= tie.RunID) || (!q.Asc && id >= tie.RunID)) {
				continue // listed before the cursor's run moved
			}
			ids = append(ids, id)
			scores = append(scores, s)
		}
		var entries map[string]CatalogEntry
		if needMeta {
			if entries, err = CatalogEntries(ctx, rdb, q.TenantID, ids); err != nil {
				return page, err
			}
		}
		for i, id := range ids {
			e, found := entries[id]
			if needMeta && (!found || !residual.matches(&e, false)) {
				continue
			}
			if !strings.HasPrefix(id, q.RunIDPrefix) {
				continue // checked on the member: no entry needed
			}
			if !found {
				// Unfiltered pages need only the runIds (and a run indexed
				// before the catalog existed has no entry yet).
				e = CatalogEntry{RunID: id, StartedMs: -1}
			}
			page.Entries = append(page.Entries, e)
			if len(page.Entries) == q.Limit {
				// The cursor is a position in the index walked (the run
				// index keeps the highest updatedAt ever written, which
				// may differ from the entry's).
				page.Next = &CatalogPos{Score: scores[i], RunID: id}
				return page, nil
			}
		}
		if ended {
			return page, nil
		}
		if scanned >= q.MaxScan {
			page.ScanLimited = true
			page.Next = &last
			return page, nil
		}
		chunk = min(chunk*2, 1000, int64(q.MaxScan-scanned))
	}
}
