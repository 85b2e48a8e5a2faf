package tracing

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/runstream/runstream/record"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestFromEnv_OffUnlessAnEndpointIsSet(t *testing.T) {
	for _, env := range []map[string]string{
		{},
		{"OTEL_TRACES_SAMPLER": "always_on"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"},
	} {
		cfg, err := FromEnv(envOf(env))
		if err != nil || cfg != nil {
			t.Errorf("%v: got %+v, %v; want tracing off and no error", env, cfg, err)
		}
	}
}

func TestFromEnv_ReadsTheStandardVariables(t *testing.T) {
	cfg, err := FromEnv(envOf(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318",
		"OTEL_TRACES_SAMPLER":         "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.1",
		"OTEL_BSP_MAX_QUEUE_SIZE": "100", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "500", "OTEL_BSP_SCHEDULE_DELAY": "250",
	}))
	if err != nil || cfg == nil {
		t.Fatalf("got %+v, %v", cfg, err)
	}
	if cfg.Endpoint != "http://collector:4318" || cfg.TracesURL {
		t.Errorf("endpoint %q (traces URL %v)", cfg.Endpoint, cfg.TracesURL)
	}
	// The batch never exceeds the queue it is taken from.
	if cfg.QueueSize != 100 || cfg.BatchSize != 100 || cfg.Delay != 250*time.Millisecond || cfg.ExportTimeout != 30*time.Second {
		t.Errorf("queue %d batch %d delay %v timeout %v", cfg.QueueSize, cfg.BatchSize, cfg.Delay, cfg.ExportTimeout)
	}
	if cfg.SamplerName != "parentbased_traceidratio 0.1" {
		t.Errorf("sampler %q", cfg.SamplerName)
	}
	cfg, err = FromEnv(envOf(map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://c/v1/traces", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://other:4318"}))
	if err != nil || cfg.Endpoint != "https://c/v1/traces" || !cfg.TracesURL {
		t.Errorf("the traces endpoint wins and is used as is: %+v, %v", cfg, err)
	}
}

func TestFromEnv_RefusesWhatItDoesNotSupport(t *testing.T) {
	ep := "http://c:4318"
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "OTEL_EXPORTER_OTLP_PROTOCOL=\"grpc\" is not supported"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER=\"zipkin\""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}, "not an http:// or https:// URL"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_TRACES_SAMPLER": "jaeger_remote"}, "OTEL_TRACES_SAMPLER=\"jaeger_remote\""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "10%"}, "ratio from 0 to 1"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_BSP_MAX_QUEUE_SIZE": "0"}, "OTEL_BSP_MAX_QUEUE_SIZE=\"0\""},
	} {
		_, err := FromEnv(envOf(tc.env))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error with %q", tc.env, err, tc.want)
		}
	}
}

func TestParentRoundTrip(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	sc, ok := ParseParent(tp)
	if !ok || !sc.IsSampled() || FormatParent(sc) != tp {
		t.Fatalf("ParseParent(%q) = %v %v, formats back as %q", tp, sc, ok, FormatParent(sc))
	}
	for _, bad := range []string{"", "00-xyz", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "zz-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"} {
		if _, ok := ParseParent(bad); ok {
			t.Errorf("ParseParent(%q) accepted it", bad)
		}
	}
}

func TestLinkSampler_FollowsASampledLinkOfARootSpan(t *testing.T) {
	s, _, err := samplerFromEnv(envOf(map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0"}))
	if err != nil {
		t.Fatal(err)
	}
	sampled, _ := ParseParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	unsampled, _ := ParseParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")
	id := trace.TraceID{1}
	decide := func(parent trace.SpanContext, links ...trace.SpanContext) sdktrace.SamplingDecision {
		p := sdktrace.SamplingParameters{ParentContext: trace.ContextWithRemoteSpanContext(context.Background(), parent), TraceID: id, Name: "x"}
		for _, l := range links {
			p.Links = append(p.Links, trace.Link{SpanContext: l})
		}
		return s.ShouldSample(p).Decision
	}
	if d := decide(trace.SpanContext{}, sampled); d != sdktrace.RecordAndSample {
		t.Errorf("root with a sampled link: %v, want sampled whatever the ratio", d)
	}
	if d := decide(trace.SpanContext{}, unsampled); d != sdktrace.Drop {
		t.Errorf("root with an unsampled link at ratio 0: %v, want dropped", d)
	}
	if d := decide(trace.SpanContext{}); d != sdktrace.Drop {
		t.Errorf("root without links at ratio 0: %v, want dropped", d)
	}
	if d := decide(sampled); d != sdktrace.RecordAndSample {
		t.Errorf("child of a sampled parent: %v, want sampled (parent-based)", d)
	}
}

// blockingExporter holds every export until release is closed.
type blockingExporter struct {
	release  chan struct{}
	exported atomic.Int64
}

func (e *blockingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	select {
	case <-e.release:
		e.exported.Add(int64(len(spans)))
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (e *blockingExporter) Shutdown(context.Context) error { return nil }

// A collector that takes nothing never holds up the traced work: spans
// beyond the queue are dropped and counted, and ending a span returns at
// once.
func TestQueue_AStuckCollectorDropsAndCountsSpans(t *testing.T) {
	exp := &blockingExporter{release: make(chan struct{})}
	reg := prometheus.NewRegistry()
	cfg := &Config{QueueSize: 4, BatchSize: 2, Delay: time.Hour, ExportTimeout: time.Hour}
	q, err := newQueue(exp, cfg, reg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(q))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 100 {
			_, span := tp.Tracer("t").Start(context.Background(), "work")
			span.End()
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("ending spans blocked behind a collector that does not answer")
	}
	// The export goroutine holds one batch (2) and the queue 4 more: at
	// most 6 are waiting, the rest were dropped.
	if d := testutil.ToFloat64(q.dropped); d < 94 {
		t.Errorf("dropped %v spans of 100, want at least 94", d)
	}
	close(exp.release)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	dropped, exported := testutil.ToFloat64(q.dropped), testutil.ToFloat64(q.exported)
	if dropped+exported != 100 || int64(exported) != exp.exported.Load() {
		t.Errorf("dropped %v + exported %v (exporter saw %d): every span is counted once", dropped, exported, exp.exported.Load())
	}
}

// failingExporter refuses every export.
type failingExporter struct{}

func (failingExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error {
	return errors.New("connection refused")
}
func (failingExporter) Shutdown(context.Context) error { return nil }

func TestQueue_RefusedExportsAreCountedAsFailed(t *testing.T) {
	cfg := &Config{QueueSize: 16, BatchSize: 4, Delay: time.Hour, ExportTimeout: time.Second}
	q, err := newQueue(failingExporter{}, cfg, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(q))
	for range 10 {
		_, span := tp.Tracer("t").Start(context.Background(), "work")
		span.End()
	}
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if f := testutil.ToFloat64(q.failed); f != 10 {
		t.Errorf("failed %v, want 10", f)
	}
}

// withRecorder installs a TracerProvider that records every span, as
// Setup would install an exporting one, for the test's duration.
func withRecorder(t *testing.T) *tracetest.SpanRecorder {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSampler(linkSampler{sdktrace.ParentBased(sdktrace.NeverSample())}),
		sdktrace.WithSpanProcessor(rec)))
	enabled.Store(true)
	t.Cleanup(func() {
		enabled.Store(false)
		otel.SetTracerProvider(prev)
	})
	return rec
}

func tracedRecord(tp string, offset int64) *kgo.Record {
	r := &kgo.Record{Topic: "run-events", Key: []byte("run-1"), Partition: 3, Offset: offset,
		Headers: []kgo.RecordHeader{{Key: record.HeaderEventID, Value: []byte("ev-1")}}}
	if tp != "" {
		record.SetTraceParent(r, tp)
	}
	return r
}

func TestProcess_LinksOrParentsTracedRecordsOnly(t *testing.T) {
	const sampled = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	const unsampled = "00-5bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
	appendSC, _ := ParseParent(sampled)
	for _, mode := range []ConsumerMode{ConsumerLink, ConsumerParent} {
		t.Run(string(mode), func(t *testing.T) {
			rec := withRecorder(t)
			recs := []*kgo.Record{tracedRecord(sampled, 7), tracedRecord(unsampled, 8), tracedRecord("", 9), tracedRecord("garbage", 10)}
			p := StartProcess(context.Background(), mode, "g", recs)
			p.End("write snapshots", time.Now(), nil)
			spans := rec.Ended()
			if len(spans) != 2 {
				t.Fatalf("%d spans, want the sampled record's process span and its write", len(spans))
			}
			write, proc := spans[0], spans[1]
			if proc.Name() != "process run-events" || proc.SpanKind() != trace.SpanKindConsumer || write.Name() != "write snapshots" {
				t.Fatalf("spans %q (%v), %q", proc.Name(), proc.SpanKind(), write.Name())
			}
			if write.Parent().SpanID() != proc.SpanContext().SpanID() {
				t.Errorf("the write is not the process span's child")
			}
			attrs := map[string]string{}
			for _, a := range proc.Attributes() {
				attrs[string(a.Key)] = a.Value.String()
			}
			for k, v := range map[string]string{"messaging.system": "kafka", "messaging.operation.type": "process",
				"messaging.destination.name": "run-events", "messaging.consumer.group.name": "g", "messaging.kafka.offset": "7",
				"messaging.destination.partition.id": "3", "messaging.message.id": "ev-1", "messaging.kafka.message.key": "run-1"} {
				if attrs[k] != v {
					t.Errorf("attribute %s = %q, want %q", k, attrs[k], v)
				}
			}
			switch mode {
			case ConsumerLink:
				if proc.Parent().IsValid() || len(proc.Links()) != 1 || proc.Links()[0].SpanContext.SpanID() != appendSC.SpanID() {
					t.Errorf("link mode: parent %v, links %v; want a root linked to the append", proc.Parent(), proc.Links())
				}
				if proc.SpanContext().TraceID() == appendSC.TraceID() {
					t.Errorf("link mode: the process span joined the append's trace")
				}
			case ConsumerParent:
				if proc.Parent().SpanID() != appendSC.SpanID() || proc.SpanContext().TraceID() != appendSC.TraceID() || len(proc.Links()) != 0 {
					t.Errorf("parent mode: parent %v, links %v; want the append's child", proc.Parent(), proc.Links())
				}
			}
		})
	}
}

func TestSend_LinksEveryTracedRecordOfTheWave(t *testing.T) {
	rec := withRecorder(t)
	a := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	b := "00-6bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b8-01"
	if s := StartSend(context.Background(), "run-events", []*kgo.Record{tracedRecord("", 0)}); s != nil {
		t.Fatal("a wave without traced records started a span")
	}
	s := StartSend(context.Background(), "run-events", []*kgo.Record{tracedRecord(a, 0), tracedRecord("", 0), tracedRecord(b, 0)})
	s.End([]error{nil, errors.New("refused"), nil})
	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	sp := spans[0]
	if sp.Name() != "send run-events" || sp.SpanKind() != trace.SpanKindProducer || len(sp.Links()) != 2 || sp.Parent().IsValid() {
		t.Fatalf("span %q kind %v links %d parent %v", sp.Name(), sp.SpanKind(), len(sp.Links()), sp.Parent())
	}
	if sp.Status().Description != "refused" {
		t.Errorf("status %+v, want the refusal", sp.Status())
	}
}

// With tracing off nothing is formatted or started: the hot paths pay one
// atomic load.
func TestOff_NothingIsTraced(t *testing.T) {
	if Enabled() {
		t.Fatal("enabled before any Setup")
	}
	ctx, span := Start(context.Background(), "x")
	if span != nil || Parent(ctx) != "" {
		t.Fatal("a span or a parent with tracing off")
	}
	if StartProcess(context.Background(), ConsumerLink, "g", []*kgo.Record{tracedRecord("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", 0)}) != nil {
		t.Fatal("process spans with tracing off")
	}
}
