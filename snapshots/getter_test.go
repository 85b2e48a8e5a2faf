package snapshots

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/internal/testenv"
)

// TestGetter_ConcurrentReadsGetTheirOwnKeys: many goroutines read
// at once, so the getter batches them into pipelines; each must get its own
// run's snapshot (or redis.Nil for a missing one), never a neighbour's.
func TestGetter_ConcurrentReadsGetTheirOwnKeys(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prefix := "getbatch-" + testenv.RandomID(6) + "-"
	const keys = 200
	for i := range keys {
		if err := rdb.Set(ctx, Key(fmt.Sprint(prefix, i)), fmt.Sprint("value-", i), time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	g := NewGetter(rdb)
	defer g.Close()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for c := range 64 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(c)))
			for range 200 {
				i := rng.IntN(keys + 20) // some keys do not exist
				body, err := g.Get(ctx, fmt.Sprint(prefix, i))
				switch {
				case i >= keys && !errors.Is(err, redis.Nil):
					errs <- fmt.Errorf("missing key %d: %q, %v; want redis.Nil", i, body, err)
					return
				case i < keys && (err != nil || string(body) != fmt.Sprint("value-", i)):
					errs <- fmt.Errorf("key %d: %q, %v", i, body, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// A caller whose context ends stops waiting; the getter still serves
	// the next one.
	done, stop := context.WithCancel(ctx)
	stop()
	if _, err := g.Get(done, prefix+"0"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller: %v, want context.Canceled", err)
	}
	if b, err := g.Get(ctx, prefix+"1"); err != nil || string(b) != "value-1" {
		t.Fatalf("after a cancelled caller: %q, %v", b, err)
	}
}
