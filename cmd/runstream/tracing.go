package main

import (
	"context"
	"flag"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/runstream/runstream/internal/tracing"
)

// startTracing sets up the component's tracing from the standard OTEL_*
// environment (off unless an OTLP endpoint is set; internal/tracing) and
// returns what flushes and stops it: the caller defers it.
func startTracing(ctx context.Context, env *environment, component string, reg prometheus.Registerer, log *slog.Logger) (func(), error) {
	shutdown, err := tracing.Setup(ctx, component, env.getenv, reg, log)
	if err != nil {
		return nil, usageError{err}
	}
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := shutdown(sctx); err != nil {
			log.Warn("tracing: spans still queued at exit were not all exported", "err", err)
		}
	}, nil
}

// traceConsumerFlag registers --trace-consumer, how a consumer's process
// spans relate to the appends they continue.
func traceConsumerFlag(fs *flag.FlagSet, to *string) {
	fs.StringVar(to, "trace-consumer", string(tracing.ConsumerLink),
		"with tracing on (OTEL_EXPORTER_OTLP_ENDPOINT): link (a record's process span starts its own trace, linked to the append's) or parent (it joins the append's trace)")
}
