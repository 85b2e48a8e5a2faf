package reduce

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/runstream/runstream/internal/jsonscan"
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

// maxFastDepth bounds the nesting the fast readers follow.
const maxFastDepth = 200

// fastObject reads a JSON object's top-level fields, as
// json.Unmarshal(raw, &payload) would; ok is false when it gave up. The
// values are slices of raw.
func fastObject(raw []byte) (p payload, ok bool) {
	s := scanner{jsonscan.Scanner{B: raw}}
	s.WS()
	if !s.Eat('{') {
		return nil, false
	}
	p = payload{}
	s.WS()
	if s.Eat('}') {
		return p, s.End()
	}
	for {
		s.WS()
		ks, ke, ok := s.plainString()
		if !ok {
			return nil, false
		}
		s.WS()
		if !s.Eat(':') {
			return nil, false
		}
		s.WS()
		vs := s.I
		if !s.Skip(0, maxFastDepth) {
			return nil, false
		}
		p[string(raw[ks:ke])] = json.RawMessage(raw[vs:s.I:s.I])
		s.WS()
		if s.Eat(',') {
			continue
		}
		if s.Eat('}') {
			return p, s.End()
		}
		return nil, false
	}
}

// fastArray reads a JSON array's elements, as json.Unmarshal(raw,
// &[]json.RawMessage) would; ok is false when it gave up.
func fastArray(raw []byte) (items []json.RawMessage, ok bool) {
	s := scanner{jsonscan.Scanner{B: raw}}
	s.WS()
	if !s.Eat('[') {
		return nil, false
	}
	items = []json.RawMessage{}
	s.WS()
	if s.Eat(']') {
		return items, s.End()
	}
	for {
		s.WS()
		vs := s.I
		if !s.Skip(0, maxFastDepth) {
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
	s := scanner{jsonscan.Scanner{B: raw}}
	s.WS()
	start, end, ok := s.plainString()
	if !ok || !s.End() {
		return "", false
	}
	return string(raw[start:end]), true
}

type scanner struct {
	jsonscan.Scanner
}

// plainString reads a string without escapes or control characters, in
// valid UTF-8, and returns the bounds of its contents.
func (s *scanner) plainString() (start, end int, ok bool) {
	if !s.Eat('"') {
		return 0, 0, false
	}
	start = s.I
	ascii := true
	for s.I < len(s.B) {
		c := s.B[s.I]
		switch {
		case c == '"':
			end = s.I
			s.I++
			if !ascii && !utf8.Valid(s.B[start:end]) {
				return 0, 0, false
			}
			return start, end, true
		case c == '\\' || c < 0x20:
			return 0, 0, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
		s.I++
	}
	return 0, 0, false
}
