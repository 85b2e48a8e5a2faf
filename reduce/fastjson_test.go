package reduce

import (
	"encoding/json"
	"reflect"
	"testing"
)

var fastJSONSeeds = []string{
	``, `{}`, ` { } `, `null`, `[]`, ` [ ] `, `"x"`, `""`, `"é"`, "\"\xff\"", `"a\"b"`, `"a\u0041"`, "\"a\tb\"", `1`, `-0.5e+3`,
	`{"a":1,"a":2}`, `{"a":"x","b":[1,2,{"c":null}],"d":true,"e":false}`, `{"\u0061":1}`, "{\"\xff\":1}", `{"é":1}`,
	`{"a":01}`, `{"a":1.}`, `{"a":"\x"}`, `{"a":"\u12"}`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{"a":1} x`, `[1] [2]`, `{"a":tru}`,
	`[{"uri":"s3://a","kind":"k","sizeBytes":3},{"uri":""},null,{"uri":1}]`,
	`{"durationMs":12,"artifacts":[{"uri":"s3://x","kind":"k","sizeBytes":3}],"sourceOccurredAt":"2026-02-16T10:00:00Z"}`,
	`{"errorCode":"E","errorMessage":"it broke: \"quoted\"","retryable":true,"failureCategory":"USER"}`,
	`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
}

// numberSeeds are for plainNonNegInt.
var numberSeeds = []string{`0`, `00`, `12`, `012`, `123456789012345678`, `1234567890123456789`, `9223372036854775807`, `1e3`, ` 5`, `5 `, `-1`}

// asMap is a payload as encoding/json would decode it into a map: the last
// of a repeated key wins; nil for nil.
func asMap(p payload) map[string]json.RawMessage {
	if p == nil {
		return nil
	}
	m := make(map[string]json.RawMessage, len(p))
	for _, f := range p {
		m[string(f.key)] = f.raw
	}
	return m
}

// dirtyPayload is a destination buffer still holding fields of another
// payload: fastObject appends to dst[:0], so none of them may show.
func dirtyPayload() payload {
	return payload{{key: []byte("stale"), raw: json.RawMessage(`1`)}, {key: []byte("a"), raw: json.RawMessage(`"stale"`)}}
}

// TestPayload_GetTakesTheLastOfARepeatedKey: as encoding/json does.
func TestPayload_GetTakesTheLastOfARepeatedKey(t *testing.T) {
	p, ok := fastObject(nil, []byte(`{"a":1,"b":2,"a":3}`))
	if !ok {
		t.Fatal("fastObject gave up")
	}
	if raw, ok := p.get("a"); !ok || string(raw) != "3" {
		t.Fatalf("get(a) = %s, %v; want 3", raw, ok)
	}
	if _, ok := p.get("c"); ok {
		t.Fatal("get(c) found a field that is not there")
	}
}

// FuzzFastJSON: whenever a fast reader does not give up, it agrees with
// encoding/json (which then succeeds too).
func FuzzFastJSON(f *testing.F) {
	for _, s := range append(fastJSONSeeds, numberSeeds...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if got, ok := fastObject(dirtyPayload(), raw); ok {
			var want map[string]json.RawMessage
			if err := json.Unmarshal(raw, &want); err != nil || !reflect.DeepEqual(asMap(got), want) {
				t.Fatalf("fastObject(%q) = %v, encoding/json %v (%v)", raw, asMap(got), want, err)
			}
		}
		if got, want := asMap(parsePayload(dirtyPayload(), raw)), asMap(decodePayload(raw)); len(raw) > 0 && !reflect.DeepEqual(got, want) {
			t.Fatalf("parsePayload(%q) = %v, decodePayload %v", raw, got, want)
		}
		if got, ok := fastArray(dirtyItems(), raw); ok {
			var want []json.RawMessage
			if err := json.Unmarshal(raw, &want); err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("fastArray(%q) = %v, encoding/json %v (%v)", raw, got, want, err)
			}
		}
		if got, ok := fastString(raw); ok {
			var want string
			if err := json.Unmarshal(raw, &want); err != nil || got != want {
				t.Fatalf("fastString(%q) = %q, encoding/json %q (%v)", raw, got, want, err)
			}
		}
		if got, ok := plainNonNegInt(raw); ok {
			if want, whole, wok := nonNegNumberDecoded(raw); !wok || !whole || got != want {
				t.Fatalf("plainNonNegInt(%q) = %d, encoding/json %d (whole %v, ok %v)", raw, got, want, whole, wok)
			}
		}
	})
}

func TestFastJSON_AgreesWithEncodingJSON(t *testing.T) {
	for _, s := range fastJSONSeeds {
		raw := []byte(s)
		if got, ok := fastObject(dirtyPayload(), raw); ok {
			var want map[string]json.RawMessage
			if err := json.Unmarshal(raw, &want); err != nil || !reflect.DeepEqual(asMap(got), want) {
				t.Errorf("fastObject(%q) = %v, encoding/json %v (%v)", raw, asMap(got), want, err)
			}
		}
		if got, ok := fastArray(dirtyItems(), raw); ok {
			var want []json.RawMessage
			if err := json.Unmarshal(raw, &want); err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("fastArray(%q) = %v, encoding/json %v (%v)", raw, got, want, err)
			}
		}
		if got, ok := fastString(raw); ok {
			var want string
			if err := json.Unmarshal(raw, &want); err != nil || got != want {
				t.Errorf("fastString(%q) = %q, encoding/json %q (%v)", raw, got, want, err)
			}
		}
	}
	// The common payloads take the fast paths.
	if _, ok := fastObject(nil, []byte(fastJSONSeeds[len(fastJSONSeeds)-3])); !ok {
		t.Error("fastObject gave up on a plain payload")
	}
	if _, ok := fastArray(nil, []byte(`[{"uri":"s3://a"},{"uri":"s3://b"}]`)); !ok {
		t.Error("fastArray gave up on a plain artifacts list")
	}
	if _, ok := fastString([]byte(`"2026-02-16T10:00:00Z"`)); !ok {
		t.Error("fastString gave up on a plain string")
	}
}

// dirtyItems is a buffer for fastArray that holds stale items: fastArray
// must append from dst[:0], never keep what dst held.
func dirtyItems() []json.RawMessage {
	return append(make([]json.RawMessage, 0, 4), json.RawMessage(`"stale"`), json.RawMessage(`{"stale":1}`))
}
