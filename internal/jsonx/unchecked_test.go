package jsonx

import (
	"bytes"
	"testing"
)

func TestSkipUnchecked(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int // index after the value; -1: refused
	}{
		{`"abc",`, 5},
		{`"a\"b"}`, 6},
		{`"a\\"}`, 5},
		{`"a\\\"b"]`, 8},
		{`"abc`, -1},
		{`{"a":[1,"]}"],"b":{}},`, 21},
		{`[1,[2,[3]]]`, 11},
		{`{"a":1]`, -1},
		{`[}`, -1},
		{`{"a":1`, -1},
		{`12,`, 2},
		{`true}`, 4},
		{`null `, 4},
		{`12`, -1},
		{`,`, -1},
		{``, -1},
		{`{"a":x!y}`, 9}, // not JSON inside a container: not checked
	} {
		s := Scanner{B: []byte(c.in)}
		ok := s.SkipUnchecked()
		switch {
		case c.want < 0 && (ok || s.I != 0):
			t.Errorf("%q: SkipUnchecked = %v at %d, want refused at 0", c.in, ok, s.I)
		case c.want >= 0 && (!ok || s.I != c.want):
			t.Errorf("%q: SkipUnchecked = %v at %d, want true at %d", c.in, ok, s.I, c.want)
		}
	}
}

// FuzzSkipUnchecked: never a panic; an accepted value ends inside B and
// after where it starts; and where the checked Skip reads a valid value
// followed by a delimiter, SkipUnchecked ends at the same place.
func FuzzSkipUnchecked(f *testing.F) {
	for _, v := range values {
		f.Add([]byte(v + ","))
		f.Add([]byte(v))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		u := Scanner{B: b}
		if u.SkipUnchecked() && (u.I <= 0 || u.I > len(b)) {
			t.Fatalf("%q: SkipUnchecked ended at %d", b, u.I)
		}
		c := Scanner{B: b}
		if !c.Skip(0, MaxDepth) || c.I >= len(b) || !bytes.ContainsRune([]byte(",}] \t\n\r"), rune(b[c.I])) {
			return
		}
		u = Scanner{B: b}
		if !u.SkipUnchecked() || u.I != c.I {
			t.Fatalf("%q: Skip ends at %d, SkipUnchecked at %d (%v)", b, c.I, u.I, u.SkipUnchecked())
		}
	})
}
