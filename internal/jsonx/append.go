// The appenders write JSON the way encoding/json's Marshal writes it,
// byte for byte, without reflection, for the hot paths that encode one
// fixed shape many times (the relay's Kafka values, snapshots, change
// notifications). The common case (plain ASCII) is handled here; anything
// else is handed to encoding/json itself, so the output never differs from
// json.Marshal's.

package jsonx

import (
	"encoding/json"

	"github.com/go-json-experiment/json/jsontext"
)

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
// '>', '&', U+2028 and U+2029 escaped. jsontext's Value.Compact does that
// (escapes and invalid UTF-8 are kept as written, as encoding/json keeps
// them) at a quarter of encoding/json's cost, as fast as the copier this
// package had (BenchmarkAppendRaw); whatever it refuses goes to
// encoding/json, which also reports an invalid value. FuzzAppendRaw holds
// the result to json.Marshal's, byte for byte.
func AppendRaw(b []byte, raw []byte) ([]byte, error) {
	start := len(b)
	b = append(b, raw...)
	v := jsontext.Value(b[start:])
	if err := v.Compact(rawMessageFormat...); err != nil {
		return slow(b[:start], raw)
	}
	return append(b[:start], v...), nil // a copy onto itself unless escaping grew it
}

// rawMessageFormat makes jsontext format as encoding/json's compact does.
var rawMessageFormat = []jsontext.Options{
	jsontext.EscapeForHTML(true),
	jsontext.EscapeForJS(true),
	jsontext.AllowInvalidUTF8(true),
	jsontext.AllowDuplicateNames(true),
}

func slow(b []byte, raw []byte) ([]byte, error) {
	enc, err := json.Marshal(json.RawMessage(raw))
	if err != nil {
		return b, err
	}
	return append(b, enc...), nil
}
