package consumer

import (
	"context"
	"sync"
)

// Checkpoints persist, per consumer group and run, the last runSeq
// handled. Implementations must make Transact atomic: the checkpoints set
// in fn become visible only if fn returns nil (and, for a transactional
// sink, together with the handler's writes).
type Checkpoints interface {
	// Transact runs fn in one unit of work for group.
	Transact(ctx context.Context, group string, fn func(ctx context.Context, tx CheckpointTx) error) error
}

// CheckpointTx reads and records checkpoints inside a Transact.
type CheckpointTx interface {
	// Get returns the checkpoints of runIDs (0 for a run never handled),
	// locking them against concurrent writers where the store can.
	Get(ctx context.Context, runIDs []string) (map[string]int64, error)
	// Set records runSeq as runID's checkpoint at commit.
	Set(runID string, runSeq int64)
}

// MemoryCheckpoints keep checkpoints in memory, for tests and for sinks
// that are idempotent on their own. A restart forgets them.
type MemoryCheckpoints struct {
	mu   sync.Mutex
	cps  map[string]map[string]int64 // group -> run -> seq
	conv memConverge
}

// NewMemoryCheckpoints returns empty in-memory checkpoints.
func NewMemoryCheckpoints() *MemoryCheckpoints {
	return &MemoryCheckpoints{cps: map[string]map[string]int64{}}
}

type memTx struct {
	m     *MemoryCheckpoints
	group string
	sets  map[string]int64
}

func (t *memTx) Get(_ context.Context, ids []string) (map[string]int64, error) {
	out := make(map[string]int64, len(ids))
	for _, id := range ids {
		out[id] = t.m.cps[t.group][id]
	}
	return out, nil
}

func (t *memTx) Set(id string, seq int64) { t.sets[id] = seq }

// Transact runs fn holding the store's lock, and applies its sets when fn
// returns nil.
func (m *MemoryCheckpoints) Transact(ctx context.Context, group string, fn func(context.Context, CheckpointTx) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	tx := &memTx{m: m, group: group, sets: map[string]int64{}}
	if err := fn(ctx, tx); err != nil {
		return err
	}
	if m.cps[group] == nil {
		m.cps[group] = map[string]int64{}
	}
	for id, seq := range tx.sets {
		if seq > m.cps[group][id] {
			m.cps[group][id] = seq
		}
	}
	return nil
}

// Checkpoint returns a run's checkpoint (for tests).
func (m *MemoryCheckpoints) Checkpoint(group, runID string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cps[group][runID]
}
