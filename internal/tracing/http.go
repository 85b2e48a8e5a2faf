package tracing

import (
	"context"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// StartServer starts the server span of an HTTP request served by route
// (the mux pattern, "POST /v1/events"), a child of the caller's
// traceparent when the request carries one (an engine that traces its own
// work), or a new root. It returns r with the span in its context, or r
// and nil when this process does not export spans.
func StartServer(r *http.Request, route string) (*http.Request, trace.Span) {
	if !Enabled() {
		return r, nil
	}
	ctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	path := route
	if _, p, ok := strings.Cut(route, " "); ok {
		path = p
	}
	ctx, span := Tracer().Start(ctx, route, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
		semconv.HTTPRequestMethodKey.String(r.Method), semconv.HTTPRoute(path), semconv.URLScheme(scheme(r))))
	return r.WithContext(ctx), span
}

func scheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

// EndServer ends a span from [StartServer] (nil is fine) with the
// response's status: a 5xx is an error of the server span; a 4xx is the
// caller's (the conventions leave it unset on server spans).
func EndServer(span trace.Span, status int) {
	if span == nil {
		return
	}
	span.SetAttributes(semconv.HTTPResponseStatusCode(status))
	if status >= 500 {
		span.SetStatus(codes.Error, http.StatusText(status))
	}
	span.End()
}

// Recording reports whether ctx's span records (tracing on and the span
// sampled): callers check it before building attributes for [Annotate],
// so that the nine appends in ten a 10% sampler leaves out pay nothing.
func Recording(ctx context.Context) bool {
	return Enabled() && trace.SpanFromContext(ctx).IsRecording()
}

// Annotate adds attributes to ctx's span (the run and event an append
// wrote, say); a span that does not record ignores them.
func Annotate(ctx context.Context, attrs ...attribute.KeyValue) {
	trace.SpanFromContext(ctx).SetAttributes(attrs...)
}
