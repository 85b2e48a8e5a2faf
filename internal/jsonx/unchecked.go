package jsonx

import "bytes"

// SkipUnchecked moves past the value at I without checking that it is
// JSON: a string to its closing (unescaped) quote, found with
// bytes.IndexByte; an object or array to its matching bracket, counting
// brackets outside strings; anything else (a number, true, false, null) to
// the next delimiter (',', '}', ']' or whitespace). It returns false, with
// I unchanged, when the value is empty, its brackets do not match, or it
// does not end before the end of B (a scalar must be followed by a
// delimiter: it is a member's value, never a whole document).
//
// It is for readers of documents runstream wrote itself that only want a
// few fields and skip the rest (snapshots.ParseHead): bytes that are not
// JSON inside a skipped value pass, and a truncated document is refused.
// Where B is valid JSON it ends exactly where [Scanner.Skip] ends
// (FuzzSkipUnchecked), several times faster on long strings.
func (s *Scanner) SkipUnchecked() bool {
	i := skipUnchecked(s.B, s.I)
	if i < 0 {
		return false
	}
	s.I = i
	return true
}

// uncheckedStringEnd returns the index after the string starting at
// b[i] == '"', or -1 when it does not end.
func uncheckedStringEnd(b []byte, i int) int {
	i++
	for {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return -1
		}
		i += q
		// The quote is escaped when an odd number of backslashes precede it.
		n := 0
		for j := i - 1; j >= 0 && b[j] == '\\'; j-- {
			n++
		}
		i++
		if n%2 == 0 {
			return i
		}
	}
}

// skipUnchecked returns the index after the value starting at b[i], or -1
// when the value is empty, unbalanced or does not end.
func skipUnchecked(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return uncheckedStringEnd(b, i)
	case '{', '[':
		var stack []byte
		for i < len(b) {
			switch c := b[i]; c {
			case '"':
				i = uncheckedStringEnd(b, i)
				if i < 0 {
					return -1
				}
				continue
			case '{', '[':
				stack = append(stack, c)
			case '}', ']':
				if len(stack) == 0 {
					return -1
				}
				open := stack[len(stack)-1]
				if (c == '}') != (open == '{') {
					return -1
				}
				stack = stack[:len(stack)-1]
				if len(stack) == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	default:
		start := i
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\n', '\t', '\r':
				if i == start {
					return -1
				}
				return i
			}
			i++
		}
		return -1
	}
}
