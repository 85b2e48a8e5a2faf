package httpapi_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/httpapi"
)

// ticket asks for a stream ticket with token and body (nil: no body).
func ticket(t *testing.T, e *env, token string, body []byte) string {
	t.Helper()
	r := do(t, "POST", e.url+"/v1/stream-tickets", token, body)
	if r.status != http.StatusCreated {
		t.Fatalf("POST /v1/stream-tickets %s: %d %s", body, r.status, r.body)
	}
	var tk struct{ Ticket string }
	if err := json.Unmarshal(r.body, &tk); err != nil || tk.Ticket == "" {
		t.Fatalf("ticket answer %s", r.body)
	}
	return tk.Ticket
}

// openWith opens path (a GET, with the query's ticket and no token) and
// returns its status; a stream is closed at once.
func openWith(t *testing.T, e *env, path string) int {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.url+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestStreamTickets_WrittenToRedisAloneRefused: whoever can write the
// deployment's Redis (another deployment on another database of the same
// server, say) cannot make a ticket: not in the old form (the holder as
// the value), not as a grant without the API's signature, and not by
// changing the grant of a ticket the API issued.
func TestStreamTickets_WrittenToRedisAloneRefused(t *testing.T) {
	e := newEnv(t, httpapi.Config{AuthTokens: roleTokens})
	ctx := context.Background()
	forged := func(value string) string {
		var b [48]byte
		_, _ = rand.Read(b[:])
		tk := base64.RawURLEncoding.EncodeToString(b[:])
		sum := sha256.Sum256([]byte(tk))
		if err := e.redis.Set(ctx, "runstream:ticket:"+hex.EncodeToString(sum[:]), value, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		return tk
	}
	for _, value := range []string{"*", "tenant_a", `{"h":"*","r":"tenant","t":""}`, `{"h":"tenant_a","r":"tenant","t":""}`} {
		tk := forged(value)
		if st := openWith(t, e, "/v1/runs/watch?tenantId=tenant_a&ticket="+tk); st != http.StatusUnauthorized {
			t.Fatalf("a ticket written to Redis as %s: %d, want 401", value, st)
		}
	}
	// A real ticket of tenant_a's, its grant made an operator's in Redis.
	tk := ticket(t, e, "tok-a", nil)
	sum := sha256.Sum256([]byte(tk))
	if err := e.redis.Set(ctx, "runstream:ticket:"+hex.EncodeToString(sum[:]), `{"h":"*","r":"tenant","t":"tenant_b"}`, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if st := openWith(t, e, "/v1/runs/watch?tenantId=tenant_b&ticket="+tk); st != http.StatusUnauthorized {
		t.Fatalf("a ticket whose grant was rewritten in Redis: %d, want 401", st)
	}
	// A ticket signed by a deployment with other tokens.
	other, key, value := httpapi.SignTicket(map[string]string{"tok-x": "tenant_a"}, "tenant_a", "tenant", "")
	if err := e.redis.Set(ctx, key, value, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if st := openWith(t, e, "/v1/runs/watch?ticket="+other); st != http.StatusUnauthorized {
		t.Fatalf("a ticket of a deployment with other tokens: %d, want 401", st)
	}
}

// TestStreamTickets_HolderMustBeAConfiguredTenant: even a ticket signed
// with this deployment's key opens nothing for a holder no token maps to
// (not an identifier, or a tenant whose tokens are gone).
func TestStreamTickets_HolderMustBeAConfiguredTenant(t *testing.T) {
	e := newEnv(t, httpapi.Config{AuthTokens: roleTokens})
	for _, holder := range []string{"tenant|zz", "tenant_z", ""} {
		tk, key, value := httpapi.SignTicket(roleTokens, holder, "tenant", "")
		if err := e.redis.Set(context.Background(), key, value, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		if st := openWith(t, e, "/v1/runs/watch?ticket="+tk); st != http.StatusUnauthorized {
			t.Fatalf("a signed ticket of holder %q: %d, want 401", holder, st)
		}
	}
	// The same, for a configured tenant, opens its stream.
	tk, key, value := httpapi.SignTicket(roleTokens, "tenant_b", "tenant", "")
	if err := e.redis.Set(context.Background(), key, value, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if st := openWith(t, e, "/v1/runs/watch?ticket="+tk); st != http.StatusOK {
		t.Fatalf("a signed ticket of tenant_b: %d, want 200", st)
	}
}

// TestStreamTickets_OneStreamOnly: a ticket opens the watch it was asked
// for and no other: not another run's, not the tenant stream for a run's
// ticket, not another tenant's stream for an operator's.
func TestStreamTickets_OneStreamOnly(t *testing.T) {
	e := newEnv(t, httpapi.Config{AuthTokens: roleTokens})
	x := appendAs(t, e.url, "tok-a", "tenant_a")
	y := appendAs(t, e.url, "tok-a", "tenant_a")
	forX := func() string { return ticket(t, e, "tok-a", mustJSON(t, map[string]string{"runId": x.RunID})) }

	if st := openWith(t, e, "/v1/runs/"+y.RunID+"/watch?ticket="+forX()); st != http.StatusUnauthorized {
		t.Fatalf("run X's ticket on run Y's watch: %d, want 401", st)
	}
	if st := openWith(t, e, "/v1/runs/watch?ticket="+forX()); st != http.StatusUnauthorized {
		t.Fatalf("run X's ticket on the tenant stream: %d, want 401", st)
	}
	if st := openWith(t, e, "/v1/runs/"+x.RunID+"/watch?ticket="+ticket(t, e, "tok-a", nil)); st != http.StatusUnauthorized {
		t.Fatalf("a tenant stream's ticket on run X's watch: %d, want 401", st)
	}
	if st := openWith(t, e, "/v1/runs/"+x.RunID+"/watch?ticket="+forX()); st != http.StatusOK {
		t.Fatalf("run X's ticket on run X's watch: %d, want 200", st)
	}
	// Another tenant's run, even with a ticket asked for it, is not found.
	forYB := ticket(t, e, "tok-b", mustJSON(t, map[string]string{"runId": y.RunID}))
	if st := openWith(t, e, "/v1/runs/"+y.RunID+"/watch?ticket="+forYB); st != http.StatusNotFound {
		t.Fatalf("tenant_b's ticket for tenant_a's run: %d, want 404", st)
	}

	op := ticket(t, e, "tok-op", []byte(`{"tenantId":"tenant_a"}`))
	if st := openWith(t, e, "/v1/runs/watch?tenantId=tenant_b&ticket="+op); st != http.StatusUnauthorized {
		t.Fatalf("an operator's ticket for tenant_a's stream on tenant_b's: %d, want 401", st)
	}
	op = ticket(t, e, "tok-op", []byte(`{"tenantId":"tenant_a"}`))
	if st := openWith(t, e, "/v1/runs/watch?tenantId=tenant_a&ticket="+op); st != http.StatusOK {
		t.Fatalf("an operator's ticket for tenant_a's stream: %d, want 200", st)
	}

	for _, body := range []string{`{"runId":"a","tenantId":"b"}`, `{"runId":"a|b"}`, `{"stream":"x"}`, `{"runId":"a","runId":"b"}`, `[]`} {
		if r := do(t, "POST", e.url+"/v1/stream-tickets", "tok-a", []byte(body)); r.status != http.StatusBadRequest {
			t.Fatalf("POST /v1/stream-tickets %s: %d %s, want 400", body, r.status, r.body)
		}
	}
}

// TestStreamTickets_RefusedOffTheWatchRoutes: a ticket is no credential
// for any other route, and is not spent there.
func TestStreamTickets_RefusedOffTheWatchRoutes(t *testing.T) {
	e := newEnv(t, httpapi.Config{AuthTokens: roleTokens})
	run := appendAs(t, e.url, "tok-a", "tenant_a")
	tk := ticket(t, e, "tok-a", nil)
	from := url.QueryEscape(time.Now().Add(-time.Hour).UTC().Format(time.RFC3339))
	for _, path := range []string{
		"/v1/runs/" + run.RunID + "/events",
		"/v1/runs/" + run.RunID + "/snapshot",
		"/v1/runs",
		"/v1/events?from=" + from,
		"/v1/dead-letters",
		"/v1/lag",
	} {
		sep := "?"
		if u, _ := url.Parse(path); u.RawQuery != "" {
			sep = "&"
		}
		if st := openWith(t, e, path+sep+"ticket="+tk); st != http.StatusUnauthorized {
			t.Fatalf("GET %s with a ticket: %d, want 401", path, st)
		}
	}
	if st := openWith(t, e, "/v1/runs/watch?ticket="+tk); st != http.StatusOK {
		t.Fatalf("the ticket on its own watch after the refusals: %d, want 200", st)
	}
}
