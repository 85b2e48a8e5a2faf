package client

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/validate"
)

// emittedAtLayout is RFC 3339 UTC with milliseconds, as the TypeScript
// client's Date.toISOString writes it.
const emittedAtLayout = "2006-01-02T15:04:05.000Z07:00"

// encode refuses an event type the client may not send, then prepares w.
func (c *Client) encode(w *store.RunEventWrite) ([]byte, error) {
	if err := c.checkType(w.EventType); err != nil {
		return nil, err
	}
	return prepare(w)
}

// prepare fills w's eventId (a random UUID v4), emittedAt (now) and
// idempotency key when empty, validates w as the API would and returns
// its JSON body. A rejected event gets the API's own
// answer: validate.Check reaches DecodeWrite's verdict on w's JSON, and
// for a rejection the body is decoded by DecodeWrite, the API's decoder,
// so code, field and message are the ones the API would send.
func prepare(w *store.RunEventWrite) ([]byte, error) {
	if w.EventID == "" {
		w.EventID = uuid.NewString()
	}
	if w.EmittedAt == "" {
		w.EmittedAt = time.Now().UTC().Format(emittedAtLayout)
	}
	if w.IdempotencyKey == "" {
		w.IdempotencyKey = w.Key()
	}
	if err := validate.Check(w); err != nil {
		body, encErr := encodeWrite(w)
		if encErr != nil {
			return nil, err // the payload is not JSON: the API never sees it
		}
		if _, _, apiErr := validate.DecodeWrite(body); apiErr != nil {
			return nil, apiErr
		}
		return nil, err
	}
	return encodeWrite(w)
}

// encodeWrite is w's JSON body: json.Marshal's, which
// BenchmarkEncode found faster than the hand-written appenders of
// internal/jsonx for this shape (the payload's compaction dominates, and
// encoding/json does it with fewer allocations).
func encodeWrite(w *store.RunEventWrite) ([]byte, error) {
	return json.Marshal(w)
}
