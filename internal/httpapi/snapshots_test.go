package httpapi_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/snapshots"
	"github.com/runstream/runstream/store"
)

func TestResync_Endpoint(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{AuthTokens: map[string]string{"tok-a": "tenant_a", "tok-b": "tenant_b"}})
	ev := mustJSON(t, appendable(t, "tenant_a"))
	if r := do(t, "POST", e.url+"/v1/events", "tok-a", ev); r.status != 201 {
		t.Fatal(r.status)
	}
	var w store.RunEventWrite
	_ = json.Unmarshal(ev, &w)
	// A corrupted Redis snapshot at the same watermark is repaired.
	e.redis.Set(context.Background(), snapshots.Key(w.RunID), `{"runId":"`+w.RunID+`","tenantId":"tenant_a","lastEventSeq":1,"status":"FAILED"}`, time.Hour)
	if r := do(t, "POST", e.url+"/v1/runs/"+w.RunID+"/resync", "tok-b", nil); r.status != 404 {
		t.Fatalf("another tenant's resync: %d, want 404", r.status)
	}
	r := do(t, "POST", e.url+"/v1/runs/"+w.RunID+"/resync", "tok-a", nil)
	if r.status != 200 || !strings.Contains(string(r.body), `"status":"RUNNING"`) {
		t.Fatalf("resync: %d %s", r.status, r.body)
	}
	got, _ := e.redis.Get(context.Background(), snapshots.Key(w.RunID)).Result()
	if !strings.Contains(got, `"status":"RUNNING"`) {
		t.Fatalf("Redis snapshot after resync: %s", got)
	}
	if r := do(t, "POST", e.url+"/v1/runs/unknown-"+w.RunID+"/resync", "tok-a", nil); r.status != 404 {
		t.Fatalf("unknown run resync: %d", r.status)
	}
}
