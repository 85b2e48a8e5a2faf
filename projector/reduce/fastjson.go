package reduce

import (
	"encoding/json"
	"unicode/utf8"
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
	s := scanner{b: raw}
	s.ws()
	if !s.eat('{') {
		return nil, false
	}
	p = payload{}
	s.ws()
	if s.eat('}') {
		return p, s.end()
	}
	for {
		s.ws()
		ks, ke, ok := s.plainString()
		if !ok {
			return nil, false
		}
		s.ws()
		if !s.eat(':') {
			return nil, false
		}
		s.ws()
		vs := s.i
		if !s.value(0) {
			return nil, false
		}
		p[string(raw[ks:ke])] = json.RawMessage(raw[vs:s.i:s.i])
		s.ws()
		if s.eat(',') {
			continue
		}
		if s.eat('}') {
			return p, s.end()
		}
		return nil, false
	}
}

// fastArray reads a JSON array's elements, as json.Unmarshal(raw,
// &[]json.RawMessage) would; ok is false when it gave up.
func fastArray(raw []byte) (items []json.RawMessage, ok bool) {
	s := scanner{b: raw}
	s.ws()
	if !s.eat('[') {
		return nil, false
	}
	items = []json.RawMessage{}
	s.ws()
	if s.eat(']') {
		return items, s.end()
	}
	for {
		s.ws()
		vs := s.i
		if !s.value(0) {
			return nil, false
		}
		items = append(items, json.RawMessage(raw[vs:s.i:s.i]))
		s.ws()
		if s.eat(',') {
			continue
		}
		if s.eat(']') {
			return items, s.end()
		}
		return nil, false
	}
}

// fastString reads raw as a JSON string without escapes (valid UTF-8, no
// control characters), as json.Unmarshal(raw, &string) would; ok is false
// when it gave up.
func fastString(raw []byte) (string, bool) {
	s := scanner{b: raw}
	s.ws()
	start, end, ok := s.plainString()
	if !ok || !s.end() {
		return "", false
	}
	return string(raw[start:end]), true
}

type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *scanner) end() bool {
	s.ws()
	return s.i == len(s.b)
}

// plainString reads a string without escapes or control characters, in
// valid UTF-8, and returns the bounds of its contents.
func (s *scanner) plainString() (start, end int, ok bool) {
	if !s.eat('"') {
		return 0, 0, false
	}
	start = s.i
	ascii := true
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			end = s.i
			s.i++
			if !ascii && !utf8.Valid(s.b[start:end]) {
				return 0, 0, false
			}
			return start, end, true
		case c == '\\' || c < 0x20:
			return 0, 0, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
		s.i++
	}
	return 0, 0, false
}

// value checks one JSON value and moves past it.
func (s *scanner) value(depth int) bool {
	if s.i >= len(s.b) || depth > maxFastDepth {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '{':
		s.i++
		s.ws()
		if s.eat('}') {
			return true
		}
		for {
			s.ws()
			if !s.string() {
				return false
			}
			s.ws()
			if !s.eat(':') {
				return false
			}
			s.ws()
			if !s.value(depth + 1) {
				return false
			}
			s.ws()
			if s.eat(',') {
				continue
			}
			return s.eat('}')
		}
	case c == '[':
		s.i++
		s.ws()
		if s.eat(']') {
			return true
		}
		for {
			s.ws()
			if !s.value(depth + 1) {
				return false
			}
			s.ws()
			if s.eat(',') {
				continue
			}
			return s.eat(']')
		}
	case c == '"':
		return s.string()
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return false
}

func (s *scanner) literal(lit string) bool {
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

// string checks a JSON string as encoding/json's scanner does: no control
// characters, valid escapes; any other byte is accepted.
func (s *scanner) string() bool {
	if !s.eat('"') {
		return false
	}
	for s.i < len(s.b) {
		c := s.b[s.i]
		s.i++
		switch {
		case c == '"':
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if s.i >= len(s.b) {
				return false
			}
			e := s.b[s.i]
			s.i++
			switch e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(s.b)-s.i < 4 {
					return false
				}
				for _, h := range s.b[s.i : s.i+4] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return false
					}
				}
				s.i += 4
			default:
				return false
			}
		}
	}
	return false
}

// number checks -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() bool {
	s.eat('-')
	switch {
	case s.eat('0'):
	case s.i < len(s.b) && s.b[s.i] >= '1' && s.b[s.i] <= '9':
		s.digits()
	default:
		return false
	}
	if s.eat('.') && s.digits() == 0 {
		return false
	}
	if s.eat('e') || s.eat('E') {
		if !s.eat('+') {
			s.eat('-')
		}
		if s.digits() == 0 {
			return false
		}
	}
	return true
}

func (s *scanner) digits() int {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i - start
}
