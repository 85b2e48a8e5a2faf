// Package reduce is runstream's one reducer: the pure function that folds
// run events into a [store.RunSnapshot]. The Kafka projector and the
// Postgres store's projectSnapshot both call it, so a snapshot rebuilt from
// the store equals the one projected from the bus (ExecutionSemantics v1
// section 1.5 rule 3; docs/ARCHITECTURE.md, "The reducer").
//
// [Apply] reduces one event and never modifies its input; [Project] folds a
// slice of events the same way, copying its input once. The package does
// no I/O, logs nothing and records no metrics: [Result] and [Summary] tell
// the caller what to count and log. It never returns an error and never
// panics; a payload that is malformed, of the wrong type or missing
// fields is read for what can be read and the rest is ignored.
//
// # Watermark, duplicates and gaps
//
// An event with runSeq <= lastEventSeq is a [Duplicate]: the snapshot is
// returned unchanged. Every other event sets lastEventSeq to its runSeq and
// updatedAt to its persistedAt (never the wall clock, so replays are
// deterministic). A runSeq beyond lastEventSeq+1 is applied like any other:
// detecting gaps, marking snapshots stale and resyncing is the caller's
// job, and stale is copied through unchanged.
//
// Unless the run is frozen (below), every such event also fills empty
// identity fields (runId, tenantId, projectId, environmentId, planId,
// planVersion) from the event and turns an empty status into PENDING,
// including events of an [UnknownType], so that a stored snapshot always
// names its run and tenant and has a valid status. Apart from that, an
// unknown type changes nothing (section 1.5 rule 6). Slices are never nil,
// so steps, artifacts and attempts marshal as [].
//
// # Terminal runs are frozen
//
// Once the status is COMPLETED, FAILED or CANCELLED, a later event only
// advances lastEventSeq and updatedAt; [Result].Frozen is set, and for a
// known type so is CausalViolation (an event after the end).
//
// # Causal violations
//
// The store records events without judging transitions (it validates an
// event's shape, never the run's state), and with distributed writers an
// inversion is expected. So an impossible transition is still applied, and
// reported as [Result].CausalViolation with a Reason. The exceptions are
// RunQueued and RunApproved, which never move a run backwards.
//
// # Run events
//
//   - RunQueued: PENDING stays PENDING. From any other status it is a
//     violation and changes nothing.
//   - RunApproved: PENDING -> APPROVED. From any other status it is a
//     violation and changes nothing.
//   - RunStarted -> RUNNING (from PENDING, APPROVED, RUNNING or PAUSED).
//     engineRunRef = payload.engineRunRef when given; startedAt, only if
//     empty, = payload.startedAt ?? payload.sourceOccurredAt ?? emittedAt.
//   - RunPaused -> PAUSED (from RUNNING or PAUSED); substatus =
//     payload.substatus, or cleared when absent.
//   - RunResumed -> RUNNING (from PAUSED).
//   - RunCompleted -> COMPLETED (from RUNNING or PAUSED); artifacts = the
//     union by uri, in first-seen order, of the run's artifacts, each
//     step's current-attempt artifacts and payload.artifacts.
//   - RunFailed -> FAILED; error = payload errorCode, errorMessage,
//     retryable, failureCategory, failureSource (set even when the payload
//     is empty).
//   - RunCancelled -> CANCELLED.
//
// RunFailed and RunCancelled are allowed from PENDING, APPROVED, RUNNING
// and PAUSED. The three terminal events set completedAt =
// payload.sourceOccurredAt ?? emittedAt and totalDurationMs = completedAt -
// startedAt in milliseconds when both parse as RFC 3339 and the difference
// is not negative, and terminalAt = the event's persistedAt (the store's
// clock: what the snapshot's expiry from Redis counts from). Any status
// other than PAUSED clears substatus.
//
// # Step events
//
// A step event for stepId s and logicalAttemptId L finds step s or appends it
// (steps keep the order of first appearance; a new step starts as attempt L
// in PENDING). If L is above the step's current attempt, the current attempt
// moves to the step's attempts history (oldest first) and a fresh attempt L
// starts in PENDING: a snapshot keeps the history of a step's earlier
// attempts, not only the current one. If L is below it, the event is late: it
// is applied to history entry L (created in logicalAttemptId order if
// missing), the current attempt is left alone, and it counts as a violation.
// The target attempt then takes the event's engineAttemptId and:
//
//   - StepStarted -> RUNNING (from PENDING or RUNNING); startedAt, only if
//     empty, = payload.sourceOccurredAt ?? emittedAt.
//   - StepCompleted -> SUCCESS (from RUNNING); completedAt =
//     payload.sourceOccurredAt ?? emittedAt; durationMs = payload.durationMs
//     (a non-negative number, truncated) else completedAt - startedAt when
//     both parse and it is not negative; artifacts = payload.artifacts;
//     error cleared.
//   - StepFailed -> FAILED (from RUNNING); error as for RunFailed;
//     completedAt and durationMs as for StepCompleted; artifacts =
//     payload.artifacts when given.
//   - StepSkipped -> SKIPPED (from PENDING); skip = payload reason and
//     reasonCode; completedAt = payload.sourceOccurredAt ?? emittedAt.
//
// Payload artifacts entries without a string uri are skipped. A step event
// without a stepId is a violation and changes nothing but the watermark.
// failedSteps is the contract's counter (ExecutionSemantics v1 section
// 1.5 rule 3): the number of StepFailed events applied to the run,
// including a late one applied to history. A later retry or success never
// decrements it, and a duplicate never counts twice (it is not applied). A
// StepFailed without a stepId, or one reaching a terminal run, changes
// nothing and is not counted.
//
// A payload string field counts as given only when it is a non-empty JSON
// string.
package reduce
