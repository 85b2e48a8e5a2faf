package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
)

// listAnswer is the part of GET /v1/runs's answer the console shows.
type listAnswer struct {
	Runs []struct {
		RunID string `json:"runId"`
	} `json:"runs"`
	NextCursor  string `json:"nextCursor"`
	Total       int64  `json:"total"`
	Matched     *int64 `json:"matched"`
	ScanLimited bool   `json:"scanLimited"`
}

func (a listAnswer) ids() []string {
	ids := make([]string, len(a.Runs))
	for i, r := range a.Runs {
		ids[i] = r.RunID
	}
	return ids
}

func getJSON(t *testing.T, u string, out any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d", u, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}

// writeCatalog writes snaps straight to Redis (snapshots and the tenant's
// catalog, as the projector would) and removes them when the test ends.
func writeCatalog(t *testing.T, rdb *redis.Client, snaps []store.RunSnapshot) {
	t.Helper()
	ctx := context.Background()
	t.Cleanup(func() {
		for lo := 0; lo < len(snaps); lo += 1000 {
			var keys []string
			for _, s := range snaps[lo:min(lo+1000, len(snaps))] {
				keys = append(keys, snapshots.Key(s.RunID))
			}
			rdb.Del(ctx, keys...)
		}
		_ = snapshots.DeleteCatalog(ctx, rdb, snaps[0].TenantID)
	})
	ws := make([]snapshots.Write, len(snaps))
	for i, s := range snaps {
		ws[i] = snapshots.Write{Snapshot: s, Expected: -1}
	}
	for lo := 0; lo < len(ws); lo += 1000 {
		if _, err := snapshots.WriteAll(ctx, rdb, ws[lo:min(lo+1000, len(ws))]); err != nil {
			t.Fatal(err)
		}
	}
}

// TestConsole_ScanLimitedSearch: a run id prefix matching more runs than
// the catalog reads whole (2,000), within a time range, over a tenant of
// 9,012 runs: GET /v1/runs walks the updatedAt index and stops after its
// bound of 5,000 entries with 7 of the 12 matching runs found. The console
// says so and offers "Continue searching"; clicking it lists the other 5
// and the notice goes away. Every number and run shown is what the API
// answers (asked here with the same query and cursor) and what was seeded.
func TestConsole_ScanLimitedSearch(t *testing.T) {
	t.Parallel() // each test has its own dev process and tab; they mostly wait
	chrome := chromium(t)
	_, schema := testenv.Postgres(t, 5)
	rdb := testenv.Redis(t)
	base, _, stop := startDev(t, devEnv(t, schema))
	defer stop()
	b := newBrowser(t, chrome)

	// Newest first: ranks 0..4,999 (the first request's scan) hold 7
	// "hit-" runs, ranks 5,000..6,999 (the continued scan, down to from)
	// hold 5 more; ranks 7,000..9,011 are 2,012 hit- runs older than from,
	// so the prefix matches more than the catalog reads whole (2,000).
	tenant := "console_scan_" + testenv.RandomID(4)
	sfx := testenv.RandomID(4)
	const n = 9012
	firstHits := map[int]bool{100: true, 900: true, 1700: true, 2600: true, 3300: true, 4100: true, 4999: true}
	nextHits := map[int]bool{5000: true, 5600: true, 6100: true, 6500: true, 6999: true}
	newest := time.Now().Add(-time.Hour).Truncate(time.Second).UTC()
	at := func(rank int) time.Time { return newest.Add(-time.Duration(rank) * time.Second) }
	var snaps []store.RunSnapshot
	var want1, want2 []string
	for r := range n {
		id := fmt.Sprintf("miss-%04d-%s", r, sfx)
		if r >= 7000 || firstHits[r] || nextHits[r] {
			id = fmt.Sprintf("hit-%04d-%s", r, sfx)
		}
		switch {
		case firstHits[r]:
			want1 = append(want1, id)
		case nextHits[r]:
			want2 = append(want2, id)
		}
		snaps = append(snaps, store.RunSnapshot{RunID: id, TenantID: tenant, Status: store.RunCompleted, LastEventSeq: 2,
			PlanID: "plan_scan", UpdatedAt: store.FormatPersistedAt(at(r)), StartedAt: store.FormatPersistedAt(at(r).Add(-time.Second)),
			Steps: []store.StepSnapshot{}, Artifacts: []store.ArtifactRef{}})
	}
	seedStart := time.Now()
	writeCatalog(t, rdb, snaps)
	t.Logf("wrote %d snapshots to Redis in %v", n, time.Since(seedStart).Round(time.Millisecond))

	from := at(6999).Format(time.RFC3339)
	params := url.Values{"tenantId": {tenant}, "runIdPrefix": {"hit-"}, "from": {from}, "limit": {"50"}}
	var api1, api2 listAnswer
	getJSON(t, base+"/v1/runs?"+params.Encode(), &api1)
	if !api1.ScanLimited || api1.NextCursor == "" || api1.Matched != nil || !slices.Equal(api1.ids(), want1) || api1.Total != n {
		t.Fatalf("the API's first page: scanLimited %v, cursor %q, matched %v, total %d, runs %v; want scanLimited with a cursor, matched null, total %d, runs %v",
			api1.ScanLimited, api1.NextCursor, api1.Matched, api1.Total, api1.ids(), n, want1)
	}
	params.Set("cursor", api1.NextCursor)
	getJSON(t, base+"/v1/runs?"+params.Encode(), &api2)
	if api2.ScanLimited || api2.NextCursor != "" || !slices.Equal(api2.ids(), want2) {
		t.Fatalf("the API's continued page: scanLimited %v, cursor %q, runs %v; want the last %v, no cursor",
			api2.ScanLimited, api2.NextCursor, api2.ids(), want2)
	}

	// The search's deep link.
	b.do(chromedp.Navigate(base + "/#/runs?tenant=" + tenant + "&runIdPrefix=hit-&from=" + url.QueryEscape(from)))
	b.waitRows(want1, "the 7 runs the bounded scan found")
	b.waitText(`[data-testid=scan-limited]`, fmt.Sprintf("found %d so far", len(api1.Runs)))
	b.waitVisible(`[data-testid=scan-continue]`)
	b.waitTrue(`!document.querySelector('[data-testid=scan-continue]').disabled`, "Continue searching enabled (the API gave a cursor)")
	b.waitTrue(`document.querySelector('[data-testid=load-more]').hidden`, "no Load more beside Continue searching")
	b.waitText(`[data-testid=page-note]`, fmt.Sprintf("%d shown", len(api1.Runs)))
	b.waitTrue(fmt.Sprintf(`document.querySelector('[data-testid=count-ALL]').textContent === %s`, jsString("9,012")), "count-ALL to be the API's total 9,012")
	b.noElement(`[data-testid=matched]`, "no matched count (the API does not know it for a scan)")
	b.noElement(`[data-testid=runs-empty]`, "no empty state under a bounded scan")
	b.waitTrue(`document.querySelector('[data-testid=search-runIdPrefix]').value === 'hit-'`, "the form to show the deep link's prefix")
	b.shots("runs-scan-limited")

	b.click(`[data-testid=scan-continue]`)
	b.waitRows(append(append([]string{}, want1...), want2...), "the 5 runs the continued scan found, after the first 7")
	b.waitTrue(`!document.querySelector('[data-testid=scan-limited]')`, "the scan-limited notice to go once the scan reached the end of the range")
	b.waitTrue(`document.querySelector('[data-testid=load-more]').hidden`, "no Load more: the API gave no cursor")
	b.waitText(`[data-testid=page-note]`, fmt.Sprintf("%d shown", len(api1.Runs)+len(api2.Runs)))
	b.shots("runs-scan-continued")
	b.noExceptions()
}

// TestConsole_RebuildRunning sees a tenant's rebuild mid-way: the rebuild
// lists the tenant's 501 runs from the store in pages of 200 (ordered by
// runId); one run of the second page has 70 events, so rebuilding it
// checkpoints its snapshot into run_snapshots, and the test holds that
// row's key in an open transaction. The first page is then done and the
// second cannot finish: the page must show RUNNING, "200 of 501" and 40%,
// as the API says, and keep polling. When the transaction ends the rebuild
// finishes and the page shows DONE, 501 of 501, 100%, and the tenant. A MutationObserver
// records every state the page showed: the progress never goes back.
func TestConsole_RebuildRunning(t *testing.T) {
	t.Parallel() // each test has its own dev process and tab; they mostly wait
	chrome := chromium(t)
	pool, schema := testenv.Postgres(t, 5)
	// A Redis of its own: rebuilds are registered in Redis, where
	// another test's rebuild list would see this one.
	base, stop, _, rdb := startDevOwnRedis(t, schema)
	defer stop()
	b := newBrowser(t, chrome)
	ctx := context.Background()

	tenant := "console_rb_" + testenv.RandomID(4)
	sfx := testenv.RandomID(4)
	t0 := time.Now().Add(-time.Hour)
	var batch []store.RunEventWrite
	var runIDs []string
	light := func(id string, i int) {
		w := workload.NewIdentity(tenant)
		w.RunID = id
		at := t0.Add(time.Duration(i) * time.Second)
		batch = append(batch, workload.Event(w, store.EventRunStarted, "", 1, 1, at, nil),
			workload.Event(w, store.EventRunCompleted, "", 1, 1, at.Add(time.Second), nil))
		runIDs = append(runIDs, id)
		if len(batch) >= 400 {
			appendBatch(t, base, batch)
			batch = batch[:0]
		}
	}
	seedStart := time.Now()
	for i := range 250 {
		light(fmt.Sprintf("rb-a-%03d-%s", i, sfx), i)
	}
	for i := range 250 {
		light(fmt.Sprintf("rb-c-%03d-%s", i, sfx), 250+i)
	}
	heavy := workload.NewIdentity(tenant)
	heavy.RunID = "rb-b-heavy-" + sfx // sorts between the a's and the c's: rank 250, in the second page
	batch = append(batch, workload.Event(heavy, store.EventRunStarted, "", 1, 1, t0, nil))
	for s := range 34 {
		step := fmt.Sprintf("step_%02d", s)
		at := t0.Add(time.Duration(s+1) * time.Second)
		batch = append(batch, workload.Event(heavy, store.EventStepStarted, step, 1, 1, at, nil),
			workload.Event(heavy, store.EventStepCompleted, step, 1, 1, at.Add(500*time.Millisecond), map[string]any{"durationMs": 500}))
	}
	batch = append(batch, workload.Event(heavy, store.EventRunCompleted, "", 1, 1, t0.Add(40*time.Second), nil))
	appendBatch(t, base, batch)
	runIDs = append(runIDs, heavy.RunID)
	const total = 501
	waitProjected(t, rdb, runIDs)
	testenv.WaitFor(t, 30*time.Second, "the heavy run's 70 events projected", func() bool {
		raw, err := rdb.Get(ctx, snapshots.Key(heavy.RunID)).Bytes()
		var s struct{ LastEventSeq int64 }
		return err == nil && json.Unmarshal(raw, &s) == nil && s.LastEventSeq == 70
	})
	t.Logf("appended %d runs through POST /v1/events:batch and saw them projected in %v", total, time.Since(seedStart).Round(time.Millisecond))

	// The heavy run is in the rebuild's second page (ListTenantRuns'
	// order, the store's collation).
	var rank int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM runs WHERE tenant_id = $1 AND run_id < $2`, tenant, heavy.RunID).Scan(&rank); err != nil {
		t.Fatal(err)
	}
	if rank < 200 || rank >= 400 {
		t.Fatalf("the heavy run is at rank %d of the tenant's runs, want 200..399 (the rebuild's second page)", rank)
	}
	// No checkpoint of it yet, so rebuilding it reduces 70 events (>= 64)
	// and writes one; hold that row's key until the page was seen.
	if _, err := pool.Exec(ctx, `DELETE FROM run_snapshots WHERE run_id = $1`, heavy.RunID); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) // before stop (deferred earlier): the rebuild must not wait on it
	if _, err := tx.Exec(ctx, `INSERT INTO run_snapshots (run_id, last_event_seq, snapshot) VALUES ($1, 0, '{}')`, heavy.RunID); err != nil {
		t.Fatal(err)
	}

	b.do(chromedp.Navigate(base + "/#/rebuilds"))
	b.waitVisible(`[data-testid=rebuild-tenant]`)
	// Every state the page shows, in order (the page re-renders on each poll).
	b.do(chromedp.Evaluate[chromedp.Void](`(() => {
		window.__rb = []; window.__rbRenders = 0;
		new MutationObserver(() => {
			const st = document.querySelector('[data-testid=rebuild-state]'), p = document.querySelector('[data-testid=rebuild-progress]'),
				c = document.querySelector('[data-testid=rebuild-counts]');
			if (!st || !p || !c) return;
			window.__rbRenders++;
			const v = { state: st.textContent, value: p.value, counts: c.textContent };
			const last = window.__rb[window.__rb.length - 1];
			if (!last || last.state !== v.state || last.value !== v.value || last.counts !== v.counts) window.__rb.push(v);
		}).observe(document.body, { childList: true, subtree: true, characterData: true });
	})()`))
	b.do(chromedp.SendKeys(chromedp.CSS(`[data-testid=rebuild-tenant]`), tenant))
	b.click(`[data-testid=rebuild-start]`)
	b.waitText(`[data-testid=confirm-text]`, tenant)
	b.click(`[data-testid=confirm-ok]`)
	b.waitTrue(`location.hash.startsWith('#/rebuilds/')`, "the rebuild's own page")
	id := strings.TrimPrefix(b.eval(`decodeURIComponent(location.hash)`), "#/rebuilds/")

	b.waitText(`[data-testid=rebuild-counts]`, "200 of 501 runs handled (40%): ")
	b.waitText(`[data-testid=rebuild-state]`, "RUNNING")
	b.waitTrue(`document.querySelector('[data-testid=rebuild-progress]').value === 40`, "the progress bar at 40 (200 of 501)")
	var api struct {
		Rebuild struct {
			State               string
			Total, Done, Failed int64
		}
	}
	getJSON(t, base+"/v1/rebuilds/"+url.PathEscape(id), &api)
	if r := api.Rebuild; r.State != "running" || r.Done != 200 || r.Total != total || r.Failed != 0 {
		t.Fatalf("GET /v1/rebuilds/%s: %+v, want running, 200 of %d done, none failed (what the page shows)", id, r, total)
	}
	// The page keeps polling while it runs, and keeps showing it running.
	renders := b.eval(`String(window.__rbRenders)`)
	b.waitTrue(fmt.Sprintf(`window.__rbRenders >= %s + 2`, renders), "two more polls of the running rebuild")
	b.waitText(`[data-testid=rebuild-state]`, "RUNNING")
	b.waitText(`[data-testid=rebuild-counts]`, "200 of 501 runs handled (40%): ")
	b.waitText(`[data-testid=rebuild-refresh]`, "every second")
	b.shots("rebuild-running")

	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	b.waitText(`[data-testid=rebuild-state]`, "DONE")
	b.waitText(`[data-testid=rebuild-counts]`, "501 of 501 runs handled (100%): ")
	b.waitText(`[data-testid=rebuild-target]`, "every run of tenant "+tenant)
	b.waitTrue(`document.querySelector('[data-testid=rebuild-progress]').value === 100`, "the progress bar full")
	b.waitText(`[data-testid=rebuild-refresh]`, "Finished")
	getJSON(t, base+"/v1/rebuilds/"+url.PathEscape(id), &api)
	if r := api.Rebuild; r.State != "done" || r.Done != total || r.Total != total || r.Failed != 0 {
		t.Fatalf("GET /v1/rebuilds/%s: %+v, want done, %d of %d, none failed", id, r, total, total)
	}
	// It was the checkpoint that waited: the rebuild wrote it once free.
	var seq int64
	if err := pool.QueryRow(ctx, `SELECT last_event_seq FROM run_snapshots WHERE run_id = $1`, heavy.RunID).Scan(&seq); err != nil || seq != 70 {
		t.Fatalf("the heavy run's checkpoint: seq %d, %v; want 70, written by the rebuild", seq, err)
	}

	var seen []struct {
		State, Counts string
		Value         float64
	}
	if err := json.Unmarshal([]byte(b.eval(`JSON.stringify(window.__rb)`)), &seen); err != nil {
		t.Fatal(err)
	}
	t.Logf("the page showed: %+v", seen)
	mid := false
	for i, v := range seen {
		if i > 0 && v.Value < seen[i-1].Value {
			t.Errorf("the progress went back from %v to %v: %+v", seen[i-1].Value, v.Value, seen)
		}
		if v.State == "RUNNING" && v.Value > 0 && v.Value < 100 {
			mid = true
		}
	}
	if !mid || len(seen) == 0 || seen[len(seen)-1].State != "DONE" || seen[len(seen)-1].Value != 100 {
		t.Errorf("the page's states %+v: want a RUNNING one strictly between 0 and 100%%, ending DONE at 100%%", seen)
	}
	b.noExceptions()
}
