package etl

import (
	"encoding/json"
	"testing"

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
