package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/runstream/runstream/internal/retry"
	"github.com/runstream/runstream/store"
)

// maxBatchEvents is the API's limit of events per batch request
// (httpapi MaxBatchEvents); AppendBatch splits longer slices.
const maxBatchEvents = 1000

// maxAnswerBytes bounds what is read of an answer.
const maxAnswerBytes = 16 << 20

// Result answers an Append: the API's AppendResult, or Spooled when the
// event failed open into the spool (then only EventID is set; the
// runSeq is assigned when the spool drains).
type Result struct {
	store.AppendResult
	// Spooled is true when the event was written (and fsynced) to the
	// spool instead of the API.
	Spooled bool `json:"spooled,omitempty"`
}

// BatchResult is one event's outcome in AppendBatch: a Result, or Err.
type BatchResult struct {
	Result
	// Err is the event's error: the API's *store.Error for the item, the
	// local validation error (the same the API would give, with its Field
	// prefixed events[i]. as the API does), or a budget or spool error.
	Err error
}

// Client appends run events to a runstream API. It is safe for concurrent
// use. Appends for one run that the caller issues one after the other
// (each returning before the next starts) are stored in that order, spooled
// or not; concurrent appends for one run have no order, as over HTTP.
type Client struct {
	cfg       Config
	hc        *http.Client
	ownsHC    bool // hc was made by New: Close closes its idle connections
	eventsURL string
	batchURL  string
	auth      string
	failOpen  map[string]bool
	allowed   map[string]bool // Config.AllowEventTypes
	log       *slog.Logger

	// sp is nil without a SpoolDir.
	sp *spool
	// sem is held by whoever sends spooled events (the drainer, Drain, or
	// an Append delivering its run's spooled events first), so that a
	// run's spooled events are never sent by two at once.
	sem  chan struct{}
	kick chan struct{}

	stopDrainer context.CancelFunc
	wg          sync.WaitGroup
	closeOnce   sync.Once
	closed      atomic.Bool
	closeErr    error
}

// New validates cfg, opens (and locks) the spool when SpoolDir is set,
// and starts the background drainer that delivers spooled events. Close
// the Client to stop it and release the spool.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ownsHC := cfg.HTTPClient == nil
	cfg.setDefaults()
	base := strings.TrimRight(cfg.URL, "/")
	c := &Client{cfg: cfg, hc: cfg.HTTPClient, ownsHC: ownsHC, eventsURL: base + "/v1/events", batchURL: base + "/v1/events:batch",
		failOpen: map[string]bool{}, allowed: map[string]bool{}, log: cfg.Logger.With("component", "client"),
		sem: make(chan struct{}, 1), kick: make(chan struct{}, 1)}
	if cfg.Token != "" {
		c.auth = "Bearer " + cfg.Token
	}
	for _, t := range cfg.FailOpen {
		c.failOpen[t] = true
	}
	for _, t := range cfg.AllowEventTypes {
		c.allowed[t] = true
	}
	if cfg.SpoolDir != "" {
		// Opened even with DisableFailOpen: a spool left by an earlier
		// process still holds events to deliver, in order, before new ones.
		sp, err := openSpool(cfg.SpoolDir, cfg.MaxSpoolBytes, c.log)
		if err != nil {
			return nil, err
		}
		c.sp = sp
		// The drainer belongs to the Client, not to a request: Close ends
		// it (as http.Server owns its listeners' goroutines).
		ctx, cancel := context.WithCancel(context.Background())
		c.stopDrainer = cancel
		c.wg.Add(1)
		go c.drainLoop(ctx)
	}
	return c, nil
}

// Close stops the background drainer and waits for it, then releases the
// spool. Spooled events stay on disk for the next Client on the same
// SpoolDir. Close is idempotent; later appends fail with [ErrClosed].
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		if c.ownsHC {
			defer c.hc.CloseIdleConnections()
		}
		if c.sp == nil {
			return
		}
		c.stopDrainer()
		c.wg.Wait()
		c.sem <- struct{}{} // wait for an Append delivering its run's spool
		c.closeErr = c.sp.close()
	})
	return c.closeErr
}

// Spooled reports how many spooled events are not yet delivered.
func (c *Client) Spooled() int64 {
	if c.sp == nil {
		return 0
	}
	return c.sp.pending.Load()
}

// Append appends one event. An empty EventID is filled in (a random UUID v4),
// an empty EmittedAt (now, RFC 3339 UTC) and an empty IdempotencyKey (the v2
// key, [store.IdempotencyKey]). An event type neither the contract's nor in
// Config.AllowEventTypes is refused with an [*UnknownEventTypeError]. The
// event is then validated as the API would: a bad event returns the API's own
// *store.Error (code, field, message) and is neither sent nor spooled.
// [Client.Run] fills in the rest of the envelope as well.
//
// Append takes at most Config.WriteLatencyBudget (or less, if ctx ends
// first), retries included: 429, 503 and transport errors are retried
// with exponential backoff and full jitter, or after the Retry-After the
// API sends; 400, 401, 403, 404, 413 and other answers are returned at
// once as *store.Error. If the run has spooled events, they are delivered
// first, within the same budget.
//
// When the event cannot be delivered within the budget, a FailOpen type is
// spooled (Result.Spooled, nil error); any other type returns an error
// wrapping [ErrBudgetExceeded] (or [ErrNotDelivered], or the caller's ctx
// error) and the last answer, so the engine can fail the step.
func (c *Client) Append(ctx context.Context, w store.RunEventWrite) (Result, error) {
	if c.closed.Load() {
		return Result{}, ErrClosed
	}
	body, err := c.encode(&w)
	if err != nil {
		return Result{}, fmt.Errorf("appending %s: %w", describe(&w), err)
	}
	ctx, cancel := c.budget(ctx)
	defer cancel()
	if c.sp != nil && c.sp.hasPending(w.RunID) {
		if err := c.drainRun(ctx, w.RunID); err != nil {
			return c.undelivered(&w, body, fmt.Errorf("delivering the run's earlier spooled events first: %w", err))
		}
	}
	answer, out, err := c.send(ctx, c.eventsURL, body)
	switch out {
	case delivered:
		var res Result
		if err := json.Unmarshal(answer, &res.AppendResult); err != nil {
			return Result{}, fmt.Errorf("appending %s: reading the API's answer %.200q: %w", describe(&w), answer, err)
		}
		return res, nil
	case refused:
		return Result{}, fmt.Errorf("appending %s: %w", describe(&w), err)
	}
	return c.undelivered(&w, body, err)
}

// undelivered is what happens to an event the API did not take in time:
// a fail-open type goes to the spool, any other type is an error.
func (c *Client) undelivered(w *store.RunEventWrite, body []byte, cause error) (Result, error) {
	if !c.failOpen[w.EventType] {
		return Result{}, fmt.Errorf("appending %s (never fails open): %w", describe(w), cause)
	}
	if err := c.sp.put(body, w.RunID); err != nil {
		return Result{}, fmt.Errorf("appending %s: failing open to the spool: %w (the API: %w)", describe(w), err, cause)
	}
	c.log.Debug("event spooled", "runId", w.RunID, "eventId", w.EventID, "eventType", w.EventType, "err", cause)
	select {
	case c.kick <- struct{}{}:
	default:
	}
	return Result{AppendResult: store.AppendResult{EventID: w.EventID}, Spooled: true}, nil
}

// errBudget is the cause of a budget context's end.
var errBudget = errors.New("budget")

// budget bounds ctx by the write-latency budget.
func (c *Client) budget(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithDeadlineCause(ctx, time.Now().Add(c.cfg.WriteLatencyBudget), errBudget)
}

// AppendBatch appends events with POST /v1/events:batch (split into
// requests of at most 1000), within one write-latency budget for the
// whole call. Each event gets a BatchResult in input order; the error is
// non-nil only when the Client is closed. Invalid events get the API's
// error and are not sent; events of runs with spooled events wait for
// those to be delivered, as in Append; events the API did not take within
// the budget fail open or fail as in Append.
func (c *Client) AppendBatch(ctx context.Context, events []store.RunEventWrite) ([]BatchResult, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	out := make([]BatchResult, len(events))
	bodies := make([][]byte, len(events))
	ws := make([]store.RunEventWrite, len(events))
	copy(ws, events)
	var send []int
	for i := range ws {
		b, err := c.encode(&ws[i])
		if err != nil {
			var se *store.Error
			if errors.As(err, &se) && se.Field != "" {
				c := *se // the API names the item: events[3].runId
				c.Field = fmt.Sprintf("events[%d].%s", i, se.Field)
				err = &c
			}
			out[i].Err = fmt.Errorf("appending %s: %w", describe(&ws[i]), err)
			continue
		}
		bodies[i] = b
		send = append(send, i)
	}
	ctx, cancel := c.budget(ctx)
	defer cancel()
	// Runs with spooled events: deliver those first; a run whose spool
	// cannot be delivered keeps its new events behind it.
	blocked := map[string]error{}
	if c.sp != nil {
		for _, i := range send {
			id := ws[i].RunID
			if _, done := blocked[id]; done || !c.sp.hasPending(id) {
				continue
			}
			blocked[id] = c.drainRun(ctx, id)
		}
	}
	var ready []int
	for _, i := range send {
		if err := blocked[ws[i].RunID]; err != nil {
			out[i].Result, out[i].Err = c.undelivered(&ws[i], bodies[i], fmt.Errorf("delivering the run's earlier spooled events first: %w", err))
			continue
		}
		ready = append(ready, i)
	}
	for len(ready) > 0 {
		chunk := ready[:min(len(ready), maxBatchEvents)]
		ready = ready[len(chunk):]
		c.sendBatch(ctx, ws, bodies, chunk, out)
	}
	return out, nil
}

// sendBatch sends the events idx as one batch request and fills out.
func (c *Client) sendBatch(ctx context.Context, ws []store.RunEventWrite, bodies [][]byte, idx []int, out []BatchResult) {
	parts := make([][]byte, len(idx))
	for k, i := range idx {
		parts[k] = bodies[i]
	}
	answer, o, err := c.send(ctx, c.batchURL, batchBody(parts))
	if o == delivered {
		var items []batchItem
		items, err = decodeBatchAnswer(answer, len(idx))
		if err == nil {
			for k, i := range idx {
				if items[k].Error != nil {
					out[i].Err = fmt.Errorf("appending %s: %w", describe(&ws[i]), items[k].Error.storeError())
					continue
				}
				out[i].AppendResult = items[k].AppendResult
			}
			return
		}
		o = refused
	}
	for _, i := range idx {
		if o == refused {
			out[i].Err = fmt.Errorf("appending %s: %w", describe(&ws[i]), err)
			continue
		}
		out[i].Result, out[i].Err = c.undelivered(&ws[i], bodies[i], err)
	}
}

// batchBody joins encoded events into {"events":[...]}.
func batchBody(parts [][]byte) []byte {
	n := 16
	for _, p := range parts {
		n += len(p) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, `{"events":[`...)
	for k, p := range parts {
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, p...)
	}
	return append(b, "]}"...)
}

// batchItem is one entry of a batch answer.
type batchItem struct {
	store.AppendResult
	Error *errorDetail `json:"error"`
}

func decodeBatchAnswer(answer []byte, n int) ([]batchItem, error) {
	var a struct {
		Results []batchItem `json:"results"`
	}
	if err := json.Unmarshal(answer, &a); err != nil {
		return nil, fmt.Errorf("reading the API's batch answer %.200q: %w", answer, err)
	}
	if len(a.Results) != n {
		return nil, fmt.Errorf("the API answered %d results for a batch of %d events", len(a.Results), n)
	}
	return a.Results, nil
}

// errorDetail is the API's error body's "error" member.
type errorDetail struct {
	Code    store.Code `json:"code"`
	Message string     `json:"message"`
	Field   string     `json:"field"`
}

func (d *errorDetail) storeError() *store.Error {
	return &store.Error{Code: d.Code, Message: d.Message, Field: d.Field}
}

// describe names an event in errors: "StepStarted event <eventId> of run
// "r1"", leaving out what is empty.
func describe(w *store.RunEventWrite) string {
	var b strings.Builder
	if w.EventType != "" {
		b.WriteString(w.EventType)
		b.WriteByte(' ')
	}
	b.WriteString("event ")
	if w.EventID != "" {
		b.WriteString(w.EventID)
		b.WriteByte(' ')
	}
	if w.RunID == "" {
		b.WriteString("without a runId")
	} else {
		fmt.Fprintf(&b, "of run %q", w.RunID)
	}
	return b.String()
}

// outcome is how a send ended.
type outcome int

const (
	// delivered: a 2xx answer.
	delivered outcome = iota
	// refused: a definitive answer no retry changes (4xx, 500).
	refused
	// undelivered: no answer in time, or 429/503/502/504, or a transport
	// error: the event may fail open.
	undelivered
)

// send posts body to url until a definitive answer or the end of ctx
// (the budget). It retries 429, 503 and transport errors, waiting the
// Retry-After the API sent or a full-jitter backoff, and stops early
// when that wait would pass ctx's deadline.
func (c *Client) send(ctx context.Context, url string, body []byte) ([]byte, outcome, error) {
	start := time.Now()
	for attempt := 1; ; attempt++ {
		a, err := c.post(ctx, url, body)
		if err != nil {
			if ctx.Err() != nil {
				return nil, undelivered, c.gaveUp(ctx, start, attempt, err)
			}
			err = fmt.Errorf("sending to %s: %w", url, err)
			if !retryableTransport(err) {
				return nil, undelivered, fmt.Errorf("%w: %w", ErrNotDelivered, err)
			}
		} else {
			switch {
			case a.status/100 == 2:
				return a.body, delivered, nil
			case a.status == http.StatusTooManyRequests || a.status == http.StatusServiceUnavailable:
				err = apiError(a)
			case a.status == http.StatusBadGateway || a.status == http.StatusGatewayTimeout:
				// A proxy that could not reach the API: not retried (only
				// 429 and 503 are), but nothing was taken either.
				return nil, undelivered, fmt.Errorf("%w: %w", ErrNotDelivered, apiError(a))
			default:
				return nil, refused, apiError(a)
			}
		}
		wait := a.retryAfter
		if wait == 0 {
			wait = c.backoff(attempt)
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= wait {
			if a.retryAfter > 0 {
				err = fmt.Errorf("%w (the API asks to retry after %v, past the %v left)", err, a.retryAfter, time.Until(dl).Round(time.Millisecond))
			}
			return nil, undelivered, c.gaveUp(ctx, start, attempt, err)
		}
		if !retry.Sleep(ctx, wait) {
			return nil, undelivered, c.gaveUp(ctx, start, attempt, err)
		}
	}
}

// gaveUp is the error of a send that ran out of time: the budget, or the
// caller's ctx.
func (c *Client) gaveUp(ctx context.Context, start time.Time, attempts int, last error) error {
	cause := context.Cause(ctx)
	if cause == nil || errors.Is(cause, errBudget) || ctx.Err() == nil {
		return fmt.Errorf("%w (%v) after %d attempts in %v: %w", ErrBudgetExceeded, c.cfg.WriteLatencyBudget, attempts,
			time.Since(start).Round(time.Millisecond), last)
	}
	return fmt.Errorf("%w after %d attempts: %w", cause, attempts, last)
}

// backoff is the full-jitter wait before retry number attempt (1-based):
// uniform in [0, min(BackoffMax, BackoffBase * 2^(attempt-1))].
func (c *Client) backoff(attempt int) time.Duration {
	d := c.cfg.BackoffBase
	for i := 1; i < attempt && d < c.cfg.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, c.cfg.BackoffMax)
	return time.Duration(rand.Int64N(int64(d) + 1))
}

// retryableTransport reports whether a transport error may go away on
// its own. Certificate and TLS protocol errors do not.
func retryableTransport(err error) bool {
	var (
		cv  *tls.CertificateVerificationError
		ua  x509.UnknownAuthorityError
		hn  x509.HostnameError
		ci  x509.CertificateInvalidError
		rhe tls.RecordHeaderError
	)
	return !errors.As(err, &cv) && !errors.As(err, &ua) && !errors.As(err, &hn) && !errors.As(err, &ci) && !errors.As(err, &rhe)
}

// answer is an HTTP answer read whole.
type answer struct {
	status     int
	body       []byte
	retryAfter time.Duration
}

func (c *Client) post(ctx context.Context, url string, body []byte) (answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
	// An engine that traces its work (OpenTelemetry) passes its span in
	// ctx: the append continues its trace, and so does every hop after it.
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		req.Header.Set("traceparent", "00-"+sc.TraceID().String()+"-"+sc.SpanID().String()+"-"+sc.TraceFlags().String())
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return answer{}, fmt.Errorf("reading the answer (status %d): %w", resp.StatusCode, err)
	}
	a := answer{status: resp.StatusCode, body: b}
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		if s, err := strconv.Atoi(strings.TrimSpace(ra)); err == nil && s >= 0 {
			a.retryAfter = time.Duration(min(s, 3600)) * time.Second
		} else if t, err := http.ParseTime(ra); err == nil {
			a.retryAfter = max(time.Until(t), 0)
		}
	}
	return a, nil
}

// apiError is the API's error body as a *store.Error, or one made from
// the status when the body is not the API's (a proxy's page).
func apiError(a answer) error {
	var eb struct {
		Error *errorDetail `json:"error"`
	}
	if json.Unmarshal(a.body, &eb) == nil && eb.Error != nil && eb.Error.Code != "" {
		return eb.Error.storeError()
	}
	code := store.CodeInternal
	switch a.status {
	case http.StatusBadRequest:
		code = store.CodeSchemaValidationFailed
	case http.StatusUnauthorized:
		code = store.CodeUnauthenticated
	case http.StatusForbidden:
		code = store.CodeForbidden
	case http.StatusNotFound:
		code = store.CodeNotFound
	case http.StatusRequestEntityTooLarge:
		code = store.CodePayloadTooLarge
	case http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout:
		code = store.CodeUnavailable
	}
	return &store.Error{Code: code, Message: fmt.Sprintf("HTTP %d, not an answer of the runstream API: %.200q", a.status, a.body)}
}
