package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/internal/lag"
	"github.com/runstream/runstream/internal/testenv/testkafka"
	"github.com/runstream/runstream/store"
)

// An operator resets an idle group (a dry run first names the records it
// would read again, then the reset commits), and deletes it; each change
// is in the audit log. Refused with a clear answer: a group with members
// (409), an unknown group (404), a bad or future time (400), a tenant's
// token (403).
func TestOperator_ResetAndDeleteGroup(t *testing.T) {
	topic := store.DefaultTopic
	k := testkafka.Start(t, kfake.SeedTopics(2, topic))
	admin, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	ctx := context.Background()
	for p := range int32(2) {
		for range 10 {
			if err := admin.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(`{}`)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 10})
	offs.Add(kadm.Offset{Topic: topic, Partition: 1, At: 10})
	if _, err := kadm.NewClient(admin).CommitOffsets(ctx, "analytics-etl", offs); err != nil {
		t.Fatal(err)
	}
	member(t, k.Brokers, "busy", "busy-client", "busy-0", topic)
	e := newEnv(t, httpapi.Config{AuthTokens: roleTokens,
		ResetGroupOffsets: func(ctx context.Context, g, tp string, to lag.ResetTo, apply bool) (lag.ResetPlan, error) {
			return lag.ResetOffsets(ctx, admin, g, tp, to, apply)
		},
		DeleteGroup: func(ctx context.Context, g string) error { return lag.DeleteGroup(ctx, admin, g) }})
	post := func(path, token, body string, want int) response {
		t.Helper()
		r := do(t, "POST", e.url+path, token, []byte(body))
		if r.status != want {
			t.Fatalf("POST %s %s: %d %s, want %d", path, body, r.status, r.body, want)
		}
		return r
	}
	var plan lag.ResetPlan
	r := post("/v1/lag/groups/analytics-etl/reset", "tok-op", `{"to":"earliest","dryRun":true}`, 200)
	if err := json.Unmarshal(r.body, &plan); err != nil || plan.Applied || plan.Replay != 20 || len(plan.Partitions) != 2 {
		t.Fatalf("dry run: %s (%v), want 20 records to replay, not applied", r.body, err)
	}
	r = post("/v1/lag/groups/analytics-etl/reset", "tok-op", `{"to":"earliest","reason":"reprocess the day"}`, 200)
	if err := json.Unmarshal(r.body, &plan); err != nil || !plan.Applied || plan.Replay != 20 {
		t.Fatalf("reset: %s (%v), want applied with 20 to replay", r.body, err)
	}
	got, err := kadm.NewClient(admin).FetchOffsets(ctx, "analytics-etl")
	if err != nil {
		t.Fatal(err)
	}
	got.Each(func(o kadm.OffsetResponse) {
		if o.At != 0 {
			t.Errorf("partition %d committed at %d after a reset to earliest, want 0", o.Partition, o.At)
		}
	})

	// Refusals.
	var busy response
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		busy = do(t, "POST", e.url+"/v1/lag/groups/busy/reset", "tok-op", []byte(`{"to":"earliest"}`))
		if busy.status == http.StatusConflict || time.Now().After(deadline) {
			break
		}
	}
	if code, field, msg := busy.errBody(t); busy.status != 409 || code != "CONFLICT" || field != "group" || !strings.Contains(msg, "stop its consumers first") {
		t.Fatalf("a group with a member: %d %s %s %q, want 409 CONFLICT naming the members", busy.status, code, field, msg)
	}
	if r := do(t, "DELETE", e.url+"/v1/lag/groups/busy", "tok-op", nil); r.status != 409 {
		t.Fatalf("deleting a group with a member: %d %s, want 409", r.status, r.body)
	}
	post("/v1/lag/groups/nobody/reset", "tok-op", `{"to":"earliest"}`, 404)
	post("/v1/lag/groups/analytics-etl/reset", "tok-op", `{"to":"yesterday"}`, 400)
	post("/v1/lag/groups/analytics-etl/reset", "tok-op", `{"to":"`+time.Now().Add(time.Hour).UTC().Format(time.RFC3339)+`"}`, 400)
	post("/v1/lag/groups/analytics-etl/reset", "tok-op", `{}`, 400)
	post("/v1/lag/groups/analytics-etl/reset", "tok-a", `{"to":"earliest"}`, 403)

	if r := do(t, "DELETE", e.url+"/v1/lag/groups/analytics-etl", "tok-op", []byte(`{"reason":"retired sink"}`)); r.status != 200 {
		t.Fatalf("deleting the idle group: %d %s", r.status, r.body)
	}
	if r := do(t, "DELETE", e.url+"/v1/lag/groups/analytics-etl", "tok-op", nil); r.status != 404 {
		t.Fatalf("deleting it again: %d %s, want 404", r.status, r.body)
	}

	log := getJSON[operatorActionsPage](t, e.url+"/v1/operator-actions", "tok-op").Actions
	if len(log) != 2 || log[0].Action != "group.delete" || log[0].Reason != "retired sink" || log[0].Target != "group analytics-etl" ||
		log[1].Action != "group.reset-offsets" || log[1].Count != 20 || log[1].Reason != "reprocess the day" ||
		log[1].Target != "group analytics-etl on topic "+topic+" to earliest" {
		t.Fatalf("the audit log: %+v, want the delete then the reset (the dry run and the refusals not recorded)", log)
	}
}
