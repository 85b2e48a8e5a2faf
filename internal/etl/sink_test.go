package etl

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
)

func TestTruncated(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"2026-01-02T03:04:05.123456789Z", "2026-01-02T03:04:05.123456Z"},
		{"2026-01-02T03:04:05.1234567+02:00", "2026-01-02T03:04:05.123456+02:00"},
		{"2026-01-02T03:04:05.123456Z", ""}, // six digits: kept as given
		{"2026-01-02T03:04:05Z", ""},
		{"2026-01-02T03:04:05.0000009Z", "2026-01-02T03:04:05.000000Z"},
		{"not a time.1234567", ""},
		{"", ""},
	} {
		got, ok := truncated(c.in)
		if ok != (c.want != "") || got != c.want {
			t.Errorf("truncated(%q) = %q, %v; want %q", c.in, got, ok, c.want)
		}
	}
}

func TestMicroseconds_RewritesOnlyTheTimes(t *testing.T) {
	ev := store.RunEventRecord{RunEventWrite: store.RunEventWrite{
		EventType: store.EventRunStarted, EmittedAt: "2026-01-02T03:04:05.999999999Z",
		Payload: json.RawMessage(`{"startedAt":"2026-01-02T03:04:04.0000015Z","engineRunRef":"x","sourceOccurredAt":"2026-01-02T03:04:05.1Z"}`),
	}}
	microseconds(&ev)
	if ev.EmittedAt != "2026-01-02T03:04:05.999999Z" || parseTime(ev.EmittedAt) == nil {
		t.Errorf("emittedAt = %s", ev.EmittedAt)
	}
	var p map[string]string
	if err := json.Unmarshal(ev.Payload, &p); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"startedAt": "2026-01-02T03:04:04.000001Z", "engineRunRef": "x", "sourceOccurredAt": "2026-01-02T03:04:05.1Z"}
	for k, v := range want {
		if p[k] != v {
			t.Errorf("payload %s = %q, want %q", k, p[k], v)
		}
	}
	untouched := json.RawMessage(`{"startedAt": "2026-01-02T03:04:04.123Z"}`)
	ev.Payload = untouched
	microseconds(&ev)
	if string(ev.Payload) != string(untouched) {
		t.Errorf("a payload with microsecond times was rewritten: %s", ev.Payload)
	}
}

func TestMayHaveLongFraction(t *testing.T) {
	for _, c := range []struct {
		in   string
		want bool
	}{
		{`{"startedAt":"2026-01-02T03:04:04.123456Z"}`, false},
		{`{"startedAt":"2026-01-02T03:04:04.1234567Z"}`, true},
		{`{"x":1.5,"startedAt":"2026-01-02T03:04:04Z"}`, false},
		{`{"x":0.12345678}`, true},
		{`{"startedAt":"2026-01-02T03:04:04.\u0031234567Z"}`, true},
		{`{"a":"b."}`, false},
		{``, false},
	} {
		if got := mayHaveLongFraction([]byte(c.in)); got != c.want {
			t.Errorf("mayHaveLongFraction(%s) = %v, want %v", c.in, got, c.want)
		}
	}
}

// FuzzTruncatePayloadTimes checks the one-pass rewrite against the decoded
// one: where it answers, the payload is a JSON object and decodes to the
// same values as the decoded rewrite's result.
func FuzzTruncatePayloadTimes(f *testing.F) {
	for _, s := range []string{
		`{"startedAt":"2026-01-02T03:04:04.0000015Z","engineRunRef":"x","sourceOccurredAt":"2026-01-02T03:04:05.1Z"}`,
		`{"sourceOccurredAt":"2026-01-02T03:04:05.123456789+02:00","startedAt":"2026-01-02T03:04:05.123456789Z","durationMs":12}`,
		`{"startedAt":1.12345678,"x":{"startedAt":"2026-01-02T03:04:05.123456789Z"}}`,
		`{"startedAt":"a","startedAt":"2026-01-02T03:04:05.1234567Z"}`,
		` { "startedAt" : "2026-01-02T03:04:05.1234567Z" , "a" : [1, 2.0000001, "b"] } `,
		`{}`, `[]`, `{"a":}`, `{"startedAt":"2026-01-02T03:04:05.1234567Z"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		fast, ok := truncatePayloadTimes(p)
		if !ok {
			return
		}
		if !json.Valid(p) {
			t.Fatalf("answered for invalid JSON %q", p)
		}
		var got, want map[string]any
		if err := json.Unmarshal(fast, &got); err != nil {
			t.Fatalf("rewrote %q into %q, which does not decode: %v", p, fast, err)
		}
		if err := json.Unmarshal(truncatePayloadTimesDecoded(p), &want); err != nil {
			t.Fatalf("answered for %q, which is not an object: %v", p, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: one pass gives %q, decoded gives %v", p, fast, want)
		}
		if string(fast) != string(p) && len(fast) >= len(p) {
			t.Fatalf("%q: a rewrite that cut nothing: %q", p, fast)
		}
	})
}

// BenchmarkMicroseconds runs microseconds over a realistic mix of events
// (internal/workload), whose times have nanosecond digits.
func BenchmarkMicroseconds(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	var evs []store.RunEventRecord
	for len(evs) < 1000 {
		for _, w := range workload.Run(rng, "tenant", workload.Options{}) {
			evs = append(evs, store.RunEventRecord{RunEventWrite: w})
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		ev := evs[i%len(evs)]
		microseconds(&ev)
	}
}
