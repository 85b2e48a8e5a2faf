package httpapi_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
)

// TestAppend_ArchivedRunIsRefused: once retention retired a run's
// partition, an event of that run (a late duplicate included) is refused
// with 409 RUN_ARCHIVED naming runId, alone and in a batch, whose other
// items still go in.
func TestAppend_ArchivedRunIsRefused(t *testing.T) {
	t.Parallel()
	pool := migratedPool(t, 20)
	e := newEnvOn(t, httpapi.Config{}, pool, testenv.Redis(t))
	id := workload.NewIdentity("tenant_a")
	first := workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil)
	if r := do(t, "POST", e.url+"/v1/events", "", mustJSON(t, first)); r.status != 201 {
		t.Fatalf("append: %d %s", r.status, r.body)
	}
	if _, err := pool.Exec(context.Background(), `UPDATE run_event_partitions SET retired_at = clock_timestamp()
		WHERE epoch = (SELECT run_epoch FROM runs WHERE run_id = $1)`, id.RunID); err != nil {
		t.Fatal(err)
	}
	for _, ev := range []store.RunEventWrite{first, workload.Event(id, store.EventRunCompleted, "", 1, 1, time.Now(), nil)} {
		r := do(t, "POST", e.url+"/v1/events", "", mustJSON(t, ev))
		if code, field, _ := r.errBody(t); r.status != 409 || code != "RUN_ARCHIVED" || field != "runId" {
			t.Fatalf("append %s to an archived run: %d %s/%s, want 409 RUN_ARCHIVED/runId", ev.EventType, r.status, code, field)
		}
	}
	other := workload.NewIdentity("tenant_a")
	body := mustJSON(t, map[string]any{"events": []any{
		workload.Event(id, "StepHeartbeatRecorded", "s", 1, 1, time.Now(), nil),
		workload.Event(other, store.EventRunStarted, "", 1, 1, time.Now(), nil),
	}})
	r := do(t, "POST", e.url+"/v1/events:batch", "", body)
	var out struct {
		Results []struct {
			RunSeq int64 `json:"runSeq"`
			Error  *struct{ Code, Field string }
		} `json:"results"`
	}
	if err := json.Unmarshal(r.body, &out); err != nil || r.status != 200 || len(out.Results) != 2 {
		t.Fatalf("batch: %d %s (%v)", r.status, r.body, err)
	}
	if out.Results[0].Error == nil || out.Results[0].Error.Code != "RUN_ARCHIVED" || out.Results[1].Error != nil || out.Results[1].RunSeq != 1 {
		t.Fatalf("batch with an archived run's event and a new run's: %s", r.body)
	}
}
