package validate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/runstream/runstream/store"
)

const (
	testRunID   = "0d3c6a9e-4f0c-4a8e-9d5d-3d4c0f7dbb8a"
	testEventID = "3f1c2a4e-8b7d-4c6a-9e2f-1a2b3c4d5e6f"
	testStepID  = "model.orders"
)

// samplePayloads are typical payloads per event type (RunEvents v1 section
// 4.3, ExecutionSemantics v1 Appendix A.1), each with an extra field a
// producer may add.
var samplePayloads = map[string]string{
	store.EventRunQueued:   `{"queue":"default","position":3}`,
	store.EventRunApproved: `{"approvedBy":"user_jane"}`,
	store.EventRunStarted: `{"engineRunRef":"temporal://default/interpreter-workflow/run-1/f47ac10b","engineType":"temporal",` +
		`"startedAt":"2026-02-16T10:30:00.000Z","planRef":{"uri":"s3://plans/plan_abc.json","sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",` +
		`"schemaVersion":"v1.2","planId":"plan_abc","planVersion":"2"},"context":{"tenantId":"tenant_acme","triggeredBy":"user_jane","triggerSource":"manual"}}`,
	store.EventRunPaused:    `{"signalId":"5b0c3a5e-2f7d-4e0c-9a1b-6c2d3e4f5a6b","reason":"maintenance window","substatus":"DRAINING"}`,
	store.EventRunResumed:   `{"signalId":"6c1d4b6f-3a8e-4f1d-8b2c-7d3e4f5a6b7c","reason":"window over"}`,
	store.EventRunCompleted: `{"artifacts":[{"uri":"s3://bucket/runs/run-1/report.html","kind":"report","sizeBytes":2048}]}`,
	store.EventRunFailed:    `{"errorCode":"DB_CONNECTION_FAILED","errorMessage":"connection refused","retryable":false,"failureCategory":"PLATFORM","failureSource":"engine"}`,
	store.EventRunCancelled: `{"reason":"cancelled by user_jane"}`,
	store.EventStepStarted:  `{"worker":"activity-worker-7"}`,
	store.EventStepCompleted: `{"durationMs":1234.5,"result":{"rows":42,"warnings":[]},` +
		`"artifacts":[{"uri":"s3://bucket/runs/run-1/orders.parquet","kind":"dataset","sha256":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08","sizeBytes":1048576,"expiresAt":"2026-03-16T10:30:00Z"}],` +
		`"sourceOccurredAt":"2026-02-16T10:29:59.9Z"}`,
	store.EventStepFailed: `{"errorCode":"TIMEOUT","errorMessage":"activity timed out after 300s","retryable":true,"stack":"at run (worker.ts:12)",` +
		`"failureCategory":"TIMEOUT","failureSource":"activity","artifacts":[{"uri":"s3://bucket/runs/run-1/log.txt","kind":"log"}]}`,
	store.EventStepSkipped: `{"reason":"upstream model.customers failed","reasonCode":"DEPENDENCY_FAILED"}`,
}

// fields returns a valid write of eventType as a JSON-ready map: step
// events get a stepId, and the key matches.
func fields(eventType string) map[string]any {
	m := map[string]any{
		"eventId":          testEventID,
		"eventType":        eventType,
		"emittedAt":        "2026-02-16T10:30:00.123Z",
		"runId":            testRunID,
		"tenantId":         "tenant_acme",
		"projectId":        "proj_marketing",
		"environmentId":    "prod",
		"planId":           "plan_abc",
		"planVersion":      "2",
		"engineAttemptId":  1,
		"logicalAttemptId": 1,
	}
	if store.IsStepEvent(eventType) {
		m["stepId"] = testStepID
	}
	if p, ok := samplePayloads[eventType]; ok {
		m["payload"] = json.RawMessage(p)
	}
	rekey(m)
	return m
}

// rekey sets m's idempotencyKey to the key of m's other fields.
func rekey(m map[string]any) {
	str := func(k string) string { s, _ := m[k].(string); return s }
	attempt, _ := m["logicalAttemptId"].(int)
	m["idempotencyKey"] = store.IdempotencyKey(str("runId"), str("stepId"), int64(attempt), str("eventType"), str("planId"), str("planVersion"))
}

func encode(t testing.TB, m map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatalf("encoding test body: %v", err)
	}
	return b
}

// checkRejected fails t unless err is a SCHEMA_VALIDATION_FAILED *Error
// naming field, whose Message contains every one of msgs.
func checkRejected(t *testing.T, err error, field string, msgs ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one on field %q", field)
	}
	var e *store.Error
	if !errors.As(err, &e) {
		t.Fatalf("got %T %v, want *store.Error", err, err)
	}
	if e.Code != store.CodeSchemaValidationFailed || !errors.Is(err, store.ErrSchemaValidation) {
		t.Errorf("Code = %s, want %s", e.Code, store.CodeSchemaValidationFailed)
	}
	if e.Field != field {
		t.Errorf("Field = %q, want %q (message: %s)", e.Field, field, e.Message)
	}
	for _, m := range msgs {
		if !strings.Contains(e.Message, m) {
			t.Errorf("Message = %q, want it to contain %q", e.Message, m)
		}
	}
}

type rejectCase struct {
	name string
	// body, when set, is sent as is; otherwise fields(eventType) after edit.
	body      string
	eventType string // default RunStarted
	edit      func(m map[string]any)
	// keepKey leaves the key as edit set it; by default it is recomputed
	// so only the edited rule fails.
	keepKey bool
	field   string
	msgs    []string
}

func (c rejectCase) bytes(t testing.TB) []byte {
	if c.body != "" {
		return []byte(c.body)
	}
	et := c.eventType
	if et == "" {
		et = store.EventRunStarted
	}
	m := fields(et)
	if c.edit != nil {
		c.edit(m)
	}
	if !c.keepKey {
		rekey(m)
	}
	return encode(t, m)
}

func set(name string, v any) func(map[string]any) {
	return func(m map[string]any) { m[name] = v }
}

func del(name string) func(map[string]any) {
	return func(m map[string]any) { delete(m, name) }
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

var requiredFields = []string{
	"eventId", "eventType", "emittedAt", "runId", "tenantId", "projectId", "environmentId",
	"planId", "planVersion", "engineAttemptId", "logicalAttemptId", "idempotencyKey",
}

// rejectCases covers every rule of the schemas and docs/CONTRACT.md; the
// fast-path agreement test reuses them.
func rejectCases() []rejectCase {
	valid := string(encodeNoT(fields(store.EventRunStarted)))
	cases := []rejectCase{
		// The body as a whole.
		{name: "empty body", body: " ", field: "body", msgs: []string{"empty"}},
		{name: "truncated", body: valid[:40], field: "body", msgs: []string{"not valid JSON"}},
		{name: "not JSON", body: `{"eventId": nope}`, field: "body", msgs: []string{"not valid JSON", "invalid character"}},
		{name: "array", body: `[` + valid + `]`, field: "body", msgs: []string{"one JSON object", "got an array"}},
		{name: "null", body: `null`, field: "body", msgs: []string{"got null"}},
		{name: "string", body: `"event"`, field: "body", msgs: []string{"got a string"}},
		{name: "trailing garbage", body: valid + ` x`, field: "body", msgs: []string{"exactly one JSON object"}},
		{name: "garbage inside", body: valid[:len(valid)-1] + `,}`, field: "body", msgs: []string{"not valid JSON"}},
		{name: "two objects", body: valid + valid, field: "body", msgs: []string{"exactly one JSON object", "after byte"}},
		{name: "duplicate member", body: `{"runId":"a",` + valid[1:], field: "runId", msgs: []string{"more than once"}},
		{name: "invalid UTF-8 in tenantId", body: replaceLast(valid, `"tenant_acme"`, "\"tenant_\xffacme\""), field: "tenantId", msgs: []string{"UTF-8"}},
		{name: "invalid UTF-8 in payload", body: strings.Replace(valid, `"temporal"`, "\"temp\xc3oral\"", 1), field: "payload", msgs: []string{"UTF-8"}},
		{name: "invalid UTF-8 in a member name", body: "{\"\xff\":1," + valid[1:], field: "body", msgs: []string{"UTF-8"}},
		{name: "case-mismatched name", edit: func(m map[string]any) { m["RunId"] = m["runId"]; delete(m, "runId") }, keepKey: true,
			field: "runId", msgs: []string{"runId is required", `"RunId"`, "case-sensitive"}},

		// Wrong JSON types.
		{name: "eventId number", edit: set("eventId", 7), field: "eventId", msgs: []string{"must be a string", "number 7"}},
		{name: "eventType bool", edit: set("eventType", true), field: "eventType", msgs: []string{"must be a string", "boolean true"}},
		{name: "emittedAt number", edit: set("emittedAt", 1771237800), field: "emittedAt", msgs: []string{"must be a string", "RFC 3339"}},
		{name: "planVersion number", edit: set("planVersion", 2), field: "planVersion", msgs: []string{"planVersion must be a string", "number 2"}},
		{name: "tenantId object", edit: set("tenantId", map[string]any{}), field: "tenantId", msgs: []string{"must be a string", "an object"}},
		{name: "idempotencyKey number", edit: set("idempotencyKey", 1), keepKey: true, field: "idempotencyKey", msgs: []string{"must be a string"}},

		// eventId.
		{name: "eventId v1", edit: set("eventId", "3f1c2a4e-8b7d-1c6a-9e2f-1a2b3c4d5e6f"), field: "eventId", msgs: []string{"version 1 UUID", "UUID v4"}},
		{name: "eventId v7", edit: set("eventId", "01890a5d-ac96-774b-bcce-b302099a8057"), field: "eventId", msgs: []string{"version 7"}},
		{name: "eventId bad variant", edit: set("eventId", "3f1c2a4e-8b7d-4c6a-7e2f-1a2b3c4d5e6f"), field: "eventId", msgs: []string{"variant"}},
		{name: "eventId not a UUID", edit: set("eventId", "evt-1"), field: "eventId", msgs: []string{"UUID v4", `"evt-1"`}},
		{name: "eventId braces", edit: set("eventId", "{"+testEventID+"}"), field: "eventId", msgs: []string{"UUID v4"}},
		{name: "eventId empty", edit: set("eventId", ""), field: "eventId", msgs: []string{"UUID v4"}},

		// eventType.
		{name: "onRunStarted", edit: set("eventType", "onRunStarted"), field: "eventType", msgs: []string{"PascalCase", `without the "on" prefix`, `use "RunStarted"`}},
		{name: "onStepFailed", edit: set("eventType", "onStepFailed"), field: "eventType", msgs: []string{`use "StepFailed"`}},
		{name: "camelCase", edit: set("eventType", "runStarted"), field: "eventType", msgs: []string{`use "RunStarted"`}},
		{name: "snake case", edit: set("eventType", "RUN_STARTED"), field: "eventType", msgs: []string{`use "RunStarted"`}},
		{name: "dotted", edit: set("eventType", "run.started"), field: "eventType", msgs: []string{`use "RunStarted"`}},
		{name: "eventType empty", edit: set("eventType", ""), field: "eventType", msgs: []string{"must not be empty"}},
		{name: "eventType punctuation", edit: set("eventType", "Run!"), field: "eventType", msgs: []string{"PascalCase", `such as "RunStarted"`}},

		// emittedAt.
		{name: "emittedAt space", edit: set("emittedAt", "2026-02-16 10:30:00Z"), field: "emittedAt", msgs: []string{"RFC 3339", `"2026-02-16 10:30:00Z"`}},
		{name: "emittedAt no zone", edit: set("emittedAt", "2026-02-16T10:30:00"), field: "emittedAt", msgs: []string{"RFC 3339"}},
		{name: "emittedAt date only", edit: set("emittedAt", "2026-02-16"), field: "emittedAt", msgs: []string{"RFC 3339"}},
		{name: "emittedAt lowercase t", edit: set("emittedAt", "2026-02-16t10:30:00z"), field: "emittedAt", msgs: []string{"uppercase T and Z"}},
		{name: "emittedAt leap second", edit: set("emittedAt", "2016-12-31T23:59:60Z"), field: "emittedAt", msgs: []string{"seconds 00-59"}},
		{name: "emittedAt February 30", edit: set("emittedAt", "2026-02-30T10:30:00Z"), field: "emittedAt", msgs: []string{"RFC 3339"}},
		{name: "emittedAt offset 24h", edit: set("emittedAt", "2026-02-16T10:30:00+24:00"), field: "emittedAt", msgs: []string{"RFC 3339"}},
		{name: "emittedAt comma fraction", edit: set("emittedAt", "2026-02-16T10:30:00,5Z"), field: "emittedAt", msgs: []string{"RFC 3339"}},
		{name: "emittedAt unix seconds string", edit: set("emittedAt", "1771237800"), field: "emittedAt", msgs: []string{"RFC 3339"}},

		// Identifiers.
		{name: "tab in runId", edit: set("runId", "run\t1"), field: "runId", msgs: []string{"control character U+0009", "printable"}},
		{name: "NUL in planId", edit: set("planId", "plan\x00"), field: "planId", msgs: []string{"U+0000"}},
		{name: "C1 control in projectId", edit: set("projectId", "proj\u0085"), field: "projectId", msgs: []string{"U+0085"}},
		{name: "empty tenantId", edit: set("tenantId", ""), field: "tenantId", msgs: []string{"must not be empty"}},
		{name: "256-byte planId", edit: set("planId", strings.Repeat("p", 256)), field: "planId", msgs: []string{"at most 255 bytes", "got 256"}},
		{name: "128 two-byte runes", edit: set("environmentId", strings.Repeat("é", 128)), field: "environmentId", msgs: []string{"at most 255 bytes", "got 256"}},
		{name: "300 two-byte runes", edit: set("environmentId", strings.Repeat("é", 300)), field: "environmentId", msgs: []string{"at most 255 bytes", "got 600"}},

		// stepId.
		{name: "stepId on a run event", edit: set("stepId", "model.orders"), field: "stepId", msgs: []string{"RunStarted is a run-level event", "must not have a stepId", "remove stepId"}},
		{name: "invalid stepId on a run event", edit: set("stepId", "a|b"), field: "stepId", msgs: []string{"must not have a stepId"}},
		{name: "stepId on RunCompleted", eventType: store.EventRunCompleted, edit: set("stepId", "s"), field: "stepId", msgs: []string{"RunCompleted is a run-level event"}},
		{name: "no stepId on a step event", eventType: store.EventStepCompleted, edit: del("stepId"), field: "stepId", msgs: []string{"stepId is required for step event StepCompleted"}},
		{name: "null stepId on a step event", eventType: store.EventStepStarted, edit: set("stepId", nil), field: "stepId", msgs: []string{"stepId must be a string", "null"}},
		{name: "empty stepId on an unknown type", eventType: "WorkerHeartbeat", edit: set("stepId", ""), field: "stepId", msgs: []string{"must not be empty"}},

		// Key.
		{name: "wrong key", edit: set("idempotencyKey", strings.Repeat("0", 64)), keepKey: true, field: "idempotencyKey",
			msgs: []string{"expected " + fieldsKey(store.EventRunStarted), `received "` + strings.Repeat("0", 64) + `"`, store.IdempotencyKeyFormula}},
		{name: "uppercase key", edit: func(m map[string]any) { m["idempotencyKey"] = strings.ToUpper(m["idempotencyKey"].(string)) }, keepKey: true,
			field: "idempotencyKey", msgs: []string{"expected " + fieldsKey(store.EventRunStarted), store.IdempotencyKeyFormula}},
		{name: "v1 key without planId", keepKey: true, edit: func(m map[string]any) {
			m["idempotencyKey"] = sha256Hex(testRunID + "|RUN|1|RunStarted|2")
		}, field: "idempotencyKey", msgs: []string{"expected " + fieldsKey(store.EventRunStarted), store.IdempotencyKeyFormula}},
		{name: "key of another attempt", keepKey: true, edit: set("logicalAttemptId", 2), field: "idempotencyKey", msgs: []string{"does not match"}},
		{name: "empty key", keepKey: true, edit: set("idempotencyKey", ""), field: "idempotencyKey", msgs: []string{"expected " + fieldsKey(store.EventRunStarted)}},

		// Payload as a whole.
		{name: "payload null", edit: set("payload", nil), field: "payload", msgs: []string{"must be a JSON object when present", "got null", "omit payload"}},
		{name: "payload array", edit: set("payload", raw(`[1]`)), field: "payload", msgs: []string{"JSON object", "an array"}},
		{name: "payload string", edit: set("payload", "{}"), field: "payload", msgs: []string{"JSON object", "string"}},

		// Payload fields typed per event type.
		{name: "durationMs string", eventType: store.EventStepCompleted, edit: set("payload", raw(`{"durationMs":"5"}`)), field: "payload.durationMs", msgs: []string{"must be a number", `string "5"`}},
		{name: "durationMs negative", eventType: store.EventStepCompleted, edit: set("payload", raw(`{"durationMs":-1}`)), field: "payload.durationMs", msgs: []string{">= 0", "-1"}},
		{name: "durationMs huge exponent", eventType: store.EventStepCompleted, edit: set("payload", raw(`{"durationMs":1e99999999}`)), field: "payload.durationMs", msgs: []string{"out of range"}},
		{name: "artifacts object", eventType: store.EventStepCompleted, edit: set("payload", raw(`{"artifacts":{}}`)), field: "payload.artifacts", msgs: []string{"must be an array"}},
		{name: "artifact without uri", eventType: store.EventStepCompleted, edit: set("payload", raw(`{"artifacts":[{"kind":"log"}]}`)), field: "payload.artifacts[0].uri", msgs: []string{"is required", "uri and a kind"}},
		{name: "artifact empty uri", eventType: store.EventStepCompleted, edit: set("payload", raw(`{"artifacts":[{"uri":"a","kind":"k"},{"uri":"","kind":"k"}]}`)), field: "payload.artifacts[1].uri", msgs: []string{"must not be empty"}},
		{name: "artifact without kind", eventType: store.EventRunCompleted, edit: set("payload", raw(`{"artifacts":[{"uri":"s3://b/k"}]}`)), field: "payload.artifacts[0].kind", msgs: []string{"is required"}},
		{name: "artifact sizeBytes fractional", eventType: store.EventStepFailed, edit: set("payload", raw(`{"artifacts":[{"uri":"u","kind":"k","sizeBytes":1.5}]}`)), field: "payload.artifacts[0].sizeBytes", msgs: []string{"must be an integer", "1.5"}},
		{name: "artifact sizeBytes negative", eventType: store.EventStepCompleted, edit: set("payload", raw(`{"artifacts":[{"uri":"u","kind":"k","sizeBytes":-1}]}`)), field: "payload.artifacts[0].sizeBytes", msgs: []string{">= 0"}},
		{name: "artifact sizeBytes huge", eventType: store.EventStepCompleted, edit: set("payload", raw(`{"artifacts":[{"uri":"u","kind":"k","sizeBytes":1`+strings.Repeat("0", 80)+`}]}`)), field: "payload.artifacts[0].sizeBytes", msgs: []string{"out of range"}},
		{name: "artifact expiresAt", eventType: store.EventStepCompleted, edit: set("payload", raw(`{"artifacts":[{"uri":"u","kind":"k","expiresAt":"tomorrow"}]}`)), field: "payload.artifacts[0].expiresAt", msgs: []string{"RFC 3339", `"tomorrow"`}},
		{name: "lowest artifact index first", eventType: store.EventStepCompleted, edit: set("payload", raw(`{"artifacts":[`+
			strings.Repeat(`{"uri":"u","kind":"k"},`, 2)+`{"uri":1,"kind":"k"},`+strings.Repeat(`{"uri":"u","kind":"k"},`, 7)+`{"kind":"k"}]}`)),
			field: "payload.artifacts[2].uri", msgs: []string{"must be a string"}},
		{name: "artifact not an object", eventType: store.EventStepCompleted, edit: set("payload", raw(`{"artifacts":["s3://b/k"]}`)), field: "payload.artifacts[0]", msgs: []string{"must be an object"}},
		{name: "retryable string", eventType: store.EventStepFailed, edit: set("payload", raw(`{"retryable":"yes"}`)), field: "payload.retryable", msgs: []string{"must be a boolean", `"yes"`}},
		{name: "failureCategory lowercase", eventType: store.EventStepFailed, edit: set("payload", raw(`{"failureCategory":"user"}`)), field: "payload.failureCategory", msgs: []string{"one of USER, SYSTEM, PLATFORM, TIMEOUT", `"user"`}},
		{name: "RunFailed errorCode number", eventType: store.EventRunFailed, edit: set("payload", raw(`{"errorCode":42}`)), field: "payload.errorCode", msgs: []string{"must be a string"}},
		{name: "RunFailed stack", eventType: store.EventRunFailed, edit: set("payload", raw(`{"stack":["a"]}`)), field: "payload.stack", msgs: []string{"must be a string"}},
		{name: "StepSkipped reasonCode", eventType: store.EventStepSkipped, edit: set("payload", raw(`{"reasonCode":1}`)), field: "payload.reasonCode", msgs: []string{"must be a string"}},
		{name: "RunPaused signalId", eventType: store.EventRunPaused, edit: set("payload", raw(`{"signalId":1}`)), field: "payload.signalId", msgs: []string{"must be a string"}},
		{name: "RunResumed substatus", eventType: store.EventRunResumed, edit: set("payload", raw(`{"substatus":true}`)), field: "payload.substatus", msgs: []string{"must be a string"}},
		{name: "RunStarted startedAt", eventType: store.EventRunStarted, edit: set("payload", raw(`{"startedAt":"yesterday"}`)), field: "payload.startedAt", msgs: []string{"RFC 3339"}},
		{name: "RunStarted planRef", eventType: store.EventRunStarted, edit: set("payload", raw(`{"planRef":"s3://p"}`)), field: "payload.planRef", msgs: []string{"must be an object"}},
		{name: "RunStarted context", eventType: store.EventRunStarted, edit: set("payload", raw(`{"context":[]}`)), field: "payload.context", msgs: []string{"must be an object", "an array"}},
		{name: "RunStarted engineRunRef", eventType: store.EventRunStarted, edit: set("payload", raw(`{"engineRunRef":7}`)), field: "payload.engineRunRef", msgs: []string{"must be a string"}},
		{name: "sourceOccurredAt on an unknown type", eventType: "WorkerHeartbeat", edit: set("payload", raw(`{"sourceOccurredAt":"now"}`)), field: "payload.sourceOccurredAt", msgs: []string{"RFC 3339"}},
		{name: "sourceOccurredAt on a known type", eventType: store.EventStepStarted, edit: set("payload", raw(`{"sourceOccurredAt":12}`)), field: "payload.sourceOccurredAt", msgs: []string{"must be a string"}},

		// Escaped NUL and unpaired surrogates, in any string (docs/SECURITY.md).
		{name: "escaped NUL in payload", eventType: store.EventStepCompleted, edit: set("payload", raw(`{"result":{"note":"a\u0000b"}}`)), field: "payload.result.note", msgs: []string{"U+0000", "jsonb"}},
		{name: "lone high surrogate", eventType: store.EventStepCompleted, edit: set("payload", raw(`{"result":{"note":"\ud800"}}`)), field: "payload.result.note", msgs: []string{"unpaired UTF-16 surrogate", `\ud800`}},
		{name: "lone low surrogate in an array", eventType: store.EventStepCompleted, edit: set("payload", raw(`{"result":["x","ok \uDC00"]}`)), field: "payload.result[1]", msgs: []string{`\udc00`}},
		{name: "high surrogate then a letter", edit: set("payload", raw(`{"context":{"note":"\ud800a"}}`)), field: "payload.context.note", msgs: []string{`\ud800`}},
		{name: "high surrogate then a high one", edit: set("payload", raw(`{"note":"\ud83d\ud83d\ude00"}`)), field: "payload.note", msgs: []string{`\ud83d`}},
		{name: "high surrogate then a non-surrogate escape", edit: set("payload", raw(`{"note":"\ud83d\u0041"}`)), field: "payload.note", msgs: []string{`\ud83d`}},
		{name: "high surrogate at the end", edit: set("payload", raw(`{"note":"x\uD83D"}`)), field: "payload.note", msgs: []string{`\ud83d`}},
		{name: "NUL after an escaped backslash", edit: set("payload", raw(`{"note":"\\\u0000"}`)), field: "payload.note", msgs: []string{"U+0000"}},
		{name: "NUL in a member name", eventType: store.EventStepCompleted, edit: set("payload", raw(`{"result":{"k\u0000":1}}`)), field: "payload.result", msgs: []string{"member name", "U+0000"}},
		{name: "surrogate in a top-level payload member name", edit: set("payload", raw(`{"\udfff":1}`)), field: "payload", msgs: []string{"member name", `\udfff`}},
		{name: "lone surrogate in a typed payload member", eventType: store.EventStepFailed, edit: set("payload", raw(`{"errorCode":"\ud800"}`)), field: "payload.errorCode", msgs: []string{`\ud800`}},
		{name: "payload a string holding NUL", edit: set("payload", raw(`"\u0000"`)), field: "payload", msgs: []string{"U+0000"}},
		{name: "escaped NUL in runId", edit: set("runId", "run\x00"), field: "runId", msgs: []string{"U+0000"}},
		{name: "lone surrogate in tenantId", body: replaceLast(valid, `"tenant_acme"`, `"tenant_\ud800acme"`), field: "tenantId", msgs: []string{`\ud800`}},
		{name: "lone surrogate in emittedAt", body: strings.Replace(valid, `"2026-02-16T10:30:00.123Z"`, `"2026-02-16T10:30:00.123Z\udc00"`, 1), field: "emittedAt", msgs: []string{`\udc00`}},
		{name: "escaped NUL in a wrongly typed member", edit: set("tenantId", map[string]any{"a": "\x00"}), field: "tenantId.a", msgs: []string{"U+0000"}},
		{name: "NUL: the first member in field order", edit: func(m map[string]any) {
			m["payload"] = raw(`{"x":"\u0000"}`)
			m["planVersion"] = "2\x00"
			m["eventId"] = "x"
		}, field: "planVersion", msgs: []string{"U+0000"}},

		// Several problems: the first in field order is reported.
		{name: "first problem wins", edit: func(m map[string]any) {
			m["payload"] = nil
			m["runId"] = "a|b"
			m["eventId"] = "x"
		}, field: "eventId", msgs: []string{"UUID v4"}},
	}
	for _, f := range requiredFields {
		cases = append(cases, rejectCase{name: "missing " + f, edit: del(f), keepKey: true, field: f, msgs: []string{f + " is required"}})
	}
	for _, f := range identifierFields {
		et := store.EventRunStarted
		if f == "stepId" {
			et = store.EventStepCompleted
		}
		cases = append(cases, rejectCase{name: "pipe in " + f, eventType: et, edit: set(f, "a|b"), field: f,
			msgs: []string{`contains "|" at byte 1`, "idempotency key separator"}})
	}
	for _, f := range []string{"engineAttemptId", "logicalAttemptId"} {
		for _, v := range []struct {
			name string
			v    any
			got  string
		}{
			{"0", 0, "number 0"}, {"negative", -1, "number -1"}, {"fraction", raw("1.5"), "number 1.5"},
			{"string", "1", `string "1"; send it as a JSON number, without quotes`},
			{"over int32", raw("2147483648"), "number 2147483648"}, {"huge exponent", raw("1e999999"), "number 1e999999"},
			{"long literal", raw(strings.Repeat("9", 70)), "number 999"}, {"null", nil, "null"}, {"bool", true, "boolean true"},
			{"fraction exponent", raw("15e-1"), "number 15e-1"},
		} {
			cases = append(cases, rejectCase{name: f + " " + v.name, edit: set(f, v.v), field: f,
				msgs: []string{f + " must be an integer >= 1", v.got}})
		}
	}
	return cases
}

// replaceLast replaces the last old in s: json.Marshal sorts members, so
// the payload comes before tenantId and its context holds the same value.
func replaceLast(s, old, new string) string {
	i := strings.LastIndex(s, old)
	return s[:i] + new + s[i+len(old):]
}

// encodeNoT encodes without a testing.TB, for tables built before t exists.
func encodeNoT(m map[string]any) []byte {
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

func fieldsKey(eventType string) string {
	return fields(eventType)["idempotencyKey"].(string)
}

func TestDecodeWrite_Rejects(t *testing.T) {
	for _, c := range rejectCases() {
		t.Run(c.name, func(t *testing.T) {
			body := c.bytes(t)
			w, _, err := DecodeWrite(body)
			checkRejected(t, err, c.field, c.msgs...)
			if !reflect.DeepEqual(w, store.RunEventWrite{}) {
				t.Errorf("got write %+v with the error, want the zero value", w)
			}
		})
	}
}

type acceptCase struct {
	name      string
	body      string // when set, sent as is
	eventType string
	edit      func(m map[string]any)
	check     func(t *testing.T, w store.RunEventWrite, info DecodeInfo)
}

func acceptCases() []acceptCase {
	var cases []acceptCase
	for _, et := range append(append([]string(nil), store.RunEventTypes...), store.StepEventTypes...) {
		cases = append(cases,
			acceptCase{name: et, eventType: et},
			acceptCase{name: et + " without payload", eventType: et, edit: del("payload"),
				check: func(t *testing.T, w store.RunEventWrite, _ DecodeInfo) {
					if w.Payload != nil {
						t.Errorf("Payload = %s, want nil", w.Payload)
					}
				}},
			acceptCase{name: et + " empty payload", eventType: et, edit: set("payload", raw(`{}`))},
		)
	}
	cases = append(cases, []acceptCase{
		{name: "unknown type without stepId", eventType: "WorkerHeartbeat", edit: set("payload", raw(`{"cpu":0.5,"sourceOccurredAt":"2026-02-16T10:29:00Z"}`)),
			check: func(t *testing.T, w store.RunEventWrite, _ DecodeInfo) {
				if w.EventType != "WorkerHeartbeat" || w.StepID != "" {
					t.Errorf("got type %q stepId %q", w.EventType, w.StepID)
				}
			}},
		{name: "unknown type with stepId", eventType: "StepRetrying", edit: set("stepId", "model.orders"),
			check: func(t *testing.T, w store.RunEventWrite, _ DecodeInfo) {
				if w.StepID != "model.orders" {
					t.Errorf("StepID = %q, want model.orders", w.StepID)
				}
			}},
		{name: "unknown type with run-event payload types unchecked", eventType: "RunArchived", edit: set("payload", raw(`{"durationMs":"long","artifacts":7}`))},
		{name: "payload fields of other types not checked", eventType: store.EventStepStarted, edit: set("payload", raw(`{"durationMs":"5","failureCategory":"other","artifacts":{}}`))},
		{name: "uppercase eventId", edit: set("eventId", strings.ToUpper(testEventID))},
		{name: "emittedAt with offset and nanoseconds", edit: set("emittedAt", "2026-02-16T11:30:00.123456789+01:00"),
			check: func(t *testing.T, w store.RunEventWrite, _ DecodeInfo) {
				if w.EmittedAt != "2026-02-16T11:30:00.123456789+01:00" {
					t.Errorf("EmittedAt = %q, want it as sent", w.EmittedAt)
				}
			}},
		{name: "emittedAt without fraction", edit: set("emittedAt", "2026-02-16T10:30:00Z")},
		{name: "emittedAt negative offset", edit: set("emittedAt", "2026-02-16T05:30:00-05:00")},
		{name: "largest attempts", edit: func(m map[string]any) { m["engineAttemptId"] = 2147483647; m["logicalAttemptId"] = 2147483647 },
			check: func(t *testing.T, w store.RunEventWrite, _ DecodeInfo) {
				if w.EngineAttemptID != 2147483647 || w.LogicalAttemptID != 2147483647 {
					t.Errorf("attempts = %d, %d", w.EngineAttemptID, w.LogicalAttemptID)
				}
			}},
		{name: "attempt written 2.0", edit: set("engineAttemptId", raw("2.0")),
			check: func(t *testing.T, w store.RunEventWrite, _ DecodeInfo) {
				if w.EngineAttemptID != 2 {
					t.Errorf("EngineAttemptID = %d, want 2", w.EngineAttemptID)
				}
			}},
		{name: "attempt written 1e3", edit: set("engineAttemptId", raw("1e3")),
			check: func(t *testing.T, w store.RunEventWrite, _ DecodeInfo) {
				if w.EngineAttemptID != 1000 {
					t.Errorf("EngineAttemptID = %d, want 1000", w.EngineAttemptID)
				}
			}},
		{name: "unicode and spaces in identifiers", edit: func(m map[string]any) {
			m["tenantId"] = "tenant Ünïcødé 租户"
			m["planId"] = "plan 🚀"
		}},
		{name: "255-byte identifier", edit: set("runId", strings.Repeat("r", 255))},
		{name: "paired surrogates and escaped backslashes", edit: set("payload", raw(`{"note":"\ud83d\ude80 \\u0000 \\ud800 \u00e9 \u0001","\uD83D\uDE80":["\\\\u0000"]}`)),
			check: func(t *testing.T, w store.RunEventWrite, _ DecodeInfo) {
				var p map[string]any
				if err := json.Unmarshal(w.Payload, &p); err != nil || p["note"] != "🚀 \\u0000 \\ud800 é \x01" {
					t.Errorf("Payload = %s (%v), want it kept as sent", w.Payload, err)
				}
			}},
		{name: "unknown members are not looked at", edit: set("producerNote", "\x00")},
		{name: "127 two-byte runes plus one byte", edit: set("runId", strings.Repeat("é", 127)+"r")},
		{name: "escaped characters in identifiers", body: strings.Replace(string(encodeNoT(fieldsWith(store.EventRunStarted, "tenantId", "a/b\"c"))), `a/b\"c`, `a\/b\"\u0063`, 1),
			check: func(t *testing.T, w store.RunEventWrite, _ DecodeInfo) {
				if w.TenantID != `a/b"c` {
					t.Errorf("TenantID = %q, want %q", w.TenantID, `a/b"c`)
				}
			}},
		{name: "occurredAt ignored", edit: set("occurredAt", "2026-02-16T10:29:00Z"),
			check: func(t *testing.T, w store.RunEventWrite, info DecodeInfo) {
				if !slices.Equal(info.UnknownFields, []string{"occurredAt"}) {
					t.Errorf("UnknownFields = %q, want [occurredAt]", info.UnknownFields)
				}
				b, _ := json.Marshal(w)
				if bytes.Contains(b, []byte("occurredAt")) {
					t.Errorf("stored write %s contains occurredAt", b)
				}
			}},
		{name: "unknown fields sorted", edit: func(m map[string]any) {
			m["zeta"] = 1
			m["emittedBy"] = "engine"
			m["runSeq"] = 9
			m["persistedAt"] = "2026-02-16T10:30:00.000000Z"
			m["Payload"] = "x"
		}, check: func(t *testing.T, w store.RunEventWrite, info DecodeInfo) {
			want := []string{"Payload", "emittedBy", "persistedAt", "runSeq", "zeta"}
			if !slices.Equal(info.UnknownFields, want) {
				t.Errorf("UnknownFields = %q, want %q", info.UnknownFields, want)
			}
			if !bytes.Equal(w.Payload, []byte(samplePayloads[store.EventRunStarted])) {
				t.Errorf("Payload = %s: the case-mismatched Payload member must not replace payload", w.Payload)
			}
		}},
	}...)
	return cases
}

func fieldsWith(eventType, name string, v any) map[string]any {
	m := fields(eventType)
	m[name] = v
	rekey(m)
	return m
}

func TestDecodeWrite_Accepts(t *testing.T) {
	for _, c := range acceptCases() {
		t.Run(c.name, func(t *testing.T) {
			body := c.bytes(t)
			w, info, err := DecodeWrite(body)
			if err != nil {
				t.Fatalf("DecodeWrite: %v\nbody: %s", err, body)
			}
			if err := Check(&w); err != nil {
				t.Errorf("Check of the decoded write: %v", err)
			}
			if c.check != nil {
				c.check(t, w, info)
			}
		})
	}
}

func (c acceptCase) bytes(t testing.TB) []byte {
	if c.body != "" {
		return []byte(c.body)
	}
	et := c.eventType
	if et == "" {
		et = store.EventRunStarted
	}
	m := fields(et)
	if c.edit != nil {
		c.edit(m)
	}
	rekey(m)
	return encode(t, m)
}

// TestDecodeWrite_KeepsBytes checks the payload and emittedAt are stored
// exactly as sent: whitespace, key order, number spelling and escapes.
func TestDecodeWrite_KeepsBytes(t *testing.T) {
	payload := `{ "z" : 1.50, "a":[1e2, -0.0],"s":"caf\u00e9 \u003c/b\u003e", "durationMs" : 12 }`
	m := fields(store.EventStepCompleted)
	delete(m, "payload")
	body := encode(t, m)
	body = append(body[:len(body)-1], []byte(`,"payload":  `+payload+"  \n}\n")...)

	w, _, err := DecodeWrite(body)
	if err != nil {
		t.Fatal(err)
	}
	if string(w.Payload) != payload {
		t.Errorf("Payload = %s\nwant     %s", w.Payload, payload)
	}
	if w.EmittedAt != "2026-02-16T10:30:00.123Z" {
		t.Errorf("EmittedAt = %q", w.EmittedAt)
	}
	// The payload must not alias the request body, which callers reuse.
	for i := range body {
		body[i] = 'x'
	}
	if string(w.Payload) != payload {
		t.Errorf("Payload changed with the body: %s", w.Payload)
	}
}

func TestDecodeWrite_Fields(t *testing.T) {
	m := fields(store.EventStepFailed)
	m["engineAttemptId"] = 3
	m["logicalAttemptId"] = 2
	rekey(m)
	w, info, err := DecodeWrite(encode(t, m))
	if err != nil {
		t.Fatal(err)
	}
	want := store.RunEventWrite{
		EventID: testEventID, EventType: store.EventStepFailed, EmittedAt: "2026-02-16T10:30:00.123Z",
		RunID: testRunID, TenantID: "tenant_acme", ProjectID: "proj_marketing", EnvironmentID: "prod",
		PlanID: "plan_abc", PlanVersion: "2", EngineAttemptID: 3, LogicalAttemptID: 2,
		IdempotencyKey: store.IdempotencyKey(testRunID, testStepID, 2, store.EventStepFailed, "plan_abc", "2"),
		StepID:         testStepID, Payload: json.RawMessage(samplePayloads[store.EventStepFailed]),
	}
	if !reflect.DeepEqual(w, want) {
		t.Errorf("got  %+v\nwant %+v", w, want)
	}
	if info.UnknownFields != nil {
		t.Errorf("UnknownFields = %q, want none", info.UnknownFields)
	}
}

// TestDecodeWrite_Concurrent runs the shared compiled schemas from many
// goroutines; under -race it shows they are safe for concurrent use, as the
// HTTP API and the Postgres store need.
func TestDecodeWrite_Concurrent(t *testing.T) {
	bodies := [][]byte{typicalBody(t), rejectCases()[0].bytes(t)}
	for _, c := range rejectCases()[20:40] {
		bodies = append(bodies, c.bytes(t))
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				body := bodies[(g+i)%len(bodies)]
				if w, _, err := DecodeWrite(body); err == nil {
					if err := Check(&w); err != nil {
						t.Errorf("Check: %v", err)
					}
				}
			}
		})
	}
	wg.Wait()
}

// typicalBody is a StepCompleted of about 750 bytes, the common case on the
// append path.
func typicalBody(tb testing.TB) []byte {
	return encode(tb, fields(store.EventStepCompleted))
}

func BenchmarkDecodeWrite(b *testing.B) {
	body := typicalBody(b)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := DecodeWrite(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeWrite_Rejected measures the rejection path, which runs the
// schema library to locate the problem.
func BenchmarkDecodeWrite_Rejected(b *testing.B) {
	m := fields(store.EventStepCompleted)
	m["payload"] = raw(`{"durationMs":-1}`)
	body := encode(b, m)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := DecodeWrite(body); err == nil {
			b.Fatal("accepted")
		}
	}
}

func ExampleDecodeWrite() {
	body := []byte(`{"eventId":"3f1c2a4e-8b7d-4c6a-9e2f-1a2b3c4d5e6f","eventType":"onRunStarted"}`)
	_, _, err := DecodeWrite(body)
	var e *store.Error
	if errors.As(err, &e) {
		fmt.Println(e.Field)
		fmt.Println(e.Message)
	}
	// Output:
	// eventType
	// eventType "onRunStarted" must be PascalCase (letters and digits, starting with an uppercase letter) without the "on" prefix: use "RunStarted"
}
