package httpapi_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/store/postgres"
)

type operatorActionsPage struct {
	Actions    []postgres.OperatorAction `json:"actions"`
	NextBefore int64                     `json:"nextBefore"`
}

// TestOperatorActions_EveryActionIsRecorded: each retry of dead letters
// (one, by ids, all), rebuild and resync is in the audit log once it took
// effect, newest first, with who asked (an operator token's fingerprint,
// never the token; a tenant by name), what, how many and the reason given;
// the log pages; it is for operators only; a bad reason is refused before
// anything happens, and a refused action is not recorded.
func TestOperatorActions_EveryActionIsRecorded(t *testing.T) {
	pool := migratedPool(t, 20)
	st, err := postgres.New(pool, postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvOn(t, httpapi.Config{AuthTokens: roleTokens}, pool, testenv.Redis(t))
	sum := sha256.Sum256([]byte("tok-op"))
	op := "operator token " + hex.EncodeToString(sum[:4])

	runs := make([]string, 4)
	for i := range runs {
		runs[i] = appendAs(t, e.url, "tok-a", "tenant_a").RunID
	}
	if n := deadLetterAll(t, st, runs...); n != 4 {
		t.Fatalf("dead-lettered %d events, want 4", n)
	}
	letters := getJSON[deadLetterPage](t, e.url+"/v1/dead-letters?limit=10", "tok-op").DeadLetters
	post := func(path, token, body string, want int) {
		t.Helper()
		if r := do(t, "POST", e.url+path, token, []byte(body)); r.status != want {
			t.Fatalf("POST %s %s: %d %s, want %d", path, body, r.status, r.body, want)
		}
	}
	// Refused: nothing done, nothing recorded.
	post(fmt.Sprintf("/v1/dead-letters/%d/retry", letters[0].ID), "tok-op", `{"reason":"`+strings.Repeat("x", 501)+`"}`, 400)
	post("/v1/dead-letters/retry", "tok-op", `{"all":true,"reason":"line\nbreak"}`, 400)
	post(fmt.Sprintf("/v1/dead-letters/%d/retry", letters[0].ID), "tok-op", `{"reason":"x","extra":1}`, 400)
	post("/v1/dead-letters/retry", "tok-a", `{"all":true}`, 403)

	post(fmt.Sprintf("/v1/dead-letters/%d/retry", letters[0].ID), "tok-op", `{"reason":"the broker's limit was raised"}`, 200)
	post("/v1/dead-letters/retry", "tok-op", fmt.Sprintf(`{"ids":[%d,%d]}`, letters[1].ID, letters[2].ID), 200)
	post("/v1/dead-letters/retry", "tok-op", `{"all":true,"reason":"the rest"}`, 200)
	post("/v1/rebuilds", "tok-op", `{"tenantId":"tenant_a","reason":"Redis was flushed"}`, 202)
	post("/v1/runs/"+runs[0]+"/resync", "tok-op", `{"reason":"a customer asked"}`, 200)
	post("/v1/runs/"+runs[1]+"/resync", "tok-a", ``, 200)

	want := []postgres.OperatorAction{
		{Actor: "tenant tenant_a", Action: "run.resync", Target: "run " + runs[1], Count: 1},
		{Actor: op, Action: "run.resync", Target: "run " + runs[0], Count: 1, Reason: "a customer asked"},
		{Actor: op, Action: "rebuild.start", Target: "every run of tenant tenant_a", Count: 4, Reason: "Redis was flushed"},
		{Actor: op, Action: "dead-letters.retry", Target: "all dead letters", Count: 1, Reason: "the rest"},
		{Actor: op, Action: "dead-letters.retry", Target: "2 dead letters by id", Count: 2},
		{Actor: op, Action: "dead-letter.retry", Target: fmt.Sprintf("dead letter %d", letters[0].ID), Count: 1, Reason: "the broker's limit was raised"},
	}
	var got []postgres.OperatorAction
	before := ""
	for page := 0; ; page++ {
		p := getJSON[operatorActionsPage](t, e.url+"/v1/operator-actions?limit=4"+before, "tok-op")
		got = append(got, p.Actions...)
		if p.NextBefore == 0 {
			break
		}
		if page > 3 {
			t.Fatal("the log pages on and on")
		}
		before = fmt.Sprintf("&before=%d", p.NextBefore)
	}
	if len(got) != len(want) {
		t.Fatalf("the log holds %d actions, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Actor != w.Actor || g.Action != w.Action || !strings.HasSuffix(g.Target, w.Target) || g.Count != w.Count || g.Reason != w.Reason {
			t.Errorf("action %d: %+v, want %+v", i, g, w)
		}
		if g.RequestID == "" || g.At.IsZero() || (i > 0 && got[i-1].ID <= g.ID) {
			t.Errorf("action %d: id %d, at %v, request id %q: want newest first, with a time and a request id", i, g.ID, g.At, g.RequestID)
		}
		if strings.Contains(g.Actor, "tok-op") {
			t.Fatalf("the log names the token itself: %q", g.Actor)
		}
	}
	if r := do(t, "GET", e.url+"/v1/operator-actions", "tok-a", nil); r.status != http.StatusForbidden {
		t.Fatalf("a tenant reading the audit log: %d, want 403", r.status)
	}
	if r := do(t, "GET", e.url+"/v1/operator-actions?limit=0", "tok-op", nil); r.status != http.StatusBadRequest {
		t.Fatalf("limit=0: %d, want 400", r.status)
	}
}
