package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runstream/runstream/client"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
)

func testSeed(t *testing.T) uint64 {
	seed := rand.Uint64()
	if s := os.Getenv("RUNSTREAM_CLIENT_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (RUNSTREAM_CLIENT_SEED=%d replays it)", seed, seed)
	return seed
}

// TestOrder_RandomFailures is the per-run order property: producers
// append the events of their runs one after another (fail-open and
// never-fail-open types mixed) through a front that at random refuses,
// forwards, forwards and loses the answer, or holds a request past the
// budget; meanwhile the background drainer delivers the spool. After the
// front heals and Drain returns, every run's acknowledged events (stored,
// or spooled) are stored once each, in append order. An event whose
// Append failed may be missing, or stored (its answer was lost); it is
// held to no order: a request the client gave up on may still commit in
// the API after a later event (see checkRunOrder).
func TestOrder_RandomFailures(t *testing.T) {
	t.Parallel()
	api := realAPI(t)
	seed := testSeed(t)
	var (
		mu     sync.Mutex
		r      = rand.New(rand.NewPCG(seed, 3))
		healed atomic.Bool
	)
	front := newProxy(t, api, func(req *http.Request) int {
		if healed.Load() {
			return 0
		}
		mu.Lock()
		d := r.IntN(10)
		mu.Unlock()
		switch {
		case d < 3:
			return 0
		case d < 5:
			return -1
		case d < 6:
			<-req.Context().Done() // past the budget
			return http.StatusGatewayTimeout
		case d < 8:
			return http.StatusTooManyRequests
		default:
			return http.StatusServiceUnavailable
		}
	})
	c := newClient(t, client.Config{URL: front.URL, WriteLatencyBudget: 60 * time.Millisecond,
		BackoffBase: 2 * time.Millisecond, BackoffMax: 10 * time.Millisecond, DrainInterval: 20 * time.Millisecond})
	const producers, perProducer, runsEach = 4, 60, 3
	type runLog struct {
		appended []string
		acked    map[string]bool
	}
	logs := map[string]*runLog{}
	var lmu sync.Mutex
	var wg sync.WaitGroup
	var spooled, failed atomic.Int64
	runIDs := make([][]workload.Identity, producers)
	for p := range runIDs {
		runIDs[p] = make([]workload.Identity, runsEach)
		for i := range runIDs[p] {
			runIDs[p][i] = workload.NewIdentity(testTenant)
			logs[runIDs[p][i].RunID] = &runLog{acked: map[string]bool{}}
		}
	}
	for p := range producers {
		pr := rand.New(rand.NewPCG(seed, uint64(10+p)))
		ids := runIDs[p]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perProducer {
				id := ids[pr.IntN(runsEach)]
				typ := []string{store.EventStepStarted, store.EventStepStarted, store.EventStepCompleted, store.EventStepFailed}[pr.IntN(4)]
				w := newEvent(id, typ, p*1000+i)
				lmu.Lock()
				l := logs[id.RunID]
				l.appended = append(l.appended, w.EventID)
				lmu.Unlock()
				if pr.IntN(5) == 0 {
					// A batch of this one event and the run's next.
					w2 := newEvent(id, store.EventStepStarted, p*1000+i+500)
					lmu.Lock()
					l.appended = append(l.appended, w2.EventID)
					lmu.Unlock()
					res, err := c.AppendBatch(context.Background(), []store.RunEventWrite{w, w2})
					if err != nil {
						t.Error(err)
						return
					}
					for k, br := range res {
						note(t, &lmu, l.acked, []string{w.EventID, w2.EventID}[k], br.Result, br.Err, &spooled, &failed)
					}
					continue
				}
				res, err := c.Append(context.Background(), w)
				note(t, &lmu, l.acked, w.EventID, res, err, &spooled, &failed)
			}
		}()
	}
	wg.Wait()
	t.Logf("%d events spooled, %d failed, %d still spooled when the front heals", spooled.Load(), failed.Load(), c.Spooled())
	healed.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	for run, l := range logs {
		checkRunOrder(t, run, storedEvents(t, api, run), l.appended, l.acked)
	}
}

func note(t *testing.T, mu *sync.Mutex, acked map[string]bool, id string, res client.Result, err error, spooled, failed *atomic.Int64) {
	if err != nil {
		if !errors.Is(err, client.ErrBudgetExceeded) && !errors.Is(err, client.ErrNotDelivered) && !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("event %s: unexpected error %v", id, err)
		}
		failed.Add(1)
		return
	}
	if res.Spooled {
		spooled.Add(1)
	}
	mu.Lock()
	acked[id] = true
	mu.Unlock()
}

// TestSpool_Full: past MaxSpoolBytes a fail-open event fails with
// ErrSpoolFull (and is not spooled); what was spooled before is delivered
// whole and in order once the API is back.
func TestSpool_Full(t *testing.T) {
	t.Parallel()
	api := realAPI(t)
	var healed atomic.Bool
	front := newProxy(t, api, func(*http.Request) int {
		if healed.Load() {
			return 0
		}
		return http.StatusServiceUnavailable
	})
	// A Retry-After past the budget ends each append at the first refusal,
	// so the error wraps the API's answer however slow the machine is (with
	// immediate retries the budget could end inside a request and wrap that
	// instead).
	front.retryAfter.Store(5)
	c := newClient(t, client.Config{URL: front.URL, WriteLatencyBudget: time.Second,
		MaxSpoolBytes: 64 << 10, DrainInterval: time.Hour})
	run := workload.NewIdentity(testTenant)
	var appended []string
	acked := map[string]bool{}
	payload, _ := json.Marshal(map[string]string{"note": strings.Repeat("x", 2000)})
	var full error
	for i := 0; i < 100 && full == nil; i++ {
		w := newEvent(run, store.EventStepStarted, i)
		w.Payload = payload
		res, err := c.Append(context.Background(), w)
		switch {
		case err == nil && res.Spooled:
			appended = append(appended, w.EventID)
			acked[w.EventID] = true
		case errors.Is(err, client.ErrSpoolFull):
			full = err
		default:
			t.Fatalf("event %d: %+v, %v", i, res, err)
		}
	}
	if full == nil {
		t.Fatal("64 KiB of spool took 100 events of 2 KB")
	}
	if !errors.Is(full, store.ErrUnavailable) || !strings.Contains(full.Error(), "MaxSpoolBytes") {
		t.Errorf("the error %q should wrap the API's answer and name MaxSpoolBytes", full)
	}
	if got := c.Spooled(); got != int64(len(appended)) {
		t.Errorf("%d spooled, want the %d acknowledged", got, len(appended))
	}
	healed.Store(true)
	t.Logf("%d events spooled before it was full", len(appended))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	if err := c.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("drained in %v", time.Since(start))
	stored := storedEvents(t, api, run.RunID)
	if len(stored) != len(appended) {
		t.Errorf("%d stored, want %d", len(stored), len(appended))
	}
	checkRunOrder(t, run.RunID, stored, appended, acked)
	// Room again (delivered, or spooled if the 20ms budget was short).
	if res, err := c.Append(context.Background(), newEvent(run, store.EventStepStarted, 1000)); err != nil {
		t.Errorf("after the drain: %+v, %v", res, err)
	}
}
