package workload

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runstream/runstream/internal/retry"
	"github.com/runstream/runstream/store"
)

// Driver plays producer against the HTTP API: it keeps Concurrency runs in
// flight and posts each run's events one at a time with a pause between,
// the way a workflow engine would. It retries 503s and network errors with
// backoff (the same event, so retries are idempotent) and gives up on an
// event only when ctx ends. When ctx ends it ends the runs it had in
// flight, as an engine that is shut down would, so that none stays
// RUNNING: each gets a RunCancelled, after the event it was posting when
// ctx ended (posted again: it may or may not have been stored); and it
// waits until the API's snapshots show them ended.
type Driver struct {
	// BaseURL of the API, e.g. http://127.0.0.1:8080.
	BaseURL string
	// Token is sent as a bearer token when not empty.
	Token string
	// Tenant of the generated runs; empty means "tenant_demo".
	Tenant string
	// Concurrency is the number of runs in flight; 0 means 4.
	Concurrency int
	// EventDelay is the pause between a run's events; 0 means 300ms.
	EventDelay time.Duration
	// Client; nil means a client with a 10s timeout.
	Client *http.Client
	// Logger; nil means discard.
	Logger *slog.Logger
	// StopTimeout bounds the ending of the runs in flight once ctx ended:
	// posting their RunCancelled, then waiting until the API's snapshots
	// show them ended. 0 means 5s.
	StopTimeout time.Duration

	events, runs atomic.Int64
}

// Stats returns how many events were appended and runs finished.
func (d *Driver) Stats() (events, runs int64) { return d.events.Load(), d.runs.Load() }

// Run drives runs until ctx ends; it returns nil then.
func (d *Driver) Run(ctx context.Context) error {
	if d.Tenant == "" {
		d.Tenant = "tenant_demo"
	}
	if d.Concurrency == 0 {
		d.Concurrency = 4
	}
	if d.EventDelay == 0 {
		d.EventDelay = 300 * time.Millisecond
	}
	if d.Client == nil {
		d.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.StopTimeout == 0 {
		d.StopTimeout = 5 * time.Second
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		open []openRun
	)
	for i := range d.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(i)))
			for ctx.Err() == nil {
				if o, ok := d.driveRun(ctx, rng); ok {
					mu.Lock()
					open = append(open, o)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	d.endRuns(context.WithoutCancel(ctx), open)
	return nil
}

// openRun is a run ctx's end left in flight: evs[:next] are stored, and
// evs[next] too when interrupted (its post was cut off).
type openRun struct {
	evs         []store.RunEventWrite
	next        int
	interrupted bool
}

// driveRun posts one run's events. When ctx ends first it returns the run
// left in flight, ok true, unless none of its events can be stored.
func (d *Driver) driveRun(ctx context.Context, rng *rand.Rand) (o openRun, ok bool) {
	evs := Run(rng, d.Tenant, Options{})
	for i, ev := range evs {
		if !retry.Sleep(ctx, time.Duration(float64(d.EventDelay)*(0.5+rng.Float64()))) {
			return openRun{evs: evs, next: i}, i > 0
		}
		if err := d.post(ctx, ev); err != nil {
			// Refused: given up (post logged it). Cut off: in flight.
			return openRun{evs: evs, next: i, interrupted: true}, ctx.Err() != nil
		}
	}
	d.runs.Add(1)
	d.Logger.Info("demo run finished", "runId", evs[0].RunID, "events", len(evs), "status", evs[len(evs)-1].EventType)
	return openRun{}, false
}

// endRuns ends the runs left in flight with a RunCancelled each, and waits
// until the API's snapshots show them ended, within StopTimeout.
func (d *Driver) endRuns(ctx context.Context, open []openRun) {
	if len(open) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, d.StopTimeout)
	defer cancel()
	var ended []string
	for _, o := range open {
		first := o.evs[0]
		if o.interrupted {
			// Stored or not, the same event (same key) once more.
			if err := d.post(ctx, o.evs[o.next]); err != nil {
				continue
			}
			if t := o.evs[o.next].EventType; t == store.EventRunCompleted || t == store.EventRunFailed {
				ended = append(ended, first.RunID)
				continue
			}
		}
		id := Identity{RunID: first.RunID, TenantID: first.TenantID, ProjectID: first.ProjectID,
			EnvironmentID: first.EnvironmentID, PlanID: first.PlanID, PlanVersion: first.PlanVersion}
		ev := Event(id, store.EventRunCancelled, "", 1, 1, time.Now(), map[string]any{
			"reason": "the demo driver stopped (runstream dev shut down) with this run in flight"})
		if err := d.post(ctx, ev); err != nil {
			d.Logger.Warn("demo run left in flight: its RunCancelled was not stored", "runId", first.RunID, "err", err)
			continue
		}
		ended = append(ended, first.RunID)
	}
	for _, id := range ended {
		if err := d.waitEnded(ctx, id); err != nil {
			d.Logger.Warn("demo run cancelled in the store, but its snapshot did not show it before the stop", "runId", id, "err", err)
		}
	}
	d.Logger.Info("demo stopped: its runs in flight were cancelled", "cancelled", len(ended), "inFlight", len(open))
}

// waitEnded waits until the API's snapshot of runID, as Redis holds it
// (the projector wrote it), has a terminal status.
func (d *Driver) waitEnded(ctx context.Context, runID string) error {
	for {
		status, err := d.snapshotStatus(ctx, runID)
		if err == nil && (status == store.RunCancelled || status == store.RunCompleted || status == store.RunFailed) {
			return nil
		}
		if !retry.Sleep(ctx, 50*time.Millisecond) {
			if err == nil {
				err = fmt.Errorf("status still %s", status)
			}
			return err
		}
	}
}

func (d *Driver) snapshotStatus(ctx context.Context, runID string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.BaseURL+"/v1/runs/"+url.PathEscape(runID)+"/snapshot", nil)
	if err != nil {
		return "", err
	}
	if d.Token != "" {
		req.Header.Set("Authorization", "Bearer "+d.Token)
	}
	resp, err := d.Client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET the snapshot: %s", resp.Status)
	}
	// A run Redis does not hold yet is answered from the store: the
	// projector has not written it, so the read side does not show it.
	if src := resp.Header.Get("X-Runstream-Snapshot-Source"); src != "redis" {
		return "", fmt.Errorf("the snapshot came from %q, not yet from Redis", src)
	}
	var s struct {
		Status string `json:"status"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return "", fmt.Errorf("reading the snapshot: %w", err)
	}
	return s.Status, nil
}

func (d *Driver) post(ctx context.Context, ev store.RunEventWrite) error {
	// Stamp the real emission time: the generator's clock runs ahead.
	ev.EmittedAt = time.Now().UTC().Format(time.RFC3339Nano)
	body, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	backoff := 100 * time.Millisecond
	for {
		status, msg, err := d.send(ctx, body)
		switch {
		case err == nil && (status == http.StatusCreated || status == http.StatusOK):
			d.events.Add(1)
			return nil
		case err == nil && status != http.StatusServiceUnavailable && status < 500:
			d.Logger.Error("demo event refused", "status", status, "body", msg, "eventType", ev.EventType)
			return fmt.Errorf("event refused with %d: %s", status, msg)
		}
		d.Logger.Warn("demo append failed; retrying", "status", status, "err", err)
		if !retry.Sleep(ctx, backoff) {
			return ctx.Err()
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func (d *Driver) send(ctx context.Context, body []byte) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.BaseURL+"/v1/events", bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if d.Token != "" {
		req.Header.Set("Authorization", "Bearer "+d.Token)
	}
	resp, err := d.Client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(b), nil
}
