// Package jsonscan is the byte scanner under runstream's one-pass JSON
// decoders (store.DecodeRecord, the reducer's payload reader, the
// projector's snapshot reader): whitespace, single bytes, literals, and
// checking one JSON value and moving past it exactly as encoding/json's
// scanner would accept it. The decoders build on it and give up (leaving
// the input to encoding/json) wherever they are not certain to decode as
// encoding/json does; their fuzz tests compare them with encoding/json.
package jsonscan

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
