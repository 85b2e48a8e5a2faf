package store

import (
	"encoding/json"
	"time"
)

// Event types the contracts define. Any other PascalCase type is accepted
// and stored (forward compatibility) but changes no projected state.
const (
	EventRunQueued     = "RunQueued"
	EventRunApproved   = "RunApproved"
	EventRunStarted    = "RunStarted"
	EventRunPaused     = "RunPaused"
	EventRunResumed    = "RunResumed"
	EventRunCompleted  = "RunCompleted"
	EventRunFailed     = "RunFailed"
	EventRunCancelled  = "RunCancelled"
	EventStepStarted   = "StepStarted"
	EventStepCompleted = "StepCompleted"
	EventStepFailed    = "StepFailed"
	EventStepSkipped   = "StepSkipped"
)

// RunEventTypes lists the run-level event types validated strictly.
var RunEventTypes = []string{
	EventRunQueued, EventRunApproved, EventRunStarted, EventRunPaused,
	EventRunResumed, EventRunCompleted, EventRunFailed, EventRunCancelled,
}

// StepEventTypes lists the step-level event types validated strictly; they
// require a stepId.
var StepEventTypes = []string{
	EventStepStarted, EventStepCompleted, EventStepFailed, EventStepSkipped,
}

// IsStepEvent reports whether eventType is one of the known step-level
// types (which carry a stepId).
func IsStepEvent(eventType string) bool {
	switch eventType {
	case EventStepStarted, EventStepCompleted, EventStepFailed, EventStepSkipped:
		return true
	}
	return false
}

// IsKnownEvent reports whether eventType is one of the twelve types the
// contracts define.
func IsKnownEvent(eventType string) bool {
	if IsStepEvent(eventType) {
		return true
	}
	switch eventType {
	case EventRunQueued, EventRunApproved, EventRunStarted, EventRunPaused,
		EventRunResumed, EventRunCompleted, EventRunFailed, EventRunCancelled:
		return true
	}
	return false
}

// RunEventWrite is what a producer appends (IRunStateStore v2 section 2):
// no runSeq and no persistedAt, which the Append Authority assigns.
type RunEventWrite struct {
	EventID          string `json:"eventId"`
	EventType        string `json:"eventType"`
	EmittedAt        string `json:"emittedAt"`
	RunID            string `json:"runId"`
	TenantID         string `json:"tenantId"`
	ProjectID        string `json:"projectId"`
	EnvironmentID    string `json:"environmentId"`
	PlanID           string `json:"planId"`
	PlanVersion      string `json:"planVersion"`
	EngineAttemptID  int64  `json:"engineAttemptId"`
	LogicalAttemptID int64  `json:"logicalAttemptId"`
	IdempotencyKey   string `json:"idempotencyKey"`
	// StepID is set on step-level events only.
	StepID string `json:"stepId,omitempty"`
	// Payload is the event-specific JSON object, kept byte-for-byte as the
	// producer sent it (after validation). Empty when absent.
	Payload json.RawMessage `json:"payload,omitempty"`
}

// RunEventRecord is a persisted event as every reader sees it: the write
// plus the Append Authority's runSeq and persistedAt.
type RunEventRecord struct {
	RunEventWrite
	// RunSeq is the per-run sequence, contiguous from 1 with this store.
	RunSeq int64 `json:"runSeq"`
	// PersistedAt is the store's clock at insert, RFC 3339 UTC with
	// microseconds (see [FormatPersistedAt]).
	PersistedAt string `json:"persistedAt"`
}

// AppendResult answers an append (IRunStateStore v2 section 2).
type AppendResult struct {
	EventID     string `json:"eventId"`
	RunSeq      int64  `json:"runSeq"`
	PersistedAt string `json:"persistedAt"`
	// Idempotent is true when (runId, idempotencyKey) already existed; the
	// other fields then describe the existing row.
	Idempotent bool `json:"idempotent"`
	// Persisted is true when this call inserted a new row.
	Persisted bool `json:"persisted"`
}

// Run statuses (ExecutionSemantics v1 section 1.4).
const (
	RunPending   = "PENDING"
	RunApproved  = "APPROVED"
	RunRunning   = "RUNNING"
	RunPaused    = "PAUSED"
	RunCompleted = "COMPLETED"
	RunFailed    = "FAILED"
	RunCancelled = "CANCELLED"
)

// IsTerminalRunStatus reports whether status can never change again.
func IsTerminalRunStatus(status string) bool {
	return status == RunCompleted || status == RunFailed || status == RunCancelled
}

// Step statuses (ExecutionSemantics v1 section 1.3.1).
const (
	StepPending = "PENDING"
	StepRunning = "RUNNING"
	StepSuccess = "SUCCESS"
	StepFailed  = "FAILED"
	StepSkipped = "SKIPPED"
)

// ArtifactRef points at an artifact stored elsewhere (ExecutionSemantics
// v1 section 2); the store never holds artifact bytes.
type ArtifactRef struct {
	URI       string `json:"uri"`
	Kind      string `json:"kind"`
	SHA256    string `json:"sha256,omitempty"`
	SizeBytes *int64 `json:"sizeBytes,omitempty"`
	ExpiresAt string `json:"expiresAt,omitempty"`
}

// ErrorInfo is an error recorded by StepFailed or RunFailed. Code, Message
// and Retryable are the contract's shape; Category and Source carry the
// payload's failureCategory and failureSource when given.
type ErrorInfo struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
	Category  string `json:"category,omitempty"`
	Source    string `json:"source,omitempty"`
}

// SkipInfo is why a step was skipped (StepSkipped payload).
type SkipInfo struct {
	Reason     string `json:"reason,omitempty"`
	ReasonCode string `json:"reasonCode,omitempty"`
}

// StepAttempt is one logical attempt of a step. A step's earlier attempts
// are kept in [StepSnapshot.Attempts]: a snapshot keeps the history of a
// step's earlier attempts, not only the current one.
type StepAttempt struct {
	LogicalAttemptID int64         `json:"logicalAttemptId"`
	EngineAttemptID  int64         `json:"engineAttemptId,omitempty"`
	Status           string        `json:"status"`
	StartedAt        string        `json:"startedAt,omitempty"`
	CompletedAt      string        `json:"completedAt,omitempty"`
	DurationMs       *int64        `json:"durationMs,omitempty"`
	Artifacts        []ArtifactRef `json:"artifacts"`
	Error            *ErrorInfo    `json:"error,omitempty"`
	Skip             *SkipInfo     `json:"skip,omitempty"`
}

// StepSnapshot is a step's projected state: its current logical attempt
// (the embedded fields) and the history of earlier attempts.
type StepSnapshot struct {
	StepID string `json:"stepId"`
	StepAttempt
	// Attempts holds earlier logical attempts, oldest first; the current
	// attempt is not repeated here.
	Attempts []StepAttempt `json:"attempts"`
}

// RunSnapshot is a run's projected state (ExecutionSemantics v1 section
// 1.4 plus the fields runstream adds, docs/INTERFACES.md, "Redis").
// Readers ignore unknown fields.
type RunSnapshot struct {
	RunID         string `json:"runId"`
	TenantID      string `json:"tenantId"`
	ProjectID     string `json:"projectId"`
	EnvironmentID string `json:"environmentId"`
	PlanID        string `json:"planId"`
	PlanVersion   string `json:"planVersion"`
	Status        string `json:"status"`
	// Substatus is reported by an adapter (for example DRAINING while
	// paused); empty when none.
	Substatus string `json:"substatus,omitempty"`
	// LastEventSeq is the watermark: the highest runSeq applied.
	LastEventSeq    int64          `json:"lastEventSeq"`
	Steps           []StepSnapshot `json:"steps"`
	Artifacts       []ArtifactRef  `json:"artifacts"`
	EngineRunRef    string         `json:"engineRunRef,omitempty"`
	StartedAt       string         `json:"startedAt,omitempty"`
	CompletedAt     string         `json:"completedAt,omitempty"`
	TotalDurationMs *int64         `json:"totalDurationMs,omitempty"`
	// TerminalAt is the persistedAt of the event that made the run
	// terminal (the store's clock, unlike CompletedAt, which is the
	// engine's); empty while the run is open. A terminal run leaves Redis
	// --snapshot-ttl after it.
	TerminalAt string `json:"terminalAt,omitempty"`
	// FailedSteps is the contract's counter (ExecutionSemantics v1 section
	// 1.5 rule 3): the number of StepFailed events applied
	// to the run. A later retry or success never decrements it; a duplicate
	// never counts twice.
	FailedSteps int `json:"failedSteps"`
	// Error is the root cause recorded by RunFailed.
	Error *ErrorInfo `json:"error,omitempty"`
	// Stale is set by a projector that saw a gap and has not yet resynced.
	Stale bool `json:"stale"`
	// UpdatedAt is the persistedAt of the last applied event.
	UpdatedAt string `json:"updatedAt"`
}

// persistedAtLayout is RFC 3339 UTC with exactly six fractional digits, as
// docs/CONTRACT.md ("Events") states.
const persistedAtLayout = "2006-01-02T15:04:05.000000Z"

// FormatPersistedAt renders an Append Authority timestamp.
func FormatPersistedAt(t time.Time) string {
	return t.UTC().Format(persistedAtLayout)
}

// AppendPersistedAt appends t as [FormatPersistedAt] formats it.
func AppendPersistedAt(b []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(b, persistedAtLayout)
}
