package reduce

import (
	"fmt"
	"slices"

	"github.com/runstream/runstream/store"
)

// stepAllowed reports whether a step event may leave an attempt in status
// from without a causal violation (ExecutionSemantics v1 section 1.3.1).
// StepStarted may repeat on a RUNNING attempt: the platform retried it
// under a new engineAttemptId within the same logical attempt.
func stepAllowed(eventType, from string) bool {
	switch eventType {
	case store.EventStepStarted:
		return from == store.StepPending || from == store.StepRunning
	case store.EventStepCompleted, store.EventStepFailed:
		return from == store.StepRunning
	case store.EventStepSkipped:
		return from == store.StepPending
	}
	return false
}

func newAttempt(logical int64) store.StepAttempt {
	return store.StepAttempt{
		LogicalAttemptID: logical,
		Status:           store.StepPending,
		Artifacts:        []store.ArtifactRef{},
	}
}

func (r *reducer) applyStep(ev *store.RunEventRecord, res *Result) {
	s := &r.s
	if ev.StepID == "" {
		// The store rejects this, so it can only come from a damaged
		// record. There is no step to apply it to.
		res.violate(ev.EventType + " without a stepId, ignored")
		return
	}
	logical := ev.LogicalAttemptID

	var st *store.StepSnapshot
	created := false
	if i := slices.IndexFunc(s.Steps, func(x store.StepSnapshot) bool { return x.StepID == ev.StepID }); i >= 0 {
		st = r.mutableStep(i)
	} else {
		r.ownSteps()
		s.Steps = append(s.Steps, store.StepSnapshot{
			StepID:      ev.StepID,
			StepAttempt: newAttempt(logical),
			Attempts:    []store.StepAttempt{},
		})
		st = &s.Steps[len(s.Steps)-1]
		created = true
	}

	var a *store.StepAttempt
	switch {
	case created || logical == st.LogicalAttemptID:
		a = &st.StepAttempt
	case logical > st.LogicalAttemptID:
		// A retry (RETRY_STEP or planner policy) opens a new logical
		// attempt; the old one moves to history unchanged (section 1.3.1
		// rule 4: failed attempts stay immutable in snapshots).
		st.Attempts = append(st.Attempts, st.StepAttempt)
		st.StepAttempt = newAttempt(logical)
		a = &st.StepAttempt
	default:
		// A late event for an attempt that a retry already replaced: it
		// belongs in history, and the current attempt must not regress.
		res.violate(fmt.Sprintf("%s for step %q attempt %d after attempt %d started",
			ev.EventType, ev.StepID, logical, st.LogicalAttemptID))
		a = historyAttempt(st, logical)
	}

	var buf [8]payloadField // the payload's fields, on the stack
	applyAttempt(a, ev, parsePayload(buf[:0], ev.Payload), r.opts.ArtifactCounts, res)

	// failedSteps is the contract's counter (ExecutionSemantics v1 section
	// 1.5 rule 3): one per StepFailed applied, never
	// decremented by a later retry or success. Duplicates never get here.
	if ev.EventType == store.EventStepFailed {
		s.FailedSteps++
	}
}

// historyAttempt returns the history entry for logical attempt n, creating
// it in logicalAttemptId order when the step never saw that attempt.
func historyAttempt(st *store.StepSnapshot, n int64) *store.StepAttempt {
	for j := range st.Attempts {
		if st.Attempts[j].LogicalAttemptID == n {
			return &st.Attempts[j]
		}
	}
	j := len(st.Attempts)
	for k := range st.Attempts {
		if st.Attempts[k].LogicalAttemptID > n {
			j = k
			break
		}
	}
	st.Attempts = slices.Insert(st.Attempts, j, newAttempt(n))
	return &st.Attempts[j]
}

func applyAttempt(a *store.StepAttempt, ev *store.RunEventRecord, p payload, countOnly bool, res *Result) {
	if !stepAllowed(ev.EventType, a.Status) {
		res.violate(fmt.Sprintf("%s for step %q attempt %d in status %s",
			ev.EventType, ev.StepID, a.LogicalAttemptID, a.Status))
	}
	a.EngineAttemptID = ev.EngineAttemptID

	switch ev.EventType {
	case store.EventStepStarted:
		a.Status = store.StepRunning
		if a.StartedAt == "" {
			a.StartedAt = occurredAt(p, ev)
		}
	case store.EventStepCompleted:
		a.Status = store.StepSuccess
		a.CompletedAt = occurredAt(p, ev)
		a.DurationMs = stepDuration(a, p)
		refs, _ := p.artifacts(countOnly)
		if refs == nil {
			refs = []store.ArtifactRef{}
		}
		a.Artifacts = refs
		a.Error = nil
	case store.EventStepFailed:
		a.Status = store.StepFailed
		a.Error = p.errorInfo()
		a.CompletedAt = occurredAt(p, ev)
		a.DurationMs = stepDuration(a, p)
		if refs, ok := p.artifacts(countOnly); ok {
			a.Artifacts = refs
		}
	case store.EventStepSkipped:
		a.Status = store.StepSkipped
		a.Skip = &store.SkipInfo{Reason: p.strOr("reason"), ReasonCode: p.strOr("reasonCode")}
		a.CompletedAt = occurredAt(p, ev)
	}
}

// stepDuration prefers the engine's own measure (payload durationMs) over
// the difference of two clocks that may be skewed.
func stepDuration(a *store.StepAttempt, p payload) *int64 {
	if n, ok := p.nonNegInt("durationMs"); ok {
		return &n
	}
	d, _ := elapsedMs(a.StartedAt, a.CompletedAt)
	return d
}
