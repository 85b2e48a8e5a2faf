package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/runstream/runstream/store"
)

// Limits bound every resource a caller can hold (docs/SECURITY.md,
// "Limits"). Beyond a
// limit the answer is 429 (this tenant holds too much) or 503 (the process
// does), with Retry-After, at once; only a snapshot read from the store
// waits, a second at most, for a slot (acquireStoreRead): nothing waits in
// an unbounded queue. Zero values take the defaults noted;
// docs/SECURITY.md lists them with their flags.
type Limits struct {
	// MaxHeaderBytes bounds a request's header block (431 past it); 0
	// means 32 KiB. Go's default is 1 MiB, which lets 600 unfinished
	// requests hold about a gigabyte.
	MaxHeaderBytes int
	// RequestTimeout bounds reading a request's body and writing its
	// answer, for every route but the SSE streams (408 when the body is
	// too slow); 0 means 30s.
	RequestTimeout time.Duration
	// MaxConnections bounds open client connections; at it, a new one
	// takes the slot of an idle one (conns.go), else it answers health,
	// readiness and metrics only, past those a bare 503. 0 means 4096.
	MaxConnections int
	// MaxInflightAppends bounds appends (single or batch) being written to
	// the store at once (503 past it); 0 means 256.
	MaxInflightAppends int
	// MaxInflightAppendsPerTenant is one tenant's share of them (429 past
	// it); 0 means an eighth of MaxInflightAppends (32), at least 1. A
	// share as large as MaxInflightAppends is no share.
	MaxInflightAppendsPerTenant int
	// MaxInflightEventsPerTenant bounds the events of one tenant's appends
	// in flight (429 past it): a batch counts its events, a single append
	// one; a tenant with nothing in flight may send a larger batch. 0
	// means 1000, one full batch.
	MaxInflightEventsPerTenant int
	// MaxWatchers bounds open SSE streams of the process (503 past it);
	// MaxWatchersPerTenant those of one tenant (429). 0 means 10,000 and
	// 1,000.
	MaxWatchers          int
	MaxWatchersPerTenant int
	// MaxConsistentReads bounds snapshot projections from the store
	// running at once: ?consistent=true, and the snapshots and watches of
	// runs Redis does not hold. A read past it waits up to a second for a
	// slot, then answers 503. 0 means 8.
	MaxConsistentReads int
	// MaxConsistentReadsPerTenant is one tenant's share of them: past it
	// a read waits the same second for one of its tenant's to end, then
	// answers 429. 0 means half of MaxConsistentReads (4), at least 1.
	MaxConsistentReadsPerTenant int
	// TenantResyncsPerMinute is how many resyncs of its own runs a tenant
	// may ask for per minute (a burst of as many, then a steady rate); 0
	// means 30. Operators are not limited.
	TenantResyncsPerMinute int
}

func (l *Limits) setDefaults() {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&l.MaxHeaderBytes, 32<<10)
	def(&l.MaxConnections, 4096)
	def(&l.MaxInflightAppends, 256)
	def(&l.MaxWatchers, 10000)
	def(&l.MaxWatchersPerTenant, 1000)
	def(&l.MaxConsistentReads, 8)
	def(&l.MaxInflightAppendsPerTenant, max(1, l.MaxInflightAppends/8))
	def(&l.MaxInflightEventsPerTenant, 1000)
	def(&l.MaxConsistentReadsPerTenant, max(1, l.MaxConsistentReads/2))
	def(&l.TenantResyncsPerMinute, 30)
	if l.RequestTimeout == 0 {
		l.RequestTimeout = 30 * time.Second
	}
}

// Validate names the first limit set below its minimum.
func (l Limits) Validate() error {
	for _, c := range []struct {
		name string
		v    int
		min  int
	}{
		{"--max-header-bytes", l.MaxHeaderBytes, 1024},
		{"--max-connections", l.MaxConnections, 1},
		{"--max-inflight-appends", l.MaxInflightAppends, 1},
		{"--max-inflight-appends-per-tenant", l.MaxInflightAppendsPerTenant, 1},
		{"--max-inflight-events-per-tenant", l.MaxInflightEventsPerTenant, 1},
		{"--max-watchers", l.MaxWatchers, 1},
		{"--max-watchers-per-tenant", l.MaxWatchersPerTenant, 1},
		{"--max-consistent-reads", l.MaxConsistentReads, 1},
		{"--max-consistent-reads-per-tenant", l.MaxConsistentReadsPerTenant, 1},
		{"--tenant-resyncs-per-minute", l.TenantResyncsPerMinute, 1},
	} {
		if c.v != 0 && c.v < c.min {
			return fmt.Errorf("%s must be at least %d (0 takes the default), got %d", c.name, c.min, c.v)
		}
	}
	if l.RequestTimeout < 0 || (l.RequestTimeout > 0 && l.RequestTimeout < time.Second) {
		return fmt.Errorf("--request-timeout must be at least 1s (0 takes the default), got %v", l.RequestTimeout)
	}
	return nil
}

// httpError is an answer that is not one of the store's codes' usual
// statuses: a limit (429, 503 with its own Retry-After), a slow body
// (408), a wrong method (405 with Allow), an unsupported media type (415).
type httpError struct {
	status     int
	code       store.Code
	field      string
	msg        string
	retryAfter int // seconds; 0: none
	allow      string
}

func (e *httpError) Error() string { return e.msg }

// limitError is the answer past a limit: 429 when the caller's tenant
// holds too much, 503 when the process does.
func limitError(status int, retryAfter int, format string, args ...any) *httpError {
	return &httpError{status: status, code: store.CodeUnavailable, retryAfter: retryAfter, msg: fmt.Sprintf(format, args...)}
}

// errClientGone marks a request whose client hung up (mid-body or while
// we worked): logged at DEBUG and counted as 499, never as a 5xx.
var errClientGone = errors.New("client closed the request")

// classifyBodyError turns a failed body read into the answer it deserves.
func (s *Server) classifyBodyError(r *http.Request, err error) error {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return &store.Error{Code: store.CodePayloadTooLarge,
			Message: fmt.Sprintf("request body exceeds %d bytes (RUNSTREAM_MAX_BODY_BYTES); send fewer events per batch or a smaller payload", tooBig.Limit)}
	case errors.Is(err, os.ErrDeadlineExceeded):
		return &httpError{status: http.StatusRequestTimeout, code: "REQUEST_TIMEOUT",
			msg: fmt.Sprintf("the request body did not arrive within %v (--request-timeout); send it at once", s.cfg.Limits.RequestTimeout)}
	case r.Context().Err() != nil, errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, net.ErrClosed), errors.Is(err, syscall.EPIPE):
		return fmt.Errorf("%w: reading the body: %v", errClientGone, err)
	}
	return fmt.Errorf("reading request body: %w", err)
}

// semaphore is a non-blocking counting limit.
type semaphore chan struct{}

func (s semaphore) tryAcquire() bool {
	select {
	case s <- struct{}{}:
		return true
	default:
		return false
	}
}

func (s semaphore) release() { <-s }

// watcherLimits counts open SSE streams, in all and per tenant.
type watcherLimits struct {
	mu        sync.Mutex
	total     int
	perTenant map[string]int
}

// acquire takes a stream slot for tenant, or says why not.
func (w *watcherLimits) acquire(l Limits, tenant string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.total >= l.MaxWatchers {
		return limitError(http.StatusServiceUnavailable, 5,
			"this API process has %d live streams open, its limit (--max-watchers); retry shortly or on another replica", l.MaxWatchers)
	}
	if w.perTenant[tenant] >= l.MaxWatchersPerTenant {
		return limitError(http.StatusTooManyRequests, 5,
			"your tenant has %d live streams open on this API process, its limit (--max-watchers-per-tenant); close some", l.MaxWatchersPerTenant)
	}
	if w.perTenant == nil {
		w.perTenant = map[string]int{}
	}
	w.total++
	w.perTenant[tenant]++
	return nil
}

func (w *watcherLimits) release(tenant string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.total--
	if w.perTenant[tenant]--; w.perTenant[tenant] <= 0 {
		delete(w.perTenant, tenant)
	}
}

// rateLimiter is a token bucket per key (tenants: as many as configured
// tokens, so the map is bounded by the configuration).
type rateLimiter struct {
	mu      sync.Mutex
	perMin  int
	buckets map[string]*bucket
	now     func() time.Time
}

type bucket struct {
	tokens float64
	at     time.Time
}

// allow takes one token of key's bucket; when there is none it says how
// many seconds until there is.
func (rl *rateLimiter) allow(key string) (ok bool, retryAfter int) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	now := rl.now()
	b := rl.buckets[key]
	if b == nil {
		b = &bucket{tokens: float64(rl.perMin), at: now}
		rl.buckets[key] = b
	}
	rate := float64(rl.perMin) / 60 // tokens per second
	b.tokens = min(float64(rl.perMin), b.tokens+now.Sub(b.at).Seconds()*rate)
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, int((1-b.tokens)/rate) + 1
}

// retryAfterHeader formats seconds for Retry-After.
func retryAfterHeader(sec int) string { return strconv.Itoa(max(sec, 1)) }
