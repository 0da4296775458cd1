package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/queueshq/queues/pkg/telemetry"
)

// startTracing sets up OpenTelemetry from the OTEL_* variables for the process named
// service; the returned stop flushes the exporter (within 5 s) at exit. With tracing not
// configured both do nothing.
func startTracing(ctx context.Context, service string) (stop func(), err error) {
	shutdown, err := telemetry.Setup(ctx, service)
	if err != nil {
		return func() {}, err
	}
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := shutdown(sctx); err != nil {
			slog.Warn("flushing traces at exit failed", "err", err)
		}
	}, nil
}
