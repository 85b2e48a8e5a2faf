package tracing

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// HeaderKey is the W3C trace context header, in HTTP requests and Kafka
// records alike.
const HeaderKey = "traceparent"

// Parent returns the W3C traceparent of ctx's span when this process
// exports spans and the span is sampled, else "": only sampled contexts
// are carried on (in the outbox row, the record's header), since a span
// continuing an unsampled one would not be recorded either.
func Parent(ctx context.Context) string {
	if !Enabled() {
		return ""
	}
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsSampled() {
		return ""
	}
	return FormatParent(sc)
}

// FormatParent is sc as a W3C traceparent (version 00).
func FormatParent(sc trace.SpanContext) string {
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}

// ParseParent reads a W3C traceparent. ok is false for anything else (a
// malformed or foreign header is ignored, never an error: a record is
// processed the same with or without it).
func ParseParent(s string) (sc trace.SpanContext, ok bool) {
	if s == "" {
		return trace.SpanContext{}, false
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{HeaderKey: s})
	sc = trace.SpanContextFromContext(ctx)
	return sc, sc.IsValid()
}
