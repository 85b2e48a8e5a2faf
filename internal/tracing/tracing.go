package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// instrumentation is the instrumentation scope every runstream span carries.
const instrumentation = "github.com/runstream/runstream"

// enabled is set once Setup installed an exporting TracerProvider: the hot
// paths look at it before they build a span or format a traceparent, so
// that with tracing off they pay one atomic load and nothing else.
var enabled atomic.Bool

// Enabled reports whether this process exports spans.
func Enabled() bool { return enabled.Load() }

// Tracer is runstream's tracer on the global TracerProvider (a no-op one
// until Setup installed the SDK's).
func Tracer() trace.Tracer { return otel.Tracer(instrumentation) }

// Config is what Setup reads from the environment; Setup fills it from the
// OTEL_* variables, tests may build one directly.
type Config struct {
	// Endpoint is the OTLP/HTTP endpoint's base URL
	// (OTEL_EXPORTER_OTLP_ENDPOINT, to which /v1/traces is added) or the
	// full traces URL (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, used as is).
	Endpoint string
	// TracesURL is set when Endpoint is already the full traces URL.
	TracesURL bool
	// Sampler is the root sampler of OTEL_TRACES_SAMPLER (and _ARG).
	Sampler sdktrace.Sampler
	// SamplerName is its description for the startup log line.
	SamplerName string
	// QueueSize, BatchSize, Delay and ExportTimeout bound the export queue
	// (OTEL_BSP_MAX_QUEUE_SIZE, OTEL_BSP_MAX_EXPORT_BATCH_SIZE,
	// OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_EXPORT_TIMEOUT in milliseconds).
	QueueSize, BatchSize int
	Delay, ExportTimeout time.Duration
}

// FromEnv reads the standard OpenTelemetry environment. It returns a nil
// Config, and no error, when tracing is off: no OTLP endpoint is set,
// OTEL_SDK_DISABLED is true, or OTEL_TRACES_EXPORTER is none. Settings
// runstream does not support (another exporter, the gRPC or JSON
// protocol, a sampler it does not know) are errors that name the
// variable, rather than being ignored.
func FromEnv(getenv func(string) string) (*Config, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return nil, nil
	}
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return nil, nil
	case "", "otlp":
	default:
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%q is not supported: runstream exports traces over OTLP/HTTP only (set otlp, or none to turn tracing off)", exp)
	}
	cfg := &Config{}
	if u := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")); u != "" {
		cfg.Endpoint, cfg.TracesURL = u, true
	} else if u := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")); u != "" {
		cfg.Endpoint = u
	} else {
		return nil, nil
	}
	if !strings.HasPrefix(cfg.Endpoint, "http://") && !strings.HasPrefix(cfg.Endpoint, "https://") {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT %q is not an http:// or https:// URL (for example http://otel-collector:4318)", cfg.Endpoint)
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := strings.TrimSpace(getenv(name)); p != "" {
			if p != "http/protobuf" {
				return nil, fmt.Errorf("%s=%q is not supported: runstream exports over http/protobuf (the OTLP default; a collector's port 4318)", name, p)
			}
			break
		}
	}
	var err error
	if cfg.Sampler, cfg.SamplerName, err = samplerFromEnv(getenv); err != nil {
		return nil, err
	}
	ints := []struct {
		name string
		def  int
		to   *int
	}{
		{"OTEL_BSP_MAX_QUEUE_SIZE", 2048, &cfg.QueueSize},
		{"OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512, &cfg.BatchSize},
	}
	for _, v := range ints {
		if *v.to, err = positiveEnv(getenv, v.name, v.def, 1<<20); err != nil {
			return nil, err
		}
	}
	cfg.BatchSize = min(cfg.BatchSize, cfg.QueueSize)
	durations := []struct {
		name string
		def  int
		to   *time.Duration
	}{
		{"OTEL_BSP_SCHEDULE_DELAY", 5000, &cfg.Delay},
		{"OTEL_BSP_EXPORT_TIMEOUT", 30000, &cfg.ExportTimeout},
	}
	for _, v := range durations {
		ms, err := positiveEnv(getenv, v.name, v.def, 3600_000)
		if err != nil {
			return nil, err
		}
		*v.to = time.Duration(ms) * time.Millisecond
	}
	return cfg, nil
}

func positiveEnv(getenv func(string) string, name string, def, limit int) (int, error) {
	s := strings.TrimSpace(getenv(name))
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || n > limit {
		return 0, fmt.Errorf("%s=%q: want a whole number from 1 to %d", name, s, limit)
	}
	return n, nil
}

// samplerFromEnv is OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG, as
// the specification names them (parentbased_always_on by default), each
// wrapped so that a span with no parent but a sampled link follows the
// link's decision (linkSampler).
func samplerFromEnv(getenv func(string) string) (sdktrace.Sampler, string, error) {
	name := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER"))
	if name == "" {
		name = "parentbased_always_on"
	}
	arg := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER_ARG"))
	ratio := func() (float64, error) {
		if arg == "" {
			return 1, nil
		}
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || r < 0 || r > 1 {
			return 0, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG=%q: want a sampling ratio from 0 to 1 (0.1 samples one trace in ten)", arg)
		}
		return r, nil
	}
	var root sdktrace.Sampler
	desc := name
	switch name {
	case "always_on", "parentbased_always_on":
		root = sdktrace.AlwaysSample()
	case "always_off", "parentbased_always_off":
		root = sdktrace.NeverSample()
	case "traceidratio", "parentbased_traceidratio":
		r, err := ratio()
		if err != nil {
			return nil, "", err
		}
		root = sdktrace.TraceIDRatioBased(r)
		desc = fmt.Sprintf("%s %g", name, r)
	default:
		return nil, "", fmt.Errorf("OTEL_TRACES_SAMPLER=%q is not supported: use always_on, always_off, traceidratio or their parentbased_ forms", name)
	}
	if strings.HasPrefix(name, "parentbased_") {
		root = sdktrace.ParentBased(root)
	}
	return linkSampler{root}, desc, nil
}

// linkSampler samples a span that has no parent and a sampled link: a
// consumer's process span linked to the record's context (the default)
// starts a trace of its own, and it should be recorded exactly when the
// append it continues was, not by a second, independent coin flip that
// would leave most sampled appends without their consumer side. Every
// other span is decided by the configured sampler.
type linkSampler struct{ sdktrace.Sampler }

func (s linkSampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	if !trace.SpanContextFromContext(p.ParentContext).IsValid() {
		for _, l := range p.Links {
			if l.SpanContext.IsSampled() {
				return sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample,
					Tracestate: l.SpanContext.TraceState()}
			}
		}
	}
	return s.Sampler.ShouldSample(p)
}

func (s linkSampler) Description() string { return "LinkFollowing{" + s.Sampler.Description() + "}" }

// Setup installs the global TracerProvider of one component from the
// OTEL_* environment (read with getenv; the resource's
// OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME from the process's). With tracing off it installs nothing, logs nothing
// and returns a shutdown that does nothing. The service name is
// OTEL_SERVICE_NAME, else "runstream-<component>"; OTEL_RESOURCE_ATTRIBUTES
// adds to the resource. Spans leave through a bounded queue (queue.go):
// an unreachable collector never slows or fails the work being traced,
// and what it cannot take is counted in runstream_tracing_spans_total.
func Setup(ctx context.Context, component string, getenv func(string) string, reg prometheus.Registerer, log *slog.Logger) (shutdown func(context.Context) error, err error) {
	cfg, err := FromEnv(getenv)
	if err != nil {
		return nil, err
	}
	nothing := func(context.Context) error { return nil }
	if cfg == nil {
		return nothing, nil
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(cfg.Endpoint)}
	if !cfg.TracesURL {
		opts = []otlptracehttp.Option{otlptracehttp.WithEndpointURL(strings.TrimRight(cfg.Endpoint, "/") + "/v1/traces")}
	}
	// The queue bounds the time an export may take; the exporter's own
	// retries would hold a full batch for a minute against a collector
	// that is down, while new spans wait behind it.
	opts = append(opts, otlptracehttp.WithTimeout(cfg.ExportTimeout), otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter for %s: %w", cfg.Endpoint, err)
	}
	// WithFromEnv reads OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME;
	// a later detector's attributes win, so the default name applies only
	// when neither names the service.
	res, err := resource.New(ctx, resource.WithTelemetrySDK(),
		resource.WithAttributes(semconv.ServiceName("runstream-"+component)), resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("tracing: resource from OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	service, _ := res.Set().Value(semconv.ServiceNameKey)
	q, err := newQueue(exp, cfg, reg, log)
	if err != nil {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSampler(cfg.Sampler), sdktrace.WithSpanProcessor(q))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	enabled.Store(true)
	log.Info("tracing on: spans exported over OTLP/HTTP", "endpoint", cfg.Endpoint, "sampler", cfg.SamplerName,
		"queue", cfg.QueueSize, "service", service.AsString())
	return func(ctx context.Context) error {
		enabled.Store(false)
		return tp.Shutdown(ctx)
	}, nil
}

// Install makes tp the global TracerProvider and turns the traced paths
// on, as Setup does with the exporting one; restore puts back what was
// there. Tests install an in-memory recorder with it.
func Install(tp trace.TracerProvider) (restore func()) {
	prev, was := otel.GetTracerProvider(), enabled.Load()
	otel.SetTracerProvider(tp)
	enabled.Store(true)
	return func() {
		enabled.Store(was)
		otel.SetTracerProvider(prev)
	}
}
