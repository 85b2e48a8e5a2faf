package validate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/runstream/runstream/internal/jsonx"
	"github.com/runstream/runstream/store"
)

// Validation runs in the same three steps for [DecodeWrite] and
// [Check], over the same generic document (map[string]any holding
// string, json.Number or int64, bool, nil, []any and map[string]any):
//
//  1. text: every string and the payload are valid UTF-8 (checkStructText,
//     or checkMembers on the raw body), and no string holds a NUL or an
//     unpaired surrogate (checkStructNUL, or checkTextMembers; text.go);
//  2. validateDoc: the JSON Schema of the event type, after making sure no
//     number would hurt the schema library;
//  3. checkRules: what a schema cannot state (identifier byte length, the
//     idempotency key).
//
// Both entry points build that document the same way (the JSON of a struct
// decodes to the document the struct produces), so they reach the same
// verdict and report the same Field. When a write breaks several rules the
// error reported is the first in fieldOrder, so the answer is deterministic
// although the schema library walks properties in map order.

// Check checks w against the JSON Schema of its event type and the
// rules a schema cannot state, reaching the same verdict as [DecodeWrite]
// on w's JSON. The Postgres store calls it on every append. Every error is
// an *Error with Code SCHEMA_VALIDATION_FAILED, the offending Field and a
// Message that says what to change.
func Check(w *store.RunEventWrite) error {
	if w == nil {
		return store.Invalid("body", "no event given; send one RunEventWrite")
	}
	if e := checkStructText(w); e != nil {
		return e
	}
	if e := checkStructNUL(w); e != nil {
		return e
	}
	doc, e := writeDoc(w)
	if e != nil {
		return e
	}
	if e := validateDoc(doc, nil); e != nil {
		return e
	}
	if e := checkRules(w); e != nil {
		return e
	}
	return nil
}

// writeDoc builds the document the schema sees for a struct: the one
// decodeDoc makes of its JSON, except that attempts stay int64.
func writeDoc(w *store.RunEventWrite) (map[string]any, *store.Error) {
	doc := map[string]any{
		"eventId":          w.EventID,
		"eventType":        w.EventType,
		"emittedAt":        w.EmittedAt,
		"runId":            w.RunID,
		"tenantId":         w.TenantID,
		"projectId":        w.ProjectID,
		"environmentId":    w.EnvironmentID,
		"planId":           w.PlanID,
		"planVersion":      w.PlanVersion,
		"engineAttemptId":  w.EngineAttemptID,
		"logicalAttemptId": w.LogicalAttemptID,
		"idempotencyKey":   w.IdempotencyKey,
	}
	// Empty StepID and Payload are absent, as their omitempty JSON tags say.
	if w.StepID != "" {
		doc["stepId"] = w.StepID
	}
	if len(w.Payload) > 0 {
		if !json.Valid(w.Payload) {
			_, err := decodeAny(w.Payload) // for the reason
			return nil, &store.Error{Code: store.CodeSchemaValidationFailed, Field: "payload",
				Message: fmt.Sprintf("payload is not valid JSON (%v); send a JSON object", err), Err: err}
		}
		p, err := payloadValue(w.Payload[jsonx.SkipSpace(w.Payload, 0):], w.EventType)
		if err != nil {
			return nil, &store.Error{Code: store.CodeSchemaValidationFailed, Field: "payload", Message: "payload is not valid JSON", Err: err}
		}
		doc["payload"] = p
	}
	return doc, nil
}

// fieldOrder ranks the RunEventWrite members: when several are wrong, the
// earliest is reported. Keys of the idempotency key come before the key.
var fieldOrder = map[string]int{
	"eventId":          1,
	"eventType":        2,
	"emittedAt":        3,
	"runId":            4,
	"tenantId":         5,
	"projectId":        6,
	"environmentId":    7,
	"planId":           8,
	"planVersion":      9,
	"stepId":           10,
	"engineAttemptId":  11,
	"logicalAttemptId": 12,
	"idempotencyKey":   13,
	"payload":          14,
}

// knownField reports whether name is a member of RunEventWrite (exact,
// case-sensitive spelling).
func knownField(name string) bool {
	_, ok := fieldOrder[name]
	return ok
}

func fieldRank(name string) int {
	if r, ok := fieldOrder[name]; ok {
		return r
	}
	return len(fieldOrder) + 1
}

const maxIdentifierBytes = store.MaxIdentifierBytes

// identifierFields are the members [store.ValidIdentifier] constrains, in
// fieldOrder.
var identifierFields = []string{"runId", "tenantId", "projectId", "environmentId", "planId", "planVersion", "stepId"}

func isIdentifierField(name string) bool {
	for _, f := range identifierFields {
		if f == name {
			return true
		}
	}
	return false
}

func isAttemptField(name string) bool {
	return name == "engineAttemptId" || name == "logicalAttemptId"
}

// checkStructText is step 1 for a struct: Go strings may hold any bytes,
// JSON text may not. DecodeWrite runs the same check on the raw members.
func checkStructText(w *store.RunEventWrite) *store.Error {
	fields := [...]struct {
		name, value string
	}{
		{"eventId", w.EventID}, {"eventType", w.EventType}, {"emittedAt", w.EmittedAt},
		{"runId", w.RunID}, {"tenantId", w.TenantID}, {"projectId", w.ProjectID},
		{"environmentId", w.EnvironmentID}, {"planId", w.PlanID}, {"planVersion", w.PlanVersion},
		{"stepId", w.StepID}, {"idempotencyKey", w.IdempotencyKey},
	}
	for _, f := range fields {
		if !utf8.ValidString(f.value) {
			return invalidUTF8(f.name)
		}
	}
	if !utf8.Valid(w.Payload) {
		return invalidUTF8("payload")
	}
	return nil
}

func invalidUTF8(field string) *store.Error {
	if field == "body" {
		return store.Invalid(field, "body is not valid UTF-8; encode the JSON document as UTF-8")
	}
	return store.Invalid(field, "%s is not valid UTF-8; encode the text as UTF-8", field)
}

// validateDoc is step 2: the JSON Schema of the event type. The accept
// path (node.check) passes a valid document; anything else is judged by the
// library, whose verdict stands and whose errors locate the problem (see
// schemaSet). unknown lists the ignored top-level names, used only to hint
// at a misspelt required field.
func validateDoc(doc map[string]any, unknown []string) *store.Error {
	sch, fast := schemaFor(doc["eventType"])
	var stack [8]pathElem
	st := checkState{path: stack[:0]}
	fast.check(doc, &st)
	if st.rangeLoc != nil {
		return numberRangeError(doc, st.rangeLoc)
	}
	if !st.invalid {
		return nil
	}
	err := sch.Validate(doc)
	if err == nil {
		return nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		// Only a value outside the JSON data model gets here, which our
		// own document builders never produce.
		return &store.Error{Code: store.CodeSchemaValidationFailed, Field: "body", Message: "body could not be validated", Err: err}
	}
	leaf, ok := bestLeaf(verr, doc)
	if !ok {
		return &store.Error{Code: store.CodeSchemaValidationFailed, Field: "body", Message: "body does not match the RunEventWrite schema", Err: err}
	}
	return describe(leaf, doc, unknown)
}

// numberRangeError rejects a number the schema library cannot be trusted
// with. The library evaluates minimum, maximum and the integer type with
// big.Rat.SetString: an exponent over a million makes SetString fail and
// the minimum check dereference its nil result, and "1e999999" or a
// megabyte of digits costs milliseconds to seconds of CPU. Numbers where no
// schema keyword looks (payload.result, unknown payload fields) are never
// parsed and may be anything.
func numberRangeError(doc map[string]any, loc []string) *store.Error {
	field, got := fieldPath(doc, loc, "")
	if isAttemptField(field) {
		return attemptError(field, got)
	}
	return store.Invalid(field, "%s %s is out of range; send a number of at most 64 characters with an exponent below 1000", field, describeValue(got))
}

// numberInRange bounds a JSON number literal to 64 characters and a
// three-digit exponent, far beyond any value a producer has reason to send.
func numberInRange(n json.Number) bool {
	s := string(n)
	if len(s) > 64 {
		return false
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		exp := strings.TrimLeft(s[i+1:], "+-")
		if len(strings.TrimLeft(exp, "0")) > 3 {
			return false
		}
	}
	return true
}

// checkRules is step 3, on a write whose document passed the schema.
func checkRules(w *store.RunEventWrite) *store.Error {
	values := [...]string{w.RunID, w.TenantID, w.ProjectID, w.EnvironmentID, w.PlanID, w.PlanVersion, w.StepID}
	for i, v := range values {
		// maxLength in the schema counts characters; the limit is bytes.
		if len(v) > maxIdentifierBytes {
			return identifierTooLong(identifierFields[i], v)
		}
	}
	if want := w.Key(); w.IdempotencyKey != want {
		return keyMismatch(want, w.IdempotencyKey)
	}
	return nil
}

// leafError is a schema failure located at one keyword, ranked for
// reporting.
type leafError struct {
	verr    *jsonschema.ValidationError
	field   string // field path, e.g. payload.artifacts[0].uri
	missing string // for required: the missing member reported
	rank    int
	prio    int
}

// bestLeaf picks the failure to report: the lowest fieldOrder, then the
// lowest path, then the most specific keyword (a forbidden stepId before
// its pattern, a missing member before a wrong type).
func bestLeaf(root *jsonschema.ValidationError, doc map[string]any) (leafError, bool) {
	var best leafError
	found := false
	var walk func(v *jsonschema.ValidationError)
	walk = func(v *jsonschema.ValidationError) {
		if len(v.Causes) > 0 {
			for _, c := range v.Causes {
				walk(c)
			}
			return
		}
		l := leafError{verr: v, prio: kindPriority(v.ErrorKind)}
		if req, ok := v.ErrorKind.(*kind.Required); ok && len(req.Missing) > 0 {
			l.missing = req.Missing[0]
			for _, m := range req.Missing[1:] {
				if fieldRank(m) < fieldRank(l.missing) || (fieldRank(m) == fieldRank(l.missing) && m < l.missing) {
					l.missing = m
				}
			}
		}
		l.field, _ = fieldPath(doc, v.InstanceLocation, l.missing)
		top := l.missing
		if len(v.InstanceLocation) > 0 {
			top = v.InstanceLocation[0]
		}
		l.rank = fieldRank(top)
		if !found || l.less(best) {
			best, found = l, true
		}
	}
	walk(root)
	return best, found
}

func (l leafError) less(o leafError) bool {
	if l.rank != o.rank {
		return l.rank < o.rank
	}
	if c := compareLocations(l.location(), o.location()); c != 0 {
		return c < 0
	}
	return l.prio < o.prio
}

// location is where the reported problem is: the instance location, plus
// the missing member for a required failure.
func (l leafError) location() []string {
	if l.missing == "" {
		return l.verr.InstanceLocation
	}
	return append(slices.Clip(l.verr.InstanceLocation), l.missing)
}

// compareLocations orders locations member by member, array indexes by
// value (artifacts[2] before artifacts[10]).
func compareLocations(a, b []string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			continue
		}
		ai, aerr := strconv.Atoi(a[i])
		bi, berr := strconv.Atoi(b[i])
		if aerr == nil && berr == nil {
			return cmpInt64(int64(ai), int64(bi))
		}
		return strings.Compare(a[i], b[i])
	}
	return len(a) - len(b)
}

func kindPriority(k jsonschema.ErrorKind) int {
	switch k.(type) {
	case *kind.FalseSchema:
		return 0
	case *kind.Required:
		return 1
	case *kind.Type:
		return 2
	default:
		return 3
	}
}

// fieldPath renders an instance location as a caller-facing path
// (payload.artifacts[0].uri), walking doc to tell array indexes from
// member names, and returns the value found there. member, when set, is
// appended as a member of the location.
func fieldPath(doc map[string]any, loc []string, member string) (string, any) {
	var b strings.Builder
	var cur any = doc
	for _, tok := range loc {
		switch c := cur.(type) {
		case []any:
			b.WriteString("[" + tok + "]")
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(c) {
				cur = c[i]
			} else {
				cur = nil
			}
		case map[string]any:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(tok)
			cur = c[tok]
		default:
			cur = nil
		}
	}
	if member != "" {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(member)
		cur = nil
	}
	if b.Len() == 0 {
		return "body", cur
	}
	return b.String(), cur
}

// describe turns the reported schema failure into an actionable error.
func describe(l leafError, doc map[string]any, unknown []string) *store.Error {
	field, got := fieldPath(doc, l.verr.InstanceLocation, "")
	loc := l.verr.InstanceLocation
	k := l.verr.ErrorKind

	if req, ok := k.(*kind.Required); ok {
		return requiredError(l.field, l.missing, req.Missing, loc, doc, unknown)
	}
	if len(loc) == 0 {
		return store.Invalid("body", "body must be a JSON object holding one RunEventWrite, got %s", describeValue(got))
	}
	if len(loc) == 1 {
		if e := describeTopLevel(field, got, k, doc); e != nil {
			return e
		}
	}
	return describeGeneric(field, got, k)
}

func requiredError(field, missing string, all, loc []string, doc map[string]any, unknown []string) *store.Error {
	if len(loc) > 0 {
		if len(loc) >= 3 && loc[0] == "payload" && loc[1] == "artifacts" {
			return store.Invalid(field, "%s is required: every artifact reference needs a non-empty uri and a kind", field)
		}
		return store.Invalid(field, "%s is required", field)
	}
	var msg string
	if missing == "stepId" {
		msg = fmt.Sprintf("stepId is required for step event %v; send the id of the step the event is about", doc["eventType"])
	} else {
		msg = fmt.Sprintf("%s is required in every RunEventWrite", missing)
	}
	for _, u := range unknown {
		if strings.EqualFold(u, missing) {
			msg += fmt.Sprintf(" (the body has %q: field names are case-sensitive)", u)
			break
		}
	}
	if len(all) > 1 {
		others := make([]string, 0, len(all)-1)
		for _, m := range all {
			if m != missing {
				others = append(others, m)
			}
		}
		sort.Slice(others, func(i, j int) bool { return fieldRank(others[i]) < fieldRank(others[j]) })
		msg += "; also missing: " + strings.Join(others, ", ")
	}
	return store.Invalid(missing, "%s", msg)
}

// describeTopLevel words the failures of envelope members; nil falls back
// to the generic wording.
func describeTopLevel(field string, got any, k jsonschema.ErrorKind, doc map[string]any) *store.Error {
	_, isType := k.(*kind.Type)
	switch {
	case field == "eventId":
		if isType {
			return store.Invalid(field, "eventId must be a string holding a UUID v4, got %s", describeValue(got))
		}
		return eventIDError(got)
	case field == "eventType":
		if isType {
			return store.Invalid(field, "eventType must be a string such as \"RunStarted\", got %s", describeValue(got))
		}
		if s, ok := got.(string); ok {
			return eventTypeError(s)
		}
	case field == "emittedAt":
		if isType {
			return store.Invalid(field, "emittedAt must be a string holding an RFC 3339 date-time, got %s", describeValue(got))
		}
		return dateTimeError(field, got)
	case field == "stepId":
		if _, ok := k.(*kind.FalseSchema); ok {
			return store.Invalid(field, "%v is a run-level event and must not have a stepId; remove stepId, or use a step event type (%s)",
				doc["eventType"], strings.Join(store.StepEventTypes, ", "))
		}
		return identifierError(field, got, k)
	case isIdentifierField(field):
		return identifierError(field, got, k)
	case isAttemptField(field):
		return attemptError(field, got)
	case field == "idempotencyKey":
		if isType {
			return store.Invalid(field, "idempotencyKey must be a string, got %s; compute it as %s", describeValue(got), store.IdempotencyKeyFormula)
		}
		s, _ := got.(string)
		if want, ok := expectedKey(doc); ok {
			return keyMismatch(want, s)
		}
		return store.Invalid(field, "idempotencyKey must be 64 lowercase hex characters, received %q; compute it as %s", shorten(s), store.IdempotencyKeyFormula)
	case field == "payload":
		if isType {
			return store.Invalid(field, "payload must be a JSON object when present, got %s; omit payload or send an object such as {}", describeValue(got))
		}
	}
	return nil
}

func describeGeneric(field string, got any, k jsonschema.ErrorKind) *store.Error {
	switch k := k.(type) {
	case *kind.Type:
		return store.Invalid(field, "%s must be %s, got %s", field, wantTypes(k.Want), describeValue(got))
	case *kind.Minimum:
		return store.Invalid(field, "%s must be >= %s, got %s", field, ratString(k.Want), describeValue(got))
	case *kind.Maximum:
		return store.Invalid(field, "%s must be <= %s, got %s", field, ratString(k.Want), describeValue(got))
	case *kind.MinLength:
		if k.Want == 1 {
			return store.Invalid(field, "%s must not be empty", field)
		}
		return store.Invalid(field, "%s must be at least %d characters long, got %d", field, k.Want, k.Got)
	case *kind.MaxLength:
		return store.Invalid(field, "%s must be at most %d characters long, got %d", field, k.Want, k.Got)
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, v := range k.Want {
			want[i] = fmt.Sprint(v)
		}
		return store.Invalid(field, "%s must be one of %s, got %s", field, strings.Join(want, ", "), describeValue(got))
	case *kind.Const:
		return store.Invalid(field, "%s must be %v, got %s", field, k.Want, describeValue(got))
	case *kind.Format:
		if k.Want == "date-time" {
			return dateTimeError(field, got)
		}
		return store.Invalid(field, "%s must be a %s, got %s", field, k.Want, describeValue(got))
	case *kind.Pattern:
		return store.Invalid(field, "%s must match %s, got %s", field, k.Want, describeValue(got))
	case *kind.FalseSchema:
		return store.Invalid(field, "%s is not allowed here; remove it", field)
	}
	return store.Invalid(field, "%s is invalid (schema keyword %s)", field, strings.Join(k.KeywordPath(), "/"))
}

func eventIDError(got any) *store.Error {
	s, _ := got.(string)
	const example = "for example 3f1c2a4e-8b7d-4c6a-9e2f-1a2b3c4d5e6f"
	if len(s) == 36 && s[8] == '-' && s[13] == '-' && s[18] == '-' && s[23] == '-' && isHexUUID(s) {
		if s[14] != '4' {
			return store.Invalid("eventId", "eventId %q is a version %c UUID; it must be a random UUID v4 (%s)", s, s[14], example)
		}
		return store.Invalid("eventId", "eventId %q does not have the RFC 4122 variant (8, 9, a or b at position 20); it must be a UUID v4 (%s)", s, example)
	}
	return store.Invalid("eventId", "eventId must be a UUID v4 in 8-4-4-4-12 hex form (%s), got %s", example, describeValue(got))
}

func isHexUUID(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i == 8 || i == 13 || i == 18 || i == 23 {
			continue
		}
		if !isDigit(c) && (c < 'a' || c > 'f') && (c < 'A' || c > 'F') {
			return false
		}
	}
	return true
}

// eventTypeError explains a type name that is not PascalCase and, when it
// can, suggests the name to use: "onRunStarted" and "run_started" become
// "RunStarted".
func eventTypeError(s string) *store.Error {
	if s == "" {
		return store.Invalid("eventType", "eventType must not be empty; use a PascalCase type such as \"RunStarted\"")
	}
	msg := fmt.Sprintf("eventType %q must be PascalCase (letters and digits, starting with an uppercase letter)", shorten(s))
	if sug := suggestEventType(s); sug != "" {
		if len(s) > 2 && strings.HasPrefix(s, "on") && s[2] >= 'A' && s[2] <= 'Z' {
			msg += fmt.Sprintf(" without the \"on\" prefix: use %q", sug)
		} else {
			msg += fmt.Sprintf(": use %q", sug)
		}
	} else {
		msg += ", such as \"RunStarted\""
	}
	return store.Invalid("eventType", "%s", msg)
}

func suggestEventType(s string) string {
	if len(s) > 2 && strings.HasPrefix(s, "on") && s[2] >= 'A' && s[2] <= 'Z' {
		s = s[2:]
	}
	var b strings.Builder
	upper := true
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z':
			if upper {
				r -= 'a' - 'A'
			}
			upper = false
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			upper = false
		case r == '_' || r == '-' || r == ' ' || r == '.':
			upper = true
			continue
		default:
			return ""
		}
		b.WriteRune(r)
	}
	sug := b.String()
	if sug == "" || sug[0] < 'A' || sug[0] > 'Z' {
		return ""
	}
	// RUN_STARTED and Run_Started: prefer the known spelling.
	for _, t := range append(append([]string(nil), store.RunEventTypes...), store.StepEventTypes...) {
		if strings.EqualFold(t, sug) {
			return t
		}
	}
	return sug
}

func dateTimeError(field string, got any) *store.Error {
	return store.Invalid(field, "%s must be an RFC 3339 date-time with a zone, such as \"2026-02-16T10:30:00.123Z\" or \"2026-02-16T11:30:00+01:00\" (uppercase T and Z, seconds 00-59), got %s",
		field, describeValue(got))
}

func identifierError(field string, got any, k jsonschema.ErrorKind) *store.Error {
	s, ok := got.(string)
	if !ok {
		return store.Invalid(field, "%s must be a string, got %s", field, describeValue(got))
	}
	if s == "" {
		return store.Invalid(field, "%s must not be empty (1-255 bytes)", field)
	}
	if len(s) > maxIdentifierBytes {
		return identifierTooLong(field, s)
	}
	if i := strings.IndexByte(s, '|'); i >= 0 {
		return store.Invalid(field, "%s %q contains \"|\" at byte %d; \"|\" is the idempotency key separator and is not allowed in identifiers: remove or replace it", field, shorten(s), i)
	}
	for i, r := range s {
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) {
			return store.Invalid(field, "%s %q contains control character U+%04X at byte %d; identifiers must be printable", field, shorten(s), r, i)
		}
	}
	if k == nil {
		return store.Invalid(field, "%s %q is not an identifier: 1-255 bytes, printable, no \"|\"", field, shorten(s))
	}
	return describeGeneric(field, got, k)
}

// Identifier checks s as the identifier field ([store.ValidIdentifier]),
// for identifiers that come from elsewhere than
// a write's body: a URL path or query. The error is the one a write with
// that field would get: SCHEMA_VALIDATION_FAILED naming field.
func Identifier(field, s string) error {
	if store.ValidIdentifier(s) {
		return nil
	}
	if !utf8.ValidString(s) {
		return invalidUTF8(field)
	}
	return identifierError(field, s, nil)
}

func identifierTooLong(field, s string) *store.Error {
	return store.Invalid(field, "%s must be at most %d bytes, got %d bytes; shorten it", field, maxIdentifierBytes, len(s))
}

func attemptError(field string, got any) *store.Error {
	msg := fmt.Sprintf("%s must be an integer >= 1 (at most 2147483647), got %s", field, describeValue(got))
	if _, ok := got.(string); ok {
		msg += "; send it as a JSON number, without quotes"
	}
	return store.Invalid(field, "%s", msg)
}

func keyMismatch(want, got string) *store.Error {
	return store.Invalid("idempotencyKey", "idempotencyKey does not match this event: expected %s, received %q; compute it as %s",
		want, shorten(got), store.IdempotencyKeyFormula)
}

// expectedKey computes the key of a document whose key inputs are valid
// enough to hash, for the message of a malformed key.
func expectedKey(doc map[string]any) (string, bool) {
	str := func(name string) string { s, _ := doc[name].(string); return s }
	attempt, ok := attemptValue(doc["logicalAttemptId"])
	if !ok || str("runId") == "" || str("eventType") == "" || str("planId") == "" || str("planVersion") == "" {
		return "", false
	}
	return store.IdempotencyKey(str("runId"), str("stepId"), attempt, str("eventType"), str("planId"), str("planVersion")), true
}

// attemptValue converts a schema-valid attempt (an integral JSON number in
// range, possibly written 1.0 or 1e3) to int64.
func attemptValue(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case json.Number:
		if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			return i, true
		}
		if !numberInRange(n) {
			return 0, false
		}
		r, ok := new(big.Rat).SetString(string(n))
		if ok && r.IsInt() && r.Num().IsInt64() {
			return r.Num().Int64(), true
		}
	}
	return 0, false
}

func wantTypes(want []string) string {
	parts := make([]string, len(want))
	for i, w := range want {
		parts[i] = article(w) + " " + w
	}
	return strings.Join(parts, " or ")
}

func article(typ string) string {
	switch typ {
	case "integer", "object", "array":
		return "an"
	}
	return "a"
}

// describeValue names a JSON value's type and, for scalars, shows it.
func describeValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean " + strconv.FormatBool(v)
	case string:
		return "string " + strconv.Quote(shorten(v))
	case json.Number:
		return "number " + shorten(string(v))
	case int64:
		return "number " + strconv.FormatInt(v, 10)
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%T", v)
}

func ratString(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	return r.FloatString(6)
}

// shorten keeps echoed input readable and bounded.
func shorten(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// decodeAny parses one JSON value with numbers kept as json.Number, the
// form the schema library compares exactly.
func decodeAny(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return v, nil
}
