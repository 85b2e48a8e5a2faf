// Package validate decides whether a RunEventWrite may be appended: the
// embedded JSON Schemas of the event types (schemas/), a compiled accept
// path that passes a typical write in a tenth of the schema library's time,
// and the rules of docs/CONTRACT.md a schema cannot state (identifiers, the
// idempotency key, text without NUL or lone surrogates). DecodeWrite
// parses and validates a request body (the HTTP API); Check validates a
// struct (the Postgres store, on every append).
//
// It is apart from package store so that the types, codes and the record
// decoder stay a leaf without the schema library; the schemas are compiled
// on first use, so only a process that validates pays for them.
package validate
