package tracing

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// BenchmarkProcess is what tracing adds to a consumer per record of a
// 5,000-record batch: off (one flag), on with no traced record (a header
// scan per record), and on with every tenth record traced (10% sampling
// at the API: a process span and its write span each, through the export
// queue to an exporter that discards them). ns/op is per record.
func BenchmarkProcess(b *testing.B) {
	const batch = 5000
	for _, tc := range []struct {
		name  string
		on    bool
		every int // one traced record in every; 0: none
	}{{"off", false, 0}, {"on-untraced", true, 0}, {"on-10pct", true, 10}} {
		b.Run(tc.name, func(b *testing.B) {
			recs := make([]*kgo.Record, batch)
			for i := range recs {
				tp := ""
				if tc.every > 0 && i%tc.every == 0 {
					tp = fmt.Sprintf("00-%032x-%016x-01", i+1, i+1)
				}
				recs[i] = tracedRecord(tp, int64(i))
			}
			if tc.on {
				q, err := newQueue(tracetest.NewNoopExporter(), &Config{QueueSize: 2048, BatchSize: 512, Delay: 100 * time.Millisecond, ExportTimeout: time.Second},
					nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
				if err != nil {
					b.Fatal(err)
				}
				tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(linkSampler{sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.1))}), sdktrace.WithSpanProcessor(q))
				prev := otel.GetTracerProvider()
				otel.SetTracerProvider(tp)
				enabled.Store(true)
				b.Cleanup(func() {
					enabled.Store(false)
					otel.SetTracerProvider(prev)
					_ = tp.Shutdown(context.Background())
				})
			}
			b.ResetTimer()
			for b.Loop() {
				p := StartProcess(context.Background(), ConsumerLink, "g", recs)
				p.End("write snapshots", time.Now(), nil)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/record")
		})
	}
}
