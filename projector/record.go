package projector

import (
	"strings"
	"unicode/utf8"

	"github.com/runstream/runstream/store"
)

// fastRecord decodes a record value the relay wrote (a flat object of
// strings and integers plus the payload) into ev in one pass, and reports
// whether it could. It gives up on anything it cannot read exactly as
// encoding/json would: an escape or invalid UTF-8 in a string, null, a
// number that is not a plain integer of int64, a key that is not exactly a
// field's name but might match one case-insensitively, nesting deeper than
// maxSkipDepth, any syntax error. decodeRecord then leaves the value to
// the general decoders, so the result is always encoding/json's
// (FuzzDecodeRecord checks it). ev.Payload is a copy.
func fastRecord(b []byte, ev *store.RunEventRecord) bool {
	*ev = store.RunEventRecord{}
	d := recDecoder{b: b}
	d.ws()
	if !d.eat('{') {
		return false
	}
	d.ws()
	if d.eat('}') {
		return d.end()
	}
	for {
		d.ws()
		key, ok := d.plainString()
		if !ok {
			return false
		}
		d.ws()
		if !d.eat(':') {
			return false
		}
		d.ws()
		if !d.field(ev, key) {
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

// maxSkipDepth bounds the nesting fastRecord follows in values it only
// checks (the payload, unknown fields).
const maxSkipDepth = 100

type recDecoder struct {
	b []byte
	i int
}

func (d *recDecoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *recDecoder) eat(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// end reports whether only whitespace follows.
func (d *recDecoder) end() bool {
	d.ws()
	return d.i == len(d.b)
}

// plainString reads a string without escapes or control characters that
// is valid UTF-8, and returns its contents (a slice of the input).
func (d *recDecoder) plainString() ([]byte, bool) {
	if !d.eat('"') {
		return nil, false
	}
	start, ascii := d.i, true
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			s := d.b[start:d.i]
			d.i++
			return s, ascii || utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= 0x80:
			ascii = false
		}
		d.i++
	}
	return nil, false
}

func (d *recDecoder) str(dst *string) bool {
	s, ok := d.plainString()
	if ok {
		*dst = string(s)
	}
	return ok
}

// int reads an integer without fraction or exponent that fits an int64.
func (d *recDecoder) int(dst *int64) bool {
	neg := d.eat('-')
	start := d.i
	var n uint64
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		if d.i-start >= 18 { // 18 digits always fit; leave longer ones
			return false
		}
		n = n*10 + uint64(d.b[d.i]-'0')
		d.i++
	}
	digits := d.i - start
	if digits == 0 || (digits > 1 && d.b[start] == '0') {
		return false
	}
	if d.i < len(d.b) {
		if c := d.b[d.i]; c == '.' || c == 'e' || c == 'E' {
			return false
		}
	}
	*dst = int64(n)
	if neg {
		*dst = -*dst
	}
	return true
}

func (d *recDecoder) field(ev *store.RunEventRecord, key []byte) bool {
	switch string(key) {
	case "eventId":
		return d.str(&ev.EventID)
	case "eventType":
		return d.str(&ev.EventType)
	case "emittedAt":
		return d.str(&ev.EmittedAt)
	case "runId":
		return d.str(&ev.RunID)
	case "tenantId":
		return d.str(&ev.TenantID)
	case "projectId":
		return d.str(&ev.ProjectID)
	case "environmentId":
		return d.str(&ev.EnvironmentID)
	case "planId":
		return d.str(&ev.PlanID)
	case "planVersion":
		return d.str(&ev.PlanVersion)
	case "idempotencyKey":
		return d.str(&ev.IdempotencyKey)
	case "stepId":
		return d.str(&ev.StepID)
	case "persistedAt":
		return d.str(&ev.PersistedAt)
	case "engineAttemptId":
		return d.int(&ev.EngineAttemptID)
	case "logicalAttemptId":
		return d.int(&ev.LogicalAttemptID)
	case "runSeq":
		return d.int(&ev.RunSeq)
	case "payload":
		start := d.i
		if d.i < len(d.b) && d.b[d.i] == 'n' {
			return false // null: left to encoding/json
		}
		if !d.skip(0) {
			return false
		}
		ev.Payload = append([]byte(nil), d.b[start:d.i]...)
		return true
	}
	// An unknown field is ignored, unless encoding/json might match its
	// name to a field case-insensitively.
	for _, c := range key {
		if c >= 0x80 {
			return false
		}
	}
	lower := strings.ToLower(string(key))
	for _, f := range recordFields {
		if lower == f {
			return false
		}
	}
	return d.skip(0)
}

// recordFields are store.RunEventRecord's JSON names, lower case.
var recordFields = []string{"eventid", "eventtype", "emittedat", "runid", "tenantid", "projectid",
	"environmentid", "planid", "planversion", "engineattemptid", "logicalattemptid", "idempotencykey",
	"stepid", "payload", "runseq", "persistedat"}

// skip checks and steps over one JSON value.
func (d *recDecoder) skip(depth int) bool {
	if d.i >= len(d.b) || depth > maxSkipDepth {
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
	case c == 't':
		return d.literal("true")
	case c == 'f':
		return d.literal("false")
	case c == 'n':
		return d.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return d.skipNumber()
	}
	return false
}

func (d *recDecoder) literal(lit string) bool {
	if len(d.b)-d.i >= len(lit) && string(d.b[d.i:d.i+len(lit)]) == lit {
		d.i += len(lit)
		return true
	}
	return false
}

// skipString steps over a string whose escapes are valid; its contents
// are kept as they are, so invalid UTF-8 does not matter.
func (d *recDecoder) skipString() bool {
	if !d.eat('"') {
		return false
	}
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			return true
		case c < 0x20:
			return false
		case c == '\\':
			d.i++
			if d.i >= len(d.b) {
				return false
			}
			switch d.b[d.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				d.i++
			case 'u':
				if len(d.b)-d.i < 5 {
					return false
				}
				for _, h := range d.b[d.i+1 : d.i+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return false
					}
				}
				d.i += 5
			default:
				return false
			}
		default:
			d.i++
		}
	}
	return false
}

// skipNumber steps over a number of JSON's grammar.
func (d *recDecoder) skipNumber() bool {
	d.eat('-')
	if d.eat('0') {
		// no more integer digits after a leading zero
	} else if d.digits() == 0 {
		return false
	}
	if d.eat('.') && d.digits() == 0 {
		return false
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

func (d *recDecoder) digits() int {
	n := 0
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
		n++
	}
	return n
}
