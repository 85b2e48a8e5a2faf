package snapshots

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Getter coalesces the snapshot GETs of concurrent requests into Redis
// pipelines. A request hands its run's key to one of a few batching loops;
// a loop that is idle sends it at once, one that is waiting for Redis
// collects the keys that arrive meanwhile and sends them together when the
// reply is in. Under load one round trip (one read and one write system
// call on each side) serves tens of requests; a lone request waits for
// nothing. Redis shares the machine with the API, so every system call it
// does not make is CPU the API can use.
type Getter struct {
	rdb redis.UniversalClient

	once   sync.Once
	reqs   chan *getRequest
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// getLoops is how many pipelines may be in flight at once (one measured
// best: with more, most requests go alone and the batching is lost);
// maxGetBatch is how many keys one carries.
const (
	getLoops      = 1
	maxGetBatch   = 128
	getBatchLimit = 5 * time.Second
)

type getRequest struct {
	key  string
	body []byte
	err  error
	done chan struct{}
}

// NewGetter returns a Getter reading from rdb; its loops start with the
// first Get. Close it when done.
func NewGetter(rdb redis.UniversalClient) *Getter {
	ctx, cancel := context.WithCancel(context.Background())
	return &Getter{rdb: rdb, reqs: make(chan *getRequest, 4*maxGetBatch), ctx: ctx, cancel: cancel}
}

// Get reads the stored snapshot of runID as it is (JSON); redis.Nil when
// there is none.
func (g *Getter) Get(ctx context.Context, runID string) ([]byte, error) {
	g.once.Do(func() {
		for range getLoops {
			g.wg.Add(1)
			go g.loop()
		}
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := &getRequest{key: Key(runID), done: make(chan struct{})}
	select {
	case g.reqs <- r:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-g.ctx.Done():
		return nil, context.Canceled
	}
	select {
	case <-r.done:
		return r.body, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-g.ctx.Done():
		// Closed with this request queued: its loop is gone.
		return nil, context.Canceled
	}
}

// Close stops the batching loops; a Get waiting on them returns
// context.Canceled.
func (g *Getter) Close() {
	g.cancel()
	g.wg.Wait()
}

func (g *Getter) loop() {
	defer g.wg.Done()
	batch := make([]*getRequest, 0, maxGetBatch)
	cmds := make([]*redis.StringCmd, 0, maxGetBatch)
	for {
		batch = batch[:0]
		select {
		case <-g.ctx.Done():
			return
		case r := <-g.reqs:
			batch = append(batch, r)
		}
	collect:
		for len(batch) < maxGetBatch {
			select {
			case r := <-g.reqs:
				batch = append(batch, r)
			default:
				break collect
			}
		}
		// The batch is not tied to any one request's context: a client that
		// hangs up stops waiting, the others still get their answers.
		ctx, cancel := context.WithTimeout(g.ctx, getBatchLimit)
		if len(batch) == 1 {
			r := batch[0]
			r.body, r.err = g.rdb.Get(ctx, r.key).Bytes()
			cancel()
			close(r.done)
			continue
		}
		pipe := g.rdb.Pipeline()
		cmds = cmds[:0]
		for _, r := range batch {
			cmds = append(cmds, pipe.Get(ctx, r.key))
		}
		_, _ = pipe.Exec(ctx) // each command carries its own error
		cancel()
		for i, r := range batch {
			r.body, r.err = cmds[i].Bytes()
			close(r.done)
		}
	}
}
