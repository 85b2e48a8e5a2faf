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
	v, ok := Header(r, HeaderRunSeq)
	if !ok {
		return "", 0, false
	}
	seq, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || seq < 1 {
		return "", 0, false
	}
	return string(r.Key), seq, true
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

// Header returns the value of r's first header named key; ok is false
// when it has none.
func Header(r *kgo.Record, key string) (value []byte, ok bool) {
	for i := range r.Headers {
		if h := &r.Headers[i]; h.Key == key {
			return h.Value, true
		}
	}
	return nil, false
}

// TraceParent returns r's [HeaderTraceParent], "" when it has none.
func TraceParent(r *kgo.Record) string {
	v, _ := Header(r, HeaderTraceParent)
	return string(v)
}

// Redelivered reports whether r carries [HeaderRedelivered] "true": a
// consumer that holds nothing of the record's run must not take it for
// the run's current state (its later events came before it), and reads
// the run from the store instead. A record without the header is in its
// run's order, however late it was published (a relay backlog).
func Redelivered(r *kgo.Record) bool {
	v, _ := Header(r, HeaderRedelivered)
	return string(v) == "true"
}
