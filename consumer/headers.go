package consumer

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
)

// headerIDs returns the run and runSeq a record names without decoding
// its value: the key (the relay keys records by runId) and the runSeq
// header. ok is false when either is missing or unreadable.
func headerIDs(r *kgo.Record) (runID string, runSeq int64, ok bool) {
	if len(r.Key) == 0 {
		return "", 0, false
	}
	for i := range r.Headers {
		h := &r.Headers[i]
		if h.Key != "runSeq" {
			continue
		}
		seq, err := strconv.ParseInt(string(h.Value), 10, 64)
		if err != nil || seq < 1 {
			return "", 0, false
		}
		return string(r.Key), seq, true
	}
	return "", 0, false
}
