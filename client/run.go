package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/google/uuid"
)

// RunOptions is what [Client.Run] takes: a run's identity, given once.
type RunOptions struct {
	// RunID is the run. Pass the id the run already has when another
	// process (another activity, a restarted worker) writes to it. Empty
	// means a new UUID v7: time-ordered, so the store files each new run at
	// the end of its run index (a random id dirties a random page of it,
	// which after each Postgres checkpoint costs a full page of WAL).
	RunID string
	// TenantID, ProjectID, EnvironmentID, PlanID and PlanVersion are the
	// run's correlation fields, on every event. Required (Append refuses
	// an event without them, naming the field).
	TenantID, ProjectID, EnvironmentID, PlanID, PlanVersion string
	// EngineRunRef is the engine's own id of the run (a Temporal workflow
	// id), sent in RunStarted's payload, where the snapshot shows it,
	// unless that payload names one. Empty means none.
	EngineRunRef string
	// EngineAttemptID is the physical attempt of the process writing (a
	// Temporal activity's attempt, a worker restart count): on every
	// event, in no key. [Step.SetEngineAttempt] overrides it for a step.
	// 0 means 1 (RunEvents v1 section 5).
	EngineAttemptID int64
	// LogicalAttemptID is the logical attempt of the run-level events (a
	// run retried as a whole). 0 means 1.
	LogicalAttemptID int64
}

// Run writes one run's events: each method appends one event through
// [Client.Append] (so the budget, retries, fail-open and per-run order
// apply) with the run's correlation fields, the attempt counters, an
// eventId, emittedAt and the idempotency key filled in. Calling a method
// again with the same arguments (an engine's own retry) writes the same
// key: the API answers Idempotent and stores nothing twice. A Run is safe
// for concurrent use; events are stored in the order their appends
// return, as with Append.
type Run struct {
	c            *Client
	base         Event // the correlation fields and the run's attempts
	engineRunRef string

	mu    sync.Mutex
	steps map[string]*Step
}

// Run returns the handle of a run. No request is made until one of its
// methods is called.
func (c *Client) Run(o RunOptions) *Run {
	if o.RunID == "" {
		o.RunID = NewRunID()
	}
	return &Run{c: c, engineRunRef: o.EngineRunRef, steps: map[string]*Step{}, base: Event{
		RunID: o.RunID, TenantID: o.TenantID, ProjectID: o.ProjectID, EnvironmentID: o.EnvironmentID,
		PlanID: o.PlanID, PlanVersion: o.PlanVersion,
		EngineAttemptID: orOne(o.EngineAttemptID), LogicalAttemptID: orOne(o.LogicalAttemptID),
	}}
}

// NewRunID returns a new run id as [Client.Run] makes one: a UUID v7,
// time-ordered, which the store files at the end of its run index. Make
// one where a run starts and pass it to every process that writes to the
// run (RunOptions.RunID).
func NewRunID() string { return uuid.Must(uuid.NewV7()).String() }

func orOne(n int64) int64 {
	if n == 0 {
		return 1
	}
	return n
}

// ID returns the run's id (given, or made by [Client.Run]).
func (r *Run) ID() string { return r.base.RunID }

// Started appends RunStarted. RunOptions.EngineRunRef goes in the payload
// unless p names one.
func (r *Run) Started(ctx context.Context, p RunStarted) (Result, error) {
	if p.EngineRunRef == "" {
		p.EngineRunRef = r.engineRunRef
	}
	return r.emit(ctx, EventRunStarted, nil, p)
}

// Paused appends RunPaused (once a PAUSE signal was applied).
func (r *Run) Paused(ctx context.Context, p Signal) (Result, error) {
	return r.emit(ctx, EventRunPaused, nil, p)
}

// Resumed appends RunResumed (once a RESUME signal was applied).
func (r *Run) Resumed(ctx context.Context, p Signal) (Result, error) {
	return r.emit(ctx, EventRunResumed, nil, p)
}

// Completed appends RunCompleted: every step succeeded.
func (r *Run) Completed(ctx context.Context, p RunCompleted) (Result, error) {
	return r.emit(ctx, EventRunCompleted, nil, p)
}

// Failed appends RunFailed: the run ended on an error (a step out of
// retries); the snapshot shows it.
func (r *Run) Failed(ctx context.Context, p Failure) (Result, error) {
	return r.emit(ctx, EventRunFailed, nil, p)
}

// Cancelled appends RunCancelled.
func (r *Run) Cancelled(ctx context.Context) (Result, error) {
	return r.emit(ctx, EventRunCancelled, nil, nil)
}

// Step returns the handle of step id, the same one for the same id, so
// that it counts the step's logical attempts. The Run keeps every step
// handle it made for as long as it lives (a few dozen bytes each): make a
// Run per run, or per activity, not one for a process's every run.
func (r *Run) Step(id string) *Step {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.steps[id]
	if !ok {
		s = &Step{r: r, id: id, attempt: 1}
		r.steps[id] = s
	}
	return s
}

// emit appends one event of the run; step is nil for run-level events.
func (r *Run) emit(ctx context.Context, eventType string, step *stepAttempt, p payload) (Result, error) {
	w := r.base
	w.EventType = eventType
	if step != nil {
		w.StepID = step.id
		w.LogicalAttemptID = step.logical
		if step.engine != 0 {
			w.EngineAttemptID = step.engine
		}
	}
	if p != nil {
		raw, err := p.encode()
		if err != nil {
			return Result{}, fmt.Errorf("appending %s of run %q: encoding the payload: %w", eventType, w.RunID, err)
		}
		w.Payload = raw
	}
	return r.c.Append(ctx, w)
}

// Step writes one step's events. It counts the step's logical attempts:
// the first Started writes attempt 1 (or the one [Step.SetAttempt] set); a
// Started after the attempt ended (Failed, Completed or Skipped) is a retry
// and writes the next attempt. Completed, Failed and Skipped write the
// current attempt. A Step is safe for concurrent use.
type Step struct {
	r  *Run
	id string

	mu      sync.Mutex
	attempt int64
	ended   bool
	engine  int64 // 0: the run's
}

// stepAttempt is what one step event carries.
type stepAttempt struct {
	id      string
	logical int64
	engine  int64
}

// ID returns the step's id.
func (s *Step) ID() string { return s.id }

// Attempt returns the logical attempt the step's next event is written
// with (one more after a Started that follows an ended attempt).
func (s *Step) Attempt() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempt
}

// SetAttempt sets the logical attempt to write next: for a step whose
// earlier attempts another process ran (a Temporal activity retried on
// another worker), which this handle cannot count. It returns s.
func (s *Step) SetAttempt(logicalAttemptID int64) *Step {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempt, s.ended = logicalAttemptID, false
	return s
}

// SetEngineAttempt sets the step's physical attempt (a Temporal activity's
// attempt), instead of RunOptions.EngineAttemptID. It returns s.
func (s *Step) SetEngineAttempt(engineAttemptID int64) *Step {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.engine = engineAttemptID
	return s
}

// next returns the attempt of an event: start begins a new attempt when
// the last one ended, end marks the attempt ended.
func (s *Step) next(start, end bool) *stepAttempt {
	s.mu.Lock()
	defer s.mu.Unlock()
	if start && s.ended {
		s.attempt++
		s.ended = false
	}
	if end {
		s.ended = true
	}
	return &stepAttempt{id: s.id, logical: s.attempt, engine: s.engine}
}

// Started appends StepStarted, of a new logical attempt when the last one
// ended (a retry). StepStarted fails open by default (Config.FailOpen).
func (s *Step) Started(ctx context.Context) (Result, error) {
	return s.r.emit(ctx, EventStepStarted, s.next(true, false), nil)
}

// Completed appends StepCompleted: Result, DurationMs, Artifacts.
func (s *Step) Completed(ctx context.Context, p StepCompleted) (Result, error) {
	return s.r.emit(ctx, EventStepCompleted, s.next(false, true), p)
}

// Failed appends StepFailed: ErrorCode, ErrorMessage, FailureCategory and
// Retryable, whether the engine will retry (the next Started writes the
// next logical attempt either way).
func (s *Step) Failed(ctx context.Context, p Failure) (Result, error) {
	return s.r.emit(ctx, EventStepFailed, s.next(false, true), p)
}

// Skipped appends StepSkipped: Reason for a human, ReasonCode for a
// machine.
func (s *Step) Skipped(ctx context.Context, p StepSkipped) (Result, error) {
	return s.r.emit(ctx, EventStepSkipped, s.next(false, true), p)
}

// The payloads (RunEvents v1 section 4.3). Each has the fields the
// contract names for its type, SourceOccurredAt (when the thing happened
// at the source, if not when the event was emitted) and Extra: fields of
// the caller's own, which the contract allows and the API stores as sent.
// Zero fields are left out, except Failure.Retryable.

// RunStarted is RunStarted's payload (ExecutionSemantics v1 Appendix A.1).
type RunStarted struct {
	// EngineRunRef is the engine's id of the run, shown in the snapshot.
	EngineRunRef string `json:"engineRunRef,omitempty"`
	// EngineType is the engine, such as "temporal".
	EngineType string `json:"engineType,omitempty"`
	// StartedAt (RFC 3339) is the snapshot's startedAt; empty means the
	// event's time.
	StartedAt        string         `json:"startedAt,omitempty"`
	PlanRef          map[string]any `json:"planRef,omitempty"`
	Context          map[string]any `json:"context,omitempty"`
	SourceOccurredAt string         `json:"sourceOccurredAt,omitempty"`
	Extra            map[string]any `json:"-"`
}

// StepCompleted is StepCompleted's payload (success events).
type StepCompleted struct {
	// Result is the step's result, any JSON value.
	Result any `json:"result,omitempty"`
	// DurationMs is how long the attempt ran, in milliseconds; nil leaves
	// it out (the snapshot then measures it between the two events):
	// new(time.Since(start).Milliseconds()).
	DurationMs       *int64         `json:"durationMs,omitempty"`
	Artifacts        []ArtifactRef  `json:"artifacts,omitempty"`
	SourceOccurredAt string         `json:"sourceOccurredAt,omitempty"`
	Extra            map[string]any `json:"-"`
}

// Failure is the payload of StepFailed and RunFailed (error events).
type Failure struct {
	// ErrorCode is machine-readable, such as "TIMEOUT".
	ErrorCode    string `json:"errorCode,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty"`
	// Retryable says whether the failure is retryable; always sent.
	Retryable bool   `json:"retryable"`
	Stack     string `json:"stack,omitempty"`
	// FailureCategory is one of [FailureUser], [FailureSystem],
	// [FailurePlatform], [FailureTimeout], or empty.
	FailureCategory string `json:"failureCategory,omitempty"`
	// FailureSource is such as "activity", "engine", "planner", "secrets".
	FailureSource    string         `json:"failureSource,omitempty"`
	SourceOccurredAt string         `json:"sourceOccurredAt,omitempty"`
	Extra            map[string]any `json:"-"`
}

// The failure categories of RunEvents v1 section 4.3.
const (
	FailureUser     = "USER"
	FailureSystem   = "SYSTEM"
	FailurePlatform = "PLATFORM"
	FailureTimeout  = "TIMEOUT"
)

// StepSkipped is StepSkipped's payload.
type StepSkipped struct {
	Reason string `json:"reason,omitempty"`
	// ReasonCode is such as "DEPENDENCY_FAILED", "CONDITION_FALSE",
	// "OPERATOR_SKIP".
	ReasonCode       string         `json:"reasonCode,omitempty"`
	SourceOccurredAt string         `json:"sourceOccurredAt,omitempty"`
	Extra            map[string]any `json:"-"`
}

// Signal is the payload of RunPaused and RunResumed.
type Signal struct {
	// SignalID is the signal that paused or resumed the run.
	SignalID string `json:"signalId,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// Substatus is what the adapter reports while paused, such as
	// "DRAINING".
	Substatus        string         `json:"substatus,omitempty"`
	SourceOccurredAt string         `json:"sourceOccurredAt,omitempty"`
	Extra            map[string]any `json:"-"`
}

// RunCompleted is RunCompleted's payload.
type RunCompleted struct {
	// Artifacts are the run's own, besides its steps'.
	Artifacts        []ArtifactRef  `json:"artifacts,omitempty"`
	SourceOccurredAt string         `json:"sourceOccurredAt,omitempty"`
	Extra            map[string]any `json:"-"`
}

// payload is a payload struct: its JSON object, nil when empty.
type payload interface {
	encode() (json.RawMessage, error)
}

func (p RunStarted) encode() (json.RawMessage, error)    { return encodePayload(p, p.Extra) }
func (p StepCompleted) encode() (json.RawMessage, error) { return encodePayload(p, p.Extra) }
func (p Failure) encode() (json.RawMessage, error)       { return encodePayload(p, p.Extra) }
func (p StepSkipped) encode() (json.RawMessage, error)   { return encodePayload(p, p.Extra) }
func (p Signal) encode() (json.RawMessage, error)        { return encodePayload(p, p.Extra) }
func (p RunCompleted) encode() (json.RawMessage, error)  { return encodePayload(p, p.Extra) }

// encodePayload is v's JSON object with extra's members added; nil for an
// empty object. A member of extra that v names is an error: set the field.
func encodePayload(v any, extra map[string]any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if len(extra) > 0 {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, err
		}
		for k, x := range extra {
			if _, dup := m[k]; dup || fieldNamed(v, k) {
				return nil, fmt.Errorf("payload member %q of Extra is a field of the payload struct; set the field instead", k)
			}
			raw, err := json.Marshal(x)
			if err != nil {
				return nil, fmt.Errorf("encoding payload member %q of Extra: %w", k, err)
			}
			m[k] = raw
		}
		if b, err = json.Marshal(m); err != nil {
			return nil, err
		}
	}
	if bytes.Equal(b, []byte("{}")) {
		return nil, nil
	}
	return b, nil
}

// fieldNamed reports whether the payload struct v has a field whose JSON
// name is k (one left out of its JSON when empty, so not in the object).
func fieldNamed(v any, k string) bool {
	return slices.Contains(jsonNames(reflect.TypeOf(v)), k)
}

// jsonNames are the JSON member names of struct type t's fields.
func jsonNames(t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}
