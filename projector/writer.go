package projector

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/snapshots"
)

// batchWriter sends a batch's guarded writes (snapshots.WriteAll) in
// pipelines of chunk writes
// while the caller goes on reducing the batch's next runs: Redis executes
// one chunk (and the writer encodes the next) while the projector's CPU
// works on the rest, instead of the two taking turns. At most inFlight
// chunks are outstanding; add blocks beyond that. Writes of different runs
// are independent, so the chunks' order does not matter; wait reports
// every write's result in the order added, or the first error (Redis
// failed: some writes may have landed, each complete and guarded, so the
// batch can be retried).
type batchWriter struct {
	ctx     context.Context
	rdb     redis.UniversalClient
	chunk   int
	writes  []snapshots.Write
	flushed int
	sem     chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	chunks  []*writeChunk
	err     error
}

type writeChunk struct {
	start int
	res   []snapshots.Result
}

func newBatchWriter(ctx context.Context, rdb redis.UniversalClient, chunk, inFlight int) *batchWriter {
	return &batchWriter{ctx: ctx, rdb: rdb, chunk: chunk, sem: make(chan struct{}, inFlight)}
}

// add queues w, and sends the queued writes once there are chunk of them.
func (b *batchWriter) add(w snapshots.Write) {
	b.writes = append(b.writes, w)
	if len(b.writes)-b.flushed >= b.chunk {
		b.flush()
	}
}

func (b *batchWriter) flush() {
	if b.flushed == len(b.writes) {
		return
	}
	c := &writeChunk{start: b.flushed}
	ws := b.writes[b.flushed:len(b.writes):len(b.writes)]
	b.flushed = len(b.writes)
	b.chunks = append(b.chunks, c)
	b.sem <- struct{}{}
	b.wg.Add(1)
	go func() {
		defer func() { <-b.sem; b.wg.Done() }()
		res, err := snapshots.WriteAll(b.ctx, b.rdb, ws)
		b.mu.Lock()
		defer b.mu.Unlock()
		if err != nil && b.err == nil {
			b.err = err
		}
		c.res = res
	}()
}

// wait sends what is queued, waits for every chunk and returns the
// results of all writes in the order added.
func (b *batchWriter) wait() ([]snapshots.Write, []snapshots.Result, error) {
	b.flush()
	b.wg.Wait()
	if b.err != nil {
		return b.writes, nil, b.err
	}
	out := make([]snapshots.Result, len(b.writes))
	for _, c := range b.chunks {
		copy(out[c.start:], c.res)
	}
	return b.writes, out, nil
}
