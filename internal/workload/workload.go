// Package workload generates realistic run-event streams: complete runs
// with steps, failed attempts and retries, skips, pauses, artifacts and the
// occasional unknown (future) event type. `runstream dev --demo`, the
// benchmarks and the tests all drive the system with it, so what they send
// always validates and its idempotency keys are right.
package workload

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"

	"github.com/runstream/runstream/store"
)

// Identity is the correlation a run's events share.
type Identity struct {
	RunID         string
	TenantID      string
	ProjectID     string
	EnvironmentID string
	PlanID        string
	PlanVersion   string
}

// NewIdentity returns an identity for tenant with a fresh runId made as
// the producer clients make one (UUID v7, time-ordered).
func NewIdentity(tenant string) Identity {
	return Identity{RunID: uuid.Must(uuid.NewV7()).String(), TenantID: tenant, ProjectID: "proj_analytics",
		EnvironmentID: "prod", PlanID: "plan_daily_etl", PlanVersion: "3"}
}

// Event builds a valid write of eventType for id, with the right
// idempotency key. stepID is empty for run events; payload may be nil.
func Event(id Identity, eventType, stepID string, logicalAttempt, engineAttempt int64, emittedAt time.Time, payload map[string]any) store.RunEventWrite {
	w := store.RunEventWrite{
		EventID:          uuid.NewString(),
		EventType:        eventType,
		EmittedAt:        emittedAt.UTC().Format(time.RFC3339Nano),
		RunID:            id.RunID,
		TenantID:         id.TenantID,
		ProjectID:        id.ProjectID,
		EnvironmentID:    id.EnvironmentID,
		PlanID:           id.PlanID,
		PlanVersion:      id.PlanVersion,
		EngineAttemptID:  engineAttempt,
		LogicalAttemptID: logicalAttempt,
		StepID:           stepID,
	}
	if payload != nil {
		b, err := json.Marshal(payload)
		if err != nil {
			panic(err) // payloads built here are always marshalable
		}
		w.Payload = b
	}
	w.IdempotencyKey = w.Key()
	return w
}

// Options shape a generated run. Zero values take the defaults noted.
type Options struct {
	// Steps per run; 0 means 3 to 8.
	Steps int
	// StepFailureRate is the chance a step attempt fails; 0 means 0.15.
	StepFailureRate float64
	// MaxAttempts per step before the run fails; 0 means 3.
	MaxAttempts int
	// UnknownEventRate is the chance of a future event type after a step; 0 means 0.05.
	UnknownEventRate float64
	// Start is the first emittedAt; zero means now.
	Start time.Time
}

var stepNames = []string{"seed.customers", "model.orders", "model.payments", "test.orders_unique",
	"snapshot.inventory", "export.s3", "model.revenue", "notify.slack", "model.sessions", "test.not_null"}

// Run generates one complete run for tenant: RunStarted, steps run in
// order with failures retried as new logical attempts (and an engine retry
// now and then), a pause/resume now and then, skips after a failure, unknown
// event types, and a terminal event. The run fails when a step exhausts
// MaxAttempts.
func Run(rng *rand.Rand, tenant string, opts Options) []store.RunEventWrite {
	return RunFor(rng, NewIdentity(tenant), opts)
}

// RunFor is Run with a given identity.
func RunFor(rng *rand.Rand, id Identity, opts Options) []store.RunEventWrite {
	if opts.Steps == 0 {
		opts.Steps = 3 + rng.IntN(6)
	}
	if opts.StepFailureRate == 0 {
		opts.StepFailureRate = 0.15
	}
	if opts.MaxAttempts == 0 {
		opts.MaxAttempts = 3
	}
	if opts.UnknownEventRate == 0 {
		opts.UnknownEventRate = 0.05
	}
	t := opts.Start
	if t.IsZero() {
		t = time.Now()
	}
	tick := func() time.Time {
		t = t.Add(time.Duration(50+rng.IntN(2000)) * time.Millisecond)
		return t
	}
	var evs []store.RunEventWrite
	add := func(w store.RunEventWrite) { evs = append(evs, w) }

	start := tick()
	add(Event(id, store.EventRunStarted, "", 1, 1, start, map[string]any{
		"engineRunRef": fmt.Sprintf("temporal://default/etl/%s", id.RunID),
		"engineType":   "temporal",
		"startedAt":    start.UTC().Format(time.RFC3339Nano),
	}))
	failed := false
	// Run-level events always hash "RUN" and their logicalAttemptId, so a
	// second pause of the same run needs the next attempt number or it is
	// (correctly) a duplicate of the first.
	pauses, unknown := int64(0), int64(0)
	for i := 0; i < opts.Steps; i++ {
		step := stepNames[i%len(stepNames)]
		if i >= len(stepNames) {
			step = fmt.Sprintf("%s_%d", step, i/len(stepNames))
		}
		if failed {
			add(Event(id, store.EventStepSkipped, step, 1, 1, tick(), map[string]any{
				"reason": "an upstream step failed", "reasonCode": "DEPENDENCY_FAILED"}))
			continue
		}
		if rng.Float64() < 0.03 {
			pauses++
			add(Event(id, store.EventRunPaused, "", pauses, 1, tick(), map[string]any{"reason": "operator pause", "substatus": "DRAINING"}))
			add(Event(id, store.EventRunResumed, "", pauses, 1, tick(), map[string]any{"reason": "operator resume"}))
		}
		for attempt := int64(1); ; attempt++ {
			engine := int64(1)
			add(Event(id, store.EventStepStarted, step, attempt, engine, tick(), nil))
			if rng.Float64() < 0.05 {
				// An engine retry of the same logical attempt: same key, so
				// the store answers it as a duplicate (docs/CONTRACT.md,
				// "Appending").
				engine++
				add(Event(id, store.EventStepStarted, step, attempt, engine, tick(), nil))
			}
			if rng.Float64() >= opts.StepFailureRate {
				add(Event(id, store.EventStepCompleted, step, attempt, engine, tick(), map[string]any{
					"durationMs": 100 + rng.IntN(5000),
					"artifacts": []map[string]any{{
						"uri":  fmt.Sprintf("s3://runstream-artifacts/%s/%s/%d/run_results.json", id.RunID, step, attempt),
						"kind": "dbt-run-results", "sizeBytes": 1000 + rng.IntN(100000)}},
				}))
				break
			}
			add(Event(id, store.EventStepFailed, step, attempt, engine, tick(), map[string]any{
				"errorCode":    []string{"TIMEOUT", "DB_CONNECTION_FAILED", "SQL_ERROR"}[rng.IntN(3)],
				"errorMessage": "the warehouse query did not finish", "retryable": true,
				"failureCategory": []string{"USER", "SYSTEM", "PLATFORM", "TIMEOUT"}[rng.IntN(4)],
				"failureSource":   "activity",
			}))
			if int(attempt) >= opts.MaxAttempts {
				failed = true
				break
			}
		}
		if rng.Float64() < opts.UnknownEventRate {
			// A future event type. Run-level (no stepId): the peer's v2
			// record schema refuses a stepId on any type it does not list
			// as a step event, and generated streams should be clean for it.
			unknown++
			add(Event(id, "RunCostReported", "", unknown, 1, tick(), map[string]any{"note": "a future event type", "step": step}))
		}
	}
	if failed {
		add(Event(id, store.EventRunFailed, "", 1, 1, tick(), map[string]any{
			"errorCode": "STEP_RETRIES_EXHAUSTED", "errorMessage": "a step failed after all retries",
			"retryable": false, "failureCategory": "USER"}))
	} else {
		add(Event(id, store.EventRunCompleted, "", 1, 1, tick(), nil))
	}
	return evs
}
