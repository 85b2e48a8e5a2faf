// Package jsonx is runstream's one hand-written JSON layer, under the fast
// paths that read or write one fixed shape many times: the Kafka record
// decoder (record.DecodeValue), the reducer's payload reader, the snapshot
// codec, the relay's record encoder, the ETL's payload reader and the
// request-body splitter of store/validate.
//
//   - Scanner reads a document from a position: whitespace, single bytes,
//     literals, plain strings, strings with escapes (Unquote), int64s, and
//     checking one value and moving past it exactly as encoding/json's
//     scanner accepts it (Skip). Object iterates over an object's members.
//   - SkipSpace, ValueEnd and EachMember cut an already valid document
//     (one that json.Valid accepted) without checking it again.
//   - SkipUnchecked moves past one value of a document runstream wrote
//     itself without checking it (brackets counted, strings found with
//     bytes.IndexByte), for readers that want a few fields of a large
//     document (snapshots.ParseHead).
//   - AppendString and AppendRaw write as json.Marshal writes.
//
// Every reader gives up (the caller then uses encoding/json) wherever it is
// not certain to decode as encoding/json does, and every fast path is
// fuzzed against encoding/json and benchmarked against it in the same
// `go test -bench` (see the "encoding/json" and "jsontext" arms of this
// package's benchmarks, and docs/PERFORMANCE.md for the table).
package jsonx

// MaxDepth is how deeply nested a value the fast paths read; a deeper one
// takes encoding/json's path (whose own limit is 10,000).
const MaxDepth = 200
