package api

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/telemetry"
)

// Tracing (docs/tracing.md). The middleware is registered only when telemetry is enabled,
// so tracing off adds nothing to a request. Spans carry the route template, the status and
// the project and queue ids — never a body, a header value, a token or a receipt handle.

// Span attribute keys the API sets.
const (
	attrProjectID = attribute.Key("queues.project.id")
	attrProject   = attribute.Key("queues.project")
	attrQueue     = attribute.Key("queues.queue")
)

// traceparentHeader is the W3C header a send may carry for all of its messages.
const traceparentHeader = "Traceparent" // canonical, so Header.Get does not allocate

// traceRequests starts a server span per request, a child of the caller's traceparent.
func (s *Server) traceRequests(next echo.HandlerFunc) echo.HandlerFunc {
	tracer := telemetry.Tracer()
	prop := otel.GetTextMapPropagator()
	return func(c echo.Context) error {
		r := c.Request()
		ctx := prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		route := c.Path()
		if route == "" {
			route = "unmatched"
		}
		ctx, span := tracer.Start(ctx, r.Method+" "+route, trace.WithSpanKind(trace.SpanKindServer))
		defer span.End()
		c.SetRequest(r.WithContext(ctx))
		err := next(c)
		if !span.IsRecording() {
			return err
		}
		// logRequests (inside this middleware) has turned an error into its answer already.
		status := c.Response().Status
		span.SetAttributes(
			attribute.String("http.request.method", r.Method),
			attribute.String("http.route", route),
			attribute.Int("http.response.status_code", status),
		)
		if p := principal(c); !p.ProjectID.IsZero() {
			span.SetAttributes(attrProjectID.String(p.ProjectID.String()))
		}
		if slug := c.Param("project"); slug != "" {
			span.SetAttributes(attrProject.String(slug))
		}
		if status >= http.StatusInternalServerError {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
		return err
	}
}

// traceQueue records the resolved queue on the request's span.
func traceQueue(c echo.Context, q ids.ID) {
	if span := trace.SpanFromContext(c.Request().Context()); span.IsRecording() {
		span.SetAttributes(attrQueue.String(q.String()))
	}
}

// sendTraceparent is the traceparent a send stores with messages that carry none of their
// own: the send's span when it is traced, else the request's traceparent header as sent
// (so a producer's trace reaches its consumers whether or not this service exports spans).
// An invalid header is ignored, as W3C asks of a receiver.
func sendTraceparent(c echo.Context) string {
	if tp := telemetry.Traceparent(c.Request().Context()); tp != "" {
		return tp
	}
	if h := c.Request().Header.Get(traceparentHeader); telemetry.ValidTraceparent(h) {
		return h
	}
	return ""
}

// applyTraceparent stores tp (the send's traceparent, sendTraceparent) with each message
// that has none.
func applyTraceparent(msgs []engine.Message, tp string) {
	if len(msgs) == 0 || tp == "" {
		return
	}
	for i := range msgs {
		if _, own := msgs[i].Attributes[engine.TraceparentAttribute]; !own {
			msgs[i].Attributes = engine.WithTraceparent(msgs[i].Attributes, tp)
		}
	}
}

// parseTraceparentField reads a message's optional "traceparent" field.
func parseTraceparentField(o *object, m *engine.Message) *apierr.Error {
	tp, ok, err := o.str("traceparent")
	if err != nil || !ok {
		return err
	}
	if !telemetry.ValidTraceparent(tp) {
		return apierr.Invalid(o.path("traceparent"), "must be a W3C traceparent: 00-<32 hex>-<16 hex>-<2 hex>, lowercase")
	}
	m.Attributes = engine.WithTraceparent(m.Attributes, tp)
	return nil
}
