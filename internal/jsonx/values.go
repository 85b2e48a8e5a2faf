package jsonx

import (
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// Int64 reads an integer literal that fits an int64: no fraction and no
// exponent (encoding/json refuses those for an int64 field, with its own
// error), no leading zero. ok is false, with I anywhere, for anything else.
func (s *Scanner) Int64() (v int64, ok bool) {
	start := s.I
	neg := s.Eat('-')
	digits := s.I
	n := s.Digits()
	if n == 0 || (n > 1 && s.B[digits] == '0') {
		return 0, false
	}
	if s.I < len(s.B) {
		if c := s.B[s.I]; c == '.' || c == 'e' || c == 'E' {
			return 0, false
		}
	}
	if n > 18 { // 18 digits always fit; longer ones may overflow
		v, err := strconv.ParseInt(string(s.B[start:s.I]), 10, 64)
		return v, err == nil
	}
	for _, c := range s.B[digits:s.I] {
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// ASCIIKey reads an object key of ASCII bytes without escapes and returns
// where its contents start and end in B. A key with anything else is left
// to encoding/json, which matches field names case-insensitively under
// Unicode folding.
func (s *Scanner) ASCIIKey() (start, end int, ok bool) {
	if start, end, ok = s.PlainString(); !ok {
		return 0, 0, false
	}
	for _, c := range s.B[start:end] {
		if c >= utf8.RuneSelf {
			return 0, 0, false
		}
	}
	return start, end, true
}

// Unquote reads a string and unescapes it as encoding/json does. It gives
// up on invalid UTF-8 and on \u escapes of lone surrogates (encoding/json
// replaces those with U+FFFD; the caller leaves them to it). A string with
// escapes is unescaped by jsontext, which does it in about half our own
// loop's time (BenchmarkUnquote) and refuses what encoding/json would
// replace; FuzzUnquote holds the result to encoding/json's.
func (s *Scanner) Unquote() (string, bool) {
	begin := s.I
	start, end, ok := s.PlainString()
	if ok {
		return string(s.B[start:end]), true
	}
	s.I = begin
	if !s.SkipString() {
		return "", false
	}
	out, err := jsontext.AppendUnquote(nil, s.B[begin:s.I])
	if err != nil || !utf8.Valid(out) {
		return "", false
	}
	return string(out), true
}
