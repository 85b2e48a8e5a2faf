package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runstream/runstream/internal/testenv/testkafka"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
)

// loadConfig shapes the workload the harness drives.
type loadConfig struct {
	apis    []string // base URLs
	tenants []string
	// concurrency is the number of runs in flight.
	concurrency int
	// eventDelay bounds the pause before each of a run's events.
	minDelay, maxDelay time.Duration
	// idleFraction of runs stop before their terminal event and get no
	// later events: idle runs, the ones only anti-entropy can repair after
	// Redis lost them.
	idleFraction float64
	// stormRate is the chance that an event is sent as a duplicate storm:
	// stormCopies copies at once, alternately to each API.
	stormRate   float64
	stormCopies int
	// replayEvery, a storm of an event acknowledged earlier (a producer
	// retrying long after): every copy must be answered as a duplicate.
	replayEvery time.Duration
	// refused are the partitions the broker refuses during the refusal
	// fault; partitions is the topic's partition count.
	refused    map[int32]bool
	partitions int32
}

// runRec is what the producer knows of one run: the answers it got.
type runRec struct {
	id, tenant string
	planned    int  // events generated for it
	idle       bool // cut short on purpose
	acked      int  // events answered (duplicates of the workload included)
	lastSeq    int64
	keySeq     map[string]int64 // idempotency key -> runSeq answered
	seqEvent   map[int64]string // runSeq -> eventId answered
	created    map[string]int   // idempotency key -> 201 answers
	finished   bool             // every planned event acknowledged
}

// sent is an acknowledged event kept for replay storms.
type sent struct {
	runID, key string
	body       []byte
}

// load drives runs against the APIs and records every acknowledgement.
type load struct {
	cfg    loadConfig
	client *http.Client

	mu      sync.Mutex
	runs    map[string]*runRec
	order   []string
	errs    []string
	replays []sent // ring of recently acknowledged events

	requests   atomic.Int64 // HTTP requests sent
	retries    atomic.Int64 // requests sent again after a failure
	duplicates atomic.Int64 // copies sent beyond the first (storms, replays)
	storms     atomic.Int64
	unavail    atomic.Int64 // 5xx/429 answers and transport errors
	// lastUnavail is when the latest of them came (unix nanoseconds).
	lastUnavail atomic.Int64

	// refusing is set while the broker refuses produce requests: a run on a
	// refused partition then stops after its next event, which the relay
	// dead-letters, so that no later event reveals the loss (a
	// dead-lettered tail, which only anti-entropy repairs).
	refusing atomic.Bool
	tailCuts atomic.Int64

	stopping chan struct{} // closed: start no new event
	wg       sync.WaitGroup
}

func newLoad(cfg loadConfig) *load {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	return &load{cfg: cfg, client: &http.Client{Timeout: 5 * time.Second, Transport: tr},
		runs: map[string]*runRec{}, stopping: make(chan struct{})}
}

func (l *load) stopped() bool {
	select {
	case <-l.stopping:
		return true
	default:
		return false
	}
}

// start launches the workers. ctx bounds every request (a hard deadline:
// an append still unanswered when it ends is an error); stop ends the load
// gracefully.
func (l *load) start(ctx context.Context) {
	for i := range l.cfg.concurrency {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(i)))
			for n := 0; !l.stopped() && ctx.Err() == nil; n++ {
				l.driveRun(ctx, rng, l.cfg.tenants[(i+n)%len(l.cfg.tenants)])
			}
		}()
	}
	if l.cfg.replayEvery > 0 {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1<<20))
			tick := time.NewTicker(l.cfg.replayEvery)
			defer tick.Stop()
			for {
				select {
				case <-l.stopping:
					return
				case <-ctx.Done():
					return
				case <-tick.C:
					l.replay(ctx, rng)
				}
			}
		}()
	}
}

// stop lets each worker finish the event in hand (so every append sent is
// answered) and waits for them.
// lastUnavailable is when the latest unavailable answer (or transport
// error) came; the zero time when none did.
func (l *load) lastUnavailable() time.Time {
	if n := l.lastUnavail.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

func (l *load) stop() {
	close(l.stopping)
	l.wg.Wait()
}

func (l *load) errorf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, fmt.Sprintf(format, args...))
}

func (l *load) driveRun(ctx context.Context, rng *rand.Rand, tenant string) {
	evs := workload.Run(rng, tenant, workload.Options{})
	rec := &runRec{id: evs[0].RunID, tenant: tenant, keySeq: map[string]int64{},
		seqEvent: map[int64]string{}, created: map[string]int{}}
	if len(evs) > 2 && rng.Float64() < l.cfg.idleFraction {
		evs = evs[:1+rng.IntN(len(evs)-1)]
		rec.idle = true
	}
	rec.planned = len(evs)
	l.mu.Lock()
	l.runs[rec.id] = rec
	l.order = append(l.order, rec.id)
	l.mu.Unlock()
	for _, ev := range evs {
		if l.stopped() {
			return
		}
		d := l.cfg.minDelay + time.Duration(rng.Int64N(int64(l.cfg.maxDelay-l.cfg.minDelay)+1))
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return
		}
		// Stamp the real emission time (the generator's clock runs ahead).
		ev.EmittedAt = time.Now().UTC().Format(time.RFC3339Nano)
		copies := 1
		if rng.Float64() < l.cfg.stormRate {
			copies = l.cfg.stormCopies
		}
		if !l.appendEvent(ctx, rec, ev, copies, rng.IntN(len(l.cfg.apis))) {
			return
		}
		if l.refusing.Load() && l.cfg.refused[partitionOf(rec.id, l.cfg.partitions)] {
			l.mu.Lock()
			rec.idle = true
			l.mu.Unlock()
			l.tailCuts.Add(1)
			return
		}
	}
	l.mu.Lock()
	rec.finished = true
	l.mu.Unlock()
}

// answer is one copy's final answer.
type answer struct {
	res    store.AppendResult
	status int
	err    error
}

// appendEvent sends ev (copies times at once when a storm) and records the
// answer; it reports whether the run can go on.
func (l *load) appendEvent(ctx context.Context, rec *runRec, ev store.RunEventWrite, copies, api int) bool {
	body, err := json.Marshal(ev)
	if err != nil {
		l.errorf("marshalling an event of run %s: %v", rec.id, err)
		return false
	}
	answers := l.send(ctx, body, copies, api)
	if copies > 1 {
		l.storms.Add(1)
		l.duplicates.Add(int64(copies - 1))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var first *store.AppendResult
	for i, a := range answers {
		if a.err != nil {
			l.errs = append(l.errs, fmt.Sprintf("run %s: %s (key %.12s, copy %d of %d) never acknowledged: %v", rec.id, ev.EventType, ev.IdempotencyKey, i+1, copies, a.err))
			return false
		}
		if a.status == http.StatusCreated {
			rec.created[ev.IdempotencyKey]++
		}
		if first == nil {
			first = &answers[i].res
		} else if a.res.EventID != first.EventID || a.res.RunSeq != first.RunSeq {
			l.errs = append(l.errs, fmt.Sprintf("run %s: a storm of %d copies of %s got different answers: (%s, %d) and (%s, %d)",
				rec.id, copies, ev.EventType, first.EventID, first.RunSeq, a.res.EventID, a.res.RunSeq))
		}
	}
	if n := rec.created[ev.IdempotencyKey]; n > 1 {
		l.errs = append(l.errs, fmt.Sprintf("run %s: %s (key %.12s) was answered 201 Created %d times", rec.id, ev.EventType, ev.IdempotencyKey, n))
	}
	res := *first
	rec.acked++
	if seq, ok := rec.keySeq[ev.IdempotencyKey]; ok {
		// The workload's engine retry: the same key again, answered as the
		// first.
		if res.RunSeq != seq || !res.Idempotent || rec.seqEvent[seq] != res.EventID {
			l.errs = append(l.errs, fmt.Sprintf("run %s: a duplicate %s was answered (%s, %d, idempotent=%v), the first was (%s, %d)",
				rec.id, ev.EventType, res.EventID, res.RunSeq, res.Idempotent, rec.seqEvent[seq], seq))
		}
		return true
	}
	// A new key: the next runSeq, with our eventId (answered idempotent
	// only when an earlier attempt committed and its answer was lost).
	if res.RunSeq != rec.lastSeq+1 || res.EventID != ev.EventID {
		l.errs = append(l.errs, fmt.Sprintf("run %s: %s was answered (%s, runSeq %d), want (%s, runSeq %d)",
			rec.id, ev.EventType, res.EventID, res.RunSeq, ev.EventID, rec.lastSeq+1))
	}
	rec.lastSeq = max(rec.lastSeq, res.RunSeq)
	rec.keySeq[ev.IdempotencyKey] = res.RunSeq
	rec.seqEvent[res.RunSeq] = res.EventID
	if len(l.replays) < 256 {
		l.replays = append(l.replays, sent{rec.id, ev.IdempotencyKey, body})
	} else {
		l.replays[int(res.RunSeq*7919+int64(len(rec.id)))%len(l.replays)] = sent{rec.id, ev.IdempotencyKey, body}
	}
	return true
}

// replay sends a storm of an event acknowledged earlier: every copy must
// be answered as a duplicate with the runSeq and eventId recorded.
func (l *load) replay(ctx context.Context, rng *rand.Rand) {
	l.mu.Lock()
	if len(l.replays) == 0 {
		l.mu.Unlock()
		return
	}
	s := l.replays[rng.IntN(len(l.replays))]
	rec := l.runs[s.runID]
	seq := rec.keySeq[s.key]
	eventID := rec.seqEvent[seq]
	l.mu.Unlock()
	copies := max(l.cfg.stormCopies, 2)
	answers := l.send(ctx, s.body, copies, rng.IntN(len(l.cfg.apis)))
	l.storms.Add(1)
	l.duplicates.Add(int64(copies))
	for i, a := range answers {
		switch {
		case a.err != nil:
			l.errorf("run %s: replay copy %d of runSeq %d never answered: %v", s.runID, i+1, seq, a.err)
		case a.status != http.StatusOK || !a.res.Idempotent || a.res.Persisted || a.res.RunSeq != seq || a.res.EventID != eventID:
			l.errorf("run %s: replay copy %d of runSeq %d (%s) was answered %d (%s, %d, idempotent=%v, persisted=%v)",
				s.runID, i+1, seq, eventID, a.status, a.res.EventID, a.res.RunSeq, a.res.Idempotent, a.res.Persisted)
		}
	}
}

// send posts body copies times at once, copy i first to API (api+i) and
// to the next API after each failure; it returns each copy's final answer.
func (l *load) send(ctx context.Context, body []byte, copies, api int) []answer {
	answers := make([]answer, copies)
	if copies == 1 {
		answers[0] = l.sendOne(ctx, body, api)
		return answers
	}
	var wg sync.WaitGroup
	for i := range copies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = l.sendOne(ctx, body, api+i)
		}()
	}
	wg.Wait()
	return answers
}

// sendOne posts body until it is answered 200 or 201, retrying transport
// errors, 429 and 5xx (a producer client's retries: the same event, so
// idempotent) until ctx ends. Another 4xx is final.
func (l *load) sendOne(ctx context.Context, body []byte, api int) answer {
	backoff := 50 * time.Millisecond
	var last string
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			l.retries.Add(1)
		}
		base := l.cfg.apis[(api+attempt)%len(l.cfg.apis)]
		l.requests.Add(1)
		status, b, err := l.post(ctx, base+"/v1/events", body)
		switch {
		case err == nil && (status == http.StatusCreated || status == http.StatusOK):
			var res store.AppendResult
			if err := json.Unmarshal(b, &res); err != nil {
				return answer{status: status, err: fmt.Errorf("decoding the answer %q: %w", b, err)}
			}
			return answer{res: res, status: status}
		case err == nil && status != http.StatusTooManyRequests && status < 500:
			return answer{status: status, err: fmt.Errorf("refused with %d: %s", status, b)}
		case err != nil:
			last = err.Error()
		default:
			last = fmt.Sprintf("%d %s", status, b)
		}
		l.unavail.Add(1)
		l.lastUnavail.Store(time.Now().UnixNano())
		select {
		case <-ctx.Done():
			return answer{err: fmt.Errorf("gave up at the load's deadline after %d attempts; last: %s", attempt+1, last)}
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, time.Second)
	}
}

func (l *load) post(ctx context.Context, url string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := l.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, b, err
}

// snapshot is the load's record once it stopped.
type loadResult struct {
	runs       []*runRec // in creation order
	acked      int       // distinct events acknowledged (runSeqs)
	errs       []string
	idle       int
	finished   int
	requests   int64
	retries    int64
	duplicates int64
	storms     int64
	unavail    int64
	tailCuts   int64
}

func (l *load) result() loadResult {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := loadResult{errs: append([]string(nil), l.errs...), requests: l.requests.Load(), retries: l.retries.Load(),
		duplicates: l.duplicates.Load(), storms: l.storms.Load(), unavail: l.unavail.Load(),
		tailCuts: l.tailCuts.Load()}
	for _, id := range l.order {
		rec := l.runs[id]
		if len(rec.seqEvent) == 0 {
			continue // stopped before its first event was answered
		}
		r.runs = append(r.runs, rec)
		r.acked += len(rec.seqEvent)
		if rec.idle || !rec.finished {
			r.idle++
		} else {
			r.finished++
		}
	}
	return r
}

// runIDs returns the runs' IDs, sorted.
func (r loadResult) runIDs() []string {
	ids := make([]string, len(r.runs))
	for i, rec := range r.runs {
		ids[i] = rec.id
	}
	sort.Strings(ids)
	return ids
}

// partitionOf is the partition Kafka's default partitioner (murmur2, as
// franz-go's and the relay's) gives a run's records.
func partitionOf(runID string, partitions int32) int32 {
	return testkafka.Partition([]byte(runID), partitions)
}
