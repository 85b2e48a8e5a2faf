package client

import (
	"encoding/json"

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
