package record

import (
	"encoding/json"
	"strings"

	"github.com/runstream/runstream/internal/jsonx"
	"github.com/runstream/runstream/store"
)

// DecodeValue decodes a Kafka record value (a RunEventRecord as
// [AppendValue] writes it, or any JSON) into rec exactly as
// json.Unmarshal(value, rec) would, same result and same errors.
//
// A hand-written decoder reads the envelope the relay writes (a flat
// object of strings and integers plus the payload, which is only checked
// for validity and kept as is): it makes one pass over the bytes and one
// allocation (a string of the envelope's string fields' bytes, which they
// are slices of), where encoding/json's reflection made the consumer's
// decoding about half of an ETL's CPU. Anything it does not read the way
// encoding/json would for certain (escapes or invalid UTF-8 in a string,
// null, a number with a fraction or exponent, a key that only matches a
// field case-insensitively, deep nesting, a syntax error) makes it give up
// and leave the value to encoding/json, so that both always agree;
// FuzzDecodeValue checks it.
//
// rec.Payload shares memory with value.
func DecodeValue(value []byte, rec *store.RunEventRecord) error {
	if fastDecode(value, rec) {
		return nil
	}
	*rec = store.RunEventRecord{}
	return json.Unmarshal(value, rec)
}

// envelopeFields are the JSON names of store.RunEventRecord's fields. A
// key that equals one of them only case-insensitively is left to
// encoding/json, which matches names that way.
var envelopeFields = []string{"eventId", "eventType", "emittedAt", "runId", "tenantId", "projectId",
	"environmentId", "planId", "planVersion", "engineAttemptId", "logicalAttemptId", "idempotencyKey",
	"stepId", "payload", "runSeq", "persistedAt"}

// fastDecode decodes value into rec and reports whether it could; when it
// returns false, rec holds garbage.
func fastDecode(value []byte, rec *store.RunEventRecord) bool {
	d := fastDecoder{Scanner: jsonx.Scanner{B: value}}
	*rec = store.RunEventRecord{}
	d.WS()
	if !d.Eat('{') {
		return false
	}
	d.WS()
	if d.Eat('}') {
		return d.End()
	}
	for {
		d.WS()
		ks, ke, ok := d.ASCIIKey()
		if !ok {
			return false
		}
		d.WS()
		if !d.Eat(':') {
			return false
		}
		d.WS()
		if !d.field(rec, value[ks:ke]) {
			return false
		}
		d.WS()
		if d.Eat(',') {
			continue
		}
		if d.Eat('}') {
			if !d.End() {
				return false
			}
			d.strings()
			return true
		}
		return false
	}
}

// strings gives the string fields their values: the spans str found,
// copied into one string of just their bytes (not the payload's, which
// rec.Payload shares with the value), so decoding allocates once.
func (d *fastDecoder) strings() {
	n := 0
	for _, sp := range d.spans[:d.nspans] {
		n += sp.end - sp.start
	}
	var b strings.Builder
	b.Grow(n)
	for _, sp := range d.spans[:d.nspans] {
		b.Write(d.B[sp.start:sp.end])
	}
	all, off := b.String(), 0
	for _, sp := range d.spans[:d.nspans] {
		next := off + sp.end - sp.start
		*sp.dst = all[off:next]
		off = next
	}
}

type fastDecoder struct {
	jsonx.Scanner
	// spans are the string fields read so far, set by strings at the end.
	// A repeated key is read again (the last one wins, as in
	// encoding/json), so there can be more spans than fields; the decoder
	// gives up beyond len(spans).
	spans  [16]span
	nspans int
}

// span is a string field's bytes in B.
type span struct {
	dst        *string
	start, end int
}

// field reads the value of key into rec.
func (d *fastDecoder) field(rec *store.RunEventRecord, key []byte) bool {
	switch string(key) {
	case "eventId":
		return d.str(&rec.EventID)
	case "eventType":
		return d.str(&rec.EventType)
	case "emittedAt":
		return d.str(&rec.EmittedAt)
	case "runId":
		return d.str(&rec.RunID)
	case "tenantId":
		return d.str(&rec.TenantID)
	case "projectId":
		return d.str(&rec.ProjectID)
	case "environmentId":
		return d.str(&rec.EnvironmentID)
	case "planId":
		return d.str(&rec.PlanID)
	case "planVersion":
		return d.str(&rec.PlanVersion)
	case "engineAttemptId":
		return d.int(&rec.EngineAttemptID)
	case "logicalAttemptId":
		return d.int(&rec.LogicalAttemptID)
	case "idempotencyKey":
		return d.str(&rec.IdempotencyKey)
	case "stepId":
		return d.str(&rec.StepID)
	case "runSeq":
		return d.int(&rec.RunSeq)
	case "persistedAt":
		return d.str(&rec.PersistedAt)
	case "payload":
		start := d.I
		if d.I < len(d.B) && d.B[d.I] == 'n' {
			return false // null: encoding/json's RawMessage rules, not ours
		}
		if !d.Skip(0, jsonx.MaxDepth) {
			return false
		}
		rec.Payload = json.RawMessage(d.B[start:d.I:d.I])
		return true
	}
	for _, f := range envelopeFields {
		if strings.EqualFold(f, string(key)) {
			return false
		}
	}
	return d.Skip(0, jsonx.MaxDepth) // an unknown field: valid JSON, ignored
}

// str reads a JSON string without escapes, control characters or invalid
// UTF-8 (encoding/json unescapes and replaces those; it is left to it) and
// records its span for strings.
func (d *fastDecoder) str(dst *string) bool {
	start, end, ok := d.PlainString()
	if !ok || d.nspans == len(d.spans) {
		return false
	}
	d.spans[d.nspans] = span{dst, start, end}
	d.nspans++
	return true
}

func (d *fastDecoder) int(dst *int64) bool {
	v, ok := d.Int64()
	*dst = v
	return ok
}
