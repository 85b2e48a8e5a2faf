package reduce

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/runstream/runstream/internal/jsonx"
	"github.com/runstream/runstream/store"
)

// payload is an event's payload read leniently: the top-level object's
// fields, each still raw. A payload that is absent, null, not an object or
// not valid JSON reads as empty, and a field of the wrong type reads as
// absent. The store validates known types strictly, but the reducer also
// replays history and records from the bus, so it trusts nothing
// (the store records, it does not judge).
//
// The fields are kept in a slice, in the object's order, rather than a
// map: a payload has a handful of fields and is read a few times, so a
// linear search costs less than hashing every key into a map, which was
// a third of the reducer's time in a bulk load.
type payload []payloadField

type payloadField struct {
	key []byte // a slice of the payload, or of a key string
	raw json.RawMessage
}

// get returns the field named key. With a key given twice, the last one
// counts, as encoding/json decides.
func (p payload) get(key string) (json.RawMessage, bool) {
	for i := len(p) - 1; i >= 0; i-- {
		if string(p[i].key) == key {
			return p[i].raw, true
		}
	}
	return nil, false
}

func parsePayload(buf payload, raw json.RawMessage) payload {
	if len(raw) == 0 {
		return nil
	}
	if p, ok := fastObject(buf, raw); ok {
		return p
	}
	return decodePayload(raw)
}

// decodePayload is parsePayload through encoding/json, for what
// fastObject gives up on: nil when raw is not a JSON object.
func decodePayload(raw json.RawMessage) payload {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil
	}
	p := make(payload, 0, len(m))
	for k, v := range m {
		p = append(p, payloadField{key: []byte(k), raw: v})
	}
	return p
}

// str returns the field as a string when it is a non-empty JSON string. An
// empty string counts as absent so that "x ?? y" falls through to y.
func (p payload) str(key string) (string, bool) {
	raw, ok := p.get(key)
	if !ok {
		return "", false
	}
	if s, ok := fastString(raw); ok {
		return s, s != ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil || s == "" {
		return "", false
	}
	return s, true
}

// hasStr reports whether str(key) would read a string, without making it.
func (p payload) hasStr(key string) bool {
	raw, ok := p.get(key)
	if !ok {
		return false
	}
	if start, end, ok := plainString(raw); ok {
		return end > start
	}
	_, ok = p.str(key)
	return ok
}

// strOr returns the field as a string, or "" when it cannot be read.
func (p payload) strOr(key string) string {
	s, _ := p.str(key)
	return s
}

func (p payload) boolOr(key string) bool {
	raw, ok := p.get(key)
	if !ok {
		return false
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		return false
	}
	return b
}

// nonNegInt returns the field as an int64 when it is a JSON number >= 0,
// truncating any fraction.
func (p payload) nonNegInt(key string) (int64, bool) {
	raw, _ := p.get(key)
	n, _, ok := nonNegNumber(raw)
	return n, ok
}

// nonNegNumber reads raw as a JSON number >= 0, truncated to int64; whole
// reports that it had no fractional part. Numbers beyond int64 read as
// absent rather than as whatever a float-to-int conversion would make of
// them, and so does a string holding a number.
func nonNegNumber(raw json.RawMessage) (n int64, whole, ok bool) {
	if n, ok := plainNonNegInt(raw); ok {
		return n, true, true
	}
	return nonNegNumberDecoded(raw)
}

// plainNonNegInt reads the common case without encoding/json: 1 to 18
// digits without a leading zero (or a lone 0), nothing around them, which
// is always a valid JSON number that fits an int64.
func plainNonNegInt(raw []byte) (int64, bool) {
	if len(raw) == 0 || len(raw) > 18 || (raw[0] == '0' && len(raw) > 1) {
		return 0, false
	}
	var n int64
	for _, c := range raw {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// nonNegNumberDecoded is nonNegNumber for any input, through encoding/json.
func nonNegNumberDecoded(raw json.RawMessage) (n int64, whole, ok bool) {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 || raw[0] == '"' {
		return 0, false, false
	}
	var num json.Number
	if err := json.Unmarshal(raw, &num); err != nil {
		return 0, false, false
	}
	if i, err := strconv.ParseInt(num.String(), 10, 64); err == nil {
		return i, true, i >= 0
	}
	f, err := strconv.ParseFloat(num.String(), 64)
	// 2^63 is exactly representable; anything at or above it overflows.
	if err != nil || f < 0 || f >= math.Exp2(63) {
		return 0, false, false
	}
	return int64(f), f == math.Trunc(f), true
}

// errorInfo reads the error fields RunEvents v1 section 4.3 recommends for
// StepFailed and RunFailed. It never returns nil: a failure without details
// is still a failure.
func (p payload) errorInfo() *store.ErrorInfo {
	return &store.ErrorInfo{
		Code:      p.strOr("errorCode"),
		Message:   p.strOr("errorMessage"),
		Retryable: p.boolOr("retryable"),
		Category:  p.strOr("failureCategory"),
		Source:    p.strOr("failureSource"),
	}
}

// artifacts reads payload.artifacts. ok is false when the field is absent
// or not an array; entries without a string uri are skipped, since a
// reference that points nowhere cannot be followed or deduplicated. With
// countOnly the refs are zero values, as many as there would be
// (Options.ArtifactCounts).
func (p payload) artifacts(countOnly bool) (refs []store.ArtifactRef, ok bool) {
	raw, present := p.get("artifacts")
	if !present {
		return nil, false
	}
	// The items and each item's fields are read into buffers on the
	// stack: only the strings taken from them outlive this call.
	var itemBuf [8]json.RawMessage
	var fieldBuf [8]payloadField
	items, fast := fastArray(itemBuf[:0], raw)
	if !fast {
		items = nil
		if err := json.Unmarshal(raw, &items); err != nil || items == nil {
			return nil, false
		}
	}
	refs = make([]store.ArtifactRef, 0, len(items))
	for _, item := range items {
		if !isObject(item) {
			continue // not an artifact reference (a bare string, a number): no decoding will make it one
		}
		f, fast := fastObject(fieldBuf[:0], item)
		if !fast {
			if f = decodePayload(item); f == nil {
				continue
			}
		}
		if countOnly {
			if f.hasStr("uri") {
				refs = append(refs, store.ArtifactRef{})
			}
			continue
		}
		uri, ok := f.str("uri")
		if !ok {
			continue
		}
		ref := store.ArtifactRef{
			URI:       uri,
			Kind:      f.strOr("kind"),
			SHA256:    f.strOr("sha256"),
			ExpiresAt: f.strOr("expiresAt"),
		}
		if raw, ok := f.get("sizeBytes"); ok {
			// sizeBytes is an integer in the contract: a fraction is
			// unreadable rather than truncated.
			if n, whole, ok := nonNegNumber(raw); ok && whole {
				ref.SizeBytes = &n
			}
		}
		refs = append(refs, ref)
	}
	return refs, true
}

// isObject reports whether raw is a JSON object (its first byte past
// white space is '{').
func isObject(raw json.RawMessage) bool {
	i := jsonx.SkipSpace(raw, 0)
	return i < len(raw) && raw[i] == '{'
}

// occurredAt is when the event happened at its source: payload
// sourceOccurredAt when given (RunEvents v1 section 1: source time lives in
// the payload), else the envelope's emittedAt.
func occurredAt(p payload, ev *store.RunEventRecord) string {
	if s, ok := p.str("sourceOccurredAt"); ok {
		return s
	}
	return ev.EmittedAt
}

// elapsedMs returns end-start in whole milliseconds when both parse as RFC
// 3339 and end is not before start. Clock skew between engine workers can
// put a completion before its start; a negative duration is noise, not
// data, so it is left out.
func elapsedMs(start, end string) (*int64, bool) {
	if start == "" || end == "" {
		return nil, false
	}
	t0, err := time.Parse(time.RFC3339Nano, start)
	if err != nil {
		return nil, false
	}
	t1, err := time.Parse(time.RFC3339Nano, end)
	if err != nil {
		return nil, false
	}
	d := t1.Sub(t0)
	if d < 0 {
		return nil, false
	}
	ms := d.Milliseconds()
	return &ms, true
}
