package validate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"unicode/utf8"

	"github.com/runstream/runstream/internal/jsonx"
	"github.com/runstream/runstream/store"
)

// DecodeInfo reports what [DecodeWrite] ignored.
type DecodeInfo struct {
	// UnknownFields lists, sorted, the top-level members that are not
	// RunEventWrite fields (for example "occurredAt", or a field of a newer
	// producer). They are allowed, ignored and not stored.
	UnknownFields []string
}

// DecodeWrite parses one RunEventWrite from a JSON body and validates it
// exactly as [Check] does: JSON Schema of the event type, then the
// rules a schema cannot state. Payload keeps the exact bytes of the
// payload member and emittedAt the exact string sent. Member names are
// matched case-sensitively, and a member may appear only once (readers that
// keep the first of two values and readers that keep the last would
// otherwise see different events). Every error is an *Error with Code
// SCHEMA_VALIDATION_FAILED, Field naming the member (or "body" for the
// document as a whole) and a Message that says what to change.
func DecodeWrite(data []byte) (store.RunEventWrite, DecodeInfo, error) {
	doc, payload, info, e := decodeDoc(data)
	if e != nil {
		return store.RunEventWrite{}, info, e
	}
	if e := validateDoc(doc, info.UnknownFields); e != nil {
		return store.RunEventWrite{}, info, e
	}
	w := writeFromDoc(doc)
	w.Payload = payload
	if e := checkRules(&w); e != nil {
		return store.RunEventWrite{}, info, e
	}
	return w, info, nil
}

// decodeDoc is step 1 for a body: it parses data into the document the
// schema sees (known members only) and the payload's raw bytes.
func decodeDoc(data []byte) (map[string]any, json.RawMessage, DecodeInfo, *store.Error) {
	var info DecodeInfo
	members, e := splitObject(data, holdingWrite)
	if e != nil {
		return nil, nil, info, e
	}
	if e := checkMembers(members, !utf8.Valid(data)); e != nil {
		return nil, nil, info, e
	}
	if bytes.Contains(data, escapeU) {
		if e := checkTextMembers(members); e != nil {
			return nil, nil, info, e
		}
	}
	doc := make(map[string]any, len(fieldOrder))
	var payload json.RawMessage
	for _, m := range members {
		if !knownField(m.name) {
			info.UnknownFields = append(info.UnknownFields, m.name)
			continue
		}
		if m.name == "payload" {
			// A copy: the caller may reuse data once DecodeWrite returns.
			payload = bytes.Clone(m.raw)
			continue // decoded below, once eventType is known
		}
		v, err := memberValue(m.raw)
		if err != nil {
			// Unreachable: splitObject already checked the member is JSON.
			return nil, nil, info, &store.Error{Code: store.CodeSchemaValidationFailed, Field: m.name, Message: m.name + " is not valid JSON", Err: err}
		}
		doc[m.name] = v
	}
	if payload != nil {
		v, err := payloadValue(payload, doc["eventType"])
		if err != nil {
			return nil, nil, info, &store.Error{Code: store.CodeSchemaValidationFailed, Field: "payload", Message: "payload is not valid JSON", Err: err}
		}
		doc["payload"] = v
	}
	sort.Strings(info.UnknownFields)
	return doc, payload, info, nil
}

// holdingWrite is what a body of DecodeWrite holds, for its messages.
const holdingWrite = "a RunEventWrite"

// Object parses data, a request body, as one JSON object and returns its
// members' raw values by name, refusing what DecodeWrite refuses of a body
// as a whole: text that is not exactly one JSON value, another kind of
// value, and a member name given twice (readers that keep the first of two
// values and readers that keep the last would see different requests).
// Names are decoded and matched exactly. holding says what the object
// holds, for the messages ("a batch {\"events\": [...]}"). Every error is an
// *Error with Code SCHEMA_VALIDATION_FAILED; the values are slices of
// data.
func Object(data []byte, holding string) (map[string]json.RawMessage, error) {
	members, e := splitObject(data, holding)
	if e != nil {
		return nil, e
	}
	if e := checkMembers(members, false); e != nil {
		return nil, e
	}
	out := make(map[string]json.RawMessage, len(members))
	for _, m := range members {
		out[m.name] = m.raw
	}
	return out, nil
}

// member is one top-level member: its decoded name and the exact bytes of
// its value.
type member struct {
	name string
	raw  json.RawMessage
}

// splitObject parses the body into its top-level members. json.Valid
// checks the whole document first (one pass, no allocation); the members
// are then cut out by a scanner that can rely on that validity. Values stay
// raw: the payload is kept byte-for-byte, unknown members are never
// decoded, and only known members become values for the schema. (A
// json.Decoder walking tokens costs several times more: it builds a
// SyntaxError at the end of every member value to find where it stops.)
func splitObject(data []byte, holding string) ([]member, *store.Error) {
	if !json.Valid(data) {
		return nil, syntaxError(data, holding)
	}
	i := jsonx.SkipSpace(data, 0)
	if data[i] != '{' {
		return nil, store.Invalid("body", "body must be one JSON object holding %s, got %s", holding, valueKind(data[i]))
	}
	members := make([]member, 0, 16)
	jsonx.EachMember(data[i:], func(key, raw []byte) {
		members = append(members, member{name: memberName(key), raw: raw})
	})
	return members, nil
}

// memberName decodes a quoted member name of a valid document.
func memberName(key []byte) string {
	if bytes.IndexByte(key, '\\') < 0 {
		return string(key[1 : len(key)-1])
	}
	var name string
	_ = json.Unmarshal(key, &name) // cannot fail: the document is valid JSON
	return name
}

// payloadValue converts a valid payload for the schema of eventType,
// decoding only the members that schema looks at: a step's result or any
// other free-form member can be large, and the schema never reads it. The
// verdict is the same because the payload schemas use only properties and
// required (compileNode refuses anything else), and a member that is in
// neither is ignored by both. An array payload, always rejected, is not
// decoded either.
func payloadValue(raw []byte, eventType any) (any, error) {
	switch raw[0] {
	case '{':
		_, fast := schemaFor(eventType)
		var keep map[string]struct{} // nil: decode nothing
		if n := fast.child("payload"); n != nil {
			keep = n.keep
		}
		obj := make(map[string]any, len(keep))
		var err error
		jsonx.EachMember(raw, func(key, val []byte) {
			if bytes.IndexByte(key, '\\') < 0 {
				if _, ok := keep[string(key[1:len(key)-1])]; !ok {
					return
				}
			} else if _, ok := keep[memberName(key)]; !ok {
				return
			}
			v, verr := memberValue(val)
			if verr != nil && err == nil {
				err = verr
			}
			obj[memberName(key)] = v
		})
		return obj, err
	case '[':
		return []any{}, nil
	}
	return memberValue(raw)
}

func valueKind(c byte) string {
	switch c {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}

// syntaxError explains why data is not one JSON value; only the rejection
// path pays for the second parse that finds the offset.
func syntaxError(data []byte, holding string) *store.Error {
	if len(bytes.TrimSpace(data)) == 0 {
		return store.Invalid("body", "body is empty; send one JSON object holding %s", holding)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var v json.RawMessage
	err := dec.Decode(&v)
	var se *json.SyntaxError
	switch {
	case err == nil:
		return store.Invalid("body", "body must be exactly one JSON object; found more data after byte %d", dec.InputOffset())
	case errors.As(err, &se):
		return &store.Error{Code: store.CodeSchemaValidationFailed, Field: "body",
			Message: fmt.Sprintf("body is not valid JSON: %s (at byte %d)", se.Error(), se.Offset), Err: err}
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return &store.Error{Code: store.CodeSchemaValidationFailed, Field: "body",
			Message: "body is not valid JSON: it ends before the value is complete", Err: err}
	}
	return &store.Error{Code: store.CodeSchemaValidationFailed, Field: "body", Message: "body is not valid JSON: " + err.Error(), Err: err}
}

// checkMembers rejects duplicate member names and, when the body is not
// valid UTF-8, names the member holding the bad bytes (known members
// first, in fieldOrder, as Check checks them).
func checkMembers(members []member, badUTF8 bool) *store.Error {
	if len(members) <= 16 {
		for i := 1; i < len(members); i++ {
			for j := 0; j < i; j++ {
				if members[i].name == members[j].name {
					return duplicateMember(members[i].name)
				}
			}
		}
	} else {
		seen := make(map[string]struct{}, len(members))
		for _, m := range members {
			if _, dup := seen[m.name]; dup {
				return duplicateMember(m.name)
			}
			seen[m.name] = struct{}{}
		}
	}
	if !badUTF8 {
		return nil
	}
	bad := ""
	for _, m := range members {
		if !utf8.Valid(m.raw) && (bad == "" || fieldRank(m.name) < fieldRank(bad)) {
			bad = m.name
		}
	}
	if bad == "" || !utf8.ValidString(bad) {
		return invalidUTF8("body") // a member name
	}
	return invalidUTF8(bad)
}

func duplicateMember(name string) *store.Error {
	field := name
	if field == "" || !utf8.ValidString(field) || len(field) > 255 {
		field = "body"
	}
	return store.Invalid(field, "member %q appears more than once; send each field once", shorten(name))
}

// memberValue turns a raw value of a valid document into the value the
// schema sees, in one pass and without a second scan: numbers stay
// json.Number, so an attempt of 1.5 or 1e400 is judged exactly and never
// rounded, and a member appearing twice in an object keeps its last value,
// as encoding/json does. Nesting is bounded by json.Valid (10000 levels).
func memberValue(raw []byte) (any, error) {
	switch raw[0] {
	case '"':
		if bytes.IndexByte(raw, '\\') < 0 {
			return string(raw[1 : len(raw)-1]), nil
		}
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	case '{':
		obj := make(map[string]any)
		var err error
		jsonx.EachMember(raw, func(key, val []byte) {
			v, verr := memberValue(val)
			if verr != nil && err == nil {
				err = verr
			}
			obj[memberName(key)] = v
		})
		return obj, err
	case '[':
		arr := make([]any, 0, 4)
		var err error
		eachElement(raw, func(val []byte) {
			v, verr := memberValue(val)
			if verr != nil && err == nil {
				err = verr
			}
			arr = append(arr, v)
		})
		return arr, err
	case 't':
		return true, nil
	case 'f':
		return false, nil
	case 'n':
		return nil, nil
	}
	return json.Number(raw), nil
}

// eachElement calls fn with every element of the array that starts data,
// which must be valid JSON.
func eachElement(data []byte, fn func(raw []byte)) {
	i := jsonx.SkipSpace(data, 1)
	if data[i] == ']' {
		return
	}
	for {
		end := jsonx.ValueEnd(data, i)
		fn(data[i:end:end])
		i = jsonx.SkipSpace(data, end)
		if data[i] == ']' {
			return
		}
		i = jsonx.SkipSpace(data, i+1) // the comma
	}
}

// writeFromDoc fills a RunEventWrite from a document that passed the
// schema, so every member present has its schema type.
func writeFromDoc(doc map[string]any) store.RunEventWrite {
	str := func(name string) string { s, _ := doc[name].(string); return s }
	engine, _ := attemptValue(doc["engineAttemptId"])
	logical, _ := attemptValue(doc["logicalAttemptId"])
	return store.RunEventWrite{
		EventID:          str("eventId"),
		EventType:        str("eventType"),
		EmittedAt:        str("emittedAt"),
		RunID:            str("runId"),
		TenantID:         str("tenantId"),
		ProjectID:        str("projectId"),
		EnvironmentID:    str("environmentId"),
		PlanID:           str("planId"),
		PlanVersion:      str("planVersion"),
		EngineAttemptID:  engine,
		LogicalAttemptID: logical,
		IdempotencyKey:   str("idempotencyKey"),
		StepID:           str("stepId"),
	}
}
