package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runstream/runstream/client"
	"github.com/runstream/runstream/store"
)

// TestRun_Lifecycle writes a whole run through the handle against the real
// API: a step that fails (retryable) and succeeds on its retry, a step
// whose StepStarted fails open into the spool while the API is away and is
// drained when it is back, a skipped step, a pause, the end. The store
// holds the correlation fields, keys and attempt counters an engine would
// otherwise compute by hand, and the snapshot shows the run as the engine
// means it. A second handle on the same run repeats events as duplicates.
func TestRun_Lifecycle(t *testing.T) {
	t.Parallel()
	base := realAPI(t)
	var down atomic.Bool
	p := newProxy(t, base, func(*http.Request) int {
		if down.Load() {
			return http.StatusServiceUnavailable
		}
		return 0
	})
	p.retryAfter.Store(60) // past the budget: the client gives up at once
	c := newClient(t, client.Config{URL: p.URL, WriteLatencyBudget: 30 * time.Second})
	ctx := context.Background()
	opts := client.RunOptions{TenantID: testTenant, ProjectID: "proj", EnvironmentID: "test", PlanID: "plan_handle",
		PlanVersion: "3", EngineRunRef: "wf-lifecycle", EngineAttemptID: 2}
	before := time.Now().Truncate(time.Millisecond)
	run := c.Run(opts)
	checkTimeOrderedID(t, run.ID(), before)
	if later := c.Run(opts).ID(); later <= run.ID() {
		t.Fatalf("run ids %q then %q: a later run's id should sort after", run.ID(), later)
	}
	checkTimeOrderedID(t, client.NewRunID(), before)
	must := func(res client.Result, err error) client.Result {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := must(run.Started(ctx, client.RunStarted{EngineType: "temporal"})); res.RunSeq != 1 || !res.Persisted {
		t.Fatalf("RunStarted: %+v", res)
	}

	extract := run.Step("extract")
	must(extract.Started(ctx))
	must(extract.Failed(ctx, client.Failure{ErrorCode: "TIMEOUT", ErrorMessage: "the source took too long",
		FailureCategory: client.FailureTimeout, Retryable: true}))
	if extract.Attempt() != 1 {
		t.Fatalf("attempt after the failure %d, want 1", extract.Attempt())
	}
	must(extract.Started(ctx))
	if extract.Attempt() != 2 {
		t.Fatalf("a start after a failure is attempt %d, want 2", extract.Attempt())
	}
	must(extract.Completed(ctx, client.StepCompleted{Result: map[string]int{"rows": 3}, DurationMs: new(int64(12))}))

	down.Store(true)
	load := run.Step("load")
	if res := must(load.Started(ctx)); !res.Spooled {
		t.Fatalf("StepStarted with the API away: %+v, want spooled", res)
	}
	if c.Spooled() != 1 {
		t.Fatalf("%d spooled, want 1", c.Spooled())
	}
	down.Store(false)
	if err := c.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if c.Spooled() != 0 {
		t.Fatalf("%d still spooled after Drain", c.Spooled())
	}
	must(load.Completed(ctx, client.StepCompleted{DurationMs: new(int64(40))}))
	must(run.Step("notify").Skipped(ctx, client.StepSkipped{Reason: "no recipients", ReasonCode: "CONDITION_FALSE"}))
	must(run.Paused(ctx, client.Signal{SignalID: "sig-1", Reason: "maintenance"}))
	must(run.Resumed(ctx, client.Signal{SignalID: "sig-2"}))
	if res := must(run.Completed(ctx, client.RunCompleted{})); res.RunSeq != 11 {
		t.Fatalf("RunCompleted: %+v, want runSeq 11", res)
	}

	stored := storedEvents(t, base, run.ID())
	var got []string
	for _, e := range stored {
		got = append(got, fmt.Sprintf("%d %s %s %d/%d", e.RunSeq, e.EventType, orDash(e.StepID), e.LogicalAttemptID, e.EngineAttemptID))
		if e.TenantID != testTenant || e.ProjectID != "proj" || e.EnvironmentID != "test" || e.PlanID != "plan_handle" || e.PlanVersion != "3" {
			t.Errorf("%s: correlation %s/%s/%s/%s/%s", e.EventType, e.TenantID, e.ProjectID, e.EnvironmentID, e.PlanID, e.PlanVersion)
		}
		if e.IdempotencyKey != e.Key() || !uuidV4.MatchString(e.EventID) || e.EmittedAt == "" {
			t.Errorf("%s: key %s (want %s), eventId %q, emittedAt %q", e.EventType, e.IdempotencyKey, e.Key(), e.EventID, e.EmittedAt)
		}
	}
	want := []string{
		"1 RunStarted - 1/2",
		"2 StepStarted extract 1/2",
		"3 StepFailed extract 1/2",
		"4 StepStarted extract 2/2",
		"5 StepCompleted extract 2/2",
		"6 StepStarted load 1/2",
		"7 StepCompleted load 1/2",
		"8 StepSkipped notify 1/2",
		"9 RunPaused - 1/2",
		"10 RunResumed - 1/2",
		"11 RunCompleted - 1/2",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("stored:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if p := string(stored[0].Payload); p != `{"engineRunRef":"wf-lifecycle","engineType":"temporal"}` {
		t.Errorf("RunStarted payload %s", p)
	}

	snap := snapshotOf(t, base, run.ID())
	if snap.Status != store.RunCompleted || snap.EngineRunRef != "wf-lifecycle" || snap.LastEventSeq != 11 || snap.FailedSteps != 1 {
		t.Errorf("snapshot: status %s, engineRunRef %q, lastEventSeq %d, failedSteps %d", snap.Status, snap.EngineRunRef, snap.LastEventSeq, snap.FailedSteps)
	}
	steps := map[string]store.StepSnapshot{}
	for _, s := range snap.Steps {
		steps[s.StepID] = s
	}
	if s := steps["extract"]; s.Status != store.StepSuccess || s.LogicalAttemptID != 2 || s.DurationMs == nil || *s.DurationMs != 12 ||
		len(s.Attempts) != 1 || s.Attempts[0].Status != store.StepFailed || s.Attempts[0].Error == nil ||
		s.Attempts[0].Error.Code != "TIMEOUT" || !s.Attempts[0].Error.Retryable {
		t.Errorf("extract: %+v", s)
	}
	if steps["load"].Status != store.StepSuccess || steps["notify"].Status != store.StepSkipped ||
		steps["notify"].Skip == nil || steps["notify"].Skip.ReasonCode != "CONDITION_FALSE" {
		t.Errorf("load %+v, notify %+v", steps["load"], steps["notify"])
	}

	// Another process on the same run (a retried activity) names the run
	// and the attempt it is on; what it repeats is a duplicate.
	opts.RunID, opts.EngineAttemptID = run.ID(), 3
	again := c.Run(opts)
	if res := must(again.Step("extract").SetAttempt(2).Completed(ctx,
		client.StepCompleted{Result: map[string]int{"rows": 3}})); !res.Idempotent || res.RunSeq != 5 {
		t.Errorf("a repeated StepCompleted: %+v, want the duplicate of runSeq 5", res)
	}
	if res := must(again.Completed(ctx, client.RunCompleted{})); !res.Idempotent || res.RunSeq != 11 {
		t.Errorf("a repeated RunCompleted: %+v, want the duplicate of runSeq 11", res)
	}
	if n := len(storedEvents(t, base, run.ID())); n != 11 {
		t.Errorf("%d events stored, want 11: nothing twice", n)
	}
}

// TestRun_FailedAndCancelled: a step that fails for good and the run
// failing on it, and a cancelled run, as the snapshot shows them.
func TestRun_FailedAndCancelled(t *testing.T) {
	t.Parallel()
	base := realAPI(t)
	c := newClient(t, client.Config{URL: base, DisableFailOpen: true})
	ctx := context.Background()
	opts := client.RunOptions{TenantID: testTenant, ProjectID: "proj", EnvironmentID: "test", PlanID: "plan_handle", PlanVersion: "1"}
	failing := c.Run(opts)
	charge := failing.Step("charge")
	for _, f := range []func() (client.Result, error){
		func() (client.Result, error) { return failing.Started(ctx, client.RunStarted{}) },
		func() (client.Result, error) { return charge.Started(ctx) },
		func() (client.Result, error) {
			return charge.Failed(ctx, client.Failure{ErrorCode: "CARD_DECLINED", FailureCategory: client.FailureUser})
		},
		func() (client.Result, error) {
			return failing.Failed(ctx, client.Failure{ErrorCode: "STEP_FAILED", ErrorMessage: "charge failed", FailureSource: "engine"})
		},
	} {
		if _, err := f(); err != nil {
			t.Fatal(err)
		}
	}
	snap := snapshotOf(t, base, failing.ID())
	if snap.Status != store.RunFailed || snap.Error == nil || snap.Error.Code != "STEP_FAILED" || len(snap.Steps) != 1 ||
		snap.Steps[0].Error == nil || snap.Steps[0].Error.Code != "CARD_DECLINED" || snap.Steps[0].Error.Retryable {
		t.Errorf("failed run: %+v", snap)
	}

	cancelled := c.Run(opts)
	if _, err := cancelled.Started(ctx, client.RunStarted{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cancelled.Cancelled(ctx); err != nil {
		t.Fatal(err)
	}
	if s := snapshotOf(t, base, cancelled.ID()); s.Status != store.RunCancelled {
		t.Errorf("cancelled run: status %s", s.Status)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// snapshotOf reads a run's snapshot projected from the store
// (?consistent=true: the test API has no Redis).
func snapshotOf(t *testing.T, base, runID string) store.RunSnapshot {
	t.Helper()
	resp, err := http.Get(base + "/v1/runs/" + runID + "/snapshot?consistent=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("snapshot of run %s: %d %s", runID, resp.StatusCode, b)
	}
	var s store.RunSnapshot
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

var uuidV7 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// checkTimeOrderedID fails unless id is a UUID v7 whose time (its first 48
// bits, Unix milliseconds) is between made and now.
func checkTimeOrderedID(t *testing.T, id string, made time.Time) {
	t.Helper()
	if !uuidV7.MatchString(id) {
		t.Fatalf("run id %q, want a new UUID v7", id)
	}
	ms, err := strconv.ParseInt(strings.ReplaceAll(id[:13], "-", ""), 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	if at := time.UnixMilli(ms); at.Before(made) || at.After(time.Now()) {
		t.Fatalf("run id %q carries %v, want a time between %v and now", id, at, made)
	}
}
