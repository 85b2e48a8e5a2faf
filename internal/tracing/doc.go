// Package tracing is runstream's OpenTelemetry tracing: a TracerProvider
// configured from the standard OTEL_* environment (off unless an OTLP
// endpoint is set), the W3C trace context carried through the outbox row
// and the Kafka record's traceparent header, and the span names and
// attributes every component shares.
package tracing

import (
	_ "go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp" // wired in tracing.go
	_ "go.opentelemetry.io/otel/sdk/trace"
)
