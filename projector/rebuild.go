package projector

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/store"
)

// Rebuild writes the store's projectSnapshot of each run to Redis. It is
// safe while projectors run: a rebuilt snapshot is written only when Redis
// does not already hold a higher watermark, and a projector whose guarded
// write then finds the rebuilt watermark reloads and goes on from it. It
// returns how many snapshots it wrote; runs the store does not know are
// skipped. workers bounds the concurrent store reads (0 means 4).
func Rebuild(ctx context.Context, rdb redis.UniversalClient, src eventSource, runIDs []string, workers int) (int, error) {
	_, n, err := rebuild(ctx, rdb, src, runIDs, workers, false)
	return n, err
}

// Resync is the operator's FULL resync of one run (POST
// /v1/runs/{runId}/resync): the store's projectSnapshot replaces the Redis
// snapshot unless Redis already holds a higher watermark, even when the
// watermark is the same (a snapshot corrupted in place is repaired). It
// returns the snapshot written, or store.ErrNotFound.
func Resync(ctx context.Context, rdb redis.UniversalClient, src eventSource, runID string) (store.RunSnapshot, error) {
	snaps, _, err := rebuild(ctx, rdb, src, []string{runID}, 1, true)
	if err != nil {
		return store.RunSnapshot{}, err
	}
	if len(snaps) == 0 {
		return store.RunSnapshot{}, &store.Error{Code: store.CodeNotFound, Field: "runId", Message: fmt.Sprintf("run %q has no events in the store", runID)}
	}
	return snaps[0], nil
}

func rebuild(ctx context.Context, rdb redis.UniversalClient, src eventSource, runIDs []string, workers int, force bool) ([]store.RunSnapshot, int, error) {
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
	var writes []snapshotWrite
	for i, err := range errs {
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, 0, fmt.Errorf("projecting run %q from the store: %w", runIDs[i], err)
		}
		s := snaps[i]
		s.Stale = false
		writes = append(writes, snapshotWrite{snap: s, max: true, force: force})
	}
	res, err := writeSnapshots(ctx, rdb, writes)
	if err != nil {
		return nil, 0, fmt.Errorf("writing rebuilt snapshots: %w", err)
	}
	n := 0
	var done []string
	var written []store.RunSnapshot
	for i, r := range res {
		if r.written {
			n++
			done = append(done, writes[i].snap.RunID)
			written = append(written, writes[i].snap)
		}
	}
	if len(done) > 0 {
		if err := rdb.SRem(ctx, ResyncSetKey, toAny(done)...).Err(); err != nil {
			return written, n, fmt.Errorf("clearing rebuilt runs from the resync set: %w", err)
		}
	}
	return written, n, nil
}
