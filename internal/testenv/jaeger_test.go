package testenv

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// jaegerProvider is a tracer provider of service that exports every span
// to j as it ends (a synchronous processor: when End returns, Jaeger has
// the span).
func jaegerProvider(t *testing.T, j *Jaeger, service string) *sdktrace.TracerProvider {
	t.Helper()
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(j.OTLPTracesURL()))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSyncer(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", service))),
	)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tp.Shutdown(ctx); err != nil {
			t.Errorf("shutting the tracer provider of %s down: %v", service, err)
		}
	})
	return tp
}

// Spans exported over OTLP come back from Jaeger's query API with their
// services, parents, attributes and kinds, and a span link to another
// trace is visible from the linking span, which FindTraces finds by its
// attributes.
func TestJaeger_TraceParentsAndLinks(t *testing.T) {
	t.Parallel()
	j := StartJaeger(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	api := jaegerProvider(t, j, "jtest-api").Tracer("jaeger_test")
	worker := jaegerProvider(t, j, "jtest-worker").Tracer("jaeger_test")
	runID := RandomID(6)

	pctx, parent := api.Start(ctx, "append", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("runstream.run_id", runID)))
	_, child := worker.Start(pctx, "publish", trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.Int64("runstream.seq", 7), attribute.Bool("runstream.ok", true)))
	child.End()
	parent.End()
	childSC := child.SpanContext()
	_, consumer := worker.Start(ctx, "consume", trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithLinks(trace.Link{SpanContext: childSC}),
		trace.WithAttributes(attribute.String("runstream.run_id", runID)))
	consumer.End()

	traceID := parent.SpanContext().TraceID().String()
	tr, err := j.WaitTrace(ctx, traceID, func(tr Trace) bool { return len(tr.Spans) == 2 })
	if err != nil {
		t.Fatal(err)
	}
	if tr.ID != traceID {
		t.Errorf("trace ID %s, want %s", tr.ID, traceID)
	}
	p, ok := tr.Span(parent.SpanContext().SpanID().String())
	if !ok {
		t.Fatalf("no parent span in %s", tr)
	}
	if p.Name != "append" || p.Service != "jtest-api" || p.Parent != "" || p.Kind != "server" || len(p.Links) != 0 {
		t.Errorf("parent span %+v, want the root append of jtest-api, kind server, without links", p)
	}
	if p.Attrs["runstream.run_id"] != runID {
		t.Errorf("parent's runstream.run_id = %q, want %q (attributes %v)", p.Attrs["runstream.run_id"], runID, p.Attrs)
	}
	c, ok := tr.Span(childSC.SpanID().String())
	if !ok {
		t.Fatalf("no child span in %s", tr)
	}
	if c.Name != "publish" || c.Service != "jtest-worker" || c.Parent != p.SpanID || c.Kind != "producer" || c.TraceID != traceID {
		t.Errorf("child span %+v, want publish of jtest-worker, kind producer, child of %s", c, p.SpanID)
	}
	if c.Attrs["runstream.seq"] != "7" || c.Attrs["runstream.ok"] != "true" {
		t.Errorf("child's attributes %v, want runstream.seq 7 and runstream.ok true", c.Attrs)
	}
	if got := tr.Named("publish"); len(got) != 1 || got[0].SpanID != c.SpanID {
		t.Errorf("Named(publish) = %v", got)
	}

	// The consumer's trace, found by its attributes: a root whose link to
	// the child is a reference (FOLLOWS_FROM) to the child's trace and span.
	var found []Trace
	for {
		found, err = j.FindTraces(ctx, "jtest-worker", "consume", map[string]string{"runstream.run_id": runID}, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(found) > 0 || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(found) != 1 || len(found[0].Spans) != 1 {
		t.Fatalf("FindTraces found %v, want the consumer's trace alone", found)
	}
	cs := found[0].Spans[0]
	if cs.TraceID == traceID || cs.TraceID != consumer.SpanContext().TraceID().String() || cs.Parent != "" || cs.Kind != "consumer" {
		t.Errorf("consumer span %+v, want the root of a trace of its own, kind consumer", cs)
	}
	want := SpanRef{TraceID: traceID, SpanID: c.SpanID}
	if !slices.Equal(cs.Links, []SpanRef{want}) {
		t.Errorf("consumer's links %v, want [%v]", cs.Links, want)
	}

	// Another service's traces do not match, nor do other attribute values.
	if other, err := j.FindTraces(ctx, "jtest-api", "", map[string]string{"runstream.run_id": "nope"}, 0); err != nil || len(other) != 0 {
		t.Errorf("FindTraces with another run ID = %v, %v; want none", other, err)
	}
}

// WaitTrace gives up when its context ends, saying what it saw.
func TestJaeger_WaitTraceTimesOut(t *testing.T) {
	t.Parallel()
	j := StartJaeger(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	id := RandomID(16)
	if _, err := j.Trace(ctx, id); !errors.Is(err, ErrTraceNotFound) {
		t.Errorf("Trace of an unknown ID: %v, want ErrTraceNotFound", err)
	}
	tr, err := j.WaitTrace(ctx, id, nil)
	if err == nil || len(tr.Spans) != 0 {
		t.Errorf("WaitTrace of an unknown ID = %v, %v; want an error", tr, err)
	}
	t.Log(err)
}
