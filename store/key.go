package store

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// IdempotencyKeyFormula is the v2 formula, quoted in error messages so a
// producer can fix its key.
const IdempotencyKeyFormula = `lowercase hex SHA256(runId + "|" + stepIdNormalized + "|" + logicalAttemptId + "|" + eventType + "|" + planId + "|" + planVersion), stepIdNormalized = stepId for step events and "RUN" for run events, logicalAttemptId in decimal`

// IdempotencyKey computes the v2 key (docs/CONTRACT.md, "The idempotency
// key"). stepID is
// empty for run-level events, which hash the literal "RUN".
func IdempotencyKey(runID, stepID string, logicalAttemptID int64, eventType, planID, planVersion string) string {
	if stepID == "" {
		stepID = "RUN"
	}
	h := sha256.New()
	buf := make([]byte, 0, len(runID)+len(stepID)+len(eventType)+len(planID)+len(planVersion)+25)
	buf = append(buf, runID...)
	buf = append(buf, '|')
	buf = append(buf, stepID...)
	buf = append(buf, '|')
	buf = strconv.AppendInt(buf, logicalAttemptID, 10)
	buf = append(buf, '|')
	buf = append(buf, eventType...)
	buf = append(buf, '|')
	buf = append(buf, planID...)
	buf = append(buf, '|')
	buf = append(buf, planVersion...)
	h.Write(buf)
	return hex.EncodeToString(h.Sum(nil))
}

// Key computes w's expected idempotency key.
func (w *RunEventWrite) Key() string {
	return IdempotencyKey(w.RunID, w.StepID, w.LogicalAttemptID, w.EventType, w.PlanID, w.PlanVersion)
}
