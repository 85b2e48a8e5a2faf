package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/testenv/testpg"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// auditEnv is an API whose store's audit grace is short, so reads follow
// appends within milliseconds; st appends directly.
type auditEnv struct {
	url  string
	st   *postgres.Store
	pool *pgxpool.Pool
}

func newAuditEnv(t *testing.T, cfg httpapi.Config) auditEnv {
	t.Helper()
	pool := migratedPool(t, 20)
	reg := prometheus.NewRegistry()
	st, err := postgres.New(pool, postgres.Config{Registerer: reg, AuditGrace: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Registerer, cfg.Gatherer = reg, reg
	srv, err := httpapi.New(cfg, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(ts.Close)
	return auditEnv{url: ts.URL, st: st, pool: pool}
}

type auditAnswer struct {
	Events     []store.RunEventRecord `json:"events"`
	Horizon    string                 `json:"horizon"`
	NextCursor *string                `json:"nextCursor"`
}

func (e auditEnv) read(t *testing.T, token string, params url.Values) (response, auditAnswer) {
	t.Helper()
	r := do(t, "GET", e.url+"/v1/events?"+params.Encode(), token, nil)
	var a auditAnswer
	if r.status == http.StatusOK {
		if err := json.Unmarshal(r.body, &a); err != nil {
			t.Fatalf("audit answer %q: %v", r.body, err)
		}
		if a.Events == nil {
			t.Fatalf("audit answer %q has no events array", r.body)
		}
		if _, err := time.Parse(time.RFC3339Nano, a.Horizon); err != nil {
			t.Fatalf("horizon %q: %v", a.Horizon, err)
		}
	}
	return r, a
}

func auditProbe(id workload.Identity, n int) store.RunEventWrite {
	return workload.Event(id, "AuditProbe", "", int64(n), 1, time.Now(), map[string]any{"n": n, "note": "<&>"})
}

// TestAuditRead_HeldTransactionAcrossPages: through the API, with a
// cursor and pages of 2, a transaction held open with an event in it
// stops every page before that event's persistedAt while events committed
// after it wait; once it commits, the next pages hold it, in its place,
// and each event comes exactly once. The records are byte for byte the
// run route's.
func TestAuditRead_HeldTransactionAcrossPages(t *testing.T) {
	t.Parallel()
	e := newAuditEnv(t, httpapi.Config{})
	ctx := context.Background()
	tenant := "tenant_" + testenv.RandomID(6)
	a, b := workload.NewIdentity(tenant), workload.NewIdentity(tenant)
	from := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano)
	for i := 1; i <= 3; i++ {
		if _, err := e.st.AppendEvent(ctx, auditProbe(a, i)); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	held := auditProbe(b, 1)
	heldAt := testpg.AppendInTx(ctx, t, tx, held)
	for i := 4; i <= 6; i++ {
		if _, err := e.st.AppendEvent(ctx, auditProbe(a, i)); err != nil {
			t.Fatal(err)
		}
	}
	var got []store.RunEventRecord
	params := url.Values{"tenantId": {tenant}, "from": {from}, "limit": {"2"}}
	page := func() auditAnswer {
		t.Helper()
		r, ans := e.read(t, "", params)
		if r.status != http.StatusOK {
			t.Fatalf("GET /v1/events?%s: %d %s", params.Encode(), r.status, r.body)
		}
		if ans.NextCursor == nil {
			t.Fatalf("an open window's page has no nextCursor: %s", r.body)
		}
		params.Set("cursor", *ans.NextCursor)
		got = append(got, ans.Events...)
		return ans
	}
	testenv.WaitFor(t, 10*time.Second, "the three events before the held one", func() bool {
		page()
		return len(got) >= 3
	})
	for range 3 {
		ans := page()
		h, _ := time.Parse(time.RFC3339Nano, ans.Horizon)
		if h.After(heldAt) {
			t.Fatalf("horizon %s passed the held event's persistedAt %s", ans.Horizon, heldAt)
		}
	}
	if len(got) != 3 {
		t.Fatalf("while the transaction is open: %d events, want 3", len(got))
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "every event after the commit", func() bool {
		page()
		return len(got) >= 7
	})
	page()
	if len(got) != 7 || got[3].EventID != held.EventID {
		t.Fatalf("read %d events, fourth %s; want 7 with the held event %s fourth", len(got), got[min(3, len(got)-1)].EventID, held.EventID)
	}
	seen := map[string]bool{}
	for _, ev := range got {
		if seen[ev.EventID] {
			t.Fatalf("event %s read twice", ev.EventID)
		}
		seen[ev.EventID] = true
	}
	// The records are the run route's, byte for byte.
	r := do(t, "GET", e.url+"/v1/runs/"+b.RunID+"/events", "", nil)
	var run struct{ Events []json.RawMessage }
	if err := json.Unmarshal(r.body, &run); err != nil || len(run.Events) != 1 {
		t.Fatalf("run route: %d %s", r.status, r.body)
	}
	mine, _ := json.Marshal(got[3])
	if string(mine) != string(run.Events[0]) {
		t.Fatalf("audit record %s differs from the run route's %s", mine, run.Events[0])
	}
}

// TestAuditRead_BadWindowsAndCursors: 400 SCHEMA_VALIDATION_FAILED with
// the field for a reversed window, an unparsable time, limit or cursor, a
// missing from, and a cursor of another window or tenant.
func TestAuditRead_BadWindowsAndCursors(t *testing.T) {
	t.Parallel()
	e := newAuditEnv(t, httpapi.Config{})
	const from, to = "2026-02-16T10:00:00Z", "2026-02-16T11:00:00Z"
	r, ans := e.read(t, "", url.Values{"tenantId": {"tenant_a"}, "from": {from}, "to": {to}, "limit": {"1"}})
	if r.status != http.StatusOK || ans.NextCursor != nil {
		t.Fatalf("an empty finished window: %d %s, want 200 without nextCursor", r.status, r.body)
	}
	_, open := e.read(t, "", url.Values{"tenantId": {"tenant_a"}, "from": {from}})
	if open.NextCursor == nil {
		t.Fatal("an open window's answer has no nextCursor")
	}
	cursor := *open.NextCursor
	for _, c := range []struct {
		name, query, field string
	}{
		{"reversed", "tenantId=tenant_a&from=" + to + "&to=" + from, "to"},
		{"reversed by an offset", "tenantId=tenant_a&from=2026-02-16T10:00:00Z&to=2026-02-16T11:00:00%2B02:00", "to"},
		{"no from", "tenantId=tenant_a&to=" + to, "from"},
		{"from unparsable", "tenantId=tenant_a&from=yesterday", "from"},
		{"from with a raw plus", "tenantId=tenant_a&from=2026-02-16T10:00:00+02:00", "from"},
		{"to unparsable", "tenantId=tenant_a&from=" + from + "&to=2026-13-01T00:00:00Z", "to"},
		{"to at the zero time", "tenantId=tenant_a&from=" + from + "&to=0001-01-01T00:00:00Z", "to"},
		{"limit zero", "tenantId=tenant_a&from=" + from + "&limit=0", "limit"},
		{"limit too big", "tenantId=tenant_a&from=" + from + "&limit=1001", "limit"},
		{"limit not a number", "tenantId=tenant_a&from=" + from + "&limit=ten", "limit"},
		{"cursor garbage", "tenantId=tenant_a&from=" + from + "&cursor=garbage", "cursor"},
		{"cursor of another window", "tenantId=tenant_a&from=" + from + "&to=" + to + "&cursor=" + cursor, "cursor"},
		{"cursor of another tenant", "tenantId=tenant_b&from=" + from + "&cursor=" + cursor, "cursor"},
		{"cursor of another start", "tenantId=tenant_a&from=2026-02-16T10:00:00.000001Z&cursor=" + cursor, "cursor"},
		{"malformed query", "tenantId=tenant_a&from=" + from + "&cursor=%%%", "cursor"},
		{"bad tenantId", "tenantId=a%7Cb&from=" + from, "tenantId"},
	} {
		r := do(t, "GET", e.url+"/v1/events?"+c.query, "", nil)
		if r.status != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", c.name, r.status, r.body)
			continue
		}
		if code, field, _ := r.errBody(t); code != "SCHEMA_VALIDATION_FAILED" || field != c.field {
			t.Errorf("%s: %s field %q, want SCHEMA_VALIDATION_FAILED field %q", c.name, code, field, c.field)
		}
	}
	// HEAD answers as GET does, without the body.
	if r := do(t, "HEAD", e.url+"/v1/events?tenantId=tenant_a&from="+from, "", nil); r.status != http.StatusOK || len(r.body) != 0 {
		t.Errorf("HEAD: %d with %d bytes, want 200 without a body", r.status, len(r.body))
	}
	if r := do(t, "HEAD", e.url+"/v1/events?tenantId=tenant_a&from="+to+"&to="+from, "", nil); r.status != http.StatusBadRequest {
		t.Errorf("HEAD of a reversed window: %d, want 400", r.status)
	}
	// The same window, spelled with another offset, is the same window.
	same := do(t, "GET", e.url+"/v1/events?tenantId=tenant_a&from=2026-02-16T12:00:00%2B02:00&cursor="+cursor, "", nil)
	if same.status != http.StatusOK {
		t.Errorf("the cursor with from in another offset: %d %s, want 200", same.status, same.body)
	}
}

// TestAuditRead_TenantScoping: a tenant reads its own events only (403
// naming tenantId for another's), an operator and a caller without tokens
// must say which tenant (400 tenantId) and then read that one only.
func TestAuditRead_TenantScoping(t *testing.T) {
	t.Parallel()
	e := newAuditEnv(t, httpapi.Config{AuthTokens: map[string]string{"tok-a": "tenant_a", "tok-b": "tenant_b", "tok-op": "*"}})
	ctx := context.Background()
	from := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano)
	ids := map[string]workload.Identity{"tenant_a": workload.NewIdentity("tenant_a"), "tenant_b": workload.NewIdentity("tenant_b")}
	for _, id := range ids {
		for i := 1; i <= 2; i++ {
			if _, err := e.st.AppendEvent(ctx, auditProbe(id, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	readAll := func(token string, params url.Values) []store.RunEventRecord {
		t.Helper()
		var all []store.RunEventRecord
		testenv.WaitFor(t, 10*time.Second, "both events", func() bool {
			r, ans := e.read(t, token, params)
			if r.status != http.StatusOK {
				t.Fatalf("%s reading %v: %d %s", token, params, r.status, r.body)
			}
			all = append(all, ans.Events...)
			params.Set("cursor", *ans.NextCursor)
			return len(all) >= 2
		})
		return all
	}
	for _, c := range []struct {
		token  string
		params url.Values
		tenant string
	}{
		{"tok-a", url.Values{"from": {from}}, "tenant_a"},
		{"tok-a", url.Values{"from": {from}, "tenantId": {"tenant_a"}}, "tenant_a"},
		{"tok-b", url.Values{"from": {from}}, "tenant_b"},
		{"tok-op", url.Values{"from": {from}, "tenantId": {"tenant_b"}}, "tenant_b"},
	} {
		for _, ev := range readAll(c.token, c.params) {
			if ev.TenantID != c.tenant || ev.RunID != ids[c.tenant].RunID {
				t.Errorf("%s reading %v got event %s of tenant %s, want only %s's", c.token, c.params, ev.EventID, ev.TenantID, c.tenant)
			}
		}
	}
	if r := do(t, "GET", e.url+"/v1/events?tenantId=tenant_b&from="+url.QueryEscape(from), "tok-a", nil); r.status != http.StatusForbidden {
		t.Errorf("tenant_a reading tenant_b: %d %s, want 403", r.status, r.body)
	} else if code, field, _ := r.errBody(t); code != "FORBIDDEN" || field != "tenantId" {
		t.Errorf("tenant_a reading tenant_b: %s %q, want FORBIDDEN tenantId", code, field)
	}
	if r := do(t, "GET", e.url+"/v1/events?from="+url.QueryEscape(from), "tok-op", nil); r.status != http.StatusBadRequest {
		t.Errorf("operator without tenantId: %d %s, want 400", r.status, r.body)
	} else if _, field, _ := r.errBody(t); field != "tenantId" {
		t.Errorf("operator without tenantId: field %q, want tenantId", field)
	}
	if r := do(t, "GET", e.url+"/v1/events?from="+url.QueryEscape(from), "", nil); r.status != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", r.status)
	}
	// A cursor tenant_a got is refused to tenant_b's token: it names
	// another tenant's window.
	r, ans := e.read(t, "tok-a", url.Values{"from": {from}})
	if r.status != http.StatusOK || ans.NextCursor == nil {
		t.Fatalf("tenant_a: %d %s", r.status, r.body)
	}
	if r := do(t, "GET", e.url+"/v1/events?from="+url.QueryEscape(from)+"&cursor="+*ans.NextCursor, "tok-b", nil); r.status != http.StatusBadRequest {
		t.Errorf("tenant_b with tenant_a's cursor: %d %s, want 400", r.status, r.body)
	}

	dev := newAuditEnv(t, httpapi.Config{})
	if r := do(t, "GET", dev.url+"/v1/events?from="+url.QueryEscape(from), "", nil); r.status != http.StatusBadRequest {
		t.Errorf("without tokens and without tenantId: %d %s, want 400", r.status, r.body)
	} else if _, field, _ := r.errBody(t); field != "tenantId" {
		t.Errorf("without tokens and without tenantId: field %q, want tenantId", field)
	}
}

// TestAuditRead_WindowsACursorCanPage: a window is refused (400 naming
// from or to) unless its cursor is one the endpoint takes back: it
// answered 200 from 0000-01-01 with a nextCursor it then refused. At the
// edges of the range a window's cursor pages.
func TestAuditRead_WindowsACursorCanPage(t *testing.T) {
	t.Parallel()
	e := newAuditEnv(t, httpapi.Config{})
	id := workload.NewIdentity("tenant_a")
	for n := 1; n <= 3; n++ {
		if _, err := e.st.AppendEvent(context.Background(), auditProbe(id, n)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ name, from, to, field string }{
		{"from in year 0", "0000-01-01T00:00:00Z", "", "from"},
		{"from before year 1 by an offset", "0001-01-01T00:30:00+01:00", "", "from"},
		{"to rounded up past year 9999", "2026-01-01T00:00:00Z", "9999-12-31T23:59:59.9999999Z", "to"},
		{"a window before year 1, to its first microsecond", "0000-06-01T00:00:00Z", "0001-01-01T00:00:00.0000001-00:00", "from"},
	} {
		q := url.Values{"tenantId": {"tenant_a"}, "from": {c.from}}
		if c.to != "" {
			q.Set("to", c.to)
		}
		r, _ := e.read(t, "", q)
		if r.status != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", c.name, r.status, r.body)
			continue
		}
		if code, field, msg := r.errBody(t); code != "SCHEMA_VALIDATION_FAILED" || field != c.field {
			t.Errorf("%s: %s field %q (%s), want field %q", c.name, code, field, msg, c.field)
		}
	}
	for _, w := range []struct{ from, to string }{
		{"0001-01-01T00:00:00.000001Z", ""},
		{"0001-01-01T00:00:00.000001Z", "9999-12-31T23:59:59.999999Z"},
	} {
		q := url.Values{"tenantId": {"tenant_a"}, "from": {w.from}, "limit": {"2"}}
		if w.to != "" {
			q.Set("to", w.to)
		}
		got := 0
		for page := 0; ; page++ {
			r, a := e.read(t, "", q)
			if r.status != http.StatusOK {
				t.Fatalf("window [%s, %s) page %d: %d %s, want 200", w.from, w.to, page, r.status, r.body)
			}
			got += len(a.Events)
			if a.NextCursor == nil || got >= 3 {
				break
			}
			q.Set("cursor", *a.NextCursor)
		}
		if got != 3 {
			t.Fatalf("window [%s, %s): %d events, want 3", w.from, w.to, got)
		}
	}
}
