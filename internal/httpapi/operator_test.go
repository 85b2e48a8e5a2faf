package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/internal/lag"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/testenv/testkafka"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
)

// operatorRoutes are the operator routes with a request each would take.
var operatorRoutes = []struct{ method, path, body string }{
	{"GET", "/v1/lag/groups", ""},
	{"GET", "/v1/dead-letters", ""},
	{"GET", "/v1/dead-letters/1", ""},
	{"POST", "/v1/dead-letters/1/retry", ""},
	{"POST", "/v1/dead-letters/retry", `{"all":true}`},
	{"POST", "/v1/rebuilds", `{"tenantId":"tenant_a"}`},
	{"GET", "/v1/rebuilds", ""},
	{"GET", "/v1/rebuilds/00000000-0000-0000-0000-000000000000", ""},
}

// A tenant's token is refused on every operator route (403), no token
// is 401, and nothing was done: no rebuild started, nothing retried.
func TestOperator_TenantTokenForbiddenOnEveryRoute(t *testing.T) {
	// A Redis of its own: the rebuilds listed at the end are every
	// replica's of that Redis, so none of another test's.
	rp := testenv.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: rp.Addr})
	t.Cleanup(func() { rdb.Close() })
	e := newEnvOn(t, httpapi.Config{AuthTokens: roleTokens}, migratedPool(t, 20), rdb)
	for _, rt := range operatorRoutes {
		if r := do(t, rt.method, e.url+rt.path, "tok-a", []byte(rt.body)); r.status != http.StatusForbidden {
			t.Errorf("%s %s with a tenant's token: %d %s, want 403", rt.method, rt.path, r.status, r.body)
		} else if code, _, msg := r.errBody(t); code != "FORBIDDEN" || !strings.Contains(msg, "operators") {
			t.Errorf("%s %s: %s %q, want FORBIDDEN saying it is for operators", rt.method, rt.path, code, msg)
		}
		if r := do(t, rt.method, e.url+rt.path, "", []byte(rt.body)); r.status != http.StatusUnauthorized {
			t.Errorf("%s %s without a token: %d, want 401", rt.method, rt.path, r.status)
		}
	}
	if r := do(t, "GET", e.url+"/v1/rebuilds", "tok-op", nil); r.status != 200 || !strings.Contains(string(r.body), `"rebuilds":[]`) {
		t.Fatalf("after the refusals: %d %s, want no rebuild", r.status, r.body)
	}
}

// Every invalid input is a 400 naming its field, before it reaches
// Postgres or Redis.
func TestOperator_BadRequestsNameTheField(t *testing.T) {
	e := newEnv(t, httpapi.Config{AuthTokens: roleTokens})
	manyIDs := make([]int64, 1001)
	manyRuns := make([]string, 1001)
	for i := range manyIDs {
		manyIDs[i], manyRuns[i] = int64(i+1), fmt.Sprint("r", i)
	}
	for _, c := range []struct{ method, path, body, field string }{
		{"GET", "/v1/dead-letters?limit=0", "", "limit"},
		{"GET", "/v1/dead-letters?limit=201", "", "limit"},
		{"GET", "/v1/dead-letters?limit=x", "", "limit"},
		{"GET", "/v1/dead-letters?runId=a%7Cb", "", "runId"},
		{"GET", "/v1/dead-letters?cursor=zzz", "", "cursor"},
		{"GET", "/v1/dead-letters/abc", "", "id"},
		{"GET", "/v1/dead-letters/0", "", "id"},
		{"POST", "/v1/dead-letters/-3/retry", "", "id"},
		{"POST", "/v1/dead-letters/retry", `{}`, "ids"},
		{"POST", "/v1/dead-letters/retry", `{"ids":[]}`, "ids"},
		{"POST", "/v1/dead-letters/retry", `{"all":false}`, "all"},
		{"POST", "/v1/dead-letters/retry", `{"all":true,"ids":[1]}`, "ids"},
		{"POST", "/v1/dead-letters/retry", `{"ids":[3,0]}`, "ids[1]"},
		{"POST", "/v1/dead-letters/retry", `{"ids":"7"}`, "ids"},
		{"POST", "/v1/dead-letters/retry", `{"id":[7]}`, "id"},
		{"POST", "/v1/dead-letters/retry", string(mustJSON(t, map[string]any{"ids": manyIDs})), "ids"},
		{"POST", "/v1/rebuilds", `{}`, "tenantId"},
		{"POST", "/v1/rebuilds", `{"tenantId":"a|b"}`, "tenantId"},
		{"POST", "/v1/rebuilds", `{"tenantId":"t","runIds":["r"]}`, "runIds"},
		{"POST", "/v1/rebuilds", `{"runIds":["ok","bad|id"]}`, "runIds[1]"},
		{"POST", "/v1/rebuilds", string(mustJSON(t, map[string]any{"runIds": manyRuns})), "runIds"},
		{"POST", "/v1/rebuilds", `{"runIds":[1]}`, "runIds"},
		{"GET", "/v1/rebuilds/not-a-uuid", "", "id"},
	} {
		r := do(t, c.method, e.url+c.path, "tok-op", []byte(c.body))
		if r.status != http.StatusBadRequest {
			t.Errorf("%s %s %s: %d %s, want 400", c.method, c.path, c.body, r.status, r.body)
			continue
		}
		if code, field, msg := r.errBody(t); code != "SCHEMA_VALIDATION_FAILED" || field != c.field || msg == "" {
			t.Errorf("%s %s %s: %s field %q (%q), want field %q", c.method, c.path, c.body, code, field, msg, c.field)
		}
	}
}

// deadLetterAll moves every outbox row of runIDs to the dead letters as
// the relay does when it gives up, and returns how many moved.
func deadLetterAll(t *testing.T, st *postgres.Store, runIDs ...string) int64 {
	t.Helper()
	tag, err := st.Pool().Exec(context.Background(), `WITH moved AS (DELETE FROM outbox WHERE run_id = ANY($1)
			RETURNING id, shard, run_id, run_seq, created_at)
		INSERT INTO outbox_dead_letters (id, shard, run_id, run_seq, created_at, attempts, last_error, first_failed_at)
		SELECT id, shard, run_id, run_seq, created_at, 5, 'MESSAGE_TOO_LARGE: the broker refused the record', now() - interval '10 minutes' FROM moved`, runIDs)
	if err != nil {
		t.Fatal(err)
	}
	return tag.RowsAffected()
}

type deadLetterJSON struct {
	ID            int64      `json:"id"`
	RunID         string     `json:"runId"`
	RunSeq        int64      `json:"runSeq"`
	EventType     string     `json:"eventType"`
	EventID       string     `json:"eventId"`
	TenantID      string     `json:"tenantId"`
	LastError     string     `json:"lastError"`
	Attempts      int        `json:"attempts"`
	FirstFailedAt *time.Time `json:"firstFailedAt"`
	DeadAt        time.Time  `json:"deadAt"`
}

type deadLetterPage struct {
	DeadLetters []deadLetterJSON `json:"deadLetters"`
	NextCursor  string           `json:"nextCursor"`
}

func getJSON[T any](t *testing.T, url, token string) T {
	t.Helper()
	r := do(t, "GET", url, token, nil)
	if r.status != 200 {
		t.Fatalf("GET %s: %d %s", url, r.status, r.body)
	}
	var v T
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("GET %s: %v: %s", url, err, r.body)
	}
	return v
}

// Dead letters are listed in pages, inspected with the record the relay
// would publish, and retried one at a time, by ids or all: each retry
// moves the rows back into the outbox.
func TestOperator_DeadLetters(t *testing.T) {
	pool := migratedPool(t, 20)
	st, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvOn(t, httpapi.Config{AuthTokens: roleTokens}, pool, testenv.Redis(t))
	ctx := context.Background()
	// Two runs of tenant_a: run one with 2 events, run two with 1.
	one := appendAs(t, e.url, "tok-a", "tenant_a")
	step := workload.Event(one, store.EventStepStarted, "build", 1, 1, time.Now(), nil)
	if r := do(t, "POST", e.url+"/v1/events", "tok-a", mustJSON(t, step)); r.status != 201 {
		t.Fatalf("append: %d %s", r.status, r.body)
	}
	two := appendAs(t, e.url, "tok-a", "tenant_a")
	if n := deadLetterAll(t, st, one.RunID, two.RunID); n != 3 {
		t.Fatalf("dead-lettered %d events, want 3", n)
	}
	outbox := func() (n int64) {
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM outbox`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if outbox() != 0 {
		t.Fatal("the outbox still holds rows")
	}

	// Pages of 2 then 1, in id order; the cursor is bound to its query.
	p1 := getJSON[deadLetterPage](t, e.url+"/v1/dead-letters?limit=2", "tok-op")
	if len(p1.DeadLetters) != 2 || p1.NextCursor == "" {
		t.Fatalf("first page: %+v", p1)
	}
	p2 := getJSON[deadLetterPage](t, e.url+"/v1/dead-letters?limit=2&cursor="+p1.NextCursor, "tok-op")
	if len(p2.DeadLetters) != 1 || p2.NextCursor != "" {
		t.Fatalf("second page: %+v, want the last letter and no cursor", p2)
	}
	all := append(p1.DeadLetters, p2.DeadLetters...)
	if !slices.IsSortedFunc(all, func(a, b deadLetterJSON) int { return int(a.ID - b.ID) }) {
		t.Fatalf("pages not in id order: %+v", all)
	}
	for _, d := range all {
		if d.TenantID != "tenant_a" || d.Attempts != 5 || !strings.Contains(d.LastError, "MESSAGE_TOO_LARGE") ||
			d.FirstFailedAt == nil || !d.FirstFailedAt.Before(d.DeadAt) || d.EventType == "" || d.EventID == "" {
			t.Fatalf("dead letter %+v: the table's columns are not all there", d)
		}
	}
	if r := do(t, "GET", e.url+"/v1/dead-letters?limit=2&runId="+one.RunID+"&cursor="+p1.NextCursor, "tok-op", nil); r.status != 400 {
		t.Fatalf("a cursor of another query: %d %s, want 400", r.status, r.body)
	}
	ofOne := getJSON[deadLetterPage](t, e.url+"/v1/dead-letters?runId="+one.RunID, "tok-op")
	if len(ofOne.DeadLetters) != 2 || ofOne.DeadLetters[0].RunID != one.RunID || ofOne.DeadLetters[1].RunSeq != 2 {
		t.Fatalf("run one's dead letters: %+v", ofOne)
	}

	// Inspect: the record is the stored event.
	victim := ofOne.DeadLetters[1]
	detail := getJSON[struct {
		DeadLetter deadLetterJSON       `json:"deadLetter"`
		Record     store.RunEventRecord `json:"record"`
	}](t, fmt.Sprintf("%s/v1/dead-letters/%d", e.url, victim.ID), "tok-op")
	if detail.DeadLetter.ID != victim.ID || detail.Record.EventID != step.EventID || detail.Record.RunSeq != 2 ||
		detail.Record.EventType != store.EventStepStarted || detail.Record.PersistedAt == "" || detail.Record.StepID != "build" {
		t.Fatalf("inspect: %+v; want run one's StepStarted (event %s) at runSeq 2", detail, step.EventID)
	}

	// Retry one: back in the outbox, gone from the letters.
	if r := do(t, "POST", fmt.Sprintf("%s/v1/dead-letters/%d/retry", e.url, victim.ID), "tok-op", nil); r.status != 200 || string(r.body) != "{\"retried\":1}\n" {
		t.Fatalf("retry one: %d %s", r.status, r.body)
	}
	var back int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE run_id = $1 AND run_seq = 2`, one.RunID).Scan(&back); err != nil || back != 1 {
		t.Fatalf("the retried letter in the outbox: %d rows, %v", back, err)
	}
	if r := do(t, "GET", fmt.Sprintf("%s/v1/dead-letters/%d", e.url, victim.ID), "tok-op", nil); r.status != 404 {
		t.Fatalf("a retried letter: %d, want 404", r.status)
	}
	if r := do(t, "POST", fmt.Sprintf("%s/v1/dead-letters/%d/retry", e.url, victim.ID), "tok-op", nil); r.status != 404 {
		t.Fatalf("retrying it again: %d, want 404", r.status)
	}
	// By ids (one unknown id is not counted), then all.
	r := do(t, "POST", e.url+"/v1/dead-letters/retry", "tok-op", []byte(fmt.Sprintf(`{"ids":[%d,%d,987654]}`, all[0].ID, all[0].ID)))
	if r.status != 200 || string(r.body) != "{\"retried\":1}\n" {
		t.Fatalf("retry by ids: %d %s", r.status, r.body)
	}
	r = do(t, "POST", e.url+"/v1/dead-letters/retry", "tok-op", []byte(`{"all":true}`))
	if r.status != 200 || string(r.body) != "{\"retried\":1}\n" {
		t.Fatalf("retry all: %d %s, want the last one", r.status, r.body)
	}
	if n := outbox(); n != 3 {
		t.Fatalf("outbox holds %d rows after the retries, want the 3 events back", n)
	}
	if p := getJSON[deadLetterPage](t, e.url+"/v1/dead-letters", "tok-op"); len(p.DeadLetters) != 0 {
		t.Fatalf("dead letters left: %+v", p)
	}
}

type rebuildJSON struct {
	ID         string     `json:"id"`
	State      string     `json:"state"`
	TenantID   string     `json:"tenantId"`
	Total      int64      `json:"total"`
	Done       int64      `json:"done"`
	Failed     int64      `json:"failed"`
	Written    int64      `json:"written"`
	Current    int64      `json:"current"`
	Expired    int64      `json:"expired"`
	Unknown    int64      `json:"unknown"`
	FinishedAt *time.Time `json:"finishedAt"`
	Error      *string    `json:"error"`
	Process    string     `json:"process"`
	Note       string     `json:"note"`
}

// appendRuns appends a RunStarted for n new runs of tenant through the
// store (batches of 1000) and returns their ids.
func appendRuns(t *testing.T, st *postgres.Store, tenant string, n int) []string {
	t.Helper()
	var ids []string
	for len(ids) < n {
		var ws []store.RunEventWrite
		for range min(1000, n-len(ids)) {
			id := workload.NewIdentity(tenant)
			ids = append(ids, id.RunID)
			ws = append(ws, workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil))
		}
		for i, res := range st.AppendBatch(context.Background(), ws) {
			if res.Err != nil {
				t.Fatalf("appending run %d: %v", i, res.Err)
			}
		}
	}
	return ids
}

func rebuildOf(t *testing.T, body []byte) rebuildJSON {
	t.Helper()
	var v struct {
		Rebuild rebuildJSON `json:"rebuild"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return v.Rebuild
}

// A tenant's rebuild walks its runs page by page to done, with progress
// seen on the way; a second rebuild meanwhile is 409 CONFLICT naming the
// running one; other tenants' runs are left alone.
func TestOperator_RebuildTenant(t *testing.T) {
	pool := migratedPool(t, 20)
	st, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvOn(t, httpapi.Config{AuthTokens: roleTokens}, pool, testenv.Redis(t))
	const runs = 3000
	ids := appendRuns(t, st, "tenant_a", runs)
	other := appendRuns(t, st, "tenant_b", 3)

	start := time.Now()
	r := do(t, "POST", e.url+"/v1/rebuilds", "tok-op", []byte(`{"tenantId":"tenant_a"}`))
	if r.status != http.StatusAccepted {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	rb := rebuildOf(t, r.body)
	if rb.State != "running" || rb.Total != runs || rb.TenantID != "tenant_a" || rb.FinishedAt != nil || rb.Error != nil {
		t.Fatalf("started: %+v, want running with total %d", rb, runs)
	}
	if rb.Process == "" || !strings.Contains(rb.Note, "runs in API process "+rb.Process) || !strings.Contains(rb.Note, "any API replica answers") {
		t.Fatalf("started: process %q note %q, want the answer to say which process runs it and that any replica answers for it", rb.Process, rb.Note)
	}
	// Another API replica on the same Redis answers for it at once, and
	// does not run it: its own rebuild is not refused.
	replica := newEnvOn(t, httpapi.Config{AuthTokens: roleTokens}, pool, testenv.Redis(t))
	if got := rebuildOf(t, do(t, "GET", replica.url+"/v1/rebuilds/"+rb.ID, "tok-op", nil).body); got.ID != rb.ID || got.TenantID != "tenant_a" || got.Total != runs {
		t.Fatalf("another replica's answer for the rebuild just started: %+v", got)
	}
	second := do(t, "POST", e.url+"/v1/rebuilds", "tok-op", mustJSON(t, map[string]any{"runIds": other}))
	if code, _, msg := second.errBody(t); second.status != http.StatusConflict || code != "CONFLICT" || !strings.Contains(msg, rb.ID) {
		t.Fatalf("a second rebuild while one runs: %d %s %q, want 409 CONFLICT naming %s", second.status, code, msg, rb.ID)
	}
	var midway []rebuildJSON
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		rb = rebuildOf(t, do(t, "GET", e.url+"/v1/rebuilds/"+rb.ID, "tok-op", nil).body)
		if rb.State != "running" {
			break
		}
		if rb.Done > 0 && rb.Done < rb.Total {
			midway = append(midway, rb)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the rebuild did not finish in a minute: %+v", rb)
		}
	}
	if rb.State != "done" || rb.Done != runs || rb.Total != runs || rb.Written != runs || rb.Failed != 0 || rb.FinishedAt == nil || rb.Error != nil {
		t.Fatalf("finished: %+v, want done with %d written", rb, runs)
	}
	if got := rebuildOf(t, do(t, "GET", replica.url+"/v1/rebuilds/"+rb.ID, "tok-op", nil).body); !reflect.DeepEqual(got, rb) {
		t.Fatalf("the other replica's answer for the finished rebuild:\n%+v\nwant the same as the process that ran it:\n%+v", got, rb)
	}
	if len(midway) == 0 {
		t.Fatal("no progress was seen between 0 and the total: progress is not updated as it goes")
	}
	for i := 1; i < len(midway); i++ {
		if midway[i].Done < midway[i-1].Done {
			t.Fatalf("progress went back: %+v then %+v", midway[i-1], midway[i])
		}
	}
	t.Logf("%d runs rebuilt in %v; progress seen at %d points, first %d/%d", runs, rb.FinishedAt.Sub(start).Round(time.Millisecond), len(midway), midway[0].Done, midway[0].Total)
	// Redis answers a rebuilt run; the store, one Redis does not hold.
	for _, id := range []string{ids[0], ids[runs/2], ids[runs-1]} {
		if r := do(t, "GET", e.url+"/v1/runs/"+id+"/snapshot", "tok-a", nil); r.status != 200 || r.header.Get("X-Runstream-Snapshot-Source") != "redis" {
			t.Fatalf("snapshot of rebuilt run %s: %d from %q, want 200 from redis", id, r.status, r.header.Get("X-Runstream-Snapshot-Source"))
		}
	}
	if r := do(t, "GET", e.url+"/v1/runs/"+other[0]+"/snapshot", "tok-b", nil); r.header.Get("X-Runstream-Snapshot-Source") != "store" {
		t.Fatalf("tenant_b's run after tenant_a's rebuild: %d from %q, want the store's (not rebuilt)", r.status, r.header.Get("X-Runstream-Snapshot-Source"))
	}

	// Now the second fits: runIds, an unknown one skipped.
	r = do(t, "POST", e.url+"/v1/rebuilds", "tok-op", mustJSON(t, map[string]any{"runIds": append(other, "no-such-run")}))
	if r.status != http.StatusAccepted {
		t.Fatalf("start by runIds: %d %s", r.status, r.body)
	}
	rb2 := rebuildOf(t, r.body)
	testenv.WaitFor(t, 30*time.Second, "the runIds rebuild", func() bool {
		rb2 = rebuildOf(t, do(t, "GET", e.url+"/v1/rebuilds/"+rb2.ID, "tok-op", nil).body)
		return rb2.State != "running"
	})
	if rb2.State != "done" || rb2.Total != 4 || rb2.Done != 4 || rb2.Written != 3 || rb2.Unknown != 1 || rb2.Current != 0 || rb2.TenantID != "" {
		t.Fatalf("runIds rebuild: %+v, want done, 4 handled, 3 written, 1 unknown to the store", rb2)
	}
	// The same again writes nothing, and says why: the runs were current.
	r = do(t, "POST", e.url+"/v1/rebuilds", "tok-op", mustJSON(t, map[string]any{"runIds": append(other, "no-such-run")}))
	if r.status != http.StatusAccepted {
		t.Fatalf("start by runIds again: %d %s", r.status, r.body)
	}
	rb3 := rebuildOf(t, r.body)
	testenv.WaitFor(t, 30*time.Second, "the runIds rebuild again", func() bool {
		rb3 = rebuildOf(t, do(t, "GET", e.url+"/v1/rebuilds/"+rb3.ID, "tok-op", nil).body)
		return rb3.State != "running"
	})
	if rb3.State != "done" || rb3.Done != 4 || rb3.Written != 0 || rb3.Current != 3 || rb3.Unknown != 1 || rb3.Expired != 0 {
		t.Fatalf("runIds rebuild again: %+v, want done, 0 written, 3 current, 1 unknown", rb3)
	}
	// Both listed, newest first, by either replica (the list is every
	// replica's, so other tests' rebuilds of this Redis may be in it too).
	for _, url := range []string{e.url, replica.url} {
		list := getJSON[struct {
			Rebuilds []rebuildJSON `json:"rebuilds"`
		}](t, url+"/v1/rebuilds", "tok-op")
		var ours []string
		for _, b := range list.Rebuilds {
			if b.ID == rb.ID || b.ID == rb2.ID {
				ours = append(ours, b.ID)
			}
		}
		if !slices.Equal(ours, []string{rb2.ID, rb.ID}) {
			t.Fatalf("list from %s: %+v, want both rebuilds, newest first", url, list)
		}
	}
}

// rebuildReplicas are two API replicas on one store and a private Redis
// (rp) with a short rebuild lease: runner reaches Redis as the ACL user
// "runner", which cutOffRedisUser(t, admin, "runner") cuts off as if its
// process were killed; other stays up, through admin.
func rebuildReplicas(t *testing.T) (st *postgres.Store, rp *testenv.RedisProcess, admin *redis.Client, runner, other *env) {
	t.Helper()
	pool := migratedPool(t, 20)
	st, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	rp = testenv.StartRedis(t)
	admin = quickRedis(t, redis.Options{Addr: rp.Addr})
	runnerRedis := redisUser(t, admin, rp.Addr, "runner")
	cfg := httpapi.WithRebuildLease(httpapi.Config{AuthTokens: roleTokens}, 600*time.Millisecond)
	return st, rp, admin, newEnvOn(t, cfg, pool, runnerRedis), newEnvOn(t, cfg, pool, admin)
}

// A rebuild whose API process stops renewing its lease (killed, or cut off
// from Redis) reads as failed, abandoned, on every replica; and a replica
// answers 503 for the rebuilds while Redis, which keeps them, is out.
func TestOperator_RebuildAbandoned(t *testing.T) {
	t.Parallel()
	st, rp, admin, runner, other := rebuildReplicas(t)
	appendRuns(t, st, "tenant_a", 3000)

	r := do(t, "POST", runner.url+"/v1/rebuilds", "tok-op", []byte(`{"tenantId":"tenant_a"}`))
	if r.status != http.StatusAccepted {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	rb := rebuildOf(t, r.body)
	// The running rebuild's process is cut off from Redis, as if killed:
	// its lease is no longer renewed and its final state never lands.
	cutOffRedisUser(t, admin, "runner")
	var got rebuildJSON
	testenv.WaitFor(t, 15*time.Second, "the other replica to report the rebuild abandoned", func() bool {
		got = rebuildOf(t, do(t, "GET", other.url+"/v1/rebuilds/"+rb.ID, "tok-op", nil).body)
		return got.State != "running"
	})
	if got.State != "failed" || got.Error == nil || !strings.Contains(*got.Error, "abandoned") || !strings.Contains(*got.Error, rb.Process) {
		t.Fatalf("a rebuild whose process stopped renewing its lease: %+v, want failed, abandoned, naming the process", got)
	}
	if got.Done >= got.Total {
		t.Fatalf("abandoned at %d of %d: the test wants it cut off mid-way", got.Done, got.Total)
	}

	// Redis out: the rebuilds' state is unknown, 503 not 404.
	rp.Stop()
	for _, path := range []string{"/v1/rebuilds/" + rb.ID, "/v1/rebuilds"} {
		r := do(t, "GET", other.url+path, "tok-op", nil)
		if code, _, msg := r.errBody(t); r.status != http.StatusServiceUnavailable || code != "UNAVAILABLE" || !strings.Contains(msg, "Redis") {
			t.Fatalf("GET %s with Redis stopped: %d %s %q, want 503 UNAVAILABLE naming Redis", path, r.status, code, msg)
		}
	}
}

// Shutting the server down cancels a running rebuild: it ends failed,
// saying so, before it finished.
func TestOperator_RebuildCancelledAtShutdown(t *testing.T) {
	pool := migratedPool(t, 20)
	st, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvOn(t, httpapi.Config{AuthTokens: roleTokens}, pool, testenv.Redis(t))
	appendRuns(t, st, "tenant_a", 3000)
	r := do(t, "POST", e.url+"/v1/rebuilds", "tok-op", []byte(`{"tenantId":"tenant_a"}`))
	if r.status != http.StatusAccepted {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	rb := rebuildOf(t, r.body)
	e.srv.Close() // what Serve does at shutdown; it waits for the rebuild to stop
	rb = rebuildOf(t, do(t, "GET", e.url+"/v1/rebuilds/"+rb.ID, "tok-op", nil).body)
	if rb.State != "failed" || rb.Error == nil || !strings.Contains(*rb.Error, "cancelled") || rb.Done >= rb.Total {
		t.Fatalf("after shutdown: %+v, want failed, cancelled before the end", rb)
	}
	if r := do(t, "POST", e.url+"/v1/rebuilds", "tok-op", []byte(`{"tenantId":"tenant_a"}`)); r.status != http.StatusServiceUnavailable {
		t.Fatalf("a rebuild after shutdown began: %d %s, want 503", r.status, r.body)
	}
}

// member is a consumer-group member consuming topic, committing as it goes.
func member(t *testing.T, brokers []string, group, clientID, instanceID, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ClientID(clientID), kgo.InstanceID(instanceID), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.AutoCommitInterval(100*time.Millisecond), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			cl.PollFetches(ctx)
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait(); cl.Close() })
}

type lagGroupsJSON struct {
	Topic     string       `json:"topic"`
	Groups    []lag.Report `json:"groups"`
	Truncated bool         `json:"truncated"`
	ListError string       `json:"listError"`
}

// GET /v1/lag/groups reports every group of the topic: the configured
// projector and ETL groups, each with two members told apart by client
// id, instance id and host, owning the partitions between them; a group
// that only committed on the topic; never a group of another topic.
func TestOperator_LagGroups(t *testing.T) {
	const topic = "run-events"
	k := testkafka.Start(t, kfake.SeedTopics(4, topic, "other-topic"))
	admin, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	ctx := context.Background()
	for p := range int32(4) {
		for range 5 {
			for _, tp := range []string{topic, "other-topic"} {
				if err := admin.ProduceSync(ctx, &kgo.Record{Topic: tp, Partition: p, Value: []byte(`{}`)}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 2})
	if _, err := kadm.NewClient(admin).CommitOffsets(ctx, "audit-sink", offs); err != nil {
		t.Fatal(err)
	}
	other := kadm.Offsets{}
	other.Add(kadm.Offset{Topic: "other-topic", Partition: 0, At: 1})
	if _, err := kadm.NewClient(admin).CommitOffsets(ctx, "elsewhere", other); err != nil {
		t.Fatal(err)
	}
	groups := map[string][2][2]string{ // group: members' {client id, instance id}
		store.DefaultProjectorGroup: {{"runstream-projector-host1-11", "projector-0"}, {"runstream-projector-host2-22", "projector-1"}},
		"runstream-etl":             {{"runstream-etl-host1-33", "etl-0"}, {"runstream-etl-host2-44", "etl-1"}},
	}
	for g, ms := range groups {
		for _, m := range ms {
			member(t, k.Brokers, g, m[0], m[1], topic)
		}
	}
	e := newEnv(t, httpapi.Config{AuthTokens: roleTokens, LagHistory: lag.NewHistory(),
		Lag:         func(ctx context.Context, g string) (lag.Report, error) { return lag.Measure(ctx, admin, g) },
		TopicGroups: func(ctx context.Context, tp string) ([]string, error) { return lag.TopicGroups(ctx, admin, tp) }})

	var got lagGroupsJSON
	settled := func() error {
		got = getJSON[lagGroupsJSON](t, e.url+"/v1/lag/groups", "tok-op")
		for _, rep := range got.Groups[:min(2, len(got.Groups))] {
			if rep.State != "Stable" || rep.Members != 2 || len(rep.Partitions) != 4 {
				return fmt.Errorf("group %s: state %s, %d members, %d partitions", rep.Group, rep.State, rep.Members, len(rep.Partitions))
			}
			for _, p := range rep.Partitions {
				if p.Owner == nil || p.Committed < 0 {
					return fmt.Errorf("group %s partition %d: owner %v, committed %d", rep.Group, p.Partition, p.Owner, p.Committed)
				}
			}
		}
		return nil
	}
	testenv.WaitUntil(t, 60*time.Second, settled)
	names := []string{}
	for _, rep := range got.Groups {
		names = append(names, rep.Group)
	}
	if got.Topic != topic || got.Truncated || got.ListError != "" ||
		!slices.Equal(names, []string{store.DefaultProjectorGroup, "runstream-etl", "audit-sink"}) {
		t.Fatalf("groups %v (topic %q, truncated %v, listError %q); want the configured two first, then audit-sink, never elsewhere",
			names, got.Topic, got.Truncated, got.ListError)
	}
	for _, rep := range got.Groups[:2] {
		want := groups[rep.Group]
		owners := map[string]int{}
		for _, p := range rep.Partitions {
			o := p.Owner
			i := slices.IndexFunc(want[:], func(m [2]string) bool { return m[0] == o.ClientID })
			if i < 0 || o.InstanceID != want[i][1] || o.Host == "" || o.MemberID == "" || p.Member != o.ClientID {
				t.Fatalf("group %s partition %d owner %+v: not one of its members %v, or no host", rep.Group, p.Partition, o, want)
			}
			owners[o.ClientID]++
		}
		if len(owners) != 2 {
			t.Fatalf("group %s: owners %v, want both members owning partitions", rep.Group, owners)
		}
		if len(rep.MemberDetails) != 2 || rep.MemberDetails[0].InstanceID == rep.MemberDetails[1].InstanceID {
			t.Fatalf("group %s members %+v", rep.Group, rep.MemberDetails)
		}
		t.Logf("group %s owners (partitions each): %v", rep.Group, owners)
	}
	if sink := got.Groups[2]; !sink.Exists || sink.Members != 0 || len(sink.Partitions) != 4 || sink.Partitions[0].Lag != 3 || sink.Partitions[1].Committed != -1 {
		t.Fatalf("audit-sink: %+v, want partition 0 lagging 3 (5-2), the others uncommitted, no members", sink)
	}

	// A configured group that never started is reported, saying so.
	e2 := newEnv(t, httpapi.Config{AuthTokens: roleTokens, LagGroups: []string{"never-started"},
		Lag: func(ctx context.Context, g string) (lag.Report, error) { return lag.Measure(ctx, admin, g) }})
	got = getJSON[lagGroupsJSON](t, e2.url+"/v1/lag/groups", "tok-op")
	if len(got.Groups) != 1 || got.Groups[0].Group != "never-started" || got.Groups[0].Exists || got.Groups[0].Note == "" {
		t.Fatalf("a configured group that never started: %+v", got)
	}
	// Without brokers: 503.
	e3 := newEnv(t, httpapi.Config{AuthTokens: roleTokens})
	if r := do(t, "GET", e3.url+"/v1/lag/groups", "tok-op", nil); r.status != http.StatusServiceUnavailable {
		t.Fatalf("no brokers: %d, want 503", r.status)
	}

	// The last hour, from these measurements: the group's on both routes,
	// each partition's on the one group's.
	var hist struct {
		Groups []struct {
			Group            string                 `json:"group"`
			History          []lag.Point            `json:"history"`
			PartitionHistory map[string][]lag.Point `json:"partitionHistory"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(do(t, "GET", e.url+"/v1/lag/groups", "tok-op", nil).body, &hist); err != nil {
		t.Fatal(err)
	}
	for _, g := range hist.Groups {
		if g.Group == "audit-sink" && (len(g.History) == 0 || g.History[len(g.History)-1].Records != 18 || g.PartitionHistory != nil) {
			t.Fatalf("audit-sink's history on /v1/lag/groups: %+v, want its lag (18 records) and no partitions' (every group's would be too large)", g)
		}
	}
	var one struct {
		History          []lag.Point            `json:"history"`
		PartitionHistory map[string][]lag.Point `json:"partitionHistory"`
	}
	if err := json.Unmarshal(do(t, "GET", e.url+"/v1/lag?group=audit-sink", "tok-op", nil).body, &one); err != nil {
		t.Fatal(err)
	}
	if len(one.History) == 0 || len(one.PartitionHistory) != 4 || one.PartitionHistory["0"][len(one.PartitionHistory["0"])-1].Records != 3 {
		t.Fatalf("audit-sink's history on /v1/lag: %+v, want the group's and its 4 partitions' (partition 0: 3 records behind)", one)
	}
}

// More groups than the answer holds: the first 100 (configured first),
// and truncated says so.
func TestOperator_LagGroupsTruncated(t *testing.T) {
	var many []string
	for i := range 150 {
		many = append(many, fmt.Sprintf("g%03d", i))
	}
	var mu sync.Mutex
	measured := 0
	e := newEnv(t, httpapi.Config{AuthTokens: roleTokens, LagGroups: []string{"zz-configured"},
		Lag: func(_ context.Context, g string) (lag.Report, error) {
			mu.Lock()
			measured++
			mu.Unlock()
			return lag.Report{Group: g, Exists: true, State: "Stable", Partitions: []lag.Partition{}}, nil
		},
		TopicGroups: func(context.Context, string) ([]string, error) { return many, nil }})
	got := getJSON[lagGroupsJSON](t, e.url+"/v1/lag/groups", "tok-op")
	if !got.Truncated || len(got.Groups) != 100 || got.Groups[0].Group != "zz-configured" || got.Groups[1].Group != "g000" || measured != 100 {
		t.Fatalf("truncated %v, %d groups (first %q, %q), %d measured; want 100 measured, the configured first", got.Truncated, len(got.Groups), got.Groups[0].Group, got.Groups[1].Group, measured)
	}
}

// With Redis down a rebuild is refused (503); when Redis goes down while
// one runs, it stops at the page it was on, failed and saying why, after
// trying a few runs alone, not by waiting out every run.
func TestOperator_RebuildFailsWhenRedisIsDown(t *testing.T) {
	pool := migratedPool(t, 20)
	st, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	proc := testenv.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: proc.Addr})
	t.Cleanup(func() { rdb.Close() })
	e := newEnvOn(t, httpapi.Config{AuthTokens: roleTokens}, pool, rdb)
	const runs = 3000
	appendRuns(t, st, "tenant_a", runs)
	r := do(t, "POST", e.url+"/v1/rebuilds", "tok-op", []byte(`{"tenantId":"tenant_a"}`))
	if r.status != http.StatusAccepted {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	rb := rebuildOf(t, r.body)
	proc.Stop()
	start := time.Now()
	testenv.WaitFor(t, 60*time.Second, "the rebuild to stop", func() bool {
		rb = rebuildOf(t, do(t, "GET", e.url+"/v1/rebuilds/"+rb.ID, "tok-op", nil).body)
		return rb.State != "running"
	})
	if rb.State != "failed" || rb.Error == nil || !strings.Contains(*rb.Error, "Redis or Postgres") || rb.Failed < 1 || rb.Failed > 3 || rb.Done >= runs || rb.Total != runs {
		t.Fatalf("Redis down during a rebuild: %+v (error %v), want failed before the end after at most 3 runs tried alone", rb, rb.Error)
	}
	t.Logf("failed %v after Redis stopped, %d of %d done: %s", time.Since(start).Round(time.Millisecond), rb.Done, runs, *rb.Error)
	r = do(t, "POST", e.url+"/v1/rebuilds", "tok-op", []byte(`{"tenantId":"tenant_a"}`))
	if code, _, msg := r.errBody(t); r.status != http.StatusServiceUnavailable || code != "UNAVAILABLE" || !strings.Contains(msg, "Redis") {
		t.Fatalf("a rebuild with Redis down: %d %s %q, want 503 naming Redis", r.status, code, msg)
	}
}

// At most two GET /v1/lag/groups measure at once in a process (consoles
// refreshing the lag page); a third is 503 with Retry-After, not queued.
func TestOperator_LagGroupsBounded(t *testing.T) {
	inside := make(chan struct{}, 8)
	release := make(chan struct{})
	e := newEnv(t, httpapi.Config{AuthTokens: roleTokens, LagGroups: []string{"g"},
		Lag: func(ctx context.Context, g string) (lag.Report, error) {
			inside <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return lag.Report{Group: g, Exists: true, State: "Stable", Partitions: []lag.Partition{}}, nil
		}})
	var wg sync.WaitGroup
	statuses := make(chan int, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses <- do(t, "GET", e.url+"/v1/lag/groups", "tok-op", nil).status
		}()
	}
	<-inside
	<-inside
	r := do(t, "GET", e.url+"/v1/lag/groups", "tok-op", nil)
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
		t.Fatalf("a third measurement at once: %d (Retry-After %q) %s, want 503 with Retry-After", r.status, r.header.Get("Retry-After"), r.body)
	}
	close(release)
	wg.Wait()
	for range 2 {
		if st := <-statuses; st != 200 {
			t.Fatalf("a measurement within the bound: %d", st)
		}
	}
	if r := do(t, "GET", e.url+"/v1/lag/groups", "tok-op", nil); r.status != 200 {
		t.Fatalf("after the others finished: %d, want 200", r.status)
	}
}
