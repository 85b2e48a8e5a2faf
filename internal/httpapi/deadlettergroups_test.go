package httpapi_test

import (
	"fmt"
	"testing"

	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/store/postgres"
)

type deadLetterGroupsJSON struct {
	By        string                     `json:"by"`
	Groups    []postgres.DeadLetterGroup `json:"groups"`
	Truncated bool                       `json:"truncated"`
}

// Dead letters grouped by error code (the broker's code inside the last
// error, whatever the text around it) and by run, largest first; a group
// retried as one, and the retry in the audit log; bad groupings refused.
func TestOperator_DeadLetterGroups(t *testing.T) {
	pool := migratedPool(t, 20)
	st, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvOn(t, httpapi.Config{AuthTokens: roleTokens}, pool, testenv.Redis(t))
	runs := make([]string, 5)
	for i := range runs {
		runs[i] = appendAs(t, e.url, "tok-a", "tenant_a").RunID
	}
	if n := deadLetterAll(t, st, runs...); n != 5 {
		t.Fatalf("dead-lettered %d, want 5", n)
	}
	// Three too large (two wordings), one timed out, one without a code.
	for i, msg := range []string{"MESSAGE_TOO_LARGE: the broker refused the record", "broker refused: MESSAGE_TOO_LARGE (again)",
		"MESSAGE_TOO_LARGE: the broker refused the record", "REQUEST_TIMED_OUT: no answer in 30s", "connection reset by peer"} {
		if _, err := pool.Exec(t.Context(), `UPDATE outbox_dead_letters SET last_error = $2 WHERE run_id = $1`, runs[i], msg); err != nil {
			t.Fatal(err)
		}
	}
	byErr := getJSON[deadLetterGroupsJSON](t, e.url+"/v1/dead-letters/groups?by=error", "tok-op")
	got := map[string]int64{}
	for _, g := range byErr.Groups {
		got[g.Key] = g.Count
	}
	if byErr.Groups[0].Key != "MESSAGE_TOO_LARGE" || got["MESSAGE_TOO_LARGE"] != 3 || got["REQUEST_TIMED_OUT"] != 1 || got["OTHER"] != 1 || len(got) != 3 {
		t.Fatalf("by error: %+v, want MESSAGE_TOO_LARGE 3 first, REQUEST_TIMED_OUT 1, OTHER 1", byErr.Groups)
	}
	byRun := getJSON[deadLetterGroupsJSON](t, e.url+"/v1/dead-letters/groups?by=run", "tok-op")
	if len(byRun.Groups) != 5 || byRun.Groups[0].Count != 1 || byRun.Groups[0].Example != "tenant_a" {
		t.Fatalf("by run: %+v, want 5 runs of one letter each, of tenant_a", byRun.Groups)
	}
	if r := do(t, "GET", e.url+"/v1/dead-letters/groups?by=tenant", "tok-op", nil); r.status != 400 {
		t.Fatalf("by=tenant: %d, want 400", r.status)
	}

	post := func(body string, want int) response {
		t.Helper()
		r := do(t, "POST", e.url+"/v1/dead-letters/retry", "tok-op", []byte(body))
		if r.status != want {
			t.Fatalf("retry %s: %d %s, want %d", body, r.status, r.body, want)
		}
		return r
	}
	post(`{"errorCode":"message_too_large"}`, 400)
	post(`{"errorCode":"MESSAGE_TOO_LARGE","all":true}`, 400)
	post(`{"runId":"`+runs[0]+`","errorCode":"OTHER"}`, 400)
	if r := post(`{"errorCode":"MESSAGE_TOO_LARGE","reason":"max.message.bytes raised"}`, 200); string(r.body) != `{"retried":3}`+"\n" && string(r.body) != `{"retried":3}` {
		t.Fatalf("retrying the MESSAGE_TOO_LARGE group: %s, want 3 retried", r.body)
	}
	if r := post(fmt.Sprintf(`{"runId":%q}`, runs[4]), 200); string(r.body) != `{"retried":1}`+"\n" && string(r.body) != `{"retried":1}` {
		t.Fatalf("retrying the run's group: %s, want 1 retried", r.body)
	}
	left := getJSON[deadLetterGroupsJSON](t, e.url+"/v1/dead-letters/groups?by=error", "tok-op")
	if len(left.Groups) != 1 || left.Groups[0].Key != "REQUEST_TIMED_OUT" {
		t.Fatalf("after the retries: %+v, want REQUEST_TIMED_OUT alone", left.Groups)
	}
	log := getJSON[operatorActionsPage](t, e.url+"/v1/operator-actions", "tok-op").Actions
	if len(log) != 2 || log[0].Target != "dead letters of run "+runs[4] || log[0].Count != 1 ||
		log[1].Target != "dead letters with error MESSAGE_TOO_LARGE" || log[1].Count != 3 || log[1].Reason != "max.message.bytes raised" {
		t.Fatalf("the audit log: %+v", log)
	}
}
