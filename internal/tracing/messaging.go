package tracing

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/runstream/runstream/record"
)

// ConsumerMode says how a consumer's process span relates to the context
// a record carries.
type ConsumerMode string

const (
	// ConsumerLink (the default, as the OpenTelemetry messaging conventions and
	// franz-go's kotel have it): the process span starts a trace of its
	// own with a link to the record's context. A consumer processes
	// records of many appends in one batch, and a trace per append stays
	// the size of one request.
	ConsumerLink ConsumerMode = "link"
	// ConsumerParent: the process span is a child of the record's context, so an
	// append's trace holds its consumers' work too (one trace from the
	// HTTP request to the snapshot write).
	ConsumerParent ConsumerMode = "parent"
)

// ParseConsumerMode reads a --trace-consumer value ("" is ConsumerLink).
func ParseConsumerMode(s string) (ConsumerMode, error) {
	switch ConsumerMode(s) {
	case "", ConsumerLink:
		return ConsumerLink, nil
	case ConsumerParent:
		return ConsumerParent, nil
	}
	return "", fmt.Errorf("--trace-consumer %q: want link (a process span links to the append's trace) or parent (it joins the append's trace)", s)
}

func messagingAttrs(topic, operation string, typ attribute.KeyValue) []attribute.KeyValue {
	return []attribute.KeyValue{semconv.MessagingSystemKafka, semconv.MessagingDestinationName(topic),
		semconv.MessagingOperationName(operation), typ}
}

// Send is the relay's send span for one wave of records (one record per
// run, produced together), or nil when none of them is traced.
type Send struct {
	span trace.Span
}

// StartSend starts the send span of a wave of recs on topic, with a link
// to each traced record's append (its traceparent header, which the
// record carries on to its consumers unchanged: the append is where the
// message was created, the send only moves a batch of them). It returns
// nil, at the cost of a header scan, when no record is traced or this
// process does not export spans.
func StartSend(ctx context.Context, topic string, recs []*kgo.Record) *Send {
	if !Enabled() {
		return nil
	}
	var links []trace.Link
	for _, r := range recs {
		if sc, ok := ParseParent(record.TraceParent(r)); ok && sc.IsSampled() {
			links = append(links, trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{
				semconv.MessagingKafkaMessageKey(string(r.Key)), semconv.MessagingMessageID(eventID(r))}})
		}
	}
	if len(links) == 0 {
		return nil
	}
	attrs := append(messagingAttrs(topic, "send", semconv.MessagingOperationTypeSend),
		semconv.MessagingBatchMessageCount(len(recs)), attribute.Int("runstream.traced_records", len(links)))
	_, span := Tracer().Start(ctx, "send "+topic, trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithNewRoot(), trace.WithLinks(links...), trace.WithAttributes(attrs...))
	return &Send{span: span}
}

// End ends the send span: errs are the records' produce outcomes.
func (s *Send) End(errs []error) {
	if s == nil {
		return
	}
	failed := 0
	var first error
	for _, err := range errs {
		if err != nil {
			failed++
			if first == nil {
				first = err
			}
		}
	}
	if failed > 0 {
		s.span.SetAttributes(attribute.Int("runstream.failed_records", failed))
		s.span.SetStatus(codes.Error, first.Error())
	}
	s.span.End()
}

// eventID is r's eventId header ("" without one).
func eventID(r *kgo.Record) string {
	v, _ := record.Header(r, record.HeaderEventID)
	return string(v)
}

// Process holds the process spans of the traced records of one consumer
// batch; nil when none is traced.
type Process struct {
	spans []processSpan
}

type processSpan struct {
	ctx  context.Context
	span trace.Span
}

// StartProcess starts a process span for each record of recs that carries
// a sampled traceparent, linked to it or parented by it (mode), with the
// messaging attributes of the record and the consumer group. It returns
// nil when no record is traced or this process does not export spans.
func StartProcess(ctx context.Context, mode ConsumerMode, group string, recs []*kgo.Record) *Process {
	if !Enabled() {
		return nil
	}
	var p *Process
	for _, r := range recs {
		tp := record.TraceParent(r)
		if tp == "" {
			continue
		}
		sc, ok := ParseParent(tp)
		if !ok || !sc.IsSampled() {
			continue
		}
		attrs := append(messagingAttrs(r.Topic, "process", semconv.MessagingOperationTypeProcess),
			semconv.MessagingConsumerGroupName(group),
			semconv.MessagingDestinationPartitionID(strconv.Itoa(int(r.Partition))),
			semconv.MessagingKafkaOffset(int(r.Offset)),
			semconv.MessagingKafkaMessageKey(string(r.Key)),
			semconv.MessagingMessageID(eventID(r)),
			semconv.MessagingBatchMessageCount(len(recs)))
		opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...)}
		pctx := ctx
		if mode == ConsumerParent {
			pctx = trace.ContextWithRemoteSpanContext(ctx, sc)
		} else {
			opts = append(opts, trace.WithNewRoot(), trace.WithLinks(trace.Link{SpanContext: sc}))
		}
		sctx, span := Tracer().Start(pctx, "process "+r.Topic, opts...)
		if p == nil {
			p = &Process{}
		}
		p.spans = append(p.spans, processSpan{sctx, span})
	}
	return p
}

// End records, under each process span, the batch's write (name, from
// start until now, with attrs and err) and ends the spans. A failed batch
// (err) is retried: its records get new spans then.
func (p *Process) End(name string, start time.Time, err error, attrs ...attribute.KeyValue) {
	if p == nil {
		return
	}
	end := time.Now()
	for _, s := range p.spans {
		_, w := Tracer().Start(s.ctx, name, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithTimestamp(start), trace.WithAttributes(attrs...))
		if err != nil {
			w.SetStatus(codes.Error, err.Error())
			s.span.SetStatus(codes.Error, err.Error())
		}
		w.End(trace.WithTimestamp(end))
		s.span.End(trace.WithTimestamp(end))
	}
}

// Start starts an internal span of its own (a resync, a convergence
// pass), or returns ctx and nil when this process does not export spans.
func Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if !Enabled() {
		return ctx, nil
	}
	return Tracer().Start(ctx, name, trace.WithAttributes(attrs...))
}

// End ends a span from [Start] (nil is fine), with err as its status.
func End(span trace.Span, err error, attrs ...attribute.KeyValue) {
	if span == nil {
		return
	}
	if len(attrs) > 0 {
		span.SetAttributes(attrs...)
	}
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
