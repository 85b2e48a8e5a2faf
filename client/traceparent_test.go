package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/runstream/runstream/client"
	"github.com/runstream/runstream/store"
)

// TestAppend_CarriesTheCallersTraceContext: an engine's span in ctx goes
// with the append as a W3C traceparent, so the append continues the
// engine's trace; without one, no header is sent.
func TestAppend_CarriesTheCallersTraceContext(t *testing.T) {
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Get("traceparent"))
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"eventId":"x","runSeq":1,"persistedAt":"2026-01-01T00:00:00.000000Z","idempotent":false,"persisted":true}`))
	}))
	defer srv.Close()
	c := newClient(t, client.Config{URL: srv.URL, DisableFailOpen: true})
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0x4b, 0xf9, 1}, SpanID: trace.SpanID{0xf0, 7},
		TraceFlags: trace.FlagsSampled})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	if _, err := c.Append(ctx, testEvent(store.EventRunStarted)); err != nil {
		t.Fatal(err)
	}
	if want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"; got.Load() != want {
		t.Errorf("traceparent %q, want %q", got.Load(), want)
	}
	if _, err := c.Append(context.Background(), testEvent(store.EventRunStarted)); err != nil {
		t.Fatal(err)
	}
	if got.Load() != "" {
		t.Errorf("traceparent %q sent without a span in the context", got.Load())
	}
}
