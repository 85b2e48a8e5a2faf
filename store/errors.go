package store

import "fmt"

// Code is a machine-readable error code from the API catalogue
// (README.md, "HTTP API"; internal/httpapi/openapi.json).
type Code string

// The error codes. CodeIdempotencyKeyExists is in the contract catalogue but
// never returned: a duplicate is answered with the existing metadata
// (docs/CONTRACT.md, "Appending").
const (
	CodeSchemaValidationFailed Code = "SCHEMA_VALIDATION_FAILED"
	CodeUnauthenticated        Code = "UNAUTHENTICATED"
	CodeForbidden              Code = "FORBIDDEN"
	CodeNotFound               Code = "NOT_FOUND"
	CodePayloadTooLarge        Code = "PAYLOAD_TOO_LARGE"
	CodeUnavailable            Code = "UNAVAILABLE"
	CodeInternal               Code = "INTERNAL"
	// CodeConflict: the request cannot run now because of something
	// already running (an operator's rebuild while another runs).
	CodeConflict Code = "CONFLICT"
	// CodeRunArchived: the run's events left the store (retention removed
	// its partition after archiving it); its runs row stays as a tombstone,
	// so an append to it is refused rather than starting the run anew at
	// runSeq 1. Permanent: retrying cannot succeed.
	CodeRunArchived          Code = "RUN_ARCHIVED"
	CodeIdempotencyKeyExists Code = "IDEMPOTENCY_KEY_EXISTS"
)

// Error is the one coded error callers branch on. Message and Field are
// safe to show a caller; Err is the cause, logged and never sent.
type Error struct {
	Code    Code
	Message string
	Field   string
	Err     error
}

// Error implements error.
func (e *Error) Error() string {
	s := string(e.Code)
	if e.Field != "" {
		s += " (" + e.Field + ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same Code, so
// errors.Is(err, store.ErrNotFound) works through wrapping.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Sentinels for errors.Is; they compare by Code only.
var (
	// ErrSchemaValidation: the input broke a schema or a contract rule.
	ErrSchemaValidation = &Error{Code: CodeSchemaValidationFailed}
	// ErrNotFound: the run (or snapshot) does not exist for this caller.
	ErrNotFound = &Error{Code: CodeNotFound}
	// ErrForbidden: the caller may not write for that tenant or run.
	ErrForbidden = &Error{Code: CodeForbidden}
	// ErrUnavailable: a dependency (Postgres) cannot be reached; retry.
	ErrUnavailable = &Error{Code: CodeUnavailable}
)

// Invalid returns a SCHEMA_VALIDATION_FAILED error for field.
func Invalid(field, format string, args ...any) *Error {
	return &Error{Code: CodeSchemaValidationFailed, Field: field, Message: fmt.Sprintf(format, args...)}
}
