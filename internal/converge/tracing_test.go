package converge

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/runstream/runstream/internal/tracing"
	"github.com/runstream/runstream/store"
)

// TestConverge_PassIsASpan: with tracing on, a pass is a span of its own
// that says what it checked and repaired.
func TestConverge_PassIsASpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	t.Cleanup(tracing.Install(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := &fakeStore{now: t0, heads: map[string]store.RunHead{}}
	tg := newFakeTarget()
	c := newTestConverger(t, st, tg)
	if _, err := c.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	st.heads["a"] = store.RunHead{RunID: "a", LastSeq: 3, LastPersistedAt: t0.Add(time.Second)}
	st.now = t0.Add(time.Minute)
	if _, err := c.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	var passes []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "converge test" {
			passes = append(passes, s)
		}
	}
	if len(passes) != 2 {
		t.Fatalf("%d pass spans, want 2", len(passes))
	}
	attrs := map[string]string{}
	for _, a := range passes[1].Attributes() {
		attrs[string(a.Key)] = a.Value.String()
	}
	if attrs["runstream.converge.behind"] != "1" || attrs["runstream.converge.full"] != "false" || attrs["runstream.consumer"] != "test" {
		t.Errorf("the second pass's attributes: %v; want one run behind, a window pass of consumer test", attrs)
	}
}
