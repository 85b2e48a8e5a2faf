// Package record is the Kafka record of a run event, in one place: its key
// (the runId), its value (the [store.RunEventRecord] JSON), its headers
// (eventType, eventId, runSeq, tenantId, content-type, schema-version, and
// redelivered on a retried dead letter), how
// the relay encodes them ([New], [AppendValue]) and how the projector, the
// consumer library and `runstream export` read them back ([DecodeValue],
// [IDs]). Tests and benchmarks build the records they produce with [New],
// so they publish exactly what the relay does.
//
// It is a public package, not under internal/, because the record is part
// of the contract: the public consumer library reads it, and a program
// that consumes the topic without that library, or produces test records
// for one that does, needs the same names and the same encoding. It is not
// in package store because building a record needs franz-go, and store is
// the leaf of contract types that imports no driver or client (store keeps
// the [store.RunEventRecord] type itself).
//
// The value is byte for byte what encoding/json writes for a
// RunEventRecord, and [DecodeValue] decodes exactly as encoding/json would
// (same result, same errors): the hand-written paths only spare the
// reflection (docs/PERFORMANCE.md), and are fuzzed and tested against
// encoding/json.
package record
