package jsonx

import "unicode/utf8"

// Scanner reads B from I.
type Scanner struct {
	B []byte
	I int
}

// WS skips JSON whitespace.
func (s *Scanner) WS() {
	for s.I < len(s.B) {
		switch s.B[s.I] {
		case ' ', '\t', '\n', '\r':
			s.I++
		default:
			return
		}
	}
}

// Eat consumes c when it is next.
func (s *Scanner) Eat(c byte) bool {
	if s.I < len(s.B) && s.B[s.I] == c {
		s.I++
		return true
	}
	return false
}

// End reports whether only whitespace is left.
func (s *Scanner) End() bool {
	s.WS()
	return s.I == len(s.B)
}

// Literal consumes lit when it is next.
func (s *Scanner) Literal(lit string) bool {
	if len(s.B)-s.I >= len(lit) && string(s.B[s.I:s.I+len(lit)]) == lit {
		s.I += len(lit)
		return true
	}
	return false
}

// PlainString reads a string without escapes or control characters whose
// contents are valid UTF-8 (what encoding/json would copy unchanged), and
// returns where its contents start and end in B. ok is false for any other
// string (which the caller leaves to encoding/json) or no string at all.
func (s *Scanner) PlainString() (start, end int, ok bool) {
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

// Object reads a document holding one JSON object whose keys are plain
// strings (see PlainString), member by member:
//
//	o := jsonx.NewObject(b, jsonx.MaxDepth)
//	for o.Next() {
//		key, value := b[o.KeyStart:o.KeyEnd], b[o.ValueStart:o.ValueEnd]
//	}
//	if !o.OK() { ... }
//
// Values are checked as Skip checks them (up to maxDepth). Anything else
// (a key with escapes, invalid JSON, trailing data) ends the members early
// and makes OK false. An iterator rather than a callback: it runs on every
// payload the reducer reads, where a call through a func value per member
// made BenchmarkProject ~9% slower.
type Object struct {
	s        Scanner
	maxDepth int
	state    int8 // 0: before the first member, 1: after one, 2: done, -1: failed
	// KeyStart and KeyEnd bound the current member's key contents (the
	// bytes between the quotes), ValueStart and ValueEnd its value.
	KeyStart, KeyEnd, ValueStart, ValueEnd int
}

// NewObject starts reading b.
func NewObject(b []byte, maxDepth int) Object {
	o := Object{s: Scanner{B: b}, maxDepth: maxDepth}
	o.s.WS()
	if !o.s.Eat('{') {
		o.state = -1
		return o
	}
	o.s.WS()
	if o.s.Eat('}') {
		o.end()
	}
	return o
}

func (o *Object) end() {
	if o.s.End() {
		o.state = 2
	} else {
		o.state = -1
	}
}

// Next moves to the next member; false when there is none left or the
// input is not what Object reads (see OK).
func (o *Object) Next() bool {
	switch o.state {
	case 1:
		o.s.WS()
		if o.s.Eat('}') {
			o.end()
			return false
		}
		if !o.s.Eat(',') {
			o.state = -1
			return false
		}
	case 0:
	default:
		return false
	}
	o.s.WS()
	ks, ke, ok := o.s.PlainString()
	if !ok {
		o.state = -1
		return false
	}
	o.s.WS()
	if !o.s.Eat(':') {
		o.state = -1
		return false
	}
	o.s.WS()
	vs := o.s.I
	if !o.s.Skip(0, o.maxDepth) {
		o.state = -1
		return false
	}
	o.KeyStart, o.KeyEnd, o.ValueStart, o.ValueEnd = ks, ke, vs, o.s.I
	o.state = 1
	return true
}

// OK reports, once Next returned false, whether the document was one
// object read to its end.
func (o *Object) OK() bool { return o.state == 2 }

// Skip checks one JSON value at nesting depth (0 for a document's value;
// a container's elements are one deeper) and moves past it; a value deeper
// than maxDepth makes it give up.
func (s *Scanner) Skip(depth, maxDepth int) bool {
	if s.I >= len(s.B) || depth > maxDepth {
		return false
	}
	switch c := s.B[s.I]; {
	case c == '{':
		s.I++
		s.WS()
		if s.Eat('}') {
			return true
		}
		for {
			s.WS()
			if !s.SkipString() {
				return false
			}
			s.WS()
			if !s.Eat(':') {
				return false
			}
			s.WS()
			if !s.Skip(depth+1, maxDepth) {
				return false
			}
			s.WS()
			if s.Eat(',') {
				continue
			}
			return s.Eat('}')
		}
	case c == '[':
		s.I++
		s.WS()
		if s.Eat(']') {
			return true
		}
		for {
			s.WS()
			if !s.Skip(depth+1, maxDepth) {
				return false
			}
			s.WS()
			if s.Eat(',') {
				continue
			}
			return s.Eat(']')
		}
	case c == '"':
		return s.SkipString()
	case c == '-' || (c >= '0' && c <= '9'):
		return s.SkipNumber()
	case c == 't':
		return s.Literal("true")
	case c == 'f':
		return s.Literal("false")
	case c == 'n':
		return s.Literal("null")
	}
	return false
}

// SkipString checks a JSON string as encoding/json's scanner does: no
// control characters, valid escapes; any other byte, even invalid UTF-8,
// is accepted.
func (s *Scanner) SkipString() bool {
	if !s.Eat('"') {
		return false
	}
	for s.I < len(s.B) {
		c := s.B[s.I]
		s.I++
		switch {
		case c == '"':
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if s.I >= len(s.B) {
				return false
			}
			e := s.B[s.I]
			s.I++
			switch e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(s.B)-s.I < 4 {
					return false
				}
				for _, h := range s.B[s.I : s.I+4] {
					if !IsHex(h) {
						return false
					}
				}
				s.I += 4
			default:
				return false
			}
		}
	}
	return false
}

// SkipNumber checks -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *Scanner) SkipNumber() bool {
	s.Eat('-')
	switch {
	case s.Eat('0'):
	case s.I < len(s.B) && s.B[s.I] >= '1' && s.B[s.I] <= '9':
		s.Digits()
	default:
		return false
	}
	if s.Eat('.') && s.Digits() == 0 {
		return false
	}
	if s.Eat('e') || s.Eat('E') {
		if !s.Eat('+') {
			s.Eat('-')
		}
		if s.Digits() == 0 {
			return false
		}
	}
	return true
}

// Digits consumes decimal digits and says how many.
func (s *Scanner) Digits() int {
	start := s.I
	for s.I < len(s.B) && s.B[s.I] >= '0' && s.B[s.I] <= '9' {
		s.I++
	}
	return s.I - start
}

// IsHex reports whether c is a hexadecimal digit.
func IsHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}
