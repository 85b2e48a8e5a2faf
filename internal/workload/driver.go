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
// event only when ctx ends.
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
	var wg sync.WaitGroup
	for i := range d.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(i)))
			for ctx.Err() == nil {
				d.driveRun(ctx, rng)
			}
		}()
	}
	wg.Wait()
	return nil
}

func (d *Driver) driveRun(ctx context.Context, rng *rand.Rand) {
	evs := Run(rng, d.Tenant, Options{})
	for _, ev := range evs {
		if !retry.Sleep(ctx, time.Duration(float64(d.EventDelay)*(0.5+rng.Float64()))) {
			return
		}
		if err := d.post(ctx, ev); err != nil {
			return
		}
	}
	d.runs.Add(1)
	d.Logger.Info("demo run finished", "runId", evs[0].RunID, "events", len(evs), "status", evs[len(evs)-1].EventType)
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
