package snapshots

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/store"
)

// Source is what Rebuild and Resync need of the store; *postgres.Store
// satisfies it.
type Source interface {
	ProjectSnapshot(ctx context.Context, runID string) (store.RunSnapshot, error)
}

// Rebuild writes the store's projectSnapshot of each run to Redis. It is
// safe while projectors run: a rebuilt snapshot is written in ModeMax,
// only when Redis does not already hold a higher watermark (or holds the
// same one, stale), and a projector whose guarded write then finds the
// rebuilt watermark reloads and goes on from it. It returns how many
// snapshots it wrote; runs the store does not know are skipped. workers
// bounds the concurrent store reads (0 means 4). p is the writer's
// policy: a terminal run past its retention is not written back (and
// nothing of it stays in Redis). [RebuildRuns] also says why the others
// were not written.
func Rebuild(ctx context.Context, rdb redis.UniversalClient, src Source, runIDs []string, workers int, p Policy) (int, error) {
	res, err := RebuildRuns(ctx, rdb, src, runIDs, workers, p)
	return res.Written, err
}

// RebuildResult is what [RebuildRuns] did with each run it was given:
// every run is counted in exactly one field.
type RebuildResult struct {
	// Written is the runs whose snapshot was written.
	Written int
	// Current is the runs of which Redis already held a snapshot as new
	// as the store's (the same watermark, not stale) or newer.
	Current int
	// Expired is the terminal runs that ended longer ago than the
	// policy's TTL: Redis no longer keeps them, and they are not written
	// back.
	Expired int
	// Unknown is the runs the store has no events of.
	Unknown int
}

// Add returns the sum of r and o.
func (r RebuildResult) Add(o RebuildResult) RebuildResult {
	return RebuildResult{Written: r.Written + o.Written, Current: r.Current + o.Current,
		Expired: r.Expired + o.Expired, Unknown: r.Unknown + o.Unknown}
}

// RebuildRuns is [Rebuild], counting each run by what became of it. On
// an error the result is zero: the runs' outcome is not known.
func RebuildRuns(ctx context.Context, rdb redis.UniversalClient, src Source, runIDs []string, workers int, p Policy) (RebuildResult, error) {
	done, unknown, err := rebuild(ctx, rdb, src, runIDs, workers, ModeMax, p)
	res := RebuildResult{Unknown: unknown}
	for _, d := range done {
		if d.expired {
			res.Expired++
		} else {
			res.Written++
		}
	}
	if err != nil {
		return RebuildResult{Written: res.Written}, err
	}
	res.Current = len(runIDs) - res.Written - res.Expired - res.Unknown
	return res, nil
}

// Resync is the operator's FULL resync of one run (POST
// /v1/runs/{runId}/resync): the store's projectSnapshot replaces the Redis
// snapshot unless Redis already holds a higher watermark, even when the
// watermark is the same (ModeMaxEq: a snapshot corrupted in place is
// repaired). It returns the snapshot written, or store.ErrNotFound; a
// terminal run past the retention of p is not written back, and is
// [ErrExpired].
func Resync(ctx context.Context, rdb redis.UniversalClient, src Source, runID string, p Policy) (store.RunSnapshot, error) {
	snaps, _, err := rebuild(ctx, rdb, src, []string{runID}, 1, ModeMaxEq, p)
	if err != nil {
		return store.RunSnapshot{}, err
	}
	if len(snaps) == 1 && snaps[0].expired {
		return snaps[0].RunSnapshot, ErrExpired
	}
	if len(snaps) == 0 {
		return store.RunSnapshot{}, &store.Error{Code: store.CodeNotFound, Field: "runId", Message: fmt.Sprintf("run %q has no events in the store", runID)}
	}
	return snaps[0].RunSnapshot, nil
}

// ErrExpired is [Resync]'s answer for a run whose retention in Redis
// ended: the store has it, Redis keeps it no more.
var ErrExpired = errors.New("the run ended more than --snapshot-ttl ago: Redis no longer keeps its snapshot")

// rebuilt is a snapshot rebuild wrote, or found expired.
type rebuilt struct {
	store.RunSnapshot
	expired bool
}

// rebuild writes the store's projection of runIDs in mode and returns the
// snapshots written (and those found expired), and how many runs the
// store does not know.
func rebuild(ctx context.Context, rdb redis.UniversalClient, src Source, runIDs []string, workers int, mode Mode, p Policy) (written []rebuilt, unknown int, err error) {
	if workers <= 0 {
		workers = 4
	}
	snaps := make([]store.RunSnapshot, len(runIDs))
	errs := make([]error, len(runIDs))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(workers, len(runIDs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				snaps[i], errs[i] = src.ProjectSnapshot(ctx, runIDs[i])
			}
		}()
	}
	for i := range runIDs {
		select {
		case next <- i:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	var writes []Write
	for i, err := range errs {
		if errors.Is(err, store.ErrNotFound) {
			unknown++
			continue
		}
		if err != nil {
			return nil, 0, fmt.Errorf("projecting run %q from the store: %w", runIDs[i], err)
		}
		s := snaps[i]
		s.Stale = false
		writes = append(writes, Write{Snapshot: s, Mode: mode, TTL: p.TTL, Encoding: p.Encoding})
	}
	res, err := WriteAll(ctx, rdb, writes)
	if err != nil {
		return nil, 0, fmt.Errorf("writing rebuilt snapshots: %w", err)
	}
	var done []any
	for i, r := range res {
		if r.Written || r.Expired {
			done = append(done, writes[i].Snapshot.RunID)
		}
		if r.Written {
			written = append(written, rebuilt{RunSnapshot: writes[i].Snapshot})
		} else if r.Expired {
			written = append(written, rebuilt{RunSnapshot: writes[i].Snapshot, expired: true})
		}
	}
	if len(done) > 0 {
		if err := rdb.SRem(ctx, ResyncSetKey, done...).Err(); err != nil {
			return written, unknown, fmt.Errorf("clearing rebuilt runs from the resync set: %w", err)
		}
	}
	return written, unknown, nil
}
