package tracing

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// queue is the span processor between the traced work and the exporter:
// ending a span puts it on a bounded channel, or drops and counts it when
// the channel is full; one goroutine exports full batches, and what is
// left every Delay, each export bounded by ExportTimeout. The SDK's batch
// processor does the same but counts its drops only through the SDK's
// experimental self-observability metrics; runstream's alarms are
// Prometheus, so this one counts them there
// (runstream_tracing_spans_total{outcome="dropped"}).
type queue struct {
	exp       sdktrace.SpanExporter
	spans     chan sdktrace.ReadOnlySpan
	batch     int
	delay     time.Duration
	timeout   time.Duration
	log       *slog.Logger
	flushReq  chan chan struct{}
	stop      chan struct{}
	done      chan struct{}
	stopOnce  sync.Once
	exported  prometheus.Counter
	dropped   prometheus.Counter
	failed    prometheus.Counter
	lastWarn  time.Time
	failedRun int
}

func newQueue(exp sdktrace.SpanExporter, cfg *Config, reg prometheus.Registerer, log *slog.Logger) (*queue, error) {
	spans := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "runstream_tracing_spans_total",
		Help: "Sampled spans by what became of them: exported (the collector took them), dropped (the export queue was full: a slow or unreachable collector), failed (the export was refused or timed out)."},
		[]string{"outcome"})
	if reg != nil {
		if err := reg.Register(spans); err != nil {
			return nil, err
		}
	}
	q := &queue{exp: exp, spans: make(chan sdktrace.ReadOnlySpan, cfg.QueueSize), batch: cfg.BatchSize,
		delay: cfg.Delay, timeout: cfg.ExportTimeout, log: log,
		flushReq: make(chan chan struct{}), stop: make(chan struct{}), done: make(chan struct{}),
		exported: spans.WithLabelValues("exported"), dropped: spans.WithLabelValues("dropped"), failed: spans.WithLabelValues("failed")}
	go q.run()
	return q, nil
}

func (q *queue) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd never blocks: a full queue drops the span.
func (q *queue) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	select {
	case q.spans <- s:
	default:
		q.dropped.Inc()
	}
}

func (q *queue) run() {
	defer close(q.done)
	buf := make([]sdktrace.ReadOnlySpan, 0, q.batch)
	tick := time.NewTicker(q.delay)
	defer tick.Stop()
	for {
		select {
		case s := <-q.spans:
			buf = q.add(buf, s)
		case <-tick.C:
			buf = q.export(buf)
		case reply := <-q.flushReq:
			buf = q.drain(buf)
			close(reply)
		case <-q.stop:
			q.drain(buf)
			return
		}
	}
}

// drain exports everything queued now.
func (q *queue) drain(buf []sdktrace.ReadOnlySpan) []sdktrace.ReadOnlySpan {
	for {
		select {
		case s := <-q.spans:
			buf = q.add(buf, s)
		default:
			return q.export(buf)
		}
	}
}

// add puts s in the batch, exporting the batch once it is full.
func (q *queue) add(buf []sdktrace.ReadOnlySpan, s sdktrace.ReadOnlySpan) []sdktrace.ReadOnlySpan {
	buf = append(buf, s)
	if len(buf) >= q.batch {
		return q.export(buf)
	}
	return buf
}

func (q *queue) export(buf []sdktrace.ReadOnlySpan) []sdktrace.ReadOnlySpan {
	if len(buf) == 0 {
		return buf
	}
	ctx, cancel := context.WithTimeout(context.Background(), q.timeout)
	err := q.exp.ExportSpans(ctx, buf)
	cancel()
	if err != nil {
		q.failed.Add(float64(len(buf)))
		q.failedRun += len(buf)
		// One line a minute at most: a collector that is down for an hour
		// is one alarm (the metric), not a line per batch.
		if time.Since(q.lastWarn) >= time.Minute {
			q.log.Warn("tracing: the collector did not take spans; they are dropped (tracing never holds up the traced work)",
				"spans", q.failedRun, "err", err)
			q.lastWarn, q.failedRun = time.Now(), 0
		}
	} else {
		q.exported.Add(float64(len(buf)))
	}
	clear(buf)
	return buf[:0]
}

// ForceFlush exports what is queued and waits for it, or for ctx.
func (q *queue) ForceFlush(ctx context.Context) error {
	reply := make(chan struct{})
	select {
	case q.flushReq <- reply:
	case <-q.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-reply:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Shutdown exports what is queued, then closes the exporter.
func (q *queue) Shutdown(ctx context.Context) error {
	q.stopOnce.Do(func() { close(q.stop) })
	select {
	case <-q.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return q.exp.Shutdown(ctx)
}
