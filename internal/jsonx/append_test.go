package jsonx

import (
	"bytes"
	"encoding/json"
	"testing"
)

var rawCases = []string{
	`{"a": 1, "b": [true, false, null], "c": {"d": "e f"}}`,
	`{"rows": [{"status": "success", "unique_id": "model.x"}], "n": -1.5e3}`,
	`{"html": "<b>&amp;</b>", "q": "say \"hi\"", "u": "caf\u00e9", "esc": "a\\b\/c"}`,
	"{\"utf8\": \"caf\u00e9 \u2028\"}",
	"  [1 ,\n\t2 ]  ",
	`"just a string"`,
	`12`,
	`{}`,
	`{"a": "unterminated}`,
	`{"a": "trailing backslash\`,
	``,
	`   `,
	`{"a": 1}}`,
}

func TestAppendRaw_EqualsEncodingJSON(t *testing.T) {
	for _, c := range rawCases {
		checkRaw(t, []byte(c))
	}
}

func checkRaw(t *testing.T, raw []byte) {
	t.Helper()
	want, werr := json.Marshal(json.RawMessage(raw))
	got, gerr := AppendRaw([]byte("prefix"), raw)
	if werr != nil {
		if gerr == nil && json.Valid(raw) {
			t.Fatalf("%q: got %q, want encoding/json's error %v", raw, got, werr)
		}
		if gerr != nil && !bytes.Equal(got, []byte("prefix")) {
			t.Fatalf("%q: on error the buffer must be left as it was, got %q", raw, got)
		}
		return
	}
	if gerr != nil || !bytes.Equal(got, append([]byte("prefix"), want...)) {
		t.Fatalf("%q:\n got %q, %v\nwant prefix%q", raw, got, gerr, want)
	}
}

func TestAppendString_EqualsEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "a\"b", "a\\b", "<>&", "caf\u00e9", "\u2028", "\x00\x1f", "\xff"} {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
	}
}

func FuzzAppendRaw(f *testing.F) {
	for _, c := range rawCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkRaw(t, raw)
	})
}

func FuzzAppendString(f *testing.F) {
	f.Add("plain")
	f.Add("<a href=\"x\">\u2028</a>")
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
	})
}
