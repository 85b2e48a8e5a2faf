package consumer

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/runstream/runstream/store"
)

// HTTPFetcher reads a run's events through runstream's HTTP API
// (GET /v1/runs/{runId}/events), for consumers without database access.
type HTTPFetcher struct {
	// BaseURL of the API, e.g. http://runstream-api:8080.
	BaseURL string
	// Token is sent as a bearer token when set.
	Token string
	// Client; nil means a client with a 10s timeout.
	Client *http.Client
}

// FetchEvents implements [Fetcher].
func (f *HTTPFetcher) FetchEvents(ctx context.Context, runID string, opts store.FetchOptions) ([]store.RunEventRecord, error) {
	limit := opts.Limit
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	u := fmt.Sprintf("%s/v1/runs/%s/events?afterSeq=%d&limit=%s", f.BaseURL, url.PathEscape(runID), opts.AfterSeq, strconv.Itoa(limit))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if f.Token != "" {
		req.Header.Set("Authorization", "Bearer "+f.Token)
	}
	cl := f.Client
	if cl == nil {
		cl = &http.Client{Timeout: 10 * time.Second}
	}
	resp, err := cl.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching events of run %q: %w", runID, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil, nil
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return nil, fmt.Errorf("fetching events of run %q: %s: %s", runID, resp.Status, b)
	}
	var out struct {
		Events []store.RunEventRecord `json:"events"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("decoding events of run %q: %w", runID, err)
	}
	return out.Events, nil
}
