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

// MarkRedelivered adds the [HeaderRedelivered] header to a record built by
// [New]: the relay marks so a dead letter an operator retried, which is
// published after later events of its run were.
func MarkRedelivered(r *kgo.Record) {
	r.Headers = append(r.Headers, kgo.RecordHeader{Key: HeaderRedelivered, Value: []byte("true")})
}

// SetTraceParent adds the [HeaderTraceParent] header to a record built by
// [New].
func SetTraceParent(r *kgo.Record, traceParent string) {
	r.Headers = append(r.Headers, kgo.RecordHeader{Key: HeaderTraceParent, Value: []byte(traceParent)})
}

// TraceParent returns r's [HeaderTraceParent], "" when it has none.
func TraceParent(r *kgo.Record) string {
	for i := range r.Headers {
		if h := &r.Headers[i]; h.Key == HeaderTraceParent {
			return string(h.Value)
		}
	}
	return ""
}

// Redelivered reports whether r carries [HeaderRedelivered] "true": a
// consumer that holds nothing of the record's run must not take it for
// the run's current state (its later events came before it), and reads
// the run from the store instead. A record without the header is in its
// run's order, however late it was published (a relay backlog).
func Redelivered(r *kgo.Record) bool {
	for i := range r.Headers {
		if h := &r.Headers[i]; h.Key == HeaderRedelivered {
			return string(h.Value) == "true"
		}
	}
	return false
}
