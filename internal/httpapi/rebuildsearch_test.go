package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store/postgres"
)

// waitRebuild polls rebuild id until it is no longer running.
func waitRebuild(t *testing.T, base, id string) rebuildJSON {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		rb := rebuildOf(t, do(t, "GET", base+"/v1/rebuilds/"+id, "tok-op", nil).body)
		if rb.State != "running" {
			return rb
		}
		if time.Now().After(deadline) {
			t.Fatalf("rebuild %s did not finish in a minute: %+v", id, rb)
		}
	}
}

// A bulk rebuild of every run a runs-list search matches (not only a
// page): paged through the catalog, with the search's count as its total;
// one started from a list cursor does the rest only (how a stopped one is
// continued); a search without a tenant or a foreign cursor is refused.
func TestOperator_RebuildSearch(t *testing.T) {
	pool := migratedPool(t, 20)
	st, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	rdb := testenv.Redis(t)
	e := newEnvOn(t, httpapi.Config{AuthTokens: roleTokens}, pool, rdb)
	const runs = 450
	tenant := "search_" + testenv.RandomID(6) // a catalog of its own in the shared Redis
	ids := appendRuns(t, st, tenant, runs)
	appendRuns(t, st, tenant+"_other", 5)
	// The catalog: what a projector would have written.
	r := do(t, "POST", e.url+"/v1/rebuilds", "tok-op", mustJSON(t, map[string]any{"tenantId": tenant}))
	if r.status != http.StatusAccepted {
		t.Fatalf("the tenant's rebuild: %d %s", r.status, r.body)
	}
	if rb := waitRebuild(t, e.url, rebuildOf(t, r.body).ID); rb.State != "done" || rb.Written != runs {
		t.Fatalf("the tenant's rebuild: %+v", rb)
	}
	// Ten snapshots lost behind the catalog's back.
	for _, id := range ids[:10] {
		if err := rdb.Del(context.Background(), snapshots.Key(id)).Err(); err != nil {
			t.Fatal(err)
		}
	}

	r = do(t, "POST", e.url+"/v1/rebuilds", "tok-op", mustJSON(t, map[string]any{"search": "tenantId=" + tenant + "&status=RUNNING&limit=7", "reason": "bulk"}))
	if r.status != http.StatusAccepted {
		t.Fatalf("a search rebuild: %d %s", r.status, r.body)
	}
	started := rebuildOf(t, r.body)
	if started.Total != runs {
		t.Fatalf("a search rebuild's total: %d, want the search's count %d", started.Total, runs)
	}
	rb := waitRebuild(t, e.url, started.ID)
	if rb.State != "done" || rb.Done != runs || rb.Written != 10 || rb.Current != runs-10 {
		t.Fatalf("the search rebuild: %+v, want all %d runs done, the 10 lost ones written", rb, runs)
	}
	var full struct {
		Rebuild struct{ Search, Position string } `json:"rebuild"`
	}
	if err := json.Unmarshal(do(t, "GET", e.url+"/v1/rebuilds/"+rb.ID, "tok-op", nil).body, &full); err != nil || full.Rebuild.Search == "" || full.Rebuild.Position != "" {
		t.Fatalf("a finished search rebuild's state: %+v (%v), want its search and no position left", full.Rebuild, err)
	}

	// Continued from the list's cursor after its first 200 runs.
	var page struct {
		NextCursor string `json:"nextCursor"`
	}
	if err := json.Unmarshal(do(t, "GET", e.url+"/v1/runs?tenantId="+tenant+"&status=RUNNING&limit=200", "tok-op", nil).body, &page); err != nil || page.NextCursor == "" {
		t.Fatalf("the list's first page: %v, cursor %q", err, page.NextCursor)
	}
	r = do(t, "POST", e.url+"/v1/rebuilds", "tok-op", mustJSON(t, map[string]any{"search": "tenantId=" + tenant + "&status=RUNNING", "cursor": page.NextCursor}))
	if r.status != http.StatusAccepted {
		t.Fatalf("a continued search rebuild: %d %s", r.status, r.body)
	}
	if rb := waitRebuild(t, e.url, rebuildOf(t, r.body).ID); rb.State != "done" || rb.Done != runs-200 {
		t.Fatalf("the continued rebuild: %+v, want the %d runs after the cursor", rb, runs-200)
	}

	for _, body := range []map[string]any{
		{"search": "status=RUNNING"},
		{"search": "tenantId=" + tenant + "&status=BAD"},
		{"search": "tenantId=" + tenant, "cursor": page.NextCursor},
		{"search": "tenantId=" + tenant, "tenantId": tenant},
		{"cursor": page.NextCursor},
		{"search": "tenantId=" + url.QueryEscape("a\x01b")},
	} {
		if r := do(t, "POST", e.url+"/v1/rebuilds", "tok-op", mustJSON(t, body)); r.status != http.StatusBadRequest {
			t.Errorf("%v: %d %s, want 400", body, r.status, r.body)
		}
	}
	log := getJSON[operatorActionsPage](t, e.url+"/v1/operator-actions?limit=3", "tok-op").Actions
	if len(log) < 2 || log[1].Target != "rebuild "+started.ID+": the runs matching tenantId="+tenant+"&status=RUNNING&limit=7" || log[1].Count != runs || log[1].Reason != "bulk" {
		t.Fatalf("the audit log: %+v", log)
	}
}

// A search rebuild whose API process stops mid-way (its lease no longer
// renewed) reads as failed on another replica, with the runs-list cursor
// it had reached (position); a rebuild started from that cursor does the
// rest: a bulk action over many runs is never lost, nor started over.
func TestOperator_SearchRebuildAbandonedReportsWhereItStopped(t *testing.T) {
	t.Parallel()
	st, _, admin, runner, other := rebuildReplicas(t)
	const runs = 3000
	ids := appendRuns(t, st, "tenant_a", runs)
	// The catalog the search pages through, then every snapshot lost, so
	// that the search rebuild has all of them to write.
	r := do(t, "POST", other.url+"/v1/rebuilds", "tok-op", []byte(`{"tenantId":"tenant_a"}`))
	if r.status != http.StatusAccepted {
		t.Fatalf("the tenant's rebuild: %d %s", r.status, r.body)
	}
	if rb := waitRebuild(t, other.url, rebuildOf(t, r.body).ID); rb.State != "done" || rb.Written != runs {
		t.Fatalf("the tenant's rebuild: %+v", rb)
	}
	for chunk := range slices.Chunk(ids, 500) {
		keys := make([]string, len(chunk))
		for i, id := range chunk {
			keys[i] = snapshots.Key(id)
		}
		if err := admin.Del(context.Background(), keys...).Err(); err != nil {
			t.Fatal(err)
		}
	}

	const search = "tenantId=tenant_a&status=RUNNING&limit=50"
	r = do(t, "POST", runner.url+"/v1/rebuilds", "tok-op", mustJSON(t, map[string]any{"search": search}))
	if r.status != http.StatusAccepted {
		t.Fatalf("the search rebuild: %d %s", r.status, r.body)
	}
	rb := rebuildOf(t, r.body)
	// Wait until it is past its first page, then cut its process off.
	testenv.WaitFor(t, 30*time.Second, "the search rebuild past its first page", func() bool {
		return rebuildOf(t, do(t, "GET", other.url+"/v1/rebuilds/"+rb.ID, "tok-op", nil).body).Done >= 100
	})
	cutOffRedisUser(t, admin, "runner")
	var state struct {
		Rebuild struct {
			rebuildJSON
			Search   string `json:"search"`
			Position string `json:"position"`
		} `json:"rebuild"`
	}
	testenv.WaitFor(t, 15*time.Second, "the other replica to report the search rebuild abandoned", func() bool {
		if err := json.Unmarshal(do(t, "GET", other.url+"/v1/rebuilds/"+rb.ID, "tok-op", nil).body, &state); err != nil {
			t.Fatal(err)
		}
		return state.Rebuild.State != "running"
	})
	got := state.Rebuild
	if got.State != "failed" || got.Done >= runs || got.Position == "" || got.Search != search {
		t.Fatalf("the abandoned search rebuild: state %s, done %d of %d, position %q, search %q; want failed mid-way with its cursor and search",
			got.State, got.Done, runs, got.Position, got.Search)
	}
	// Continued from where it stopped, on the replica that is still up.
	r = do(t, "POST", other.url+"/v1/rebuilds", "tok-op", mustJSON(t, map[string]any{"search": search, "cursor": got.Position}))
	if r.status != http.StatusAccepted {
		t.Fatalf("the continued rebuild: %d %s", r.status, r.body)
	}
	rest := waitRebuild(t, other.url, rebuildOf(t, r.body).ID)
	if rest.State != "done" || rest.Done+got.Done < runs || rest.Done > runs-got.Done+50 {
		t.Fatalf("the continued rebuild: %+v; the first did %d of %d: want the rest, at most one page done twice", rest, got.Done, runs)
	}
	t.Logf("abandoned after %d of %d runs at cursor %s; the continued rebuild did %d", got.Done, runs, got.Position, rest.Done)
	missing := 0
	for chunk := range slices.Chunk(ids, 500) {
		keys := make([]string, len(chunk))
		for i, id := range chunk {
			keys[i] = snapshots.Key(id)
		}
		n, err := admin.Exists(context.Background(), keys...).Result()
		if err != nil {
			t.Fatal(err)
		}
		missing += len(chunk) - int(n)
	}
	if missing != 0 {
		t.Fatalf("%d of %d snapshots still missing after the abandoned and the continued rebuild", missing, runs)
	}
}
