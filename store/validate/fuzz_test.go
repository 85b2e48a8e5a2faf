package validate

import (
	"encoding/json"
	"errors"
	"regexp"
	"sort"
	"testing"
	"time"

	"github.com/runstream/runstream/store"
)

// FuzzDecodeWrite: DecodeWrite never panics, every error is coded, the
// accept path agrees with the schema library, and an accepted write passes
// Check and survives json.Marshal and a second DecodeWrite
// unchanged. Seeds: testdata/fuzz/FuzzDecodeWrite and the test tables.
func FuzzDecodeWrite(f *testing.F) {
	for _, c := range rejectCases() {
		f.Add(c.bytes(f))
	}
	for _, c := range acceptCases() {
		f.Add(c.bytes(f))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if doc, _, _, e := decodeDoc(data); e == nil {
			checkFastAgrees(t, doc, "decoded body")
			checkPruningAgrees(t, data, doc)
		}
		w, info, err := DecodeWrite(data)
		if err != nil {
			var e *store.Error
			if !errors.As(err, &e) || e.Code != store.CodeSchemaValidationFailed || e.Field == "" || e.Message == "" {
				t.Fatalf("DecodeWrite error %#v: want a coded error with Field and Message", err)
			}
			return
		}
		if !sort.StringsAreSorted(info.UnknownFields) {
			t.Errorf("UnknownFields not sorted: %q", info.UnknownFields)
		}
		for _, u := range info.UnknownFields {
			if knownField(u) {
				t.Errorf("UnknownFields lists the known field %q", u)
			}
		}
		if err := Check(&w); err != nil {
			t.Fatalf("Check rejects what DecodeWrite accepted: %v", err)
		}
		body, err := json.Marshal(w)
		if err != nil {
			t.Fatalf("json.Marshal of an accepted write: %v", err)
		}
		again, info2, err := DecodeWrite(body)
		if err != nil {
			t.Fatalf("DecodeWrite(json.Marshal(w)): %v\nbody: %s", err, body)
		}
		if !sameWrite(again, w) {
			t.Fatalf("round trip changed the write:\n got  %+v\n want %+v", again, w)
		}
		if info2.UnknownFields != nil {
			t.Errorf("our own JSON has unknown fields %q", info2.UnknownFields)
		}
	})
}

// FuzzValidateWrite: Check never panics, its errors are coded, and
// it agrees with DecodeWrite on the struct's JSON (checkAgreement). Seeds:
// testdata/fuzz/FuzzValidateWrite.
func FuzzValidateWrite(f *testing.F) {
	f.Add(testEventID, store.EventStepCompleted, "2026-02-16T10:30:00.123Z", testRunID, "tenant_acme", "plan_abc", "2", testStepID,
		int64(1), int64(1), []byte(samplePayloads[store.EventStepCompleted]), true)
	f.Add(testEventID, "onRunStarted", "2026-02-16", "a|b", "", "p", "1", "", int64(0), int64(-1), []byte("null"), false)
	// Escaped NUL and unpaired surrogates (refused in any string), and their
	// look-alikes that are text.
	f.Add(testEventID, store.EventStepCompleted, "2026-02-16T10:30:00Z", testRunID, "tenant_acme", "plan_abc", "2", testStepID,
		int64(1), int64(1), []byte(`{"result":{"note":"a\u0000","\ud800":["\udc00"]}}`), true)
	f.Add(testEventID, store.EventRunStarted, "2026-02-16T10:30:00Z", "run\x00", "tenant_acme", "plan_abc", "2", "",
		int64(1), int64(1), []byte(`{"ok":"\ud83d\ude80 \\u0000 \\\u0000"}`), true)
	f.Add(testEventID, store.EventRunStarted, "2026-02-16T10:30:00Z", testRunID, "tenant_acme", "plan_abc", "2", "",
		int64(1), int64(1), []byte(`{"ok":"\ud83d\ude80 \\ud800 \u00e9"}`), true)
	f.Fuzz(func(t *testing.T, eventID, eventType, emittedAt, runID, tenantID, planID, planVersion, stepID string,
		engine, logical int64, payload []byte, rekey bool) {
		w := store.RunEventWrite{
			EventID: eventID, EventType: eventType, EmittedAt: emittedAt, RunID: runID, TenantID: tenantID,
			ProjectID: "proj_marketing", EnvironmentID: "prod", PlanID: planID, PlanVersion: planVersion,
			EngineAttemptID: engine, LogicalAttemptID: logical, StepID: stepID, Payload: payload,
		}
		if rekey {
			w.IdempotencyKey = w.Key()
		}
		if doc, e := writeDoc(&w); e == nil {
			checkFastAgrees(t, doc, "struct document")
		}
		checkAgreement(t, w)
	})
}

// FuzzSchemaPatterns: the fast matchers agree with regexp, and every
// date-time accepted is one time.Parse reads.
func FuzzSchemaPatterns(f *testing.F) {
	for _, s := range []string{"", testEventID, "RunStarted", "a|b", "id\u0085", "\xff", fieldsKey(store.EventRunStarted), "2026-02-16T10:30:00.5+01:00"} {
		f.Add(s)
	}
	res := map[string]*regexp.Regexp{}
	for p := range fastPatterns {
		res[p] = regexp.MustCompile(p)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for p, match := range fastPatterns {
			if got, want := match(s), res[p].MatchString(s); got != want {
				t.Errorf("pattern %q on %q: fast matcher says %v, regexp says %v", p, s, got, want)
			}
		}
		if isRFC3339(s) {
			if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
				t.Errorf("isRFC3339 accepts %q, which time.Parse rejects: %v", s, err)
			}
		}
	})
}
