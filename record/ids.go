package record

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
)

// IDs returns the run and runSeq a record names without decoding its
// value: the key (the relay keys records by runId) and the [HeaderRunSeq]
// header. ok is false when either is missing or unreadable, or the runSeq
// is below 1.
func IDs(r *kgo.Record) (runID string, runSeq int64, ok bool) {
	if len(r.Key) == 0 {
		return "", 0, false
	}
	for i := range r.Headers {
		h := &r.Headers[i]
		if h.Key != HeaderRunSeq {
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
