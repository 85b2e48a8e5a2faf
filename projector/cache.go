package projector

import (
	"sync"
	"time"
	"unsafe"

	"github.com/runstream/runstream/store"
)

// snapCache holds the snapshots this projector last wrote (decoded), so a
// run's next batch skips the GET and the JSON decoding of its snapshot.
//
// It is only ever a guess at what Redis holds: a write that starts from a
// cached snapshot is guarded on that snapshot's watermark like any other,
// so when another writer moved the run in between (another projector after
// a rebalance, a rebuild, a resync) the guard fails, the entry is gone, and
// the run is reloaded from Redis and reduced again.
//
// An entry is taken out while a batch works on it (take) and put back only
// after its write landed (put): a batch whose write failed or lost its
// guard leaves nothing behind, and the batch may update the snapshot in
// place. Entries are tagged with their partition and dropped when it is
// revoked or lost. Stale and terminal snapshots are not cached.
//
// The size is bounded by an estimate of the entries' bytes. Eviction is
// LRU with an admission rule for runs that were not in the cache: such a
// run only replaces entries idle for at least minIdle, else it is not
// cached. A working set larger than the budget (many runs visited
// round-robin, as in a catch-up) then keeps a stable part of it cached and
// hitting, where a plain LRU would evict every run just before its next
// use and never hit; runs that went quiet still make room for new ones.
type snapCache struct {
	mu      sync.Mutex
	budget  int64 // bytes of all entries
	minIdle time.Duration
	size    int64
	entries map[string]*cacheEntry
	lru     cacheList // most recently used first
}

type cacheEntry struct {
	runID      string
	snap       store.RunSnapshot
	part       int32
	size       int64
	used       time.Time
	prev, next *cacheEntry
}

// cacheList is an intrusive doubly linked list with a sentinel.
type cacheList struct{ root cacheEntry }

func (l *cacheList) init() { l.root.next, l.root.prev = &l.root, &l.root }

func (l *cacheList) pushFront(e *cacheEntry) {
	e.prev, e.next = &l.root, l.root.next
	l.root.next.prev = e
	l.root.next = e
}

func (l *cacheList) back() *cacheEntry {
	if l.root.prev == &l.root {
		return nil
	}
	return l.root.prev
}

func unlink(e *cacheEntry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

// cacheMinIdle is how long an entry must have been idle before a run not
// found in the cache may take its place.
const cacheMinIdle = time.Minute

// newSnapCache returns a cache of at most budget bytes, or nil (no cache)
// when budget <= 0. The methods of a nil *snapCache do nothing.
func newSnapCache(budget int64) *snapCache {
	if budget <= 0 {
		return nil
	}
	c := &snapCache{budget: budget, minIdle: cacheMinIdle, entries: map[string]*cacheEntry{}}
	c.lru.init()
	return c
}

// take removes runID's entry and returns its snapshot, which the caller
// now owns: nothing else refers to it.
func (c *snapCache) take(runID string) (store.RunSnapshot, bool) {
	if c == nil {
		return store.RunSnapshot{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[runID]
	if e == nil {
		return store.RunSnapshot{}, false
	}
	c.remove(e)
	return e.snap, true
}

// put caches s, the snapshot Redis now holds for its run, which lives on
// partition part; hit says it came from take (the run was in the cache).
// The cache owns s from now on. A stale or terminal snapshot, or one
// larger than a tenth of the budget, is not kept. Over the budget, a hit
// evicts the least recently used entries; a miss evicts only entries idle
// for minIdle, and is not cached when that does not make room.
func (c *snapCache) put(part int32, s store.RunSnapshot, hit bool) {
	if c == nil {
		return
	}
	size := snapshotBytes(&s)
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[s.RunID]; e != nil {
		c.remove(e)
	}
	if s.Stale || store.IsTerminalRunStatus(s.Status) || size > c.budget/10 {
		return
	}
	for c.size+size > c.budget {
		d := c.lru.back()
		if !hit && now.Sub(d.used) < c.minIdle {
			return
		}
		c.remove(d)
	}
	e := &cacheEntry{runID: s.RunID, snap: s, part: part, size: size, used: now}
	c.entries[s.RunID] = e
	c.size += size
	c.lru.pushFront(e)
}

// drop forgets runID.
func (c *snapCache) drop(runID string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[runID]; e != nil {
		c.remove(e)
	}
}

// dropPartitions forgets the runs of the partitions in parts.
func (c *snapCache) dropPartitions(parts []int32) {
	if c == nil || len(parts) == 0 {
		return
	}
	set := make(map[int32]bool, len(parts))
	for _, p := range parts {
		set[p] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		if set[e.part] {
			c.remove(e)
		}
	}
}

// stats returns the number of entries and their estimated bytes.
func (c *snapCache) stats() (entries int, bytes int64) {
	if c == nil {
		return 0, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries), c.size
}

func (c *snapCache) remove(e *cacheEntry) {
	unlink(e)
	delete(c.entries, e.runID)
	c.size -= e.size
}

// Sizes used by snapshotBytes.
const (
	entryOverhead   = int64(unsafe.Sizeof(cacheEntry{})) + 64 // the entry, its map slot and key
	stepSize        = int64(unsafe.Sizeof(store.StepSnapshot{}))
	attemptSize     = int64(unsafe.Sizeof(store.StepAttempt{}))
	artifactSize    = int64(unsafe.Sizeof(store.ArtifactRef{}))
	errorInfoSize   = int64(unsafe.Sizeof(store.ErrorInfo{}))
	skipInfoSize    = int64(unsafe.Sizeof(store.SkipInfo{}))
	int64PtrSize    = 8
	allocationSlack = 16 // per separately allocated string or object, a rough size-class rounding
)

// snapshotBytes estimates the heap bytes an entry holding s keeps alive:
// the structs, slices' capacities and strings (each counted as if it had
// its own allocation, which over-counts strings shared between snapshots).
func snapshotBytes(s *store.RunSnapshot) int64 {
	n := entryOverhead + int64(cap(s.Steps))*stepSize + artifactsBytes(s.Artifacts)
	n += strBytes(s.RunID) + strBytes(s.TenantID) + strBytes(s.ProjectID) + strBytes(s.EnvironmentID) +
		strBytes(s.PlanID) + strBytes(s.PlanVersion) + strBytes(s.Substatus) + strBytes(s.EngineRunRef) +
		strBytes(s.StartedAt) + strBytes(s.CompletedAt) + strBytes(s.UpdatedAt)
	if s.TotalDurationMs != nil {
		n += int64PtrSize
	}
	n += errorBytes(s.Error)
	for i := range s.Steps {
		st := &s.Steps[i]
		n += strBytes(st.StepID) + attemptBytes(&st.StepAttempt) + int64(cap(st.Attempts))*attemptSize
		for j := range st.Attempts {
			n += attemptBytes(&st.Attempts[j])
		}
	}
	return n
}

// attemptBytes counts what a (embedded or listed) attempt points to.
func attemptBytes(a *store.StepAttempt) int64 {
	n := strBytes(a.Status) + strBytes(a.StartedAt) + strBytes(a.CompletedAt) + artifactsBytes(a.Artifacts) + errorBytes(a.Error)
	if a.DurationMs != nil {
		n += int64PtrSize
	}
	if a.Skip != nil {
		n += skipInfoSize + strBytes(a.Skip.Reason) + strBytes(a.Skip.ReasonCode)
	}
	return n
}

func artifactsBytes(refs []store.ArtifactRef) int64 {
	n := int64(cap(refs)) * artifactSize
	for i := range refs {
		r := &refs[i]
		n += strBytes(r.URI) + strBytes(r.Kind) + strBytes(r.SHA256) + strBytes(r.ExpiresAt)
		if r.SizeBytes != nil {
			n += int64PtrSize
		}
	}
	return n
}

func errorBytes(e *store.ErrorInfo) int64 {
	if e == nil {
		return 0
	}
	return errorInfoSize + strBytes(e.Code) + strBytes(e.Message) + strBytes(e.Category) + strBytes(e.Source)
}

func strBytes(s string) int64 {
	if s == "" {
		return 0
	}
	return int64(len(s)) + allocationSlack
}
