package reduce

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/runstream/runstream/store"
)

// t0 is the test clock's origin; event n is emitted at t0+10n seconds and
// persisted 1ms later, so durations in the expectations are easy to read.
var t0 = time.Date(2026, 2, 16, 10, 0, 0, 0, time.UTC)

func at(sec int) string { return t0.Add(time.Duration(sec) * time.Second).Format(time.RFC3339Nano) }

func persistedAt(seq int64) string {
	return store.FormatPersistedAt(t0.Add(time.Duration(seq)*10*time.Second + time.Millisecond))
}

type evOpt func(*store.RunEventRecord)

// mk builds a record as the store would persist it for run-1.
func mk(seq int64, eventType string, opts ...evOpt) store.RunEventRecord {
	ev := store.RunEventRecord{
		RunEventWrite: store.RunEventWrite{
			EventID:          fmt.Sprintf("00000000-0000-4000-8000-%012d", seq),
			EventType:        eventType,
			EmittedAt:        at(int(seq) * 10),
			RunID:            "run-1",
			TenantID:         "tenant-a",
			ProjectID:        "proj-1",
			EnvironmentID:    "prod",
			PlanID:           "plan-1",
			PlanVersion:      "1.0",
			EngineAttemptID:  1,
			LogicalAttemptID: 1,
		},
		RunSeq:      seq,
		PersistedAt: persistedAt(seq),
	}
	for _, o := range opts {
		o(&ev)
	}
	return ev
}

func step(id string, logical, engine int64) evOpt {
	return func(ev *store.RunEventRecord) {
		ev.StepID = id
		ev.LogicalAttemptID = logical
		ev.EngineAttemptID = engine
	}
}

func pl(payload string) evOpt {
	return func(ev *store.RunEventRecord) { ev.Payload = json.RawMessage(payload) }
}

func i64(n int64) *int64 { return &n }

// jsonClone deep-copies v through JSON, independently of the package's own
// clone code.
func jsonClone[T any](v T) T {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var c T
	if err := json.Unmarshal(b, &c); err != nil {
		panic(err)
	}
	return c
}

func attempt(logical, engine int64, status string) store.StepAttempt {
	return store.StepAttempt{
		LogicalAttemptID: logical,
		EngineAttemptID:  engine,
		Status:           status,
		Artifacts:        []store.ArtifactRef{},
	}
}
