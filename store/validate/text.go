package validate

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/runstream/runstream/internal/jsonx"
	"github.com/runstream/runstream/store"
)

// Strings in events hold no NUL and no unpaired UTF-16 surrogate
// (docs/SECURITY.md, "Input"). JSON text can spell both ("\u0000", a lone
// "\ud800"): Postgres keeps such a payload in its json column, after which
// no jsonb cast of the table works; Go's decoder turns a lone surrogate
// into U+FFFD without a word; strict parsers in other languages refuse the
// record. A raw NUL byte is not JSON, and invalid UTF-8 is refused by step
// 1 already, so escapes are all that is left to check: in every member
// name and string of the payload, and in every top-level member. A Go
// string cannot hold a surrogate (it would be invalid UTF-8), so for a
// struct's fields [Check] looks for a NUL byte, which its JSON spells
// "\u0000".

var escapeU = []byte(`\u`)

// badEscape returns the offset in raw, JSON text, of the first escape that
// spells U+0000 or a surrogate outside a high-low pair; -1 when none does.
// Text without "\u" costs one bytes.Index, the common case. Otherwise raw
// needs no parsing: in valid JSON every backslash is inside a string and
// starts an escape, so escapes are read pair by pair from the start of the
// run of backslashes before the first "\u".
func badEscape(raw []byte) int {
	i := bytes.Index(raw, escapeU)
	if i < 0 {
		return -1
	}
	for i > 0 && raw[i-1] == '\\' {
		i--
	}
	for {
		j := bytes.IndexByte(raw[i:], '\\')
		if j < 0 {
			return -1
		}
		i += j
		if i+1 >= len(raw) {
			return -1
		}
		if raw[i+1] != 'u' {
			i += 2
			continue
		}
		c, ok := hex4(raw, i+2)
		if !ok {
			i += 2 // not JSON: whoever parses raw says so
			continue
		}
		switch {
		case c == 0, c >= 0xDC00 && c <= 0xDFFF:
			return i
		case c >= 0xD800 && c <= 0xDBFF:
			if i+12 > len(raw) || raw[i+6] != '\\' || raw[i+7] != 'u' {
				return i
			}
			if lo, ok := hex4(raw, i+8); !ok || lo < 0xDC00 || lo > 0xDFFF {
				return i
			}
			i += 12
			continue
		}
		i += 6
	}
}

// Text refuses, in raw (a valid JSON value at field), what an event's
// strings may not hold: an escape spelling U+0000 or an unpaired UTF-16
// surrogate, in any string or member name. Other request bodies (the
// operators') use it so that they read their text as an event's is read:
// encoding/json would turn a lone surrogate into U+FFFD without a word.
func Text(field string, raw []byte) error {
	if badEscape(raw) < 0 {
		return nil
	}
	return escapeError(field, raw)
}

// hex4 reads the four hex digits at raw[i:].
func hex4(raw []byte, i int) (rune, bool) {
	if i+4 > len(raw) {
		return 0, false
	}
	var c rune
	for _, b := range raw[i : i+4] {
		switch {
		case '0' <= b && b <= '9':
			c = c<<4 | rune(b-'0')
		case 'a' <= b && b <= 'f':
			c = c<<4 | rune(b-'a'+10)
		case 'A' <= b && b <= 'F':
			c = c<<4 | rune(b-'A'+10)
		default:
			return 0, false
		}
	}
	return c, true
}

// escapeError locates the first bad escape of raw, a valid JSON value at
// path, and explains it: the path of the string holding it
// (payload.result.note), or of the object whose member name holds it.
// Only the rejection path walks the value.
func escapeError(path string, raw []byte) *store.Error {
	raw = raw[jsonx.SkipSpace(raw, 0):]
	switch raw[0] {
	case '{':
		var e *store.Error
		jsonx.EachMember(raw, func(key, val []byte) {
			switch {
			case e != nil:
			case badEscape(key) >= 0:
				e = badTextError(path, key, true)
			case badEscape(val) >= 0:
				e = escapeError(path+"."+memberName(key), val)
			}
		})
		if e != nil {
			return e
		}
	case '[':
		var e *store.Error
		i := 0
		eachElement(raw, func(val []byte) {
			if e == nil && badEscape(val) >= 0 {
				e = escapeError(path+"["+strconv.Itoa(i)+"]", val)
			}
			i++
		})
		if e != nil {
			return e
		}
	}
	return badTextError(path, raw, false)
}

// badTextError explains the first bad escape of text, a string (or a
// member name, inKey) at field.
func badTextError(field string, text []byte, inKey bool) *store.Error {
	where := field + " holds"
	if inKey {
		where = field + " has a member name holding"
	}
	i := badEscape(text)
	if i < 0 {
		return nulError(field, inKey) // unreachable: the caller found one
	}
	c, _ := hex4(text, i+2)
	if c == 0 {
		return nulError(field, inKey)
	}
	return store.Invalid(field, "%s an unpaired UTF-16 surrogate (%s): a high surrogate (\\uD800-\\uDBFF) must be followed by a low one (\\uDC00-\\uDFFF); send valid Unicode text",
		where, strings.ToLower(string(text[i:i+6])))
}

// nulError refuses U+0000 in a string of an event.
func nulError(field string, inKey bool) *store.Error {
	where := field + " holds"
	if inKey {
		where = field + " has a member name holding"
	}
	return store.Invalid(field, "%s U+0000 (NUL, \\u0000), which no string of an event may hold: Postgres cannot cast it to jsonb and many JSON parsers refuse it; remove it, or encode binary data (base64)", where)
}

// checkTextMembers is step 1's escape check of a body: the first known
// member, in fieldOrder, whose value spells a NUL or an unpaired
// surrogate, as Check finds a NUL in a struct's fields. Unknown members
// are never stored and not looked at.
func checkTextMembers(members []member) *store.Error {
	var bad *member
	for k := range members {
		m := &members[k]
		if knownField(m.name) && (bad == nil || fieldRank(m.name) < fieldRank(bad.name)) && badEscape(m.raw) >= 0 {
			bad = m
		}
	}
	if bad == nil {
		return nil
	}
	return escapeError(bad.name, bad.raw)
}

// checkStructNUL is step 1's escape check of a struct: a NUL byte in a
// field (its JSON would spell "\u0000"), then the payload's escapes. A
// payload that is not JSON is left to writeDoc to refuse.
func checkStructNUL(w *store.RunEventWrite) *store.Error {
	fields := [...]struct {
		name, value string
	}{
		{"eventId", w.EventID}, {"eventType", w.EventType}, {"emittedAt", w.EmittedAt},
		{"runId", w.RunID}, {"tenantId", w.TenantID}, {"projectId", w.ProjectID},
		{"environmentId", w.EnvironmentID}, {"planId", w.PlanID}, {"planVersion", w.PlanVersion},
		{"stepId", w.StepID}, {"idempotencyKey", w.IdempotencyKey},
	}
	for _, f := range fields {
		if strings.IndexByte(f.value, 0) >= 0 {
			return nulError(f.name, false)
		}
	}
	if badEscape(w.Payload) >= 0 && json.Valid(w.Payload) {
		return escapeError("payload", w.Payload)
	}
	return nil
}
