// Package store holds the contract types of runstream's Append Authority
// (RunEventWrite, RunEventRecord, AppendResult, RunSnapshot), their
// validation (embedded JSON Schemas plus the rules of DESIGN.md section 1),
// the idempotency key, the coded error type every layer uses, and the
// [Store] interface that store/postgres implements.
//
// It is a leaf package: it imports neither a database driver, a logger nor
// Prometheus, so producers, the projector and the consumer library can all
// depend on it.
package store
