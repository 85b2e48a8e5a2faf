package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/internal/testenv"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/postgres"
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

// TestReads_ArchivedEventsSaySo: once retention took a run's partition
// out of the store, its events page and the tenant's audit page over that
// time name the archive file instead of answering with nothing; another
// tenant's audit page does not mention it.
func TestReads_ArchivedEventsSaySo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migratedPool(t, 20)
	testenv.BackdatePartitions(t, pool)
	st, err := postgres.New(pool, postgres.Config{Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvOn(t, httpapi.Config{}, pool, testenv.Redis(t))
	id := workload.NewIdentity("tenant_a")
	start := time.Now().Add(-time.Minute)
	for _, ev := range []store.RunEventWrite{
		workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil),
		workload.Event(id, store.EventRunCompleted, "", 1, 1, time.Now(), nil),
	} {
		if r := do(t, "POST", e.url+"/v1/events", "", mustJSON(t, ev)); r.status != 201 {
			t.Fatalf("append: %d %s", r.status, r.body)
		}
	}
	if r := do(t, "GET", e.url+"/v1/runs/"+id.RunID+"/events", "", nil); r.status != 200 || bytes.Contains(r.body, []byte(`"archived"`)) {
		t.Fatalf("a live run's events: %d %s, want no archived member", r.status, r.body)
	}
	// Retention's steps, by hand (internal/retention takes them in order).
	if _, err := st.EnsurePartitions(ctx, time.Minute, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM outbox`); err != nil {
		t.Fatal(err)
	}
	part := func() postgres.Partition {
		t.Helper()
		parts, err := st.Partitions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range parts {
			if p.Name == "run_events_backdated" {
				return p
			}
		}
		t.Fatal("no backdated partition")
		return postgres.Partition{}
	}
	if err := st.RetirePartition(ctx, part()); err != nil {
		t.Fatal(err)
	}
	if err := st.DetachPartition(ctx, part()); err != nil {
		t.Fatal(err)
	}
	type page struct {
		Events   []json.RawMessage `json:"events"`
		Archived json.RawMessage   `json:"archived"`
	}
	get := func(path string) page {
		t.Helper()
		r := do(t, "GET", e.url+path, "", nil)
		var p page
		if err := json.Unmarshal(r.body, &p); err != nil || r.status != 200 {
			t.Fatalf("GET %s: %d %s", path, r.status, r.body)
		}
		return p
	}
	if p := get("/v1/runs/" + id.RunID + "/events"); len(p.Events) != 0 || !bytes.Contains(p.Archived, []byte(`"state":"archiving"`)) {
		t.Fatalf("a detached run's events: %+v, want none and archived.state archiving", p)
	}
	tenants, err := st.PartitionTenants(ctx, part())
	if err != nil || len(tenants) != 1 {
		t.Fatalf("tenants: %+v, %v", tenants, err)
	}
	const location = "file:///archive/tenant=tenant_a/date=x/run_events_backdated.parquet"
	if err := st.RecordArchive(ctx, part(), postgres.ArchiveFile{TenantID: "tenant_a", Location: location, Events: 2, Bytes: 1,
		Checksum: "c", MinPersistedAt: tenants[0].MinPersistedAt, MaxPersistedAt: tenants[0].MaxPersistedAt}); err != nil {
		t.Fatal(err)
	}
	if err := st.MarkArchived(ctx, part()); err != nil {
		t.Fatal(err)
	}
	if err := st.DropPartition(ctx, part()); err != nil {
		t.Fatal(err)
	}
	p := get("/v1/runs/" + id.RunID + "/events")
	if len(p.Events) != 0 || !bytes.Contains(p.Archived, []byte(`"state":"archived"`)) || !bytes.Contains(p.Archived, []byte(location)) {
		t.Fatalf("an archived run's events: %s, want none and the archive file named", p.Archived)
	}
	audit := get("/v1/events?tenantId=tenant_a&from=" + url.QueryEscape(start.UTC().Format(time.RFC3339Nano)))
	if len(audit.Events) != 0 || !bytes.Contains(audit.Archived, []byte(location)) || !bytes.Contains(audit.Archived, []byte(`"events":2`)) {
		t.Fatalf("tenant_a's audit page over the archived time: %d events, archived %s; want the file named", len(audit.Events), audit.Archived)
	}
	before := get("/v1/events?tenantId=tenant_a&from=" + url.QueryEscape(start.Add(-time.Hour).UTC().Format(time.RFC3339Nano)) +
		"&to=" + url.QueryEscape(start.Add(-30*time.Minute).UTC().Format(time.RFC3339Nano)))
	if len(before.Archived) != 0 {
		t.Fatalf("a window before the archived events names %s", before.Archived)
	}
	if other := get("/v1/events?tenantId=tenant_b&from=" + url.QueryEscape(start.UTC().Format(time.RFC3339Nano))); len(other.Archived) != 0 {
		t.Fatalf("tenant_b's audit page names tenant_a's archive: %s", other.Archived)
	}
}

// TestRetention_OperatorsSeeThePartitions: GET /v1/retention answers an
// operator with every partition and their runs, says when no retention
// process ever ran, then reports its last pass; a tenant gets 403.
func TestRetention_OperatorsSeeThePartitions(t *testing.T) {
	t.Parallel()
	pool := migratedPool(t, 10)
	e := newEnvOn(t, httpapi.Config{AuthTokens: roleTokens}, pool, testenv.Redis(t))
	id := workload.NewIdentity("tenant_a")
	if r := do(t, "POST", e.url+"/v1/events", "tok-a", mustJSON(t, workload.Event(id, store.EventRunStarted, "", 1, 1, time.Now(), nil))); r.status != 201 {
		t.Fatalf("append: %d %s", r.status, r.body)
	}
	if r := do(t, "GET", e.url+"/v1/retention", "tok-a", nil); r.status != 403 {
		t.Fatalf("a tenant's GET /v1/retention: %d, want 403", r.status)
	}
	type status struct {
		LastPass   *struct{ Error string }
		Partitions []struct {
			Name     string
			State    string
			Runs     int64
			OpenRuns int64 `json:"openRuns"`
		}
	}
	get := func() status {
		t.Helper()
		r := do(t, "GET", e.url+"/v1/retention", "tok-op", nil)
		var s status
		if err := json.Unmarshal(r.body, &s); err != nil || r.status != 200 {
			t.Fatalf("GET /v1/retention: %d %s", r.status, r.body)
		}
		return s
	}
	s := get()
	if s.LastPass != nil || len(s.Partitions) < 3 || s.Partitions[0].Name != "run_events_legacy" {
		t.Fatalf("before any retention pass: %+v", s)
	}
	open := 0
	for _, p := range s.Partitions {
		open += int(p.OpenRuns)
	}
	if open != 1 {
		t.Fatalf("partitions count %d open runs, want the one appended: %+v", open, s.Partitions)
	}
	st, err := postgres.New(pool, postgres.Config{Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.RecordRetentionPass(context.Background(), postgres.RetentionPass{Retention: time.Hour, PartitionWidth: time.Hour, Error: "bucket refused"}); err != nil {
		t.Fatal(err)
	}
	if s := get(); s.LastPass == nil || s.LastPass.Error != "bucket refused" {
		t.Fatalf("after a failed pass: %+v, want its error", s.LastPass)
	}
}
