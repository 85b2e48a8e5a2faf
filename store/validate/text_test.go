package validate

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"
	"unicode/utf16"

	"github.com/runstream/runstream/store"
)

func TestBadEscape(t *testing.T) {
	for _, tc := range []struct {
		text string
		want int
	}{
		{`"plain"`, -1},
		{`"\n\t\"\\ \/"`, -1},
		{`"\u00e9\u0041\uFFFF\ue000"`, -1},
		{`"\ud83d\ude80"`, -1},
		{`"\uD83D\uDE80\uDBFF\uDFFF\uD800\uDC00"`, -1},
		{`"\\u0000"`, -1},
		{`"\\\\u0000"`, -1},
		{`"\\ud800"`, -1},
		{`"\u0000"`, 1},
		{`"ab\u0000"`, 3},
		{`"\\\u0000"`, 3},
		{`"\ud800"`, 1},
		{`"\udc00"`, 1},
		{`"\udfff"`, 1},
		{`"\ud800x"`, 1},
		{`"\ud800\u0041"`, 1},
		{`"\ud800\ud800\udc00"`, 1},
		{`"\ud83d\ude80\ude80"`, 13},
		{`"\ud800`, 1},
		{`["ok","\u0000"]`, 7},
		{`{"\u0000":1}`, 2},
	} {
		if got := badEscape([]byte(tc.text)); got != tc.want {
			t.Errorf("badEscape(%s) = %d, want %d", tc.text, got, tc.want)
		}
	}
}

// TestBadEscape_AgreesWithUTF16: over pairs of escapes, badEscape flags a
// NUL and exactly the surrogates utf16.DecodeRune cannot pair.
func TestBadEscape_AgreesWithUTF16(t *testing.T) {
	runes := []rune{0, 1, 0x41, 0xd7ff, 0xd800, 0xdbff, 0xdc00, 0xdfff, 0xe000, 0xfffd}
	for _, a := range runes {
		for _, b := range append([]rune{-1}, runes...) {
			text := `"\u` + hex4str(a)
			if b >= 0 {
				text += `\u` + hex4str(b)
			}
			text += `"`
			var want bool
			switch {
			case a == 0 || (utf16.IsSurrogate(a) && a >= 0xdc00):
				want = true
			case utf16.IsSurrogate(a): // a high surrogate
				want = b < 0 || utf16.DecodeRune(a, b) == unicode.ReplacementChar
			default:
				want = b == 0 || (b >= 0 && utf16.IsSurrogate(b))
			}
			if got := badEscape([]byte(text)) >= 0; got != want {
				t.Errorf("badEscape(%s) found=%v, want %v", text, got, want)
			}
		}
	}
}

func hex4str(r rune) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[r>>12&15], digits[r>>8&15], digits[r>>4&15], digits[r&15]})
}

// BenchmarkBadEscape is what step 1's escape check adds to an append:
// the typical body (no "\u"), and one whose producer escapes every
// non-ASCII character (Python's json.dumps does by default).
func BenchmarkBadEscape(b *testing.B) {
	ascii, _ := json.Marshal(map[string]string{"note": "café 🚀 naïve — ünïcødé"})
	escaped := strings.NewReplacer("é", `\u00e9`, "🚀", `\ud83d\ude80`, "ï", `\u00ef`, "—", `\u2014`, "ü", `\u00fc`, "ø", `\u00f8`).Replace(string(ascii))
	m := fields(store.EventStepCompleted)
	m["payload"] = json.RawMessage(escaped)
	for _, bc := range []struct {
		name string
		body []byte
	}{{"typical", typicalBody(b)}, {"escaped", encode(b, m)}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.body)))
			for b.Loop() {
				if badEscape(bc.body) >= 0 {
					b.Fatal("found one")
				}
			}
		})
	}
}
