// Package tracing is runstream's OpenTelemetry tracing (docs/ARCHITECTURE.md,
// "Traces"): off unless the standard OTEL_* environment names an OTLP
// endpoint, then one span per hop of an event, from the engine's HTTP
// append to the snapshot write:
//
//   - the API's server span (POST /v1/events, named by its route), a
//     child of the caller's traceparent when it sent one;
//   - when that span is sampled, its W3C traceparent goes into the event's
//     outbox row in the append's own statement (migration 0021), and the
//     relay puts it, unchanged, in the Kafka record's traceparent header:
//     the append is where the message was created;
//   - the relay's "send <topic>" span per wave of records, linked to each
//     traced record's append (a send moves a batch of messages; the
//     messaging conventions link a batch to its messages);
//   - each consumer's "process <topic>" span per traced record (the
//     projector's, the ETL's through the consumer library): linked to the
//     append by default (a trace of its own, as franz-go's kotel does since
//     2025), or its child with --trace-consumer=parent, so the append's
//     trace holds everything; its batch's Redis or Postgres write is a
//     child span ("write snapshots", "checkpoint transaction");
//   - resyncs from the store ("resync run") and convergence passes
//     ("converge <consumer>") are spans of their own.
//
// Attributes follow the OpenTelemetry semantic conventions (v1.43:
// messaging.*, http.*, db.system.name), plus runstream.run_id and friends.
// A root span with a sampled link is sampled (linkSampler): a consumer
// records exactly the appends that were sampled, whatever the ratio.
//
// Spans leave through a bounded queue that never blocks the traced work
// (queue.go): an unreachable or slow collector costs dropped spans,
// counted, never a slower or failed append.
//
// Metrics:
//
//	runstream_tracing_spans_total{outcome="exported|dropped|failed"}  sampled spans by what became of them
package tracing
