package httpapi_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
)

// logLines returns the JSON log records of level whose msg contains msg.
func logLines(t *testing.T, logs *testenv.Buffer, level, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(logs.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil {
			continue
		}
		if rec["level"] == level && strings.Contains(rec["msg"].(string), msg) {
			out = append(out, rec)
		}
	}
	return out
}

// TestAppend_CrossTenantRunIDConflict: an append to another tenant's run
// is 403 without naming the owner, counted and logged at WARN with both
// tenants for the operator.
func TestAppend_CrossTenantRunIDConflict(t *testing.T) {
	t.Parallel()
	logs := &testenv.Buffer{}
	owner, other := "tenant_own_"+testenv.RandomID(3), "tenant_oth_"+testenv.RandomID(3)
	e := newEnv(t, httpapi.Config{AuthTokens: map[string]string{"tok-a": owner, "tok-b": other},
		Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	id := workload.NewIdentity(owner)
	if r := do(t, "POST", e.url+"/v1/events", "tok-a", mustJSON(t, workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil))); r.status != 201 {
		t.Fatal(r.status, string(r.body))
	}
	id.TenantID = other
	theirs := mustJSON(t, workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil))
	r := do(t, "POST", e.url+"/v1/events", "tok-b", theirs)
	if r.status != 403 {
		t.Fatalf("append to another tenant's runId: %d %s, want 403", r.status, r.body)
	}
	if code, _, msg := r.errBody(t); code != "FORBIDDEN" || strings.Contains(string(r.body), owner) || msg == "" {
		t.Fatalf("answer %s: want FORBIDDEN with a message that does not name the owner %s", r.body, owner)
	}
	r = do(t, "POST", e.url+"/v1/events:batch", "tok-b", []byte(`{"events":[`+string(theirs)+`]}`))
	if r.status != 200 || !strings.Contains(string(r.body), `"FORBIDDEN"`) || strings.Contains(string(r.body), owner) {
		t.Fatalf("batch append to another tenant's runId: %d %s, want the item FORBIDDEN without the owner", r.status, r.body)
	}
	if got := counterValue(t, e.reg, "runstream_api_cross_tenant_conflicts_total", ""); got != 2 {
		t.Fatalf("runstream_api_cross_tenant_conflicts_total = %v, want 2", got)
	}
	warns := logLines(t, logs, "WARN", "another tenant")
	if len(warns) == 0 {
		t.Fatalf("no WARN line for the conflict; logs:\n%s", logs)
	}
	if w := warns[0]; w["runId"] != id.RunID || w["tenantId"] != other || w["ownerTenantId"] != owner {
		t.Fatalf("WARN line %v: want runId %s, tenantId %s and ownerTenantId %s", w, id.RunID, other, owner)
	}
}

// TestWatch_ForeignAndMalformedNotificationsDropped: a deployment on
// another database of the same Redis server publishes on its own channel
// and never reaches this API's watchers; a message on this API's channel
// that is not a valid notification is dropped, counted and logged (once
// a minute), and a valid one reaches tenants re-encoded.
func TestWatch_ForeignAndMalformedNotificationsDropped(t *testing.T) {
	t.Parallel()
	logs := &testenv.Buffer{}
	tenant := "tenant_n_" + testenv.RandomID(4)
	e := newEnv(t, httpapi.Config{DefaultTenant: tenant,
		Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	c, st := openSSE(t, e.url+"/v1/runs/watch", "", "")
	if st != 200 {
		t.Fatalf("tenant watch: %d", st)
	}
	ctx := context.Background()
	opts := *e.redis.Options()
	opts.DB = (opts.DB + 7) % 16
	other := redis.NewClient(&opts)
	t.Cleanup(func() { _ = other.Close() })
	foreign := snap(tenant, "foreign-"+testenv.RandomID(4), store.RunRunning, 1, time.Now())
	if _, err := snapshots.WriteAll(ctx, other, []snapshots.Write{{Snapshot: foreign, Expected: -1}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Del(context.Background(), snapshots.Key(foreign.RunID), snapshots.IndexKey(tenant)) })
	ch := snapshots.UpdatesChannelOf(e.redis)
	for _, msg := range []string{
		`not json`,
		`{"runId":"x\nevent: forged\ndata: {}\n","tenantId":"` + tenant + `","lastEventSeq":1,"status":"RUNNING"}`,
	} {
		if err := e.redis.Publish(ctx, ch, msg).Err(); err != nil {
			t.Fatal(err)
		}
	}
	extra := `{"status":"RUNNING","runId":"extra-1","tenantId":"` + tenant + `","lastEventSeq":3,"note":"\nevent: forged"}`
	if err := e.redis.Publish(ctx, ch, extra).Err(); err != nil {
		t.Fatal(err)
	}
	id := "valid-" + testenv.RandomID(4)
	putSnapshot(t, e.redis, snap(tenant, id, store.RunRunning, 1, time.Now()))
	if ev, data := c.next(t); ev != "update" || data != `{"runId":"extra-1","tenantId":"`+tenant+`","lastEventSeq":3,"status":"RUNNING"}` {
		t.Fatalf("first event %s %s: want the valid notification re-encoded, and nothing from the other database or the malformed ones", ev, data)
	}
	if ev, data := c.next(t); ev != "update" || !strings.Contains(data, id) {
		t.Fatalf("second event %s %s, want the update of %s", ev, data, id)
	}
	for reason, want := range map[string]float64{"malformed": 1, "invalid": 1} {
		if got := counterValue(t, e.reg, "runstream_api_notifications_dropped_total", reason); got != want {
			t.Errorf("runstream_api_notifications_dropped_total{reason=%q} = %v, want %v", reason, got, want)
		}
	}
	if warns := logLines(t, logs, "WARN", "not a valid notification"); len(warns) != 1 {
		t.Errorf("%d WARN lines for 2 dropped messages, want 1 (at most one a minute); logs:\n%s", len(warns), logs)
	}
}
