// Package store holds the contract types of runstream's Append Authority
// (RunEventWrite, RunEventRecord, AppendResult, RunSnapshot), the
// idempotency key, the coded error type every layer uses, the Kafka record
// decoder and the [Store] interface that store/postgres implements.
// Validation of writes (JSON Schemas and the rules of docs/CONTRACT.md)
// is in store/validate.
//
// It is a leaf package: it imports neither a database driver, a schema
// library, a logger nor Prometheus, so producers, the projector and the
// consumer library can all depend on it.
package store
