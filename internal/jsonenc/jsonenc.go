// Package jsonenc appends JSON the way encoding/json's Marshal writes it,
// byte for byte, without reflection, for the hot paths that encode one
// fixed shape many times (the relay's Kafka values). The common case (plain
// ASCII) is handled here; anything else is handed to encoding/json itself,
// so the output never differs from json.Marshal's.
package jsonenc

import "encoding/json"

// plain[c]: encoding/json writes byte c of a string as it is (it escapes
// '"', '\\', control characters, and '<', '>', '&' for HTML safety).
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// AppendString appends s as json.Marshal(s) writes it.
func AppendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !plain[s[i]] {
			enc, _ := json.Marshal(s) // a string always encodes
			return append(b, enc...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// AppendRaw appends raw, a valid JSON value, as json.Marshal writes a
// json.RawMessage: compacted (no insignificant whitespace) and with '<',
// '>', '&', U+2028 and U+2029 escaped. The fast path copies ASCII JSON
// (such as Postgres's jsonb text) dropping the whitespace between tokens;
// a value with a byte it does not copy as is goes to encoding/json, which
// also reports an invalid one.
func AppendRaw(b []byte, raw []byte) ([]byte, error) {
	start := len(b)
	inString := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if inString {
			switch {
			case c == '"':
				inString = false
			case c == '\\':
				// Copy the escape and the byte it escapes; an escape that
				// ends the value is invalid: let encoding/json say so.
				if i+1 >= len(raw) || raw[i+1] >= 0x80 {
					return slow(b[:start], raw)
				}
				b = append(b, c)
				i++
				c = raw[i]
			case !plain[c]:
				return slow(b[:start], raw)
			}
			b = append(b, c)
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '"':
			inString = true
		default:
			if c >= 0x80 || c < 0x20 {
				return slow(b[:start], raw)
			}
		}
		b = append(b, c)
	}
	if inString || len(b) == start {
		return slow(b[:start], raw)
	}
	return b, nil
}

func slow(b []byte, raw []byte) ([]byte, error) {
	enc, err := json.Marshal(json.RawMessage(raw))
	if err != nil {
		return b, err
	}
	return append(b, enc...), nil
}
