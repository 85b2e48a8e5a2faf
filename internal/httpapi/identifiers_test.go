package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
)

// TestIdentifiers_SlashAndReservedCharactersInRunIDs: identifiers may hold
// '/', '%', '?', '#' and spaces (the identifier rule refuses only '|' and
// control characters, and engines' run ids such as "wf/123" use them), so
// every route with {runId} in its path takes the id path-escaped (%2F) and
// answers that run: the events, the snapshot from the store, a resync and
// the watch. Unescaped, "a/b" is another path: 404, never another run.
func TestIdentifiers_SlashAndReservedCharactersInRunIDs(t *testing.T) {
	e := serve(t, httpapi.Config{AuthTokens: roleTokens})
	for _, runID := range []string{"wf/" + workload.NewIdentity("").RunID, "a%2F b?c#d/" + workload.NewIdentity("").RunID} {
		id := workload.NewIdentity("tenant_a")
		id.RunID = runID
		for i, ev := range []store.RunEventWrite{
			workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil),
			workload.Event(id, store.EventStepStarted, "extract/part-1", 1, 1, time.Now(), nil),
		} {
			if r := do(t, "POST", e.url+"/v1/events", "tok-a", mustJSON(t, ev)); r.status != 201 {
				t.Fatalf("%q: append %d: %d %s", runID, i, r.status, r.body)
			}
		}
		path := e.url + "/v1/runs/" + url.PathEscape(runID)
		r := do(t, "GET", path+"/events", "tok-a", nil)
		var page struct {
			Events []store.RunEventRecord `json:"events"`
		}
		if r.status != 200 || json.Unmarshal(r.body, &page) != nil || len(page.Events) != 2 || page.Events[1].RunID != runID || page.Events[1].StepID != "extract/part-1" {
			t.Fatalf("%q: GET events: %d %s", runID, r.status, r.body)
		}
		r = do(t, "GET", path+"/snapshot?consistent=true", "tok-a", nil)
		var snap struct {
			RunID        string `json:"runId"`
			LastEventSeq int64  `json:"lastEventSeq"`
		}
		if r.status != 200 || json.Unmarshal(r.body, &snap) != nil || snap.RunID != runID || snap.LastEventSeq != 2 {
			t.Fatalf("%q: GET snapshot: %d %s", runID, r.status, r.body)
		}
		if r := do(t, "POST", path+"/resync", "tok-a", nil); r.status/100 != 2 {
			t.Fatalf("%q: POST resync: %d %s", runID, r.status, r.body)
		}
		if r := do(t, "GET", path+"/snapshot?consistent=true", "tok-b", nil); r.status != 404 {
			t.Fatalf("%q: tenant_b's GET snapshot: %d, want 404", runID, r.status)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		req, _ := http.NewRequestWithContext(ctx, "GET", path+"/watch", nil)
		req.Header.Set("Authorization", "Bearer tok-a")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			cancel()
			t.Fatalf("%q: watch: %v %v", runID, resp, err)
		}
		resp.Body.Close()
		cancel()
	}
	// Unescaped, the slash splits the path: no route, not another run.
	if r := do(t, "GET", e.url+"/v1/runs/wf/x/events", "tok-a", nil); r.status != 404 {
		t.Fatalf("GET /v1/runs/wf/x/events: %d, want 404", r.status)
	}
}
