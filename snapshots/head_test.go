package snapshots

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// realSnapshot is the JSON of a reduced generated run, as the projector
// stores it.
func realSnapshot(t testing.TB, tenant string, seed uint64, stale bool) []byte {
	snap := reducedRun(rand.New(rand.NewPCG(seed, 1)), tenant)
	snap.Stale = stale
	b, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseHead_AgreesWithEncodingJSON(t *testing.T) {
	cases := []string{
		`{"tenantId":"t1","lastEventSeq":42,"stale":true}`,
		`{"stale":false,"steps":[{"a":"x\"]}"},[1,{"b":null}]],"lastEventSeq":7,"tenantId":"t"}`,
		` { "tenantId" : "t" , "lastEventSeq" : 0 } `,
		`{"tenantId":null,"lastEventSeq":null,"stale":null}`,
		`{"TenantID":"upper","lastEventSeq":1}`,               // case-insensitive match: encoding/json's answer
		`{"tenantId":"a","tenantId":"b"}`,                     // duplicate: last wins
		`{"tenantId":"caf\u00e9","lastEventSeq":3}`,           // escape in the value
		`{"tenantId":"t","lastEventSeq":-0}`,                  // valid JSON number
		`{"tenantId":"t","lastEventSeq":1e3}`,                 // not an int64: error
		`{"tenantId":"t","lastEventSeq":9223372036854775808}`, // overflows: error
		`{"tenantId":"t","stale":"yes"}`,                      // wrong type: error
		`{"tenantId":"t","x":"a\\"}`,                          // escaped backslash before the quote
		`{"tenantId":"t","lastEventSeq":5`,                    // truncated: error
		`{"tenantId":"t"} x`,                                  // trailing junk: error
		`[1,2]`,
		`{}`,
		``,
	}
	for _, c := range cases {
		checkHead(t, []byte(c))
	}
	for _, c := range []string{`{"tenantId":"t","lastEventSeq":5`, `{"tenantId":"t"} x`, `{"tenantId":"t","steps":[{"a":1}`, `{"x":"unterminated}`} {
		if h, err := ParseHead([]byte(c)); err == nil {
			t.Fatalf("%q: got %+v, want an error (truncated or trailing bytes)", c, h)
		}
	}
	for seed := range uint64(20) {
		for _, tenant := range []string{"tenant_a", "tenant_\"q\""} {
			b := realSnapshot(t, tenant, seed, seed%2 == 0)
			checkHead(t, b)
			h, err := ParseHead(b)
			if err != nil || h.Stale != (seed%2 == 0) || h.LastEventSeq == 0 || h.TenantID != tenant {
				t.Fatalf("seed %d: %+v, %v", seed, h, err)
			}
		}
		if _, ok := parseHeadFast(realSnapshot(t, "tenant_a", seed, false)); !ok {
			t.Fatalf("seed %d: the fast path declined a snapshot as the projector writes it", seed)
		}
	}
}

// checkHead: whenever encoding/json accepts b, ParseHead gives the
// same head; whenever encoding/json refuses a truncated or mis-typed b,
// ParseHead refuses it too unless the bad bytes are inside a value
// it skips.
func checkHead(t *testing.T, b []byte) {
	t.Helper()
	var want Head
	werr := json.Unmarshal(b, &want)
	got, gerr := ParseHead(b)
	if werr == nil {
		if gerr != nil || got != want {
			t.Fatalf("%q: got %+v, %v; encoding/json %+v", b, got, gerr, want)
		}
		return
	}
	if gerr == nil && json.Valid(b) {
		// Valid JSON that encoding/json refused (a type error): the fast path
		// must have declined too.
		t.Fatalf("%q: got %+v, want encoding/json's error %v", b, got, werr)
	}
}

func FuzzParseHead(f *testing.F) {
	f.Add([]byte(`{"tenantId":"t1","lastEventSeq":42,"stale":true}`))
	f.Add([]byte(`{"steps":[{"a":"x\"]}"}],"lastEventSeq":7,"tenantId":"t","stale":false}`))
	f.Add([]byte(`{"tenantId":"a","tenantId":"b","STALE":true}`))
	f.Add(realSnapshot(f, "tenant_a", 1, true))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkHead(t, b)
	})
}

func BenchmarkParseHead(b *testing.B) {
	body := realSnapshot(b, "tenant_a", 3, false)
	b.SetBytes(int64(len(body)))
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			if _, err := ParseHead(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			var h Head
			if err := json.Unmarshal(body, &h); err != nil {
				b.Fatal(err)
			}
		}
	})
}
