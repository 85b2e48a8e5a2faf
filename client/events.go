package client

import (
	"fmt"
	"slices"
	"strings"

	"github.com/runstream/runstream/store"
)

// What callers write and read, under this package's names, so that an
// engine imports the client alone. They are the store's own types (type
// aliases): a [store.RunEventWrite] is an [Event].
type (
	// Event is one run event as the API takes it (RunEvents v1 section
	// 4.1): Append fills in an empty EventID (a random UUID v4), EmittedAt
	// (now) and IdempotencyKey (the v2 key). [Run] fills in all the rest.
	Event = store.RunEventWrite
	// AppendResult is the API's answer to an append; [Result] embeds it.
	AppendResult = store.AppendResult
	// ArtifactRef points at an artifact stored elsewhere (StepCompleted's
	// and RunCompleted's Artifacts).
	ArtifactRef = store.ArtifactRef
	// Error is the API's refusal (or the local one of an event the API
	// would refuse): Code, Field and Message as the API answers them.
	Error = store.Error
	// Code is an [Error]'s code, such as SCHEMA_VALIDATION_FAILED.
	Code = store.Code
)

// The API's refusals for errors.Is, the store's sentinels under this
// package's names: errors.Is(err, client.ErrSchemaValidation).
var (
	// ErrSchemaValidation: the event is invalid (400); Field names the member.
	ErrSchemaValidation = store.ErrSchemaValidation
	// ErrForbidden: the token may not write the event's tenant (403).
	ErrForbidden = store.ErrForbidden
	// ErrNotFound: 404.
	ErrNotFound = store.ErrNotFound
	// ErrUnavailable: the API or its store is away (503, 429); wrapped by
	// [ErrBudgetExceeded] when the budget ran out on it.
	ErrUnavailable = store.ErrUnavailable
)

// The contract's event types (RunEvents v1 section 1, ExecutionSemantics v1
// section 3), the only ones Append sends unless Config.AllowEventTypes
// lists others.
const (
	EventRunQueued     = store.EventRunQueued
	EventRunApproved   = store.EventRunApproved
	EventRunStarted    = store.EventRunStarted
	EventRunPaused     = store.EventRunPaused
	EventRunResumed    = store.EventRunResumed
	EventRunCompleted  = store.EventRunCompleted
	EventRunFailed     = store.EventRunFailed
	EventRunCancelled  = store.EventRunCancelled
	EventStepStarted   = store.EventStepStarted
	EventStepCompleted = store.EventStepCompleted
	EventStepFailed    = store.EventStepFailed
	EventStepSkipped   = store.EventStepSkipped
)

// knownEventTypes is the client's list, run-level then step-level;
// TestKnownEventTypes_AreTheServers checks it against the server's.
var knownEventTypes = []string{
	EventRunQueued, EventRunApproved, EventRunStarted, EventRunPaused,
	EventRunResumed, EventRunCompleted, EventRunFailed, EventRunCancelled,
	EventStepStarted, EventStepCompleted, EventStepFailed, EventStepSkipped,
}

// KnownEventTypes returns the contract's twelve event types, run-level
// then step-level (a copy).
func KnownEventTypes() []string { return slices.Clone(knownEventTypes) }

// IsKnownEventType reports whether t is one of the contract's event types.
func IsKnownEventType(t string) bool { return slices.Contains(knownEventTypes, t) }

// UnknownEventTypeError is the refusal of an event whose type is neither
// one of the contract's nor in Config.AllowEventTypes: the API would store
// it as a type of its own that no snapshot shows, so a misspelt StepStartd
// would leave its step missing without a word. Nothing was sent. It
// matches [ErrUnknownEventType].
type UnknownEventTypeError struct {
	// EventType is the type refused.
	EventType string
	// Suggestion is the known type nearest to it ("did you mean
	// StepStarted?"), or empty when none is near.
	Suggestion string
}

// ErrUnknownEventType matches every [*UnknownEventTypeError] with errors.Is.
var ErrUnknownEventType = &UnknownEventTypeError{}

func (e *UnknownEventTypeError) Error() string {
	hint := "the contract's types are " + strings.Join(knownEventTypes, ", ") + "."
	if e.Suggestion != "" {
		hint = "did you mean " + e.Suggestion + "?"
	}
	return fmt.Sprintf("event type %q is not one of the contract's event types; %s "+
		"The API would store it as a type of its own that no run snapshot shows. "+
		"To send a type of your own, list it in Config.AllowEventTypes", e.EventType, hint)
}

// Is makes errors.Is(err, ErrUnknownEventType) true for every
// *UnknownEventTypeError.
func (e *UnknownEventTypeError) Is(target error) bool {
	_, ok := target.(*UnknownEventTypeError)
	return ok
}

// SuggestEventType returns the known event type nearest to t, for "did you
// mean ...?": compared without case and without an "on" prefix, at an edit
// distance (insertions, deletions, substitutions, swaps of neighbours) of
// at most 2, or 3 for types of 12 letters or more; "" when none is that
// near. The TypeScript client's suggestEventType gives the same answers.
func SuggestEventType(t string) string {
	s := strings.ToLower(t)
	forms := []string{s}
	if rest, ok := strings.CutPrefix(s, "on"); ok {
		forms = append(forms, rest)
	}
	best, bestD := "", 1<<30
	for _, k := range knownEventTypes {
		lk := strings.ToLower(k)
		for _, f := range forms {
			if d := editDistance(f, lk); d < bestD {
				best, bestD = k, d
			}
		}
	}
	limit := 2
	if len(best) >= 12 {
		limit = 3
	}
	if bestD > limit {
		return ""
	}
	return best
}

// editDistance is the optimal string alignment distance of two short
// strings, bytewise: Levenshtein plus the swap of two neighbours ("Stpe").
// Strings whose lengths differ by more than 3 are 4 apart at least, which
// is all a caller needs to know.
func editDistance(a, b string) int {
	if abs(len(a)-len(b)) > 3 {
		return 4
	}
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// checkType refuses an event type that is neither the contract's nor
// allowed. An empty or malformed type is left to validation, which names
// the rule.
func (c *Client) checkType(t string) error {
	if t == "" || IsKnownEventType(t) || c.allowed[t] {
		return nil
	}
	return &UnknownEventTypeError{EventType: t, Suggestion: SuggestEventType(t)}
}
