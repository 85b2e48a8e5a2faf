package jsonx

import (
	"encoding/json"
	"testing"
)

var values = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `-1.5e+3`, `1E2`, `true`, `false`, `null`,
	`{"a":[1,{"b":"c\"d\\e\u00e9"}],"f":null}`, ` [ 1 , 2 ] `, "\"\xff\"",
	`01`, `1.`, `.5`, `-`, `1e`, `+1`, `"\x"`, `"\u12"`, `"a`, `{"a"}`, `{"a":1,}`, `[1,]`,
	`tru`, `nul`, `{"a":1}}`, "\"tab\tinside\"", ``, `   `,
}

// accepts is what Skip says of b as a whole document.
func accepts(b []byte) bool {
	s := Scanner{B: b}
	s.WS()
	return s.Skip(0, 10000) && s.End()
}

func TestSkip_AgreesWithJSONValid(t *testing.T) {
	for _, v := range values {
		if got, want := accepts([]byte(v)), json.Valid([]byte(v)); got != want {
			t.Errorf("%q: Skip accepts %v, json.Valid %v", v, got, want)
		}
	}
}

func TestSkip_DepthLimit(t *testing.T) {
	// The 1 is at depth 3 (the outer array's elements are at depth 1).
	s := Scanner{B: []byte(`[[[1]]]`)}
	if s.Skip(0, 2) {
		t.Fatal("a value at depth 3 accepted with a limit of 2")
	}
	s = Scanner{B: []byte(`[[[1]]]`)}
	if !s.Skip(0, 3) || s.I != 7 {
		t.Fatalf("a value at depth 3 refused with a limit of 3 (at %d)", s.I)
	}
}

func FuzzSkip(f *testing.F) {
	for _, v := range values {
		f.Add([]byte(v))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := accepts(b), json.Valid(b); got != want {
			t.Fatalf("%q: Skip accepts %v, json.Valid %v", b, got, want)
		}
	})
}

func TestPlainString(t *testing.T) {
	for in, want := range map[string]string{
		`"abc"x`:     "abc",
		`"café"`:     "café",
		`""`:         "",
		`"a\"b"`:     "!",
		"\"\xff\"":   "!",
		"\"tab\t\"":  "!",
		`"unclosed`:  "!",
		`notastring`: "!",
	} {
		s := Scanner{B: []byte(in)}
		start, end, ok := s.PlainString()
		got := "!"
		if ok {
			got = in[start:end]
		}
		if got != want {
			t.Errorf("PlainString(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestObject(t *testing.T) {
	type member struct{ key, value string }
	read := func(doc string) ([]member, bool) {
		var got []member
		o := NewObject([]byte(doc), 10)
		for o.Next() {
			got = append(got, member{doc[o.KeyStart:o.KeyEnd], doc[o.ValueStart:o.ValueEnd]})
		}
		return got, o.OK()
	}
	got, ok := read(` { "a" : 1 , "b":{"c":[2, "x"]}, "a":"y" } `)
	want := []member{{"a", "1"}, {"b", `{"c":[2, "x"]}`}, {"a", `"y"`}}
	if !ok || len(got) != len(want) {
		t.Fatalf("got %v, %v; want %v", got, ok, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("member %d = %v, want %v", i, got[i], want[i])
		}
	}
	if got, ok := read(`{}`); !ok || len(got) != 0 {
		t.Fatalf("{}: %v, %v", got, ok)
	}
	for _, doc := range []string{``, `[]`, `{"a\u0062":1}`, `{"a":1,}`, `{"a":1} x`, `{"a" 1}`, `{"a":tru}`, `{"a":[[[[[[[[[[[[1]]]]]]]]]]]]}`} {
		if _, ok := read(doc); ok {
			t.Errorf("Object accepted %s", doc)
		}
	}
}
