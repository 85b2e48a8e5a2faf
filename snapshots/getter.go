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
	key string
	// upTo, when > 0, asks for the snapshot's first upTo bytes only.
	upTo int
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
	return g.get(ctx, runID, 0)
}

// GetPrefix reads the first n bytes of the stored snapshot of runID (all
// of it when shorter: a read of fewer than n bytes is the whole
// snapshot); redis.Nil when there is none. [PeekTenant] reads whose run
// it is from PeekBytes of them.
func (g *Getter) GetPrefix(ctx context.Context, runID string, n int) ([]byte, error) {
	return g.get(ctx, runID, max(n, 1))
}

func (g *Getter) get(ctx context.Context, runID string, upTo int) ([]byte, error) {
	g.once.Do(func() {
		for range getLoops {
			g.wg.Add(1)
			go g.loop()
		}
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := &getRequest{key: Key(runID), upTo: upTo, done: make(chan struct{})}
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
			r.body, r.err = result(r, g.command(ctx, g.rdb, r))
			cancel()
			close(r.done)
			continue
		}
		pipe := g.rdb.Pipeline()
		cmds = cmds[:0]
		for _, r := range batch {
			cmds = append(cmds, g.command(ctx, pipe, r))
		}
		_, _ = pipe.Exec(ctx) // each command carries its own error
		cancel()
		for i, r := range batch {
			r.body, r.err = result(r, cmds[i])
			close(r.done)
		}
	}
}

// command is r's read: GET, or GETRANGE for a prefix.
func (g *Getter) command(ctx context.Context, c redis.StringCmdable, r *getRequest) *redis.StringCmd {
	if r.upTo > 0 {
		return c.GetRange(ctx, r.key, 0, int64(r.upTo-1))
	}
	return c.Get(ctx, r.key)
}

// result is cmd's answer to r: GETRANGE answers a missing key with an
// empty string, which no snapshot is, so that is redis.Nil as for GET.
func result(r *getRequest, cmd *redis.StringCmd) ([]byte, error) {
	b, err := cmd.Bytes()
	if err == nil && r.upTo > 0 && len(b) == 0 {
		return nil, redis.Nil
	}
	return b, err
}
