package jsonx

import (
	"encoding/json"
	"testing"
)

var stringValues = []string{
	`""`, `"plain"`, `"é"`, `"a\"b"`, `"\\"`, `"\/"`, `"\b\f\n\r\t"`, `"\u00e9"`, `"\u20AC"`,
	`"\ud83d\ude00"`, `"\ud800"`, "\"\xff\"", "\"tab\tinside\"", `"\x"`, `"\u12"`, `"open`, `x`,
}

// TestUnquote_AgreesWithEncodingJSON: whatever Unquote reads, it reads as
// json.Unmarshal does, and it reads every string without surrogate
// escapes or invalid UTF-8.
func TestUnquote_AgreesWithEncodingJSON(t *testing.T) {
	for _, v := range stringValues {
		checkUnquote(t, []byte(v))
	}
	mustRead := []string{`"plain"`, `"a\"b"`, `"\u00e9"`, `"\b\f\n\r\t"`, `"é"`}
	for _, v := range mustRead {
		s := Scanner{B: []byte(v)}
		if _, ok := s.Unquote(); !ok || s.I != len(v) {
			t.Errorf("Unquote(%s) gave up at %d", v, s.I)
		}
	}
}

func checkUnquote(t *testing.T, b []byte) {
	t.Helper()
	s := Scanner{B: b}
	got, ok := s.Unquote()
	if !ok {
		return
	}
	var want string
	if err := json.Unmarshal(b[:s.I], &want); err != nil {
		t.Fatalf("Unquote(%q) = %q, but encoding/json rejects it: %v", b, got, err)
	}
	if got != want {
		t.Fatalf("Unquote(%q) = %q, encoding/json %q", b, got, want)
	}
}

func TestInt64_AgreesWithEncodingJSON(t *testing.T) {
	for _, v := range []string{"0", "-0", "7", "-42", "9223372036854775807", "-9223372036854775808",
		"9223372036854775808", "123456789012345678", "1234567890123456789", "01", "1.5", "1e3", "-", ""} {
		checkInt64(t, []byte(v))
	}
	s := Scanner{B: []byte("-9223372036854775808")}
	if v, ok := s.Int64(); !ok || v != -9223372036854775808 {
		t.Fatalf("Int64 of the smallest int64 = %d, %v", v, ok)
	}
}

func checkInt64(t *testing.T, b []byte) {
	t.Helper()
	s := Scanner{B: b}
	got, ok := s.Int64()
	if !ok {
		return
	}
	var want int64
	if err := json.Unmarshal(b[:s.I], &want); err != nil {
		t.Fatalf("Int64(%q) = %d, but encoding/json rejects it: %v", b, got, err)
	}
	if got != want {
		t.Fatalf("Int64(%q) = %d, encoding/json %d", b, got, want)
	}
}

func FuzzUnquote(f *testing.F) {
	for _, v := range stringValues {
		f.Add([]byte(v))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkUnquote(t, b) })
}

func FuzzInt64(f *testing.F) {
	for _, v := range []string{"0", "-12", "9223372036854775807", "1e3"} {
		f.Add([]byte(v))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkInt64(t, b) })
}

// TestEachMember_CutsValidDocuments: the members EachMember cuts from a
// valid object are the ones encoding/json decodes, in order.
func TestEachMember_CutsValidDocuments(t *testing.T) {
	doc := []byte(` { "a" : [1, {"b": "}"}] , "c\"" :"x", "d":{"e":[[]]} , "f": -1.5e3 } `)
	var want map[string]json.RawMessage
	if err := json.Unmarshal(doc, &want); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	var order []string
	EachMember(doc[SkipSpace(doc, 0):], func(key, raw []byte) {
		var k string
		if err := json.Unmarshal(key, &k); err != nil {
			t.Fatalf("key %q: %v", key, err)
		}
		got[k] = string(raw)
		order = append(order, k)
	})
	if len(got) != len(want) {
		t.Fatalf("members %v, want %d", order, len(want))
	}
	for k, v := range want {
		if got[k] != string(v) {
			t.Errorf("member %q = %q, want %q", k, got[k], v)
		}
	}
	if order[0] != "a" || order[3] != "f" {
		t.Errorf("order %v", order)
	}
}
