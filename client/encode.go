package client

import (
	"strconv"

	"github.com/runstream/runstream/internal/jsonx"
	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/validate"
)

// prepare fills w's idempotency key when empty, validates w as the API
// would and returns its JSON body. A rejected event gets the API's own
// answer: validate.Check reaches DecodeWrite's verdict on w's JSON, and
// for a rejection the body is decoded by DecodeWrite, the API's decoder,
// so code, field and message are the ones the API would send.
func prepare(w *store.RunEventWrite) ([]byte, error) {
	if w.IdempotencyKey == "" {
		w.IdempotencyKey = w.Key()
	}
	if err := validate.Check(w); err != nil {
		body, encErr := encodeWrite(nil, w)
		if encErr != nil {
			return nil, err // the payload is not JSON: the API never sees it
		}
		if _, _, apiErr := validate.DecodeWrite(body); apiErr != nil {
			return nil, apiErr
		}
		return nil, err
	}
	return encodeWrite(make([]byte, 0, 512+len(w.Payload)), w)
}

// encodeWrite appends w as json.Marshal writes it (same members, order and
// escaping; TestEncodeWrite_EqualsMarshal), without reflection.
func encodeWrite(b []byte, w *store.RunEventWrite) ([]byte, error) {
	str := func(name, v string) {
		b = append(b, name...)
		b = jsonx.AppendString(b, v)
	}
	str(`{"eventId":`, w.EventID)
	str(`,"eventType":`, w.EventType)
	str(`,"emittedAt":`, w.EmittedAt)
	str(`,"runId":`, w.RunID)
	str(`,"tenantId":`, w.TenantID)
	str(`,"projectId":`, w.ProjectID)
	str(`,"environmentId":`, w.EnvironmentID)
	str(`,"planId":`, w.PlanID)
	str(`,"planVersion":`, w.PlanVersion)
	b = append(b, `,"engineAttemptId":`...)
	b = strconv.AppendInt(b, w.EngineAttemptID, 10)
	b = append(b, `,"logicalAttemptId":`...)
	b = strconv.AppendInt(b, w.LogicalAttemptID, 10)
	str(`,"idempotencyKey":`, w.IdempotencyKey)
	if w.StepID != "" {
		str(`,"stepId":`, w.StepID)
	}
	if len(w.Payload) > 0 {
		b = append(b, `,"payload":`...)
		var err error
		if b, err = jsonx.AppendRaw(b, w.Payload); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}
