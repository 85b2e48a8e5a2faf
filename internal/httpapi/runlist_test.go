package httpapi_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// listAnswer is GET /v1/runs's answer.
type listAnswer struct {
	Runs []struct {
		RunID        string `json:"runId"`
		TenantID     string `json:"tenantId"`
		Status       string `json:"status"`
		UpdatedAt    string `json:"updatedAt"`
		StartedAt    string `json:"startedAt"`
		PlanID       string `json:"planId"`
		EngineRunRef string `json:"engineRunRef"`
	} `json:"runs"`
	NextCursor  string           `json:"nextCursor"`
	Counts      map[string]int64 `json:"counts"`
	Total       int64            `json:"total"`
	StoreRuns   *int64           `json:"storeRuns"`
	Matched     *int64           `json:"matched"`
	ScanLimited bool             `json:"scanLimited"`
}

func listPage(t *testing.T, e *env, token, query string) listAnswer {
	t.Helper()
	r := do(t, "GET", e.url+"/v1/runs?"+query, token, nil)
	if r.status != 200 {
		t.Fatalf("GET /v1/runs?%s: %d %s", query, r.status, r.body)
	}
	var a listAnswer
	if err := json.Unmarshal(r.body, &a); err != nil {
		t.Fatalf("GET /v1/runs?%s: %v", query, err)
	}
	return a
}

// listAll pages through a query with its cursors and returns every runId
// in order, the answers' matched values and whether a page was
// scan-limited.
func listAll(t *testing.T, e *env, token, query string) (ids []string, pages []listAnswer) {
	t.Helper()
	cursor := ""
	for n := 0; ; n++ {
		if n > 500 {
			t.Fatalf("%s: paging does not end", query)
		}
		q := query
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		a := listPage(t, e, token, q)
		for _, r := range a.Runs {
			ids = append(ids, r.RunID)
		}
		pages = append(pages, a)
		if a.NextCursor == "" {
			return ids, pages
		}
		if len(a.Runs) == 0 && !a.ScanLimited {
			t.Fatalf("%s: an empty page with a cursor and not scanLimited", query)
		}
		cursor = a.NextCursor
	}
}

func listSeed(t *testing.T) int64 {
	if v := os.Getenv("LIST_SEED"); v != "" {
		seed, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return seed
	}
	return time.Now().UnixNano()
}

func writeSnapshots(t *testing.T, rdb redis.UniversalClient, snaps []store.RunSnapshot) {
	t.Helper()
	ws := make([]snapshots.Write, len(snaps))
	for i, s := range snaps {
		ws[i] = snapshots.Write{Snapshot: s, Expected: -1}
	}
	for lo := 0; lo < len(ws); lo += 1000 {
		if _, err := snapshots.WriteAll(context.Background(), rdb, ws[lo:min(lo+1000, len(ws))]); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		ctx := context.Background()
		for lo := 0; lo < len(snaps); lo += 500 {
			var keys []string
			for _, s := range snaps[lo:min(lo+500, len(snaps))] {
				keys = append(keys, snapshots.Key(s.RunID))
			}
			rdb.Del(ctx, keys...)
		}
		for _, tn := range []string{snaps[0].TenantID, snaps[len(snaps)-1].TenantID} {
			_ = snapshots.DeleteCatalog(ctx, rdb, tn)
		}
	})
}

func ms(s string) int64 {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t.UnixMilli()
}

// TestListRuns_SearchSortPageAgainstAModel: random runs of two tenants
// (ties of updatedAt included); every combination of filters, sort, order
// and time range is paged through with small pages and must give exactly
// the runs, in exactly the order, that filtering and sorting the
// snapshots here gives; matched, when given, is that number; counts are
// exact; the other tenant's runs never appear.
func TestListRuns_SearchSortPageAgainstAModel(t *testing.T) {
	t.Parallel()
	seed := listSeed(t)
	t.Logf("seed %d (replay with LIST_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewSource(seed))
	tenant, other := "t_model_"+testenv.RandomID(4), "t_model_o_"+testenv.RandomID(4)
	e := newEnv(t, httpapi.Config{AuthTokens: map[string]string{"tok-a": tenant, "tok-b": other}})
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	plans := []string{"plan-a", "plan-b", "plan[c"}
	var mine, theirs []store.RunSnapshot
	for i := range 360 {
		tn := tenant
		if i%6 == 5 {
			tn = other
		}
		s := snap(tn, fmt.Sprintf("%s-%c%03d", "run", 'a'+rune(rng.Intn(3)), i), snapshots.RunStatuses[rng.Intn(7)], int64(1+rng.Intn(9)),
			base.Add(time.Duration(rng.Intn(120))*time.Second)) // many ties
		s.PlanID = plans[rng.Intn(len(plans))]
		if rng.Intn(3) > 0 {
			s.StartedAt = store.FormatPersistedAt(base.Add(-time.Duration(rng.Intn(90)) * time.Second))
			s.EngineRunRef = fmt.Sprintf("temporal://ns/wf-%d", rng.Intn(40))
		}
		if tn == tenant {
			mine = append(mine, s)
		} else {
			theirs = append(theirs, s)
		}
	}
	writeSnapshots(t, e.redis, append(append([]store.RunSnapshot{}, mine...), theirs...))

	type model struct {
		status, prefix, ref, plan string
		started, asc              bool
		from, to                  int64
	}
	expect := func(m model) []string {
		var sel []store.RunSnapshot
		for _, s := range mine {
			score := ms(s.UpdatedAt)
			if m.started {
				if s.StartedAt == "" {
					continue
				}
				score = ms(s.StartedAt)
			}
			if (m.status != "" && s.Status != m.status) || (m.plan != "" && s.PlanID != m.plan) ||
				(m.ref != "" && s.EngineRunRef != m.ref) || !strings.HasPrefix(s.RunID, m.prefix) ||
				(m.from != 0 && score < m.from) || (m.to != 0 && score >= m.to) {
				continue
			}
			sel = append(sel, s)
		}
		key := func(s store.RunSnapshot) int64 {
			if m.started {
				return ms(s.StartedAt)
			}
			return ms(s.UpdatedAt)
		}
		slices.SortFunc(sel, func(a, b store.RunSnapshot) int {
			c := cmp.Or(cmp.Compare(key(a), key(b)), strings.Compare(a.RunID, b.RunID))
			if !m.asc {
				c = -c
			}
			return c
		})
		ids := []string{}
		for _, s := range sel {
			ids = append(ids, s.RunID)
		}
		return ids
	}
	counts := map[string]int64{}
	for _, st := range snapshots.RunStatuses {
		counts[st] = 0
	}
	for _, s := range mine {
		counts[s.Status]++
	}
	mid := base.Add(60 * time.Second)
	cases := []model{
		{},
		{asc: true},
		{status: store.RunRunning},
		{status: store.RunFailed, asc: true},
		{plan: "plan[c"},
		{plan: "plan-a", status: store.RunCompleted},
		{prefix: "run-b"},
		{prefix: "run-a0", status: store.RunPending, asc: true},
		{ref: mine[0].EngineRunRef + "x"}, // nothing
		{ref: "temporal://ns/wf-7"},
		{from: mid.UnixMilli()},
		{to: mid.UnixMilli(), asc: true},
		{from: base.Add(20 * time.Second).UnixMilli(), to: mid.UnixMilli(), status: store.RunPaused},
		{started: true},
		{started: true, asc: true, from: base.Add(-60 * time.Second).UnixMilli(), to: base.Add(-10 * time.Second).UnixMilli()},
		{started: true, plan: "plan-b"},
		{started: true, prefix: "run-c", to: base.Add(-30 * time.Second).UnixMilli()},
	}
	for _, m := range cases {
		v := url.Values{}
		for k, s := range map[string]string{"status": m.status, "runIdPrefix": m.prefix, "engineRunRef": m.ref, "planId": m.plan} {
			if s != "" {
				v.Set(k, s)
			}
		}
		if m.started {
			v.Set("sort", "startedAt")
		}
		if m.asc {
			v.Set("order", "asc")
		}
		if m.from != 0 {
			v.Set("from", time.UnixMilli(m.from).UTC().Format(time.RFC3339Nano))
		}
		if m.to != 0 {
			v.Set("to", time.UnixMilli(m.to).UTC().Format(time.RFC3339Nano))
		}
		limit := 1 + rng.Intn(9)
		query := v.Encode() + "&limit=" + strconv.Itoa(limit)
		want := expect(m)
		got, pages := listAll(t, e, "tok-a", query)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: listed %d runs %v\nwant %d %v (seed %d)", query, len(got), got, len(want), want, seed)
		}
		for _, p := range pages {
			if p.Matched != nil && *p.Matched != int64(len(want)) {
				t.Fatalf("%s: matched %d, want %d", query, *p.Matched, len(want))
			}
			if p.Total != int64(len(mine)) || !mapsEqual(p.Counts, counts) {
				t.Fatalf("%s: total %d counts %v, want %d %v", query, p.Total, p.Counts, len(mine), counts)
			}
			if p.StoreRuns == nil || *p.StoreRuns != 0 {
				t.Fatalf("%s: storeRuns %v, want 0 (the store has none of these runs)", query, p.StoreRuns)
			}
			for _, r := range p.Runs {
				if r.TenantID != tenant {
					t.Fatalf("%s: another tenant's run %s listed", query, r.RunID)
				}
			}
		}
		if p := pages[0]; p.Matched == nil && m.ref == "" && m.prefix == "" && (m.status == "" || m.plan == "") && !m.started {
			t.Fatalf("%s: matched null, but one index answers it", query)
		}
	}
	// The first page's runs carry the fields the console shows.
	a := listPage(t, e, "tok-a", "sort=startedAt&limit=1")
	if len(a.Runs) != 1 || a.Runs[0].StartedAt == "" || a.Runs[0].PlanID == "" || a.Runs[0].EngineRunRef == "" {
		t.Fatalf("a started run's summary lacks startedAt, planId or engineRunRef: %+v", a.Runs)
	}
	// The other tenant sees only its own runs and counts.
	b := listPage(t, e, "tok-b", "limit=200")
	if b.Total != int64(len(theirs)) || len(b.Runs) != len(theirs) {
		t.Fatalf("other tenant: total %d, %d runs; want %d", b.Total, len(b.Runs), len(theirs))
	}
	var sum int64
	for _, n := range b.Counts {
		sum += n
	}
	if sum != int64(len(theirs)) {
		t.Fatalf("other tenant's counts %v sum to %d, want %d", b.Counts, sum, len(theirs))
	}
	// A tenant cannot name another's runs in a search either.
	if a := listPage(t, e, "tok-a", "runIdPrefix="+url.QueryEscape(theirs[0].RunID)); len(a.Runs) != 0 {
		t.Fatalf("tenant a found tenant b's run %s", theirs[0].RunID)
	}
}

func mapsEqual(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

// TestListRuns_ExactCountsBeyondAThousandAndScanLimited: 16,000 runs of one
// tenant. The counts are exact (the old list counted only the 1,000 most
// recent runs). A rare status is answered by its own index, exactly. A
// runId prefix matching 11,000 runs (too many to read whole) sorted by
// startedAt, whose runs are the oldest started: the first page is
// scanLimited (it read its bound of index entries without filling the
// page) with a cursor, never an empty answer without one, and the cursors
// reach every matching run in order.
func TestListRuns_ExactCountsBeyondAThousandAndScanLimited(t *testing.T) {
	t.Parallel()
	tenant := "t_many_" + testenv.RandomID(4)
	e := newEnv(t, httpapi.Config{AuthTokens: map[string]string{"tok-a": tenant}})
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var snaps []store.RunSnapshot
	want := map[string]int64{}
	for _, st := range snapshots.RunStatuses {
		want[st] = 0
	}
	var old []string
	for i := range 16000 {
		st := store.RunCompleted
		switch {
		case i%1000 == 7:
			st = store.RunFailed
		case i < 1500:
			st = store.RunRunning
		}
		id := fmt.Sprintf("many-b-%05d", i)
		if i < 11000 {
			id = fmt.Sprintf("many-a-%05d", i) // the oldest started
			old = append(old, id)
		}
		s := snap(tenant, id, st, 3, base.Add(time.Duration(i)*time.Millisecond))
		s.PlanID = "common"
		s.StartedAt = store.FormatPersistedAt(base.Add(time.Duration(i) * time.Second))
		want[st]++
		snaps = append(snaps, s)
	}
	writeSnapshots(t, e.redis, snaps)
	a := listPage(t, e, "tok-a", "status=FAILED")
	if !mapsEqual(a.Counts, want) || a.Total != 16000 {
		t.Fatalf("counts %v total %d, want %v and 16000", a.Counts, a.Total, want)
	}
	if len(a.Runs) != 16 || a.Matched == nil || *a.Matched != 16 {
		t.Fatalf("status=FAILED: %d runs, matched %v; want 16", len(a.Runs), a.Matched)
	}
	got, pages := listAll(t, e, "tok-a", "sort=startedAt&runIdPrefix=many-a&limit=200")
	if !pages[0].ScanLimited || pages[0].NextCursor == "" || pages[0].Matched != nil || len(pages[0].Runs) != 0 {
		t.Fatalf("first page of a filter no index answers: %d runs, scanLimited %v, cursor %q, matched %v; want none yet, scanLimited with a cursor, matched null",
			len(pages[0].Runs), pages[0].ScanLimited, pages[0].NextCursor, pages[0].Matched)
	}
	slices.Reverse(old)
	if !slices.Equal(got, old) {
		t.Fatalf("scan-limited paging listed %d runs, want the %d oldest started, newest first", len(got), len(old))
	}
	// A runId prefix of at most 2,000 runs is read whole: exact.
	got, pages = listAll(t, e, "tok-a", "sort=startedAt&runIdPrefix=many-a-01&limit=200")
	if len(got) != 1000 || pages[0].Matched == nil || *pages[0].Matched != 1000 || pages[0].ScanLimited || !slices.Equal(got, old[9000:10000]) {
		t.Fatalf("runIdPrefix of 1,000 runs: %d runs, matched %v, scanLimited %v; want the 1,000, exact", len(got), pages[0].Matched, pages[0].ScanLimited)
	}
	// A status and plan combination sorted by startedAt, its status set
	// small enough to read whole: exact, with matched.
	got, pages = listAll(t, e, "tok-a", "sort=startedAt&order=asc&status=FAILED&planId=common&limit=4")
	if len(got) != 16 || pages[0].Matched == nil || *pages[0].Matched != 16 || pages[0].ScanLimited {
		t.Fatalf("status+plan by startedAt: %d runs, matched %v, scanLimited %v; want 16, 16, false", len(got), pages[0].Matched, pages[0].ScanLimited)
	}
}

// TestListRuns_CursorBoundToQueryAnd400s: a cursor of one query given to
// another is a 400 naming cursor; every invalid parameter is a 400 naming
// it, before Redis is asked.
func TestListRuns_CursorBoundToQueryAnd400s(t *testing.T) {
	t.Parallel()
	tenant := "t_400_" + testenv.RandomID(4)
	e := newEnv(t, httpapi.Config{AuthTokens: map[string]string{"tok-a": tenant, "tok-b": "t_400_other"}})
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var snaps []store.RunSnapshot
	for i := range 5 {
		snaps = append(snaps, snap(tenant, fmt.Sprintf("c-%d", i), store.RunRunning, 1, base.Add(time.Duration(i)*time.Second)))
	}
	writeSnapshots(t, e.redis, snaps)
	a := listPage(t, e, "tok-a", "limit=2&status=RUNNING")
	if a.NextCursor == "" {
		t.Fatal("no cursor after a full page")
	}
	c := url.QueryEscape(a.NextCursor)
	if p := listPage(t, e, "tok-a", "limit=3&status=RUNNING&cursor="+c); len(p.Runs) != 3 {
		t.Fatalf("the same query with another limit: %d runs, want 3", len(p.Runs))
	}
	// Spelled differently, the same query: the defaults written out, and
	// one instant in two offsets.
	if p := listPage(t, e, "tok-a", "limit=3&status=RUNNING&sort=updatedAt&order=desc&cursor="+c); len(p.Runs) != 3 {
		t.Fatalf("the same query with its defaults written out: %d runs, want 3", len(p.Runs))
	}
	f := listPage(t, e, "tok-a", "limit=2&status=RUNNING&from=2026-03-01T12:00:00Z")
	if f.NextCursor == "" {
		t.Fatal("no cursor after a full page from a time")
	}
	if p := listPage(t, e, "tok-a", "limit=3&status=RUNNING&from="+url.QueryEscape("2026-03-01T13:00:00+01:00")+"&cursor="+url.QueryEscape(f.NextCursor)); len(p.Runs) != 3 {
		t.Fatalf("the same from in another offset: %d runs, want 3", len(p.Runs))
	}
	for _, q := range []string{"limit=2&cursor=" + c, "limit=2&status=RUNNING&order=asc&cursor=" + c, "status=RUNNING&sort=startedAt&cursor=" + c,
		"status=RUNNING&from=2026-01-01T00:00:00Z&cursor=" + c} {
		r := do(t, "GET", e.url+"/v1/runs?"+q, "tok-a", nil)
		if _, field, _ := r.errBody(t); r.status != 400 || field != "cursor" {
			t.Errorf("%s: %d %s, want 400 naming cursor", q, r.status, r.body)
		}
	}
	// Another tenant's use of the cursor: bound to the tenant too.
	r := do(t, "GET", e.url+"/v1/runs?limit=2&status=RUNNING&cursor="+c, "tok-b", nil)
	if _, field, _ := r.errBody(t); r.status != 400 || field != "cursor" {
		t.Errorf("another tenant's cursor: %d %s, want 400 naming cursor", r.status, r.body)
	}
	long := strings.Repeat("x", 256)
	for q, field := range map[string]string{
		"status=DONE":             "status",
		"sort=createdAt":          "sort",
		"order=up":                "order",
		"limit=0":                 "limit",
		"limit=201":               "limit",
		"from=yesterday":          "from",
		"to=2026-13-01T00:00:00Z": "to",
		"from=2026-03-02T00:00:00Z&to=2026-03-01T00:00:00Z": "to",
		"runIdPrefix=" + long:                               "runIdPrefix",
		"runIdPrefix=a%7Cb":                                 "runIdPrefix",
		"runIdPrefix=%0A":                                   "runIdPrefix",
		"planId=" + long:                                    "planId",
		"planId=p%7Cq":                                      "planId",
		"engineRunRef=" + strings.Repeat("r", 1025):         "engineRunRef",
		"engineRunRef=a%00b":                                "engineRunRef",
		"engineRunRef=%FF":                                  "engineRunRef",
		"cursor=bm9wZQ":                                     "cursor",
		"cursor=" + strings.Repeat("A", 2000):               "cursor",
	} {
		r := do(t, "GET", e.url+"/v1/runs?"+q, "tok-a", nil)
		if code, got, _ := r.errBody(t); r.status != 400 || got != field || code != "SCHEMA_VALIDATION_FAILED" {
			t.Errorf("%.60s: %d %s, want 400 naming %s", q, r.status, r.body, field)
		}
	}
	// Lex bounds are built from the prefix, never read as syntax.
	for _, p := range []string{"[", "(", "-", "+", "c-", "[c"} {
		a := listPage(t, e, "tok-a", "runIdPrefix="+url.QueryEscape(p))
		want := 0
		if p == "c-" {
			want = 5
		}
		if len(a.Runs) != want {
			t.Errorf("runIdPrefix=%q: %d runs, want %d", p, len(a.Runs), want)
		}
	}
}

// TestListRuns_StoreRunsAndPostgresDown: storeRuns is the store's count of
// the tenant's runs; with the store's Postgres stopped the list still
// answers from Redis, promptly, and storeRuns turns null once the
// remembered count is too old.
func TestListRuns_StoreRunsAndPostgresDown(t *testing.T) {
	t.Parallel()
	pg := testenv.StartPostgres(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := postgres.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	tenant := "t_pg_" + testenv.RandomID(4)
	e := newEnvOn(t, httpapi.Config{AuthTokens: map[string]string{"tok-a": tenant}}, pool, testenv.Redis(t))
	st, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var snaps []store.RunSnapshot
	for range 3 {
		w := workload.Event(workload.NewIdentity(tenant), store.EventRunStarted, "", 1, 1, time.Now(), nil)
		if _, err := st.AppendEvent(ctx, w); err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, snap(tenant, w.RunID, store.RunRunning, 1, time.Now()))
	}
	// Two of the three runs projected: storeRuns > total says one is missing.
	writeSnapshots(t, e.redis, snaps[:2])
	a := listPage(t, e, "tok-a", "")
	if a.StoreRuns == nil || *a.StoreRuns != 3 || a.Total != 2 || len(a.Runs) != 2 {
		t.Fatalf("storeRuns %v total %d runs %d; want 3, 2, 2", a.StoreRuns, a.Total, len(a.Runs))
	}
	pg.Stop()
	// The count is reused for a few seconds (storeRunsMaxAge); then
	// storeRuns is null, and every answer meanwhile is the list, served
	// from Redis without waiting on the store.
	stopped := time.Now()
	for {
		start := time.Now()
		a = listPage(t, e, "tok-a", "")
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("the list took %v with Postgres stopped", d)
		}
		if a.Total != 2 || len(a.Runs) != 2 || a.Counts[store.RunRunning] != 2 {
			t.Fatalf("with Postgres stopped: total %d runs %d counts %v; want 2, 2, 2 RUNNING", a.Total, len(a.Runs), a.Counts)
		}
		if a.StoreRuns == nil {
			break
		}
		if *a.StoreRuns != 3 || time.Since(stopped) > 15*time.Second {
			t.Fatalf("storeRuns %d %v after Postgres stopped; want null within 15 s", *a.StoreRuns, time.Since(stopped))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// TestListRuns_RedisDown503: with Redis unreachable the list is 503
// UNAVAILABLE, never an empty list.
func TestListRuns_RedisDown503(t *testing.T) {
	t.Parallel()
	pool, _ := testenv.Postgres(t, 5)
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { rdb.Close() })
	e := newEnvOn(t, httpapi.Config{DefaultTenant: "t_down"}, pool, rdb)
	r := do(t, "GET", e.url+"/v1/runs?runIdPrefix=a&sort=startedAt", "", nil)
	if code, _, _ := r.errBody(t); r.status != 503 || code != "UNAVAILABLE" {
		t.Fatalf("Redis down: %d %s, want 503 UNAVAILABLE", r.status, r.body)
	}
}

func TestListRuns_NewestFirstPagedFilteredAndScoped(t *testing.T) {
	t.Parallel()
	tenant := "t_list_" + testenv.RandomID(4)
	e := newEnv(t, httpapi.Config{AuthTokens: map[string]string{"tok-a": tenant, "tok-b": "t_other"}})
	r := do(t, "GET", e.url+"/v1/runs", "tok-a", nil)
	if r.status != 200 || !strings.Contains(string(r.body), `"runs":[]`) {
		t.Fatalf("empty list: %d %s", r.status, r.body)
	}
	base := time.Now().Add(-time.Hour)
	var ids []string
	for i := range 7 {
		id := fmt.Sprintf("run-%d-%s", i, testenv.RandomID(3))
		st := store.RunRunning
		if i%2 == 0 {
			st = store.RunCompleted
		}
		// Two runs share a timestamp, to exercise ties across pages.
		at := base.Add(time.Duration(min(i, 5)) * time.Second)
		putSnapshot(t, e.redis, snap(tenant, id, st, int64(i+1), at))
		ids = append(ids, id)
	}
	putSnapshot(t, e.redis, snap("t_other", "foreign-"+testenv.RandomID(3), store.RunRunning, 1, time.Now()))

	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("pagination does not end")
		}
		r := do(t, "GET", e.url+"/v1/runs?limit=3&cursor="+cursor, "tok-a", nil)
		var out struct {
			Runs []struct {
				RunID, Status string
			}
			NextCursor string
			Counts     map[string]int
		}
		if err := json.Unmarshal(r.body, &out); err != nil || r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		if out.Counts["COMPLETED"] != 4 || out.Counts["RUNNING"] != 3 {
			t.Fatalf("counts %v, want 4 COMPLETED and 3 RUNNING (the other tenant's run excluded)", out.Counts)
		}
		for _, run := range out.Runs {
			got = append(got, run.RunID)
		}
		if out.NextCursor == "" {
			break
		}
		cursor = out.NextCursor
	}
	if len(got) != 7 {
		t.Fatalf("paged %d runs %v, want all 7 exactly once", len(got), got)
	}
	seen := map[string]bool{}
	for _, id := range got {
		if seen[id] {
			t.Fatalf("run %s listed twice across pages: %v", id, got)
		}
		seen[id] = true
	}
	if got[0] != ids[6] && got[0] != ids[5] {
		t.Fatalf("first run %s is not among the newest", got[0])
	}
	r = do(t, "GET", e.url+"/v1/runs?status=RUNNING", "tok-a", nil)
	if strings.Count(string(r.body), `"status":"RUNNING"`) != 3 || strings.Contains(string(r.body), `"status":"COMPLETED"`) {
		t.Fatalf("status filter: %s", r.body)
	}
	for _, q := range []string{"status=DONE", "limit=0", "limit=x", "cursor=bm9wZQ"} {
		if r := do(t, "GET", e.url+"/v1/runs?"+q, "tok-a", nil); r.status != 400 {
			t.Errorf("%s: %d, want 400", q, r.status)
		}
	}
	if r := do(t, "GET", e.url+"/v1/runs", "", nil); r.status != 401 {
		t.Errorf("no token: %d", r.status)
	}
	if r := do(t, "GET", e.url+"/v1/runs?access_token=tok-a", "", nil); r.status != 200 {
		t.Errorf("access_token query parameter: %d", r.status)
	}
}
