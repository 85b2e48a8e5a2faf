package reduce

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/runstream/runstream/store"
)

// Histories the table rows start from, projected from an empty snapshot.
func hist(evs ...store.RunEventRecord) []store.RunEventRecord { return evs }

func queued() []store.RunEventRecord { return hist(mk(1, store.EventRunQueued)) }

func approved() []store.RunEventRecord {
	return append(queued(), mk(2, store.EventRunApproved))
}

// running has StartedAt at(15) from the payload, emittedAt at(20).
func running() []store.RunEventRecord {
	return append(queued(), mk(2, store.EventRunStarted,
		pl(`{"engineRunRef":"temporal://wf/run-1","startedAt":"`+at(15)+`"}`)))
}

func paused() []store.RunEventRecord {
	return append(running(), mk(3, store.EventRunPaused, pl(`{"substatus":"DRAINING"}`)))
}

// withStep is running plus step "a" attempt 1 started at(30) (seq 3).
func withStep(more ...store.RunEventRecord) []store.RunEventRecord {
	evs := append(running(), mk(3, store.EventStepStarted, step("a", 1, 1)))
	return append(evs, more...)
}

const failPayload = `{"errorCode":"TIMEOUT","errorMessage":"took too long","retryable":true,"failureCategory":"TIMEOUT","failureSource":"activity","stack":"..."}`

var timeoutErr = &store.ErrorInfo{Code: "TIMEOUT", Message: "took too long", Retryable: true, Category: "TIMEOUT", Source: "activity"}

// withRetry is withStep, then attempt 1 failed at(40) (seq 4) and attempt
// 2 started at(50) (seq 5, engine attempt 3).
func withRetry(more ...store.RunEventRecord) []store.RunEventRecord {
	evs := withStep(
		mk(4, store.EventStepFailed, step("a", 1, 2), pl(failPayload)),
		mk(5, store.EventStepStarted, step("a", 2, 3)),
	)
	return append(evs, more...)
}

func violation(reason string) Result {
	return Result{Outcome: Applied, CausalViolation: true, Reason: reason}
}

var applied = Result{Outcome: Applied}

type applyCase struct {
	name string
	// prev is projected from an empty snapshot to build the snapshot the
	// row starts from, unless prevSnap is set.
	prev     []store.RunEventRecord
	prevSnap *store.RunSnapshot
	ev       store.RunEventRecord
	// want edits a copy of the starting snapshot, whose lastEventSeq and
	// updatedAt already moved to ev's unless the row expects a Duplicate,
	// into the expected one. Anything it does not touch must not change.
	want func(s *store.RunSnapshot)
	res  Result
}

func TestApply_Rules(t *testing.T) {
	cases := []applyCase{
		// Identity, watermark, duplicates, unknown types.
		{
			name: "first event sets identity and PENDING",
			ev:   mk(1, store.EventRunQueued),
			want: func(s *store.RunSnapshot) {
				s.RunID, s.TenantID, s.ProjectID = "run-1", "tenant-a", "proj-1"
				s.EnvironmentID, s.PlanID, s.PlanVersion = "prod", "plan-1", "1.0"
				s.Status = store.RunPending
				s.Steps, s.Artifacts = []store.StepSnapshot{}, []store.ArtifactRef{}
			},
			res: applied,
		},
		{
			name: "identity fields are kept once set",
			prev: queued(),
			ev: mk(2, store.EventRunApproved, func(ev *store.RunEventRecord) {
				ev.TenantID, ev.PlanVersion, ev.RunID = "tenant-b", "2.0", "run-2"
			}),
			want: func(s *store.RunSnapshot) { s.Status = store.RunApproved },
			res:  applied,
		},
		{
			name: "empty identity field is filled by a later event",
			prevSnap: &store.RunSnapshot{RunID: "run-1", Status: store.RunRunning, LastEventSeq: 4,
				Steps: []store.StepSnapshot{}, Artifacts: []store.ArtifactRef{}},
			ev: mk(5, "SignalAccepted"),
			want: func(s *store.RunSnapshot) {
				s.TenantID, s.ProjectID, s.EnvironmentID = "tenant-a", "proj-1", "prod"
				s.PlanID, s.PlanVersion = "plan-1", "1.0"
			},
			res: Result{Outcome: UnknownType},
		},
		{
			name: "duplicate at the watermark is a no-op",
			prev: running(),
			ev:   mk(2, store.EventRunCompleted),
			res:  Result{Outcome: Duplicate},
		},
		{
			name: "duplicate below the watermark is a no-op",
			prev: running(),
			ev:   mk(1, store.EventRunFailed),
			res:  Result{Outcome: Duplicate},
		},
		{
			name: "duplicate of an unknown type is a no-op",
			prev: running(),
			ev:   mk(2, "SignalAccepted"),
			res:  Result{Outcome: Duplicate},
		},
		{
			name: "gap is applied normally",
			prev: queued(),
			ev:   mk(7, store.EventRunApproved),
			want: func(s *store.RunSnapshot) { s.Status = store.RunApproved },
			res:  applied,
		},
		{
			name: "unknown type only advances the watermark",
			prev: withStep(),
			ev:   mk(4, "SignalAccepted", step("a", 2, 2), pl(`{"status":"COMPLETED"}`)),
			res:  Result{Outcome: UnknownType},
		},
		{
			name: "unknown type as first event sets identity and PENDING",
			ev:   mk(1, "RunCreated"),
			want: func(s *store.RunSnapshot) {
				s.RunID, s.TenantID, s.ProjectID = "run-1", "tenant-a", "proj-1"
				s.EnvironmentID, s.PlanID, s.PlanVersion = "prod", "plan-1", "1.0"
				s.Status = store.RunPending
				s.Steps, s.Artifacts = []store.StepSnapshot{}, []store.ArtifactRef{}
			},
			res: Result{Outcome: UnknownType},
		},
		{
			name: "stale is carried through",
			prevSnap: &store.RunSnapshot{RunID: "run-1", TenantID: "tenant-a", ProjectID: "proj-1",
				EnvironmentID: "prod", PlanID: "plan-1", PlanVersion: "1.0", Status: store.RunRunning,
				LastEventSeq: 3, Stale: true, Steps: []store.StepSnapshot{}, Artifacts: []store.ArtifactRef{}},
			ev:   mk(9, store.EventRunPaused),
			want: func(s *store.RunSnapshot) { s.Status = store.RunPaused },
			res:  applied,
		},

		// Run events.
		{
			name: "RunQueued keeps PENDING",
			prev: queued(),
			ev:   mk(2, store.EventRunQueued),
			res:  applied,
		},
		{
			name: "RunQueued on APPROVED is a violation and stays APPROVED",
			prev: approved(),
			ev:   mk(3, store.EventRunQueued),
			res:  violation("RunQueued in run status APPROVED"),
		},
		{
			name: "RunQueued on RUNNING is a violation and stays RUNNING",
			prev: running(),
			ev:   mk(3, store.EventRunQueued),
			res:  violation("RunQueued in run status RUNNING"),
		},
		{
			name: "RunQueued on PAUSED is a violation and keeps the substatus",
			prev: paused(),
			ev:   mk(4, store.EventRunQueued),
			res:  violation("RunQueued in run status PAUSED"),
		},
		{
			name: "RunApproved moves PENDING to APPROVED",
			prev: queued(),
			ev:   mk(2, store.EventRunApproved),
			want: func(s *store.RunSnapshot) { s.Status = store.RunApproved },
			res:  applied,
		},
		{
			name: "RunApproved on APPROVED is a violation",
			prev: approved(),
			ev:   mk(3, store.EventRunApproved),
			res:  violation("RunApproved in run status APPROVED"),
		},
		{
			name: "RunApproved on RUNNING does not move backwards",
			prev: running(),
			ev:   mk(3, store.EventRunApproved),
			res:  violation("RunApproved in run status RUNNING"),
		},
		{
			name: "RunApproved on PAUSED does not move backwards",
			prev: paused(),
			ev:   mk(4, store.EventRunApproved),
			res:  violation("RunApproved in run status PAUSED"),
		},
		{
			name: "RunStarted from PENDING takes payload startedAt and engineRunRef",
			prev: queued(),
			ev: mk(2, store.EventRunStarted, pl(`{"engineRunRef":"temporal://wf/run-1","startedAt":"`+
				at(15)+`","sourceOccurredAt":"`+at(16)+`"}`)),
			want: func(s *store.RunSnapshot) {
				s.Status, s.EngineRunRef, s.StartedAt = store.RunRunning, "temporal://wf/run-1", at(15)
			},
			res: applied,
		},
		{
			name: "RunStarted from APPROVED falls back to sourceOccurredAt",
			prev: approved(),
			ev:   mk(3, store.EventRunStarted, pl(`{"engineRunRef":"c://1","sourceOccurredAt":"`+at(25)+`"}`)),
			want: func(s *store.RunSnapshot) {
				s.Status, s.EngineRunRef, s.StartedAt = store.RunRunning, "c://1", at(25)
			},
			res: applied,
		},
		{
			name: "RunStarted without payload falls back to emittedAt",
			prev: queued(),
			ev:   mk(2, store.EventRunStarted),
			want: func(s *store.RunSnapshot) { s.Status, s.StartedAt = store.RunRunning, at(20) },
			res:  applied,
		},
		{
			name: "RunStarted ignores wrongly typed payload fields",
			prev: queued(),
			ev:   mk(2, store.EventRunStarted, pl(`{"engineRunRef":42,"startedAt":true,"sourceOccurredAt":""}`)),
			want: func(s *store.RunSnapshot) { s.Status, s.StartedAt = store.RunRunning, at(20) },
			res:  applied,
		},
		{
			name: "RunStarted again keeps startedAt and updates engineRunRef",
			prev: running(),
			ev:   mk(3, store.EventRunStarted, pl(`{"engineRunRef":"temporal://wf/run-1/b","startedAt":"`+at(29)+`"}`)),
			want: func(s *store.RunSnapshot) { s.EngineRunRef = "temporal://wf/run-1/b" },
			res:  applied,
		},
		{
			name: "RunStarted on PAUSED resumes and clears the substatus",
			prev: paused(),
			ev:   mk(4, store.EventRunStarted),
			want: func(s *store.RunSnapshot) { s.Status, s.Substatus = store.RunRunning, "" },
			res:  applied,
		},
		{
			name: "RunPaused from RUNNING records the substatus",
			prev: running(),
			ev:   mk(3, store.EventRunPaused, pl(`{"substatus":"DRAINING","signalId":"s-1","reason":"ops"}`)),
			want: func(s *store.RunSnapshot) { s.Status, s.Substatus = store.RunPaused, "DRAINING" },
			res:  applied,
		},
		{
			name: "RunPaused again without substatus clears it",
			prev: paused(),
			ev:   mk(4, store.EventRunPaused, pl(`{"reason":"drained"}`)),
			want: func(s *store.RunSnapshot) { s.Substatus = "" },
			res:  applied,
		},
		{
			name: "RunPaused on PENDING is applied as a violation",
			prev: queued(),
			ev:   mk(2, store.EventRunPaused, pl(`{"substatus":"DRAINING"}`)),
			want: func(s *store.RunSnapshot) { s.Status, s.Substatus = store.RunPaused, "DRAINING" },
			res:  violation("RunPaused in run status PENDING"),
		},
		{
			name: "RunResumed from PAUSED clears the substatus",
			prev: paused(),
			ev:   mk(4, store.EventRunResumed, pl(`{"substatus":"X"}`)),
			want: func(s *store.RunSnapshot) { s.Status, s.Substatus = store.RunRunning, "" },
			res:  applied,
		},
		{
			name: "RunResumed on RUNNING is a violation",
			prev: running(),
			ev:   mk(3, store.EventRunResumed),
			res:  violation("RunResumed in run status RUNNING"),
		},
		{
			name: "RunResumed on APPROVED is applied as a violation",
			prev: approved(),
			ev:   mk(3, store.EventRunResumed),
			want: func(s *store.RunSnapshot) { s.Status = store.RunRunning },
			res:  violation("RunResumed in run status APPROVED"),
		},
		{
			name: "RunCompleted from RUNNING sets completedAt and totalDurationMs",
			prev: running(),
			ev:   mk(3, store.EventRunCompleted, pl(`{"sourceOccurredAt":"`+at(27)+`"}`)),
			want: func(s *store.RunSnapshot) {
				s.Status, s.CompletedAt, s.TotalDurationMs = store.RunCompleted, at(27), i64(12000)
			},
			res: applied,
		},
		{
			name: "RunCompleted from PAUSED is allowed and clears the substatus",
			prev: paused(),
			ev:   mk(4, store.EventRunCompleted),
			want: func(s *store.RunSnapshot) {
				s.Status, s.Substatus, s.CompletedAt, s.TotalDurationMs = store.RunCompleted, "", at(40), i64(25000)
			},
			res: applied,
		},
		{
			name: "RunCompleted on PENDING is applied as a violation without a duration",
			prev: queued(),
			ev:   mk(2, store.EventRunCompleted),
			want: func(s *store.RunSnapshot) { s.Status, s.CompletedAt = store.RunCompleted, at(20) },
			res:  violation("RunCompleted in run status PENDING"),
		},
		{
			name: "RunCompleted on APPROVED is a violation",
			prev: approved(),
			ev:   mk(3, store.EventRunCompleted),
			want: func(s *store.RunSnapshot) { s.Status, s.CompletedAt = store.RunCompleted, at(30) },
			res:  violation("RunCompleted in run status APPROVED"),
		},
		{
			name: "RunCompleted before startedAt has no duration",
			prev: running(),
			ev:   mk(3, store.EventRunCompleted, pl(`{"sourceOccurredAt":"`+at(14)+`"}`)),
			want: func(s *store.RunSnapshot) { s.Status, s.CompletedAt = store.RunCompleted, at(14) },
			res:  applied,
		},
		{
			name: "RunCompleted with an unparsable time has no duration",
			prev: running(),
			ev:   mk(3, store.EventRunCompleted, pl(`{"sourceOccurredAt":"yesterday"}`)),
			want: func(s *store.RunSnapshot) { s.Status, s.CompletedAt = store.RunCompleted, "yesterday" },
			res:  applied,
		},
		{
			name:     "RunCompleted aggregates artifacts by uri in first-seen order",
			prevSnap: aggregationPrev(),
			ev: mk(9, store.EventRunCompleted, pl(`{"artifacts":[
				{"uri":"s3://b/y","kind":"other"},
				{"uri":"s3://b/v","kind":"report","sha256":"abc","sizeBytes":10,"expiresAt":"`+at(999)+`"},
				{"kind":"no-uri"},{"uri":7},"junk"]}`)),
			want: func(s *store.RunSnapshot) {
				s.Status, s.CompletedAt, s.TotalDurationMs = store.RunCompleted, at(90), i64(75000)
				s.Artifacts = []store.ArtifactRef{
					{URI: "s3://b/x", Kind: "log"},
					{URI: "s3://b/y", Kind: "manifest", SizeBytes: i64(5)},
					{URI: "s3://b/w", Kind: "log"},
					{URI: "s3://b/v", Kind: "report", SHA256: "abc", SizeBytes: i64(10), ExpiresAt: at(999)},
				}
			},
			res: applied,
		},
		{
			name: "RunFailed from RUNNING records the error",
			prev: running(),
			ev:   mk(3, store.EventRunFailed, pl(failPayload)),
			want: func(s *store.RunSnapshot) {
				s.Status, s.Error = store.RunFailed, timeoutErr
				s.CompletedAt, s.TotalDurationMs = at(30), i64(15000)
			},
			res: applied,
		},
		{
			name: "RunFailed with an empty payload still records an error",
			prev: running(),
			ev:   mk(3, store.EventRunFailed),
			want: func(s *store.RunSnapshot) {
				s.Status, s.Error = store.RunFailed, &store.ErrorInfo{}
				s.CompletedAt, s.TotalDurationMs = at(30), i64(15000)
			},
			res: applied,
		},
		{
			name: "RunFailed with a malformed payload still records an error",
			prev: running(),
			ev:   mk(3, store.EventRunFailed, pl(`{"errorCode":`)),
			want: func(s *store.RunSnapshot) {
				s.Status, s.Error = store.RunFailed, &store.ErrorInfo{}
				s.CompletedAt, s.TotalDurationMs = at(30), i64(15000)
			},
			res: applied,
		},
		{
			name: "RunFailed with wrongly typed fields keeps what it can read",
			prev: running(),
			ev:   mk(3, store.EventRunFailed, pl(`{"errorCode":500,"errorMessage":"boom","retryable":"yes"}`)),
			want: func(s *store.RunSnapshot) {
				s.Status, s.Error = store.RunFailed, &store.ErrorInfo{Message: "boom"}
				s.CompletedAt, s.TotalDurationMs = at(30), i64(15000)
			},
			res: applied,
		},
		{
			name: "RunFailed from PENDING is allowed",
			prev: queued(),
			ev:   mk(2, store.EventRunFailed, pl(`[1,2]`)),
			want: func(s *store.RunSnapshot) {
				s.Status, s.Error, s.CompletedAt = store.RunFailed, &store.ErrorInfo{}, at(20)
			},
			res: applied,
		},
		{
			name: "RunFailed from APPROVED is allowed",
			prev: approved(),
			ev:   mk(3, store.EventRunFailed),
			want: func(s *store.RunSnapshot) {
				s.Status, s.Error, s.CompletedAt = store.RunFailed, &store.ErrorInfo{}, at(30)
			},
			res: applied,
		},
		{
			name: "RunFailed from PAUSED is allowed",
			prev: paused(),
			ev:   mk(4, store.EventRunFailed),
			want: func(s *store.RunSnapshot) {
				s.Status, s.Substatus, s.Error = store.RunFailed, "", &store.ErrorInfo{}
				s.CompletedAt, s.TotalDurationMs = at(40), i64(25000)
			},
			res: applied,
		},
		{
			name: "RunCancelled from RUNNING",
			prev: running(),
			ev:   mk(3, store.EventRunCancelled, pl(`null`)),
			want: func(s *store.RunSnapshot) {
				s.Status, s.CompletedAt, s.TotalDurationMs = store.RunCancelled, at(30), i64(15000)
			},
			res: applied,
		},
		{
			name: "RunCancelled from PAUSED",
			prev: paused(),
			ev:   mk(4, store.EventRunCancelled),
			want: func(s *store.RunSnapshot) {
				s.Status, s.Substatus, s.CompletedAt, s.TotalDurationMs = store.RunCancelled, "", at(40), i64(25000)
			},
			res: applied,
		},
		{
			name: "RunCancelled from PENDING",
			prev: queued(),
			ev:   mk(2, store.EventRunCancelled),
			want: func(s *store.RunSnapshot) { s.Status, s.CompletedAt = store.RunCancelled, at(20) },
			res:  applied,
		},
		{
			name: "RunCancelled from APPROVED",
			prev: approved(),
			ev:   mk(3, store.EventRunCancelled),
			want: func(s *store.RunSnapshot) { s.Status, s.CompletedAt = store.RunCancelled, at(30) },
			res:  applied,
		},

		// Terminal runs are frozen.
		{
			name: "COMPLETED run ignores RunStarted",
			prev: append(running(), mk(3, store.EventRunCompleted)),
			ev:   mk(4, store.EventRunStarted, pl(`{"engineRunRef":"again"}`)),
			res:  Result{Outcome: Applied, Frozen: true, CausalViolation: true, Reason: "RunStarted after the run ended in status COMPLETED"},
		},
		{
			name: "COMPLETED run keeps the terminalAt of the event that ended it",
			prev: append(running(), mk(3, store.EventRunCompleted), mk(4, store.EventRunFailed)),
			ev:   mk(5, store.EventRunCancelled),
			want: func(s *store.RunSnapshot) {
				if s.TerminalAt != mk(3, store.EventRunCompleted).PersistedAt {
					panic("setup: terminalAt is not the RunCompleted's persistedAt")
				}
			},
			res: Result{Outcome: Applied, Frozen: true, CausalViolation: true, Reason: "RunCancelled after the run ended in status COMPLETED"},
		},
		{
			name: "FAILED run ignores step events",
			prev: withStep(mk(4, store.EventRunFailed)),
			ev:   mk(5, store.EventStepCompleted, step("a", 1, 1)),
			res:  Result{Outcome: Applied, Frozen: true, CausalViolation: true, Reason: "StepCompleted after the run ended in status FAILED"},
		},
		{
			name: "CANCELLED run ignores a new step",
			prev: append(running(), mk(3, store.EventRunCancelled)),
			ev:   mk(4, store.EventStepStarted, step("b", 1, 1)),
			res:  Result{Outcome: Applied, Frozen: true, CausalViolation: true, Reason: "StepStarted after the run ended in status CANCELLED"},
		},
		{
			name: "terminal run takes an unknown type without a violation",
			prev: append(running(), mk(3, store.EventRunCancelled)),
			ev:   mk(4, "SignalRejected"),
			res:  Result{Outcome: UnknownType, Frozen: true},
		},
		{
			name: "terminal run keeps empty identity fields",
			prevSnap: &store.RunSnapshot{Status: store.RunCompleted, LastEventSeq: 3,
				Steps: []store.StepSnapshot{}, Artifacts: []store.ArtifactRef{}},
			ev:  mk(4, store.EventRunCompleted),
			res: Result{Outcome: Applied, Frozen: true, CausalViolation: true, Reason: "RunCompleted after the run ended in status COMPLETED"},
		},

		// Step events.
		{
			name: "StepStarted creates the step at sourceOccurredAt",
			prev: running(),
			ev:   mk(3, store.EventStepStarted, step("a", 1, 1), pl(`{"sourceOccurredAt":"`+at(28)+`"}`)),
			want: func(s *store.RunSnapshot) {
				a := store.StepSnapshot{StepID: "a", StepAttempt: attempt(1, 1, store.StepRunning), Attempts: []store.StepAttempt{}}
				a.StartedAt = at(28)
				s.Steps = []store.StepSnapshot{a}
			},
			res: applied,
		},
		{
			name: "StepStarted before RunStarted creates the step at emittedAt",
			prev: queued(),
			ev:   mk(2, store.EventStepStarted, step("a", 1, 4)),
			want: func(s *store.RunSnapshot) {
				a := store.StepSnapshot{StepID: "a", StepAttempt: attempt(1, 4, store.StepRunning), Attempts: []store.StepAttempt{}}
				a.StartedAt = at(20)
				s.Steps = []store.StepSnapshot{a}
			},
			res: applied,
		},
		{
			name: "StepStarted on RUNNING is a new engine attempt",
			prev: withStep(),
			ev:   mk(4, store.EventStepStarted, step("a", 1, 2), pl(`{"sourceOccurredAt":"`+at(39)+`"}`)),
			want: func(s *store.RunSnapshot) { s.Steps[0].EngineAttemptID = 2 },
			res:  applied,
		},
		{
			name: "StepStarted on SUCCESS is applied as a violation",
			prev: withStep(mk(4, store.EventStepCompleted, step("a", 1, 1))),
			ev:   mk(5, store.EventStepStarted, step("a", 1, 2)),
			want: func(s *store.RunSnapshot) {
				s.Steps[0].Status, s.Steps[0].EngineAttemptID = store.StepRunning, 2
			},
			res: violation(`StepStarted for step "a" attempt 1 in status SUCCESS`),
		},
		{
			name: "StepStarted on FAILED of the same attempt is a violation",
			prev: withStep(mk(4, store.EventStepFailed, step("a", 1, 1))),
			ev:   mk(5, store.EventStepStarted, step("a", 1, 1)),
			want: func(s *store.RunSnapshot) {
				s.Steps[0].Status = store.StepRunning // failedSteps stays 1
			},
			res: violation(`StepStarted for step "a" attempt 1 in status FAILED`),
		},
		{
			name: "StepStarted on SKIPPED is a violation",
			prev: append(running(), mk(3, store.EventStepSkipped, step("a", 1, 1))),
			ev:   mk(4, store.EventStepStarted, step("a", 1, 1)),
			want: func(s *store.RunSnapshot) {
				s.Steps[0].Status, s.Steps[0].StartedAt = store.StepRunning, at(40)
			},
			res: violation(`StepStarted for step "a" attempt 1 in status SKIPPED`),
		},
		{
			name: "StepCompleted from RUNNING takes durationMs and artifacts",
			prev: withStep(),
			ev: mk(4, store.EventStepCompleted, step("a", 1, 1), pl(`{"durationMs":1234.9,"result":{"rows":3},
				"artifacts":[{"uri":"s3://b/m","kind":"dbt-manifest","sha256":"ff","sizeBytes":2048}]}`)),
			want: func(s *store.RunSnapshot) {
				a := &s.Steps[0]
				a.Status, a.CompletedAt, a.DurationMs = store.StepSuccess, at(40), i64(1234)
				a.Artifacts = []store.ArtifactRef{{URI: "s3://b/m", Kind: "dbt-manifest", SHA256: "ff", SizeBytes: i64(2048)}}
			},
			res: applied,
		},
		{
			name: "StepCompleted computes the duration from its times",
			prev: withStep(),
			ev:   mk(4, store.EventStepCompleted, step("a", 1, 1), pl(`{"sourceOccurredAt":"`+at(35)+`"}`)),
			want: func(s *store.RunSnapshot) {
				a := &s.Steps[0]
				a.Status, a.CompletedAt, a.DurationMs = store.StepSuccess, at(35), i64(5000)
			},
			res: applied,
		},
		{
			name: "StepCompleted ignores a negative durationMs and a negative difference",
			prev: withStep(),
			ev:   mk(4, store.EventStepCompleted, step("a", 1, 1), pl(`{"durationMs":-5,"sourceOccurredAt":"`+at(29)+`"}`)),
			want: func(s *store.RunSnapshot) {
				a := &s.Steps[0]
				a.Status, a.CompletedAt = store.StepSuccess, at(29)
			},
			res: applied,
		},
		{
			name: "StepCompleted ignores a durationMs beyond int64 and a string",
			prev: withStep(),
			ev:   mk(4, store.EventStepCompleted, step("a", 1, 1), pl(`{"durationMs":1e30}`)),
			want: func(s *store.RunSnapshot) {
				a := &s.Steps[0]
				a.Status, a.CompletedAt, a.DurationMs = store.StepSuccess, at(40), i64(10000)
			},
			res: applied,
		},
		{
			name: "StepCompleted reads only well-formed artifacts",
			prev: withStep(),
			ev: mk(4, store.EventStepCompleted, step("a", 1, 1), pl(`{"durationMs":"7","artifacts":[
				{"uri":"s3://b/1","kind":3,"sizeBytes":1.5},
				{"uri":"s3://b/2","sizeBytes":-1,"sha256":false},
				{"uri":""},{"kind":"x"},null,[],
				{"uri":"s3://b/3","kind":"k","sizeBytes":4e3}]}`)),
			want: func(s *store.RunSnapshot) {
				a := &s.Steps[0]
				a.Status, a.CompletedAt, a.DurationMs = store.StepSuccess, at(40), i64(10000)
				a.Artifacts = []store.ArtifactRef{{URI: "s3://b/1"}, {URI: "s3://b/2"}, {URI: "s3://b/3", Kind: "k", SizeBytes: i64(4000)}}
			},
			res: applied,
		},
		{
			name: "StepCompleted replaces artifacts and clears the error",
			prevSnap: func() *store.RunSnapshot {
				s, _ := Project(store.RunSnapshot{}, withStep())
				s.Steps[0].Error = &store.ErrorInfo{Code: "OLD"}
				s.Steps[0].Artifacts = []store.ArtifactRef{{URI: "s3://old"}}
				return &s
			}(),
			ev: mk(4, store.EventStepCompleted, step("a", 1, 1), pl(`{"artifacts":"none"}`)),
			want: func(s *store.RunSnapshot) {
				a := &s.Steps[0]
				a.Status, a.CompletedAt, a.DurationMs = store.StepSuccess, at(40), i64(10000)
				a.Artifacts, a.Error = []store.ArtifactRef{}, nil
			},
			res: applied,
		},
		{
			name: "StepCompleted on a new step is a violation",
			prev: running(),
			ev:   mk(3, store.EventStepCompleted, step("a", 1, 1)),
			want: func(s *store.RunSnapshot) {
				a := store.StepSnapshot{StepID: "a", StepAttempt: attempt(1, 1, store.StepSuccess), Attempts: []store.StepAttempt{}}
				a.CompletedAt = at(30)
				s.Steps = []store.StepSnapshot{a}
			},
			res: violation(`StepCompleted for step "a" attempt 1 in status PENDING`),
		},
		{
			name: "StepCompleted on SUCCESS is a violation",
			prev: withStep(mk(4, store.EventStepCompleted, step("a", 1, 1), pl(`{"durationMs":3}`))),
			ev:   mk(5, store.EventStepCompleted, step("a", 1, 1)),
			want: func(s *store.RunSnapshot) {
				a := &s.Steps[0]
				a.CompletedAt, a.DurationMs = at(50), i64(20000)
			},
			res: violation(`StepCompleted for step "a" attempt 1 in status SUCCESS`),
		},
		{
			name: "StepCompleted on FAILED is a violation",
			prev: withStep(mk(4, store.EventStepFailed, step("a", 1, 1), pl(failPayload))),
			ev:   mk(5, store.EventStepCompleted, step("a", 1, 1)),
			want: func(s *store.RunSnapshot) {
				a := &s.Steps[0]
				a.Status, a.Error, a.CompletedAt, a.DurationMs = store.StepSuccess, nil, at(50), i64(20000)
				// failedSteps stays 1: the StepFailed was applied.
			},
			res: violation(`StepCompleted for step "a" attempt 1 in status FAILED`),
		},
		{
			name: "StepCompleted on SKIPPED is a violation",
			prev: append(running(), mk(3, store.EventStepSkipped, step("a", 1, 1))),
			ev:   mk(4, store.EventStepCompleted, step("a", 1, 1)),
			want: func(s *store.RunSnapshot) {
				a := &s.Steps[0]
				a.Status, a.CompletedAt = store.StepSuccess, at(40)
			},
			res: violation(`StepCompleted for step "a" attempt 1 in status SKIPPED`),
		},
		{
			name: "StepFailed from RUNNING records the error and counts the step",
			prev: withStep(),
			ev: mk(4, store.EventStepFailed, step("a", 1, 2), pl(`{"errorCode":"TIMEOUT","errorMessage":"took too long",
				"retryable":true,"failureCategory":"TIMEOUT","failureSource":"activity",
				"artifacts":[{"uri":"s3://b/log","kind":"log-bundle"}]}`)),
			want: func(s *store.RunSnapshot) {
				a := &s.Steps[0]
				a.Status, a.Error, a.EngineAttemptID = store.StepFailed, timeoutErr, 2
				a.CompletedAt, a.DurationMs = at(40), i64(10000)
				a.Artifacts = []store.ArtifactRef{{URI: "s3://b/log", Kind: "log-bundle"}}
				s.FailedSteps = 1
			},
			res: applied,
		},
		{
			name: "StepFailed without artifacts keeps the attempt's artifacts",
			prevSnap: func() *store.RunSnapshot {
				s, _ := Project(store.RunSnapshot{}, withStep())
				s.Steps[0].Artifacts = []store.ArtifactRef{{URI: "s3://partial"}}
				return &s
			}(),
			ev: mk(4, store.EventStepFailed, step("a", 1, 1), pl(`{"durationMs":0}`)),
			want: func(s *store.RunSnapshot) {
				a := &s.Steps[0]
				a.Status, a.Error, a.CompletedAt, a.DurationMs = store.StepFailed, &store.ErrorInfo{}, at(40), i64(0)
				s.FailedSteps = 1
			},
			res: applied,
		},
		{
			name: "StepFailed on a new step is a violation",
			prev: running(),
			ev:   mk(3, store.EventStepFailed, step("a", 1, 1)),
			want: func(s *store.RunSnapshot) {
				a := store.StepSnapshot{StepID: "a", StepAttempt: attempt(1, 1, store.StepFailed), Attempts: []store.StepAttempt{}}
				a.CompletedAt, a.Error = at(30), &store.ErrorInfo{}
				s.Steps, s.FailedSteps = []store.StepSnapshot{a}, 1
			},
			res: violation(`StepFailed for step "a" attempt 1 in status PENDING`),
		},
		{
			name: "StepFailed on SUCCESS is a violation",
			prev: withStep(mk(4, store.EventStepCompleted, step("a", 1, 1), pl(`{"durationMs":3}`))),
			ev:   mk(5, store.EventStepFailed, step("a", 1, 1)),
			want: func(s *store.RunSnapshot) {
				a := &s.Steps[0]
				a.Status, a.Error, a.CompletedAt, a.DurationMs = store.StepFailed, &store.ErrorInfo{}, at(50), i64(20000)
				s.FailedSteps = 1
			},
			res: violation(`StepFailed for step "a" attempt 1 in status SUCCESS`),
		},
		{
			name: "StepSkipped from PENDING records the reason",
			prev: running(),
			ev:   mk(3, store.EventStepSkipped, step("b", 1, 1), pl(`{"reason":"upstream failed","reasonCode":"DEPENDENCY_FAILED"}`)),
			want: func(s *store.RunSnapshot) {
				b := store.StepSnapshot{StepID: "b", StepAttempt: attempt(1, 1, store.StepSkipped), Attempts: []store.StepAttempt{}}
				b.CompletedAt = at(30)
				b.Skip = &store.SkipInfo{Reason: "upstream failed", ReasonCode: "DEPENDENCY_FAILED"}
				s.Steps = []store.StepSnapshot{b}
			},
			res: applied,
		},
		{
			name: "StepSkipped with an empty payload still records a skip",
			prev: running(),
			ev:   mk(3, store.EventStepSkipped, step("b", 1, 1), pl(`{"sourceOccurredAt":"`+at(1)+`","reason":1}`)),
			want: func(s *store.RunSnapshot) {
				b := store.StepSnapshot{StepID: "b", StepAttempt: attempt(1, 1, store.StepSkipped), Attempts: []store.StepAttempt{}}
				b.CompletedAt, b.Skip = at(1), &store.SkipInfo{}
				s.Steps = []store.StepSnapshot{b}
			},
			res: applied,
		},
		{
			name: "StepSkipped on RUNNING is a violation",
			prev: withStep(),
			ev:   mk(4, store.EventStepSkipped, step("a", 1, 1), pl(`{"reasonCode":"OPERATOR_SKIP"}`)),
			want: func(s *store.RunSnapshot) {
				a := &s.Steps[0]
				a.Status, a.CompletedAt, a.Skip = store.StepSkipped, at(40), &store.SkipInfo{ReasonCode: "OPERATOR_SKIP"}
			},
			res: violation(`StepSkipped for step "a" attempt 1 in status RUNNING`),
		},
		{
			name: "step event without a stepId changes nothing but the watermark",
			prev: withStep(),
			ev:   mk(4, store.EventStepFailed, step("", 1, 1)),
			res:  violation("StepFailed without a stepId, ignored"),
		},
		{
			name: "steps keep the order of first appearance",
			prev: withStep(mk(4, store.EventStepStarted, step("c", 1, 1)), mk(5, store.EventStepStarted, step("b", 1, 1))),
			ev:   mk(6, store.EventStepCompleted, step("a", 1, 1)),
			want: func(s *store.RunSnapshot) {
				if got := []string{s.Steps[0].StepID, s.Steps[1].StepID, s.Steps[2].StepID}; !cmp.Equal(got, []string{"a", "c", "b"}) {
					panic("setup: step order " + s.Steps[0].StepID + s.Steps[1].StepID + s.Steps[2].StepID)
				}
				a := &s.Steps[0]
				a.Status, a.CompletedAt, a.DurationMs = store.StepSuccess, at(60), i64(30000)
			},
			res: applied,
		},
		{
			name: "failedSteps counts StepFailed events across steps",
			prev: withStep(
				mk(4, store.EventStepStarted, step("b", 1, 1)),
				mk(5, store.EventStepFailed, step("b", 1, 1)),
			),
			ev: mk(6, store.EventStepFailed, step("a", 1, 1)),
			want: func(s *store.RunSnapshot) {
				a := &s.Steps[0]
				a.Status, a.Error, a.CompletedAt, a.DurationMs = store.StepFailed, &store.ErrorInfo{}, at(60), i64(30000)
				s.FailedSteps = 2
			},
			res: applied,
		},

		// Retries and late events.
		{
			name: "retry moves the failed attempt to history",
			prev: withStep(mk(4, store.EventStepFailed, step("a", 1, 2), pl(failPayload))),
			ev:   mk(5, store.EventStepStarted, step("a", 2, 3)),
			want: func(s *store.RunSnapshot) {
				a := &s.Steps[0]
				a.Attempts = []store.StepAttempt{a.StepAttempt}
				a.StepAttempt = attempt(2, 3, store.StepRunning)
				a.StartedAt = at(50)
				// failedSteps stays 1: a retry never decrements it.
			},
			res: applied,
		},
		{
			name: "retried attempt succeeds and history stays",
			prev: withRetry(),
			ev:   mk(6, store.EventStepCompleted, step("a", 2, 3), pl(`{"durationMs":900}`)),
			want: func(s *store.RunSnapshot) {
				a := &s.Steps[0]
				if len(a.Attempts) != 1 || a.Attempts[0].Status != store.StepFailed {
					panic("setup: no failed attempt in history")
				}
				a.Status, a.CompletedAt, a.DurationMs = store.StepSuccess, at(60), i64(900)
			},
			res: applied,
		},
		{
			name: "retry of a still running attempt keeps it in history",
			prev: withStep(),
			ev:   mk(4, store.EventStepStarted, step("a", 2, 1)),
			want: func(s *store.RunSnapshot) {
				a := &s.Steps[0]
				a.Attempts = []store.StepAttempt{a.StepAttempt}
				a.StepAttempt = attempt(2, 1, store.StepRunning)
				a.StartedAt = at(40)
			},
			res: applied,
		},
		{
			name: "retry can skip logical attempts",
			prev: withStep(mk(4, store.EventStepFailed, step("a", 1, 1))),
			ev:   mk(5, store.EventStepSkipped, step("a", 3, 1)),
			want: func(s *store.RunSnapshot) {
				a := &s.Steps[0]
				a.Attempts = []store.StepAttempt{a.StepAttempt}
				a.StepAttempt = attempt(3, 1, store.StepSkipped)
				a.CompletedAt, a.Skip = at(50), &store.SkipInfo{}
			},
			res: applied,
		},
		{
			name: "a new step may start at a later logical attempt",
			prev: running(),
			ev:   mk(3, store.EventStepStarted, step("a", 2, 5)),
			want: func(s *store.RunSnapshot) {
				a := store.StepSnapshot{StepID: "a", StepAttempt: attempt(2, 5, store.StepRunning), Attempts: []store.StepAttempt{}}
				a.StartedAt = at(30)
				s.Steps = []store.StepSnapshot{a}
			},
			res: applied,
		},
		{
			name: "late event for an earlier attempt updates history only",
			prev: withStep(mk(4, store.EventStepStarted, step("a", 2, 1))),
			ev:   mk(5, store.EventStepFailed, step("a", 1, 7), pl(failPayload)),
			want: func(s *store.RunSnapshot) {
				h := &s.Steps[0].Attempts[0]
				h.Status, h.Error, h.EngineAttemptID = store.StepFailed, timeoutErr, 7
				h.CompletedAt, h.DurationMs = at(50), i64(20000)
				s.FailedSteps = 1 // a late StepFailed is applied, so it counts
			},
			res: violation(`StepFailed for step "a" attempt 1 after attempt 2 started`),
		},
		{
			name: "late event for a missing earlier attempt is inserted in order",
			prev: withStep(
				mk(4, store.EventStepFailed, step("a", 1, 1)),
				mk(5, store.EventStepStarted, step("a", 3, 1)),
			),
			ev: mk(6, store.EventStepStarted, step("a", 2, 2)),
			want: func(s *store.RunSnapshot) {
				a := &s.Steps[0]
				late := attempt(2, 2, store.StepRunning)
				late.StartedAt = at(60)
				a.Attempts = append(a.Attempts, late)
			},
			res: violation(`StepStarted for step "a" attempt 2 after attempt 3 started`),
		},
		{
			name: "late event before the oldest history entry is inserted first",
			prev: withStep(
				mk(4, store.EventStepStarted, step("a", 3, 1)),
				mk(5, store.EventStepStarted, step("a", 4, 1)),
			),
			ev: mk(6, store.EventStepCompleted, step("a", 2, 1)),
			want: func(s *store.RunSnapshot) {
				a := &s.Steps[0]
				late := attempt(2, 1, store.StepSuccess)
				late.CompletedAt = at(60)
				a.Attempts = append([]store.StepAttempt{a.Attempts[0], late}, a.Attempts[1:]...)
			},
			res: violation(`StepCompleted for step "a" attempt 2 after attempt 4 started; StepCompleted for step "a" attempt 2 in status PENDING`),
		},
		{
			name: "late StepCompleted after the retry leaves failedSteps as counted",
			prev: withRetry(mk(6, store.EventStepFailed, step("a", 2, 3))),
			ev:   mk(7, store.EventStepCompleted, step("a", 1, 2)),
			want: func(s *store.RunSnapshot) {
				h := &s.Steps[0].Attempts[0]
				h.Status, h.Error, h.CompletedAt, h.DurationMs = store.StepSuccess, nil, at(70), i64(40000)
				if s.FailedSteps != 2 {
					panic("setup: failedSteps")
				}
			},
			res: violation(`StepCompleted for step "a" attempt 1 after attempt 2 started; StepCompleted for step "a" attempt 1 in status FAILED`),
		},
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prev := store.RunSnapshot{}
			if tc.prevSnap != nil {
				prev = *tc.prevSnap
			} else if tc.prev != nil {
				prev, _ = Project(store.RunSnapshot{}, tc.prev)
			}
			want := jsonClone(prev)
			if tc.res.Outcome != Duplicate {
				want.LastEventSeq, want.UpdatedAt = tc.ev.RunSeq, tc.ev.PersistedAt
			}
			if tc.want != nil {
				tc.want(&want)
			}
			// The event that ends the run stamps terminalAt with its
			// persistedAt; a frozen run keeps the first one.
			if !store.IsTerminalRunStatus(prev.Status) && store.IsTerminalRunStatus(want.Status) {
				want.TerminalAt = tc.ev.PersistedAt
			}

			got, res := Apply(prev, tc.ev)
			if diff := cmp.Diff(tc.res, res); diff != "" {
				t.Errorf("Apply result mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Apply snapshot mismatch (-want +got):\n%s", diff)
			}

			// Project over the same single event must agree with Apply.
			pgot, sum := Project(prev, []store.RunEventRecord{tc.ev})
			if diff := cmp.Diff(got, pgot); diff != "" {
				t.Errorf("Project differs from Apply (-apply +project):\n%s", diff)
			}
			if want := summaryOf(res, tc.ev); !cmp.Equal(want, sum) {
				t.Errorf("Project summary = %+v, want %+v", sum, want)
			}
		})
	}
}

func summaryOf(r Result, ev store.RunEventRecord) Summary {
	var s Summary
	s.add(&ev, r)
	return s
}

// aggregationPrev is a running run (started at(15)) with its own artifact
// x, step a whose current attempt has x and y and whose failed first
// attempt has z, and step b with w.
func aggregationPrev() *store.RunSnapshot {
	s, _ := Project(store.RunSnapshot{}, hist(
		mk(1, store.EventRunQueued),
		mk(2, store.EventRunStarted, pl(`{"startedAt":"`+at(15)+`"}`)),
		mk(3, store.EventStepStarted, step("a", 1, 1)),
		mk(4, store.EventStepFailed, step("a", 1, 1), pl(`{"artifacts":[{"uri":"s3://b/z","kind":"log"}]}`)),
		mk(5, store.EventStepStarted, step("a", 2, 1)),
		mk(6, store.EventStepCompleted, step("a", 2, 1), pl(`{"artifacts":[{"uri":"s3://b/x","kind":"dup"},{"uri":"s3://b/y","kind":"manifest","sizeBytes":5}]}`)),
		mk(7, store.EventStepStarted, step("b", 1, 1)),
		mk(8, store.EventStepCompleted, step("b", 1, 1), pl(`{"artifacts":[{"uri":"s3://b/w","kind":"log"},{"uri":"s3://b/y","kind":"again"}]}`)),
	))
	s.Artifacts = []store.ArtifactRef{{URI: "s3://b/x", Kind: "log"}}
	return &s
}

// TestApply_DoesNotMutatePrev applies every kind of event to one snapshot
// and checks, against a JSON copy taken before, that prev never changed.
func TestApply_DoesNotMutatePrev(t *testing.T) {
	prev := *aggregationPrev()
	prev.Steps[0].Error = &store.ErrorInfo{Code: "X"}
	prev.Steps[1].Skip = &store.SkipInfo{Reason: "r"}
	prev.TotalDurationMs = i64(1)
	prev.Error = &store.ErrorInfo{Code: "Y"}
	// Spare capacity: an append that forgot to copy would write into it.
	prev.Steps = append(make([]store.StepSnapshot, 0, 10), prev.Steps...)
	prev.Steps[0].Attempts = append(make([]store.StepAttempt, 0, 10), prev.Steps[0].Attempts...)
	before := jsonClone(prev)

	const art = `"artifacts":[{"uri":"s3://n","kind":"k","sizeBytes":1}]`
	events := []store.RunEventRecord{
		mk(9, store.EventRunQueued), mk(9, store.EventRunApproved), mk(9, store.EventRunStarted, pl(`{"engineRunRef":"x"}`)),
		mk(9, store.EventRunPaused, pl(`{"substatus":"D"}`)), mk(9, store.EventRunResumed),
		mk(9, store.EventRunCompleted, pl(`{`+art+`}`)), mk(9, store.EventRunFailed, pl(failPayload)), mk(9, store.EventRunCancelled),
		mk(9, "Whatever"),
	}
	for _, id := range []string{"a", "b", "new"} {
		for _, logical := range []int64{1, 2, 3} {
			for _, typ := range store.StepEventTypes {
				events = append(events, mk(9, typ, step(id, logical, 9), pl(`{"durationMs":5,`+art+`}`)))
			}
		}
	}

	results := make([]store.RunSnapshot, len(events))
	for i, ev := range events {
		results[i], _ = Apply(prev, ev)
		if diff := cmp.Diff(before, prev); diff != "" {
			t.Fatalf("Apply(%s %q attempt %d) changed prev (-before +after):\n%s", ev.EventType, ev.StepID, ev.LogicalAttemptID, diff)
		}
	}
	// Results from the same prev must not share anything writable either:
	// each must still equal a fresh Apply.
	for i, ev := range events {
		want, _ := Apply(jsonClone(before), ev)
		if diff := cmp.Diff(want, results[i]); diff != "" {
			t.Errorf("result of Apply(%s %q) was changed by a later Apply (-want +got):\n%s", ev.EventType, ev.StepID, diff)
		}
	}

	// Project too leaves its input alone.
	if _, _ = Project(prev, events); !cmp.Equal(before, prev) {
		t.Errorf("Project changed prev:\n%s", cmp.Diff(before, prev))
	}
}

// TestApply_NilSlicesBecomeEmpty checks that a snapshot decoded with null
// lists is repaired on the first applied event without touching prev.
func TestApply_NilSlicesBecomeEmpty(t *testing.T) {
	prev := store.RunSnapshot{RunID: "run-1", Status: store.RunRunning, LastEventSeq: 1,
		Steps: []store.StepSnapshot{{StepID: "a", StepAttempt: store.StepAttempt{LogicalAttemptID: 1, Status: store.StepRunning},
			Attempts: []store.StepAttempt{{LogicalAttemptID: 0, Status: store.StepFailed}}}}}
	before := jsonClone(prev)
	got, _ := Apply(prev, mk(2, "Whatever"))
	if !cmp.Equal(before, prev) {
		t.Errorf("Apply changed prev:\n%s", cmp.Diff(before, prev))
	}
	if got.Artifacts == nil || got.Steps[0].Artifacts == nil || got.Steps[0].Attempts[0].Artifacts == nil {
		t.Errorf("Apply left a nil slice: %+v", got)
	}
	if got, _ := Apply(store.RunSnapshot{}, mk(1, store.EventRunQueued)); got.Steps == nil || got.Artifacts == nil {
		t.Errorf("Apply on an empty snapshot left nil slices: %+v", got)
	}
}

// scribble writes through every slice element and pointer reachable from
// s, so that any of them shared with another snapshot shows up there.
func scribble(s *store.RunSnapshot) {
	arts := func(refs []store.ArtifactRef) {
		for i := range refs {
			refs[i].URI = "scribbled"
			if refs[i].SizeBytes != nil {
				*refs[i].SizeBytes = -1
			}
		}
	}
	att := func(a *store.StepAttempt) {
		a.Status = "scribbled"
		arts(a.Artifacts)
		if a.DurationMs != nil {
			*a.DurationMs = -1
		}
		if a.Error != nil {
			a.Error.Code = "scribbled"
		}
		if a.Skip != nil {
			a.Skip.Reason = "scribbled"
		}
	}
	for i := range s.Steps {
		s.Steps[i].StepID = "scribbled"
		att(&s.Steps[i].StepAttempt)
		for j := range s.Steps[i].Attempts {
			att(&s.Steps[i].Attempts[j])
		}
	}
	arts(s.Artifacts)
	if s.Error != nil {
		s.Error.Code = "scribbled"
	}
	if s.TotalDurationMs != nil {
		*s.TotalDurationMs = -1
	}
}

// TestProject_SharesNothingWithPrev checks that Project's copy is deep:
// the caller owns the result and may change it freely.
func TestProject_SharesNothingWithPrev(t *testing.T) {
	prev := *aggregationPrev()
	prev.Steps[0].Error = &store.ErrorInfo{Code: "X"}
	prev.Steps[1].Skip = &store.SkipInfo{Reason: "r"}
	prev.Steps[0].Attempts[0].DurationMs = i64(3)
	prev.TotalDurationMs = i64(1)
	prev.Error = &store.ErrorInfo{Code: "Y"}
	before := jsonClone(prev)

	got, _ := Project(prev, hist(mk(9, "Whatever")))
	scribble(&got)
	if diff := cmp.Diff(before, prev); diff != "" {
		t.Errorf("changing Project's result changed prev (-before +after):\n%s", diff)
	}
}

// TestFailedSteps_CountsStepFailedEvents checks that failedSteps is the
// contract's counter (ExecutionSemantics v1 section 1.5 rule 3): a step
// that failed and then
// succeeded on retry still counts one failure, whether the events come in
// one Project, one Projection Add at a time, or one Apply each, and a
// duplicate of the StepFailed never counts twice.
func TestFailedSteps_CountsStepFailedEvents(t *testing.T) {
	events := withRetry(
		mk(6, store.EventStepCompleted, step("a", 2, 3), pl(`{"durationMs":900}`)),
		mk(7, store.EventRunCompleted),
	)
	// A redelivery of the StepFailed (runSeq 4) after everything else.
	withDup := append(slices.Clone(events), events[3])
	if events[3].EventType != store.EventStepFailed {
		t.Fatalf("setup: event 4 is %s", events[3].EventType)
	}

	check := func(name string, s store.RunSnapshot) {
		t.Helper()
		if s.FailedSteps != 1 || s.Status != store.RunCompleted || s.Steps[0].Status != store.StepSuccess {
			t.Errorf("%s: failedSteps %d, status %s, step %s; want 1, COMPLETED, SUCCESS",
				name, s.FailedSteps, s.Status, s.Steps[0].Status)
		}
	}

	s, sum := Project(store.RunSnapshot{}, withDup)
	check("Project", s)
	if sum.Duplicate != 1 {
		t.Errorf("Project: %d duplicates, want 1", sum.Duplicate)
	}

	for _, opts := range []Options{{}, {ArtifactCounts: true}} {
		p := NewProjection(store.RunSnapshot{}, opts)
		for i := range withDup {
			p.Add(&withDup[i])
			if i == 3 && p.Snapshot().FailedSteps != 1 {
				t.Errorf("Projection%+v after the StepFailed: failedSteps %d, want 1", opts, p.Snapshot().FailedSteps)
			}
		}
		check(fmt.Sprintf("Projection%+v", opts), p.Snapshot())
	}

	// Projection from a snapshot committed midway, as the ETL folds.
	mid, _ := Project(store.RunSnapshot{}, events[:5])
	p := NewProjection(mid, Options{})
	for i := range withDup[5:] {
		p.Add(&withDup[5+i])
	}
	check("Projection from a midway snapshot", p.Snapshot())

	a := store.RunSnapshot{}
	for _, ev := range withDup {
		a, _ = Apply(a, ev)
	}
	check("Apply", a)
}
