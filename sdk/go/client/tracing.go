package client

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Trace propagation (docs/tracing.md). The client uses only the OpenTelemetry API: in a
// program without an OpenTelemetry SDK every context's span is invalid and nothing is sent
// or started. With one:
//
//   - every request carries the traceparent of ctx's span, so a send stores it with each of
//     its messages that has no Traceparent of its own, and the server's spans join the trace;
//   - Consume runs each handler under a "process <queue>" consumer span, the child of the
//     message's Traceparent (its producer's context), linked to nothing else.

// tracerName is the instrumentation scope of the client's spans.
const tracerName = "github.com/queueshq/queues/sdk/go/client"

// injectTraceparent sets the traceparent header from ctx's span, when it has one.
func injectTraceparent(ctx context.Context, h http.Header) {
	if trace.SpanContextFromContext(ctx).IsValid() {
		propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(h))
	}
}

// startProcessSpan starts the span a handler runs under; ctx is returned unchanged (and the
// span is a no-op) when the message carries no traceparent.
func startProcessSpan(ctx context.Context, queue string, m *Message) (context.Context, trace.Span) {
	if m.Traceparent == "" {
		return ctx, trace.SpanFromContext(ctx)
	}
	parent := propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": m.Traceparent})
	ctx, span := otel.Tracer(tracerName).Start(parent, "process "+queue, trace.WithSpanKind(trace.SpanKindConsumer))
	if span.IsRecording() {
		span.SetAttributes(
			attribute.String("messaging.system", "queues"),
			attribute.String("messaging.operation.type", "process"),
			attribute.String("messaging.destination.name", queue),
			attribute.String("messaging.message.id", m.MessageID),
			attribute.Int("queues.receive_count", m.ReceiveCount),
		)
	}
	return ctx, span
}

// endProcessSpan ends a handler's span (a no-op when startProcessSpan started none).
func endProcessSpan(m *Message, span trace.Span, err error) {
	if m.Traceparent == "" {
		return
	}
	if err != nil && span.IsRecording() {
		span.SetStatus(codes.Error, OutcomeOf(err).Kind.String())
	}
	span.End()
}
