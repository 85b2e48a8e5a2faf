package reduce

import (
	"github.com/runstream/runstream/store"
)

// Outcome says what Apply did with an event.
type Outcome string

// Outcomes of [Apply]. They match the result label of the projector's
// runstream_projector_events_applied_total metric (the projector adds
// "gap", which the reducer never detects).
const (
	// Applied: the event was a known type past the watermark. It may still
	// have been a causal violation or have hit a frozen (terminal) run.
	Applied Outcome = "applied"
	// Duplicate: ev.RunSeq <= prev.LastEventSeq. Nothing changed; the
	// snapshot is returned as given.
	Duplicate Outcome = "duplicate"
	// UnknownType: the event type is not one of the twelve the contracts
	// define. Only the watermark, UpdatedAt and empty identity fields
	// changed.
	UnknownType Outcome = "unknown_type"
)

// Result describes one [Apply].
type Result struct {
	Outcome Outcome
	// CausalViolation is true when the event asked for a transition the
	// state machines forbid. The event was still applied (the store
	// records, it does not judge); the caller counts
	// PROJECTOR_CAUSAL_VIOLATION.
	CausalViolation bool
	// Reason is a short text for logs when CausalViolation is true, for
	// example `StepCompleted for step "a" attempt 1 in status PENDING`.
	// Several reasons are joined with "; ".
	Reason string
	// Frozen is true when the run was already terminal: only LastEventSeq
	// and UpdatedAt advanced.
	Frozen bool
}

func (r *Result) violate(reason string) {
	r.CausalViolation = true
	if r.Reason == "" {
		r.Reason = reason
		return
	}
	r.Reason += "; " + reason
}

// Violation is one causal violation seen by [Project], for logs.
type Violation struct {
	RunSeq    int64
	EventType string
	Reason    string
}

// Summary counts what [Project] did, one count per [Outcome].
type Summary struct {
	Applied     int
	Duplicate   int
	UnknownType int
	// Frozen counts events (known or not) that reached a terminal run.
	Frozen int
	// CausalViolations counts events whose Result.CausalViolation was true;
	// Violations holds them in apply order.
	CausalViolations int
	Violations       []Violation
}

func (s *Summary) add(ev *store.RunEventRecord, r Result) {
	switch r.Outcome {
	case Applied:
		s.Applied++
	case Duplicate:
		s.Duplicate++
	case UnknownType:
		s.UnknownType++
	}
	if r.Frozen {
		s.Frozen++
	}
	if r.CausalViolation {
		s.CausalViolations++
		s.Violations = append(s.Violations, Violation{RunSeq: ev.RunSeq, EventType: ev.EventType, Reason: r.Reason})
	}
}

// Apply reduces one event into prev and returns the new snapshot.
//
// Apply is pure: it never modifies prev or anything reachable from it. The
// returned snapshot may share unchanged steps with prev, so callers must
// treat both as immutable, or deep-copy before mutating (ExecutionSemantics
// v1 section 1.4: snapshots are immutable). It never fails and never
// panics, whatever the event holds.
func Apply(prev store.RunSnapshot, ev store.RunEventRecord) (store.RunSnapshot, Result) {
	if ev.RunSeq <= prev.LastEventSeq {
		return prev, Result{Outcome: Duplicate}
	}
	r := reducer{s: prev}
	if !normalized(&r.s) {
		r.s = cloneSnapshot(r.s)
		r.private = true
	}
	res := r.apply(&ev)
	return r.s, res
}

// Project applies events to prev in slice order, as repeated calls to
// [Apply] would, and returns the final snapshot and what happened. The
// caller sorts events by RunSeq; an event at or below the watermark
// reached so far is a duplicate. prev is not modified: Project copies it
// once, on the first event it applies, and then updates its private copy
// in place.
func Project(prev store.RunSnapshot, events []store.RunEventRecord) (store.RunSnapshot, Summary) {
	p := projection{r: reducer{s: prev}}
	for i := range events {
		p.add(&events[i])
	}
	return p.r.s, p.sum
}

// A Projection is [Project] one event at a time, for a caller that gets
// a run's events as they come rather than in one slice. Its zero value
// projects onto the empty snapshot; [NewProjection] starts from prev.
// Add applies events in the order given, which the caller sorts by RunSeq;
// Snapshot and Summary read the result so far.
type Projection struct {
	p projection
}

// Options change what a [Projection] keeps.
type Options struct {
	// ArtifactCounts keeps only how many artifacts each step attempt has:
	// an attempt's Artifacts holds as many zero ArtifactRefs as it would
	// hold references, and the run's Artifacts (their union, made on
	// RunCompleted) stay as they were. For a reader that needs only the
	// counts, such as the ETL: reading every reference's fields is a good
	// part of the reducer's work there. No other field depends on them.
	ArtifactCounts bool
}

// NewProjection returns a Projection starting from prev, which it never
// modifies (it copies it on the first event it applies, as Project does).
func NewProjection(prev store.RunSnapshot, opts Options) Projection {
	return Projection{p: projection{r: reducer{s: prev, opts: opts}}}
}

// Add applies ev. The pointer need be valid only during the call.
func (p *Projection) Add(ev *store.RunEventRecord) { p.p.add(ev) }

// Snapshot returns the snapshot after the events added so far. Later Adds
// never modify it: the next one that changes anything copies it first.
func (p *Projection) Snapshot() store.RunSnapshot {
	p.p.r.private, p.p.r.stepsOwned = false, false
	return p.p.r.s
}

// Summary counts what the Adds so far did.
func (p *Projection) Summary() Summary { return p.p.sum }

// projection is one Project call in progress.
type projection struct {
	r   reducer
	sum Summary
}

func (p *projection) add(ev *store.RunEventRecord) {
	if ev.RunSeq <= p.r.s.LastEventSeq {
		p.sum.add(ev, Result{Outcome: Duplicate})
		return
	}
	if !p.r.private {
		p.r.s = cloneSnapshot(p.r.s)
		p.r.private = true
	}
	p.sum.add(ev, p.r.apply(ev))
}

// reducer holds the snapshot being built. When private is false, s is a
// shallow copy of the caller's snapshot and every slice and pointer in it
// is shared, so a change must first copy what it touches (ownSteps,
// mutableStep) or replace a value instead of writing through it. When
// private is true everything reachable from s belongs to the reducer.
//
// A non-private reducer applies exactly one event.
type reducer struct {
	s          store.RunSnapshot
	private    bool
	stepsOwned bool
	opts       Options
}

func (r *reducer) apply(ev *store.RunEventRecord) Result {
	s := &r.s
	s.LastEventSeq = ev.RunSeq
	s.UpdatedAt = ev.PersistedAt

	known := store.IsKnownEvent(ev.EventType)
	res := Result{Outcome: Applied}
	if !known {
		res.Outcome = UnknownType
	}
	if store.IsTerminalRunStatus(s.Status) {
		res.Frozen = true
		if known {
			res.violate(ev.EventType + " after the run ended in status " + s.Status)
		}
		return res
	}

	setIfEmpty(&s.RunID, ev.RunID)
	setIfEmpty(&s.TenantID, ev.TenantID)
	setIfEmpty(&s.ProjectID, ev.ProjectID)
	setIfEmpty(&s.EnvironmentID, ev.EnvironmentID)
	setIfEmpty(&s.PlanID, ev.PlanID)
	setIfEmpty(&s.PlanVersion, ev.PlanVersion)
	setIfEmpty(&s.Status, store.RunPending)

	switch {
	case !known:
	case store.IsStepEvent(ev.EventType):
		r.applyStep(ev, &res)
	default:
		r.applyRun(ev, &res)
	}
	if store.IsTerminalRunStatus(s.Status) {
		s.TerminalAt = ev.PersistedAt
	}
	return res
}

func setIfEmpty(field *string, v string) {
	if *field == "" {
		*field = v
	}
}

// ownSteps gives the reducer its own Steps slice, so that writing an
// element or appending cannot reach the caller's backing array. Appending
// to a shared slice with spare capacity would otherwise let two Applies on
// the same prev write the same hidden slot.
func (r *reducer) ownSteps() {
	if r.private || r.stepsOwned {
		return
	}
	steps := make([]store.StepSnapshot, len(r.s.Steps), len(r.s.Steps)+1)
	copy(steps, r.s.Steps)
	r.s.Steps = steps
	r.stepsOwned = true
}

// mutableStep returns step i, deep-copied first unless the reducer owns
// it.
func (r *reducer) mutableStep(i int) *store.StepSnapshot {
	if !r.private {
		r.ownSteps()
		r.s.Steps[i] = cloneStep(r.s.Steps[i])
	}
	return &r.s.Steps[i]
}
