package httpapi

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"
)

// waitQueued waits until l's queue holds n waiters.
func waitQueued(t *testing.T, l *shareLimiter, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l.mu.Lock()
		got := len(l.queue)
		l.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters queued, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestShareLimiter_WaitersServedInTurn: with the process full, waiters get
// slots in the order they came, one per release, and a newcomer does not
// take a freed slot ahead of them.
func TestShareLimiter_WaitersServedInTurn(t *testing.T) {
	l := newShareLimiter(2, 2, 0)
	for range 2 {
		if l.tryAcquire("", 0) != admitted {
			t.Fatal("the first two requests were refused")
		}
	}
	const n = 5
	order := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if why, err := l.acquireWithin(context.Background(), "", 0, time.Minute); why != admitted || err != nil {
				t.Errorf("waiter %d: %v, %v", i, why, err)
				return
			}
			order <- i
		}()
		waitQueued(t, l, i+1) // queued in the order i
	}
	for i := range n {
		l.release("", 0)
		if got := <-order; got != i {
			t.Fatalf("release %d served waiter %d, want %d (oldest first)", i, got, i)
		}
		if i < n-1 && l.tryAcquire("", 0) != processFull {
			t.Fatalf("a newcomer took a slot freed for waiter %d", i+1)
		}
	}
	wg.Wait()
}

// TestShareLimiter_TenantAtItsShareDoesNotBlockOthers: a waiter whose
// tenant holds its share keeps its place without holding up a later
// waiter of another tenant, and is served once its tenant releases.
func TestShareLimiter_TenantAtItsShareDoesNotBlockOthers(t *testing.T) {
	l := newShareLimiter(3, 1, 0)
	for _, tenant := range []string{"a", "b", "c"} {
		if l.tryAcquire(tenant, 0) != admitted {
			t.Fatalf("tenant %s's first request refused", tenant)
		}
	}
	got := make(chan string, 2)
	for i, tenant := range []string{"a", "d"} { // a is at its share; d holds nothing
		go func() {
			if why, err := l.acquireWithin(context.Background(), tenant, 0, time.Minute); why == admitted && err == nil {
				got <- tenant
			}
		}()
		waitQueued(t, l, i+1)
	}
	l.release("b", 0) // room for one: a may not take it, d may
	if g := <-got; g != "d" {
		t.Fatalf("the freed slot went to %s, want d (a is at its share)", g)
	}
	waitQueued(t, l, 1)
	l.release("a", 0)
	if g := <-got; g != "a" {
		t.Fatalf("tenant a's release served %s, want a's waiter", g)
	}
}

// TestShareLimiter_GivingUp: a waiter whose time runs out leaves the
// queue with the limit's reason, and one whose context ends gets the
// context's error and holds nothing.
func TestShareLimiter_GivingUp(t *testing.T) {
	l := newShareLimiter(2, 1, 0)
	if l.tryAcquire("a", 0) != admitted || l.tryAcquire("c", 0) != admitted {
		t.Fatal("first requests refused")
	}
	if why, err := l.acquireWithin(context.Background(), "b", 0, 10*time.Millisecond); why != processFull || err != nil {
		t.Fatalf("timed out: %v, %v; want processFull, nil", why, err)
	}
	if why, _ := l.acquireWithin(context.Background(), "a", 0, 10*time.Millisecond); why != tenantRequests {
		t.Fatalf("tenant a at its share timed out with %v, want tenantRequests", why)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := l.acquireWithin(ctx, "b", 0, time.Minute); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled: %v, want the context's error", err)
	}
	l.mu.Lock()
	queued, total := len(l.queue), l.total
	l.mu.Unlock()
	if queued != 0 || total != 2 {
		t.Fatalf("after giving up: %d queued, %d held; want 0 and 2", queued, total)
	}
}

// TestShareLimiter_RandomLoad: goroutines of four tenants acquire (some
// waiting, some giving up at once, some cancelled) and release at random.
// At every moment no more than max slots, and no tenant more than its
// share, are held; at the end nothing is held or queued. The seed is
// printed (replay with SHARES_SEED).
func TestShareLimiter_RandomLoad(t *testing.T) {
	seed := rand.Uint64()
	if v := os.Getenv("SHARES_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (replay with SHARES_SEED=%d)", seed, seed)
	const max, perTenant = 4, 2
	l := newShareLimiter(max, perTenant, 0)
	var (
		mu      sync.Mutex
		held    = map[string]int{}
		total   int
		failure string
	)
	check := func(tenant string, delta int) {
		mu.Lock()
		defer mu.Unlock()
		held[tenant] += delta
		total += delta
		if failure == "" && (total > max || held[tenant] > perTenant) {
			failure = "held " + strconv.Itoa(total) + " in all, " + strconv.Itoa(held[tenant]) + " by tenant " + tenant
		}
	}
	var wg sync.WaitGroup
	for g := range 16 {
		rng := rand.New(rand.NewPCG(seed, uint64(g)))
		tenant := []string{"a", "b", "c", "d"}[g%4]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 300 {
				ctx, cancel := context.WithCancel(context.Background())
				if rng.IntN(10) == 0 {
					cancel()
				}
				wait := time.Duration(rng.IntN(3)) * time.Millisecond
				why, err := l.acquireWithin(ctx, tenant, 0, wait)
				cancel()
				if why != admitted || err != nil {
					continue
				}
				check(tenant, 1)
				if rng.IntN(2) == 0 {
					time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond)
				}
				check(tenant, -1)
				l.release(tenant, 0)
			}
		}()
	}
	wg.Wait()
	if failure != "" {
		t.Fatalf("a limit was passed: %s", failure)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.total != 0 || len(l.queue) != 0 || len(l.held) != 0 {
		t.Fatalf("at the end: %d held, %d queued, %d tenants holding; want none", l.total, len(l.queue), len(l.held))
	}
}

// asides is how many waitForOthers calls l holds.
func asides(l *shareLimiter) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.asides)
}

// TestShareLimiter_WaitForOthers: a batch stepping aside waits for the
// other tenants' requests in flight, not its own tenant's, wakes when the
// last of them ends, and gives up at its bound or its context, leaving
// nothing behind.
func TestShareLimiter_WaitForOthers(t *testing.T) {
	l := newShareLimiter(16, 16, 0)
	l.tryAcquire("tenant_a", 1)
	l.tryAcquire("tenant_a", 1)
	if d := l.waitForOthers(context.Background(), "tenant_a", time.Minute); d > time.Second {
		t.Fatalf("tenant_a waited %v with only its own requests in flight, want no wait", d)
	}

	l.tryAcquire("tenant_b", 1)
	l.tryAcquire("tenant_c", 1)
	done := make(chan time.Duration, 1)
	go func() { done <- l.waitForOthers(context.Background(), "tenant_a", time.Minute) }()
	for asides(l) != 1 {
		time.Sleep(time.Millisecond)
	}
	l.release("tenant_a", 1) // its own: no wake
	l.release("tenant_b", 1) // tenant_c still in flight
	select {
	case d := <-done:
		t.Fatalf("woke after %v with tenant_c's request still in flight", d)
	case <-time.After(20 * time.Millisecond):
	}
	l.release("tenant_c", 1)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("still waiting after the other tenants' last request ended")
	}
	if n := asides(l); n != 0 {
		t.Fatalf("%d waiters left after the wake, want 0", n)
	}

	l.tryAcquire("tenant_b", 1)
	if d := l.waitForOthers(context.Background(), "tenant_a", 5*time.Millisecond); d < 5*time.Millisecond || d > 5*time.Second {
		t.Fatalf("with tenant_b in flight throughout, waited %v, want its bound of 5ms", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if d := l.waitForOthers(ctx, "tenant_a", time.Minute); d > 5*time.Second {
		t.Fatalf("a given-up caller waited %v", d)
	}
	if n := asides(l); n != 0 {
		t.Fatalf("%d waiters left after a timeout and a cancel, want 0", n)
	}
}

// TestShareLimiter_OthersSince: whether another tenant was admitted since
// a time, whatever the order of admissions; requests without a tenant are
// not a tenant.
func TestShareLimiter_OthersSince(t *testing.T) {
	l := newShareLimiter(64, 64, 0)
	before := time.Now().Add(-time.Millisecond)
	l.tryAcquire("", 1)
	l.tryAcquire("tenant_a", 1)
	l.tryAcquire("tenant_a", 1)
	if l.othersSince("tenant_a", before) {
		t.Fatal("tenant_a sees another tenant where only it and no tenant were admitted")
	}
	if !l.othersSince("tenant_b", before) {
		t.Fatal("tenant_b does not see tenant_a's admissions")
	}
	l.tryAcquire("tenant_b", 1)
	l.tryAcquire("tenant_b", 1)
	for _, tenant := range []string{"tenant_a", "tenant_b", "tenant_c"} {
		if !l.othersSince(tenant, before) {
			t.Errorf("%s does not see the other tenant's admission", tenant)
		}
	}
	if l.othersSince("tenant_a", time.Now().Add(time.Millisecond)) {
		t.Error("tenant_a sees an admission after now")
	}
}

// TestBatchPacer: alone, a batch goes in one step; with another tenant
// appending, in steps of batchStep, and its waits for the other tenant
// never add up to more than the time it worked.
func TestBatchPacer(t *testing.T) {
	s := &Server{appends: newShareLimiter(16, 16, 0)}
	ctx := context.WithValue(context.Background(), principalKey, principal{tenant: "tenant_a"})
	if s.batchPacer(context.Background()) != nil {
		t.Fatal("a batch without a tenant is paced; there are no shares to keep")
	}
	s.appends.tryAcquire("tenant_a", 1000)
	if n := s.batchPacer(ctx)(ctx); n < 1000 {
		t.Fatalf("alone, a step of %d events; want the whole batch", n)
	}

	s.appends.tryAcquire("tenant_b", 1) // in flight throughout
	pace := s.batchPacer(ctx)
	var waited, worked time.Duration
	for range 50 {
		start := time.Now()
		if n := pace(ctx); n != batchStep {
			t.Fatalf("with tenant_b appending, a step of %d events, want %d", n, batchStep)
		}
		waited += time.Since(start)
		start = time.Now()
		time.Sleep(100 * time.Microsecond) // the step's work
		worked += time.Since(start)
	}
	t.Logf("50 steps: waited %v, worked %v", waited, worked)
	// Unbounded, the steps would wait 50 x batchStepWait (100ms); the
	// slack is for a late timer on a busy machine.
	if waited == 0 || waited > worked+20*time.Millisecond {
		t.Fatalf("waited %v in all for %v of work; want some wait, and no more than the work", waited, worked)
	}
}

// TestAcquireLargeWork: a large projection takes a large-work slot only
// while another tenant reads from the store; then it waits for a slot, as
// long as its context allows.
func TestAcquireLargeWork(t *testing.T) {
	s := &Server{storeReads: newShareLimiter(8, 4, 0), largeWork: make(semaphore, 1)}
	ctxA := context.WithValue(context.Background(), principalKey, principal{tenant: "tenant_a"})
	s.storeReads.tryAcquire("tenant_a", 0)
	for range 3 { // alone: no slot taken, however many
		release, err := s.acquireLargeWork(ctxA)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
	}
	if n := len(s.largeWork); n != 0 {
		t.Fatalf("tenant_a alone holds %d large-work slots, want none", n)
	}

	s.storeReads.tryAcquire("tenant_b", 0)
	release, err := s.acquireLargeWork(ctxA)
	if err != nil || len(s.largeWork) != 1 {
		t.Fatalf("with tenant_b reading: %v, %d slots taken; want the one", err, len(s.largeWork))
	}
	got := make(chan error, 1)
	go func() {
		r, err := s.acquireLargeWork(ctxA)
		if err == nil {
			r()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("a second large projection did not wait for the slot: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	release()
	if err := <-got; err != nil {
		t.Fatalf("the waiting projection, once the slot was freed: %v", err)
	}

	hold, _ := s.acquireLargeWork(ctxA)
	defer hold()
	ctx, cancel := context.WithTimeout(ctxA, 10*time.Millisecond)
	defer cancel()
	if _, err := s.acquireLargeWork(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting past its deadline: %v, want the deadline's error", err)
	}
}

// TestLargeRuns_BoundedOldestFirst: the set of runs remembered as large
// never holds more than largeRunsKept; the oldest added goes first, a run
// added again keeps its place, and a removed one is no longer large (and
// its stale ring entry evicts nothing that was added after it).
func TestLargeRuns_BoundedOldestFirst(t *testing.T) {
	var l largeRuns
	id := func(i int) string { return "run-" + strconv.Itoa(i) }
	for i := range largeRunsKept {
		l.add(id(i))
	}
	l.add(id(0)) // already there: no eviction
	if !l.has(id(0)) || len(l.ids) != largeRunsKept {
		t.Fatalf("after adding run-0 again: has %v, %d kept", l.has(id(0)), len(l.ids))
	}
	l.add(id(largeRunsKept))
	if l.has(id(0)) || !l.has(id(1)) || !l.has(id(largeRunsKept)) || len(l.ids) != largeRunsKept {
		t.Fatalf("one past the bound: run-0 %v (want evicted), run-1 %v, newest %v, %d kept", l.has(id(0)), l.has(id(1)), l.has(id(largeRunsKept)), len(l.ids))
	}
	l.remove(id(1))
	if l.has(id(1)) {
		t.Fatal("a removed run is still large")
	}
	for i := range 3 * largeRunsKept {
		l.add(id(10_000 + i))
		if len(l.ids) > largeRunsKept {
			t.Fatalf("%d runs kept, bound %d", len(l.ids), largeRunsKept)
		}
	}
}
