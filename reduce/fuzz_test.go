package reduce

import (
	"encoding/json"
	"testing"

	"github.com/runstream/runstream/store"
)

// fuzzBases are the snapshots FuzzApply starts from, picked by its base
// argument: empty, mid-run with retries and history, paused, each terminal
// status, one decoded with null lists and one with a status no event sets.
func fuzzBases() []store.RunSnapshot {
	proj := func(evs []store.RunEventRecord) store.RunSnapshot {
		s, _ := Project(store.RunSnapshot{}, evs)
		return s
	}
	return []store.RunSnapshot{
		{},
		proj(withRetry(mk(6, store.EventStepSkipped, step("b", 1, 1)))),
		proj(paused()),
		proj(append(withRetry(), mk(6, store.EventRunCompleted))),
		proj(append(running(), mk(3, store.EventRunFailed, pl(failPayload)))),
		proj(append(running(), mk(3, store.EventRunCancelled))),
		{RunID: "run-1", Status: store.RunRunning, LastEventSeq: 3,
			Steps: []store.StepSnapshot{{StepID: "a", StepAttempt: store.StepAttempt{LogicalAttemptID: 2, Status: store.StepRunning}}}},
		{RunID: "run-1", Status: "WEIRD", LastEventSeq: 1, Steps: []store.StepSnapshot{}, Artifacts: []store.ArtifactRef{}},
	}
}

// FuzzApply checks the reducer's invariants on arbitrary events: it never
// panics, never modifies its input, never lowers the watermark, never
// changes a terminal run, is idempotent per runSeq and agrees with Project.
func FuzzApply(f *testing.F) {
	f.Add(store.EventStepCompleted, "a", int64(2), int64(3), int64(9), []byte(`{"durationMs":12,"artifacts":[{"uri":"s3://x","kind":"k","sizeBytes":3}]}`), uint8(1))
	f.Add(store.EventRunCompleted, "", int64(1), int64(1), int64(7), []byte(`{"artifacts":[{"uri":"s3://y"}],"sourceOccurredAt":"2026-02-16T10:00:00Z"}`), uint8(2))
	f.Add(store.EventRunFailed, "", int64(1), int64(1), int64(1), []byte(`{"errorCode":1,"retryable":"no"}`), uint8(0))
	f.Add(store.EventStepFailed, "a", int64(1), int64(1), int64(10), []byte(`{"errorCode":"E"}`), uint8(1))
	f.Add(store.EventStepStarted, "z", int64(-3), int64(0), int64(4), []byte(`[`), uint8(6))
	f.Add(store.EventRunStarted, "", int64(1), int64(1), int64(5), []byte(`{"engineRunRef":"r"}`), uint8(3))
	f.Add("SignalAccepted", "a", int64(1), int64(1), int64(-1), []byte(nil), uint8(7))
	f.Add(store.EventStepSkipped, "b", int64(9223372036854775807), int64(1), int64(9223372036854775807), []byte(`{"durationMs":1e400}`), uint8(5))

	bases := fuzzBases()
	f.Fuzz(func(t *testing.T, eventType, stepID string, logical, engine, seq int64, payload []byte, base uint8) {
		prev := bases[int(base)%len(bases)]
		before := jsonClone(prev)
		ev := mk(seq, eventType, step(stepID, logical, engine), func(ev *store.RunEventRecord) { ev.Payload = payload })

		got, res := Apply(prev, ev)
		checkStep(t, prev, ev, got, res)
		if quickDiff(before, prev) != "" {
			t.Fatalf("Apply changed prev:\n%s", quickDiff(before, prev))
		}
		if again, res2 := Apply(got, ev); res2.Outcome != Duplicate || quickDiff(got, again) != "" {
			t.Fatalf("applying seq %d twice: outcome %s, diff:\n%s", seq, res2.Outcome, quickDiff(got, again))
		}
		if p, _ := Project(prev, []store.RunEventRecord{ev}); quickDiff(got, p) != "" {
			t.Fatalf("Project differs from Apply:\n%s", quickDiff(got, p))
		}
		if _, err := json.Marshal(got); err != nil {
			t.Fatalf("marshalling the snapshot: %v", err)
		}

		// The same event once more just past the watermark, so a state
		// the first one reached (terminal, say) is exercised too.
		if got.LastEventSeq < 1<<62 {
			ev.RunSeq = got.LastEventSeq + 1
			next, res := Apply(got, ev)
			checkStep(t, got, ev, next, res)
		}
	})
}

func checkStep(t *testing.T, prev store.RunSnapshot, ev store.RunEventRecord, got store.RunSnapshot, res Result) {
	t.Helper()
	if got.LastEventSeq < prev.LastEventSeq {
		t.Fatalf("watermark went from %d to %d", prev.LastEventSeq, got.LastEventSeq)
	}
	if dup := ev.RunSeq <= prev.LastEventSeq; dup != (res.Outcome == Duplicate) {
		t.Fatalf("seq %d on watermark %d: outcome %s", ev.RunSeq, prev.LastEventSeq, res.Outcome)
	}
	if res.Outcome == Duplicate {
		if quickDiff(prev, got) != "" {
			t.Fatalf("duplicate changed the snapshot:\n%s", quickDiff(prev, got))
		}
		return
	}
	if got.LastEventSeq != ev.RunSeq || got.UpdatedAt != ev.PersistedAt {
		t.Fatalf("watermark %d updatedAt %q, want %d %q", got.LastEventSeq, got.UpdatedAt, ev.RunSeq, ev.PersistedAt)
	}
	if store.IsTerminalRunStatus(prev.Status) {
		if !res.Frozen {
			t.Fatalf("event on a %s run: Frozen is false", prev.Status)
		}
		if d := quickDiff(frozenPart(prev), frozenPart(got)); d != "" {
			t.Fatalf("event changed a %s run:\n%s", prev.Status, d)
		}
	}
	if !normalized(&got) {
		t.Fatalf("applied snapshot has a nil list: %+v", got)
	}
	if got.Stale != prev.Stale {
		t.Fatalf("stale changed from %v to %v", prev.Stale, got.Stale)
	}
}
