package reduce

import (
	"encoding/json"

	"github.com/runstream/runstream/internal/jsonx"
)

// Fast paths for reading payloads. encoding/json's reflection made
// reading payloads most of the reducer's cost (and of a bulk loader's:
// the analytics ETL folds every event). These readers handle the common
// case, payloads as producers write them, with one pass and without
// copying; anything they are not certain to read exactly as encoding/json
// would (escapes in a key or a string, invalid UTF-8, null where a
// container is expected, deep nesting, invalid JSON) makes them give up,
// and the caller falls back to encoding/json. So the reducer's behaviour
// is unchanged; FuzzFastJSON checks each against encoding/json.

// fastObject reads a JSON object's top-level fields, as decodePayload
// (json.Unmarshal into a map) would, appending them to dst[:0] (nil: a
// fresh slice); ok is false when it gave up. The keys and values are
// slices of raw.
func fastObject(dst payload, raw []byte) (p payload, ok bool) {
	p = dst[:0]
	if p == nil {
		p = make(payload, 0, 8)
	}
	o := jsonx.NewObject(raw, jsonx.MaxDepth)
	for o.Next() {
		p = append(p, payloadField{key: raw[o.KeyStart:o.KeyEnd:o.KeyEnd], raw: json.RawMessage(raw[o.ValueStart:o.ValueEnd:o.ValueEnd])})
	}
	if !o.OK() {
		return nil, false
	}
	return p, true
}

// fastArray reads a JSON array's elements, as json.Unmarshal(raw,
// &[]json.RawMessage) would, appending them to dst[:0] (nil: a fresh
// slice); ok is false when it gave up.
func fastArray(dst []json.RawMessage, raw []byte) (items []json.RawMessage, ok bool) {
	s := scanner{jsonx.Scanner{B: raw}}
	s.WS()
	if !s.Eat('[') {
		return nil, false
	}
	items = dst[:0]
	if items == nil {
		items = []json.RawMessage{}
	}
	s.WS()
	if s.Eat(']') {
		return items, s.End()
	}
	for {
		s.WS()
		vs := s.I
		if !s.Skip(0, jsonx.MaxDepth) {
			return nil, false
		}
		items = append(items, json.RawMessage(raw[vs:s.I:s.I]))
		s.WS()
		if s.Eat(',') {
			continue
		}
		if s.Eat(']') {
			return items, s.End()
		}
		return nil, false
	}
}

// fastString reads raw as a JSON string without escapes (valid UTF-8, no
// control characters), as json.Unmarshal(raw, &string) would; ok is false
// when it gave up.
func fastString(raw []byte) (string, bool) {
	start, end, ok := plainString(raw)
	if !ok {
		return "", false
	}
	return string(raw[start:end]), true
}

// plainString is fastString without making the string: the contents are
// raw[start:end].
func plainString(raw []byte) (start, end int, ok bool) {
	s := scanner{jsonx.Scanner{B: raw}}
	s.WS()
	start, end, ok = s.PlainString()
	if !ok || !s.End() {
		return 0, 0, false
	}
	return start, end, true
}

type scanner struct {
	jsonx.Scanner
}
