package snapshots

import (
	"strconv"

	"github.com/runstream/runstream/internal/jsonx"
	"github.com/runstream/runstream/store"
)

// Append appends the JSON encoding of s to b, byte for byte what
// json.Marshal(s) produces (same field order, omitempty rules, escaping),
// without reflection: encoding the snapshot of every run of every batch
// was a large part of the projector's CPU. Strings that are plain ASCII
// without characters encoding/json escapes are copied as they are; any
// other string is encoded by encoding/json itself. TestAppendSnapshot
// compares both on every field of the snapshot types, so a field added to
// them and not here fails it.
func Append(b []byte, s *store.RunSnapshot) []byte {
	b = append(b, `{"runId":`...)
	b = appendString(b, s.RunID)
	b = append(b, `,"tenantId":`...)
	b = appendString(b, s.TenantID)
	b = append(b, `,"projectId":`...)
	b = appendString(b, s.ProjectID)
	b = append(b, `,"environmentId":`...)
	b = appendString(b, s.EnvironmentID)
	b = append(b, `,"planId":`...)
	b = appendString(b, s.PlanID)
	b = append(b, `,"planVersion":`...)
	b = appendString(b, s.PlanVersion)
	b = append(b, `,"status":`...)
	b = appendString(b, s.Status)
	if s.Substatus != "" {
		b = append(b, `,"substatus":`...)
		b = appendString(b, s.Substatus)
	}
	b = append(b, `,"lastEventSeq":`...)
	b = strconv.AppendInt(b, s.LastEventSeq, 10)
	b = append(b, `,"steps":`...)
	if s.Steps == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range s.Steps {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendStep(b, &s.Steps[i])
		}
		b = append(b, ']')
	}
	b = append(b, `,"artifacts":`...)
	b = appendArtifacts(b, s.Artifacts)
	if s.EngineRunRef != "" {
		b = append(b, `,"engineRunRef":`...)
		b = appendString(b, s.EngineRunRef)
	}
	if s.StartedAt != "" {
		b = append(b, `,"startedAt":`...)
		b = appendString(b, s.StartedAt)
	}
	if s.CompletedAt != "" {
		b = append(b, `,"completedAt":`...)
		b = appendString(b, s.CompletedAt)
	}
	if s.TotalDurationMs != nil {
		b = append(b, `,"totalDurationMs":`...)
		b = strconv.AppendInt(b, *s.TotalDurationMs, 10)
	}
	if s.TerminalAt != "" {
		b = append(b, `,"terminalAt":`...)
		b = appendString(b, s.TerminalAt)
	}
	b = append(b, `,"failedSteps":`...)
	b = strconv.AppendInt(b, int64(s.FailedSteps), 10)
	if s.Error != nil {
		b = append(b, `,"error":`...)
		b = appendError(b, s.Error)
	}
	b = append(b, `,"stale":`...)
	b = strconv.AppendBool(b, s.Stale)
	b = append(b, `,"updatedAt":`...)
	b = appendString(b, s.UpdatedAt)
	return append(b, '}')
}

// appendStep encodes a step: its id, the embedded current attempt's
// fields, then the earlier attempts.
func appendStep(b []byte, st *store.StepSnapshot) []byte {
	b = append(b, `{"stepId":`...)
	b = appendString(b, st.StepID)
	b = append(b, ',')
	b = appendAttemptFields(b, &st.StepAttempt)
	b = append(b, `,"attempts":`...)
	if st.Attempts == nil {
		return append(b, "null}"...)
	}
	b = append(b, '[')
	for i := range st.Attempts {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		b = appendAttemptFields(b, &st.Attempts[i])
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

func appendAttemptFields(b []byte, a *store.StepAttempt) []byte {
	b = append(b, `"logicalAttemptId":`...)
	b = strconv.AppendInt(b, a.LogicalAttemptID, 10)
	if a.EngineAttemptID != 0 {
		b = append(b, `,"engineAttemptId":`...)
		b = strconv.AppendInt(b, a.EngineAttemptID, 10)
	}
	b = append(b, `,"status":`...)
	b = appendString(b, a.Status)
	if a.StartedAt != "" {
		b = append(b, `,"startedAt":`...)
		b = appendString(b, a.StartedAt)
	}
	if a.CompletedAt != "" {
		b = append(b, `,"completedAt":`...)
		b = appendString(b, a.CompletedAt)
	}
	if a.DurationMs != nil {
		b = append(b, `,"durationMs":`...)
		b = strconv.AppendInt(b, *a.DurationMs, 10)
	}
	b = append(b, `,"artifacts":`...)
	b = appendArtifacts(b, a.Artifacts)
	if a.Error != nil {
		b = append(b, `,"error":`...)
		b = appendError(b, a.Error)
	}
	if a.Skip != nil {
		b = append(b, `,"skip":{`...)
		sep := false
		if a.Skip.Reason != "" {
			b = append(b, `"reason":`...)
			b = appendString(b, a.Skip.Reason)
			sep = true
		}
		if a.Skip.ReasonCode != "" {
			if sep {
				b = append(b, ',')
			}
			b = append(b, `"reasonCode":`...)
			b = appendString(b, a.Skip.ReasonCode)
		}
		b = append(b, '}')
	}
	return b
}

func appendArtifacts(b []byte, refs []store.ArtifactRef) []byte {
	if refs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range refs {
		r := &refs[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"uri":`...)
		b = appendString(b, r.URI)
		b = append(b, `,"kind":`...)
		b = appendString(b, r.Kind)
		if r.SHA256 != "" {
			b = append(b, `,"sha256":`...)
			b = appendString(b, r.SHA256)
		}
		if r.SizeBytes != nil {
			b = append(b, `,"sizeBytes":`...)
			b = strconv.AppendInt(b, *r.SizeBytes, 10)
		}
		if r.ExpiresAt != "" {
			b = append(b, `,"expiresAt":`...)
			b = appendString(b, r.ExpiresAt)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

func appendError(b []byte, e *store.ErrorInfo) []byte {
	b = append(b, `{"code":`...)
	b = appendString(b, e.Code)
	b = append(b, `,"message":`...)
	b = appendString(b, e.Message)
	b = append(b, `,"retryable":`...)
	b = strconv.AppendBool(b, e.Retryable)
	if e.Category != "" {
		b = append(b, `,"category":`...)
		b = appendString(b, e.Category)
	}
	if e.Source != "" {
		b = append(b, `,"source":`...)
		b = appendString(b, e.Source)
	}
	return append(b, '}')
}

// appendString appends s as json.Marshal(s) writes it.
func appendString(b []byte, s string) []byte { return jsonx.AppendString(b, s) }
