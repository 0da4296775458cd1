package pusher

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/telemetry"
	"github.com/queueshq/queues/sdk/go/webhook"
)

// Tracing of push attempts (docs/tracing.md). A push request carries the traceparent of its
// first message that has one; the attempt's span, when tracing is on, is that message's
// child and links to the other messages' contexts, and the request carries the span's own
// traceparent instead, so the receiver's span is the attempt's child.

var noopSpan = noop.Span{}

// startPushSpan starts the attempt's client span; with telemetry off it returns ctx and a
// no-op span without allocating.
func startPushSpan(ctx context.Context, sub, queue ids.ID, msgs []webhook.Message) (context.Context, trace.Span) {
	if !telemetry.Enabled() {
		return ctx, noopSpan
	}
	parent := ""
	var links []trace.Link
	for _, m := range msgs {
		if m.Traceparent == "" {
			continue
		}
		if parent == "" {
			parent = m.Traceparent
			continue
		}
		if l, ok := telemetry.Link(m.Traceparent); ok {
			links = append(links, l)
		}
	}
	ctx = telemetry.ContextWithRemote(ctx, parent)
	ctx, span := telemetry.Tracer().Start(ctx, "push", trace.WithSpanKind(trace.SpanKindClient), trace.WithLinks(links...))
	if span.IsRecording() {
		span.SetAttributes(
			attribute.String("queues.subscription", sub.Slug(ids.SubscriptionPrefix)),
			attribute.String("queues.queue", queue.String()),
			attribute.Int("messaging.batch.message_count", len(msgs)),
		)
	}
	return ctx, span
}

// setTraceparent puts the attempt's traceparent on the request: the span's when it is
// traced, else the first message's as it was stored.
func setTraceparent(req *http.Request, ctx context.Context, msgs []webhook.Message) {
	tp := telemetry.Traceparent(ctx)
	for i := 0; tp == "" && i < len(msgs); i++ {
		tp = msgs[i].Traceparent
	}
	if tp != "" {
		req.Header.Set("traceparent", tp)
	}
}

// endPushSpan records the answer's status (0: no answer) and the error class.
func endPushSpan(span trace.Span, status int, errClass string) {
	if !span.IsRecording() {
		return
	}
	if status != 0 {
		span.SetAttributes(attribute.Int("http.response.status_code", status))
	}
	if errClass != "" {
		span.SetAttributes(attribute.String("error.type", errClass))
		span.SetStatus(codes.Error, errClass)
	}
}
