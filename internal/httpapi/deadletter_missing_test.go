package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
)

// TestDeadLetters_RetryOfAMissingEvent404s: a dead letter whose event the
// store no longer holds (an unknown run, or a run whose events are not in
// its partition) is not moved back to the outbox, where nothing could
// publish it and its row would never drain: retrying it alone answers 404,
// and a retry by ids or of all moves only the letters with events.
func TestDeadLetters_RetryOfAMissingEvent404s(t *testing.T) {
	pool := migratedPool(t, 20)
	e := newEnvOn(t, httpapi.Config{AuthTokens: roleTokens}, pool, testenv.Redis(t))
	ctx := context.Background()
	real := appendAs(t, e.url, "tok-a", "tenant_a")
	ghost := workload.NewIdentity("tenant_a")
	if _, err := pool.Exec(ctx, `DELETE FROM outbox`); err != nil {
		t.Fatal(err)
	}
	// 901: the real run's event 1; 902: an unknown run's; 903: an event the
	// real run does not have.
	for _, l := range []struct {
		id  int64
		run string
		seq int64
	}{{901, real.RunID, 1}, {902, ghost.RunID, 1}, {903, real.RunID, 7}} {
		if _, err := pool.Exec(ctx, `INSERT INTO outbox_dead_letters (id, shard, run_id, run_seq, created_at, attempts, last_error)
			VALUES ($1, 0, $2, $3, $4, 5, 'refused')`, l.id, l.run, l.seq, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	outboxRows := func() (n int) {
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM outbox`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, id := range []string{"902", "903"} {
		r := do(t, "POST", e.url+"/v1/dead-letters/"+id+"/retry", "tok-op", nil)
		if r.status != http.StatusNotFound {
			t.Fatalf("retrying dead letter %s, whose event is missing: %d %s, want 404", id, r.status, r.body)
		}
		if n := outboxRows(); n != 0 {
			t.Fatalf("retrying dead letter %s left %d outbox rows, want none", id, n)
		}
	}
	r := do(t, "POST", e.url+"/v1/dead-letters/retry", "tok-op", []byte(`{"ids":[901,902,903]}`))
	if r.status != http.StatusOK || string(r.body) != `{"retried":1}`+"\n" && string(r.body) != `{"retried":1}` {
		t.Fatalf("retrying 901-903 by ids: %d %s, want 1 retried", r.status, r.body)
	}
	var run string
	if err := pool.QueryRow(ctx, `SELECT string_agg(run_id || ':' || run_seq, ',') FROM outbox`).Scan(&run); err != nil || run != real.RunID+":1" {
		t.Fatalf("the outbox holds %q (%v), want only the real event", run, err)
	}
	r = do(t, "POST", e.url+"/v1/dead-letters/retry", "tok-op", []byte(`{"all":true}`))
	if r.status != http.StatusOK || outboxRows() != 1 {
		t.Fatalf("retrying all: %d %s, %d outbox rows, want the one real event only", r.status, r.body, outboxRows())
	}
}
