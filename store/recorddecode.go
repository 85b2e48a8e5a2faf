package store

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DecodeRecord decodes a Kafka record value (a RunEventRecord as the relay
// writes it, or any JSON) into rec exactly as
// json.Unmarshal(value, rec) would, same result and same errors.
//
// A hand-written decoder reads the envelope the relay writes (a flat
// object of strings and integers plus the payload, which is only checked
// for validity and kept as is): it makes one pass over the bytes and one
// allocation (a string of the whole value, which the envelope's strings
// are slices of), where encoding/json's reflection made the consumer's
// decoding about half of an ETL's CPU. Anything it does not read the way
// encoding/json would for certain (escapes or invalid UTF-8 in a string,
// null, a number with a fraction or exponent, a key that only matches a
// field case-insensitively, deep nesting, a syntax error) makes it give up
// and leave the value to encoding/json, so that both always agree;
// FuzzDecodeRecord checks it.
//
// rec.Payload shares memory with value.
func DecodeRecord(value []byte, rec *RunEventRecord) error {
	if fastDecode(value, rec) {
		return nil
	}
	*rec = RunEventRecord{}
	return json.Unmarshal(value, rec)
}

// maxFastDepth bounds the nesting the fast decoder follows in the payload
// and unknown fields; deeper values go to encoding/json (whose own limit
// is 10,000).
const maxFastDepth = 200

// envelopeFields are the JSON names of RunEventRecord's fields. A
// key that equals one of them only case-insensitively is left to
// encoding/json, which matches names that way.
var envelopeFields = []string{"eventId", "eventType", "emittedAt", "runId", "tenantId", "projectId",
	"environmentId", "planId", "planVersion", "engineAttemptId", "logicalAttemptId", "idempotencyKey",
	"stepId", "payload", "runSeq", "persistedAt"}

// fastDecode decodes value into rec and reports whether it could; when it
// returns false, rec holds garbage.
func fastDecode(value []byte, rec *RunEventRecord) bool {
	d := fastDecoder{b: value}
	*rec = RunEventRecord{}
	d.ws()
	if !d.eat('{') {
		return false
	}
	d.ws()
	if d.eat('}') {
		return d.end()
	}
	// One string for the whole value: the envelope's strings are slices
	// of it, so decoding them allocates nothing more.
	d.s = string(value)
	for {
		d.ws()
		ks, ke, ok := d.key()
		if !ok {
			return false
		}
		d.ws()
		if !d.eat(':') {
			return false
		}
		d.ws()
		if !d.field(rec, value[ks:ke]) {
			return false
		}
		d.ws()
		if d.eat(',') {
			continue
		}
		if d.eat('}') {
			return d.end()
		}
		return false
	}
}

type fastDecoder struct {
	b []byte
	s string // string(b), once the object is known not to be empty
	i int
}

func (d *fastDecoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *fastDecoder) eat(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// end reports whether only whitespace follows.
func (d *fastDecoder) end() bool {
	d.ws()
	return d.i == len(d.b)
}

// key reads an object key with neither escapes nor non-ASCII bytes (both
// are left to encoding/json) and returns its bounds.
func (d *fastDecoder) key() (start, end int, ok bool) {
	if !d.eat('"') {
		return 0, 0, false
	}
	start = d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		if c == '"' {
			end = d.i
			d.i++
			return start, end, true
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			return 0, 0, false
		}
		d.i++
	}
	return 0, 0, false
}

// field reads the value of key into rec.
func (d *fastDecoder) field(rec *RunEventRecord, key []byte) bool {
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
		start := d.i
		if d.i < len(d.b) && d.b[d.i] == 'n' {
			return false // null: encoding/json's RawMessage rules, not ours
		}
		if !d.skip(0) {
			return false
		}
		rec.Payload = json.RawMessage(d.b[start:d.i:d.i])
		return true
	}
	for _, f := range envelopeFields {
		if strings.EqualFold(f, string(key)) {
			return false
		}
	}
	return d.skip(0) // an unknown field: valid JSON, ignored
}

// str reads a JSON string without escapes, control characters or invalid
// UTF-8 (encoding/json unescapes and replaces those; it is left to it).
func (d *fastDecoder) str(dst *string) bool {
	if !d.eat('"') {
		return false
	}
	start := d.i
	ascii := true
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			if !ascii && !utf8.Valid(d.b[start:d.i]) {
				return false
			}
			*dst = d.s[start:d.i]
			d.i++
			return true
		case c == '\\' || c < 0x20:
			return false
		case c >= utf8.RuneSelf:
			ascii = false
		}
		d.i++
	}
	return false
}

// int reads an integer literal that fits an int64 (no fraction, no
// exponent: encoding/json refuses those for an int64 field, with its own
// error).
func (d *fastDecoder) int(dst *int64) bool {
	start := d.i
	if d.i < len(d.b) && d.b[d.i] == '-' {
		d.i++
	}
	digits := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	n := d.i - digits
	if n == 0 || (n > 1 && d.b[digits] == '0') {
		return false
	}
	v, err := strconv.ParseInt(d.s[start:d.i], 10, 64)
	if err != nil {
		return false
	}
	*dst = v
	return true
}

// skip checks one JSON value and moves past it.
func (d *fastDecoder) skip(depth int) bool {
	if d.i >= len(d.b) || depth > maxFastDepth {
		return false
	}
	switch c := d.b[d.i]; {
	case c == '{':
		d.i++
		d.ws()
		if d.eat('}') {
			return true
		}
		for {
			d.ws()
			if !d.skipString() {
				return false
			}
			d.ws()
			if !d.eat(':') {
				return false
			}
			d.ws()
			if !d.skip(depth + 1) {
				return false
			}
			d.ws()
			if d.eat(',') {
				continue
			}
			return d.eat('}')
		}
	case c == '[':
		d.i++
		d.ws()
		if d.eat(']') {
			return true
		}
		for {
			d.ws()
			if !d.skip(depth + 1) {
				return false
			}
			d.ws()
			if d.eat(',') {
				continue
			}
			return d.eat(']')
		}
	case c == '"':
		return d.skipString()
	case c == '-' || (c >= '0' && c <= '9'):
		return d.skipNumber()
	case c == 't':
		return d.literal("true")
	case c == 'f':
		return d.literal("false")
	case c == 'n':
		return d.literal("null")
	}
	return false
}

func (d *fastDecoder) literal(lit string) bool {
	if len(d.b)-d.i >= len(lit) && string(d.b[d.i:d.i+len(lit)]) == lit {
		d.i += len(lit)
		return true
	}
	return false
}

// skipString checks a JSON string as encoding/json's scanner does: no
// control characters, valid escapes; any other byte, even invalid UTF-8,
// is accepted (and kept as is in a raw value).
func (d *fastDecoder) skipString() bool {
	if !d.eat('"') {
		return false
	}
	for d.i < len(d.b) {
		c := d.b[d.i]
		d.i++
		switch {
		case c == '"':
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if d.i >= len(d.b) {
				return false
			}
			e := d.b[d.i]
			d.i++
			switch e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(d.b)-d.i < 4 {
					return false
				}
				for _, h := range d.b[d.i : d.i+4] {
					if !isHex(h) {
						return false
					}
				}
				d.i += 4
			default:
				return false
			}
		}
	}
	return false
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// skipNumber checks a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *fastDecoder) skipNumber() bool {
	d.eat('-')
	switch {
	case d.eat('0'):
	case d.i < len(d.b) && d.b[d.i] >= '1' && d.b[d.i] <= '9':
		d.digits()
	default:
		return false
	}
	if d.eat('.') {
		if d.digits() == 0 {
			return false
		}
	}
	if d.eat('e') || d.eat('E') {
		if !d.eat('+') {
			d.eat('-')
		}
		if d.digits() == 0 {
			return false
		}
	}
	return true
}

func (d *fastDecoder) digits() int {
	start := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	return d.i - start
}
