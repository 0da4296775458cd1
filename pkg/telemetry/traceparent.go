package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// TraceparentLen is the length of a version-00 W3C traceparent:
// "00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>".
const TraceparentLen = 55

// ValidTraceparent reports whether s is a W3C traceparent (Trace Context level 1): lowercase
// hex fields of the right lengths, a version other than ff, and trace and parent ids that are
// not all zeros. Only the 55-byte form is accepted: that is what every version so far writes,
// and what the service stores and forwards.
func ValidTraceparent(s string) bool {
	if len(s) != TraceparentLen || s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return false
	}
	for _, f := range [...]struct{ from, to int }{{0, 2}, {3, 35}, {36, 52}, {53, 55}} {
		if !lowerHex(s[f.from:f.to]) {
			return false
		}
	}
	// Version 00 defines flags up to 02 only; OTel's propagator refuses the rest, so they are
	// not accepted here either (found by FuzzValidTraceparent).
	if s[:2] == "00" && s[53:55] > "02" {
		return false
	}
	return s[:2] != "ff" && !zeros(s[3:35]) && !zeros(s[36:52])
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func zeros(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '0' {
			return false
		}
	}
	return true
}

// Traceparent is the traceparent of ctx's span context ("" when ctx has no valid one).
func Traceparent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	flags := "00"
	if sc.IsSampled() {
		flags = "01"
	}
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + flags
}

// SpanContext parses a traceparent into a remote span context (invalid when tp is not one).
func SpanContext(tp string) trace.SpanContext {
	if !ValidTraceparent(tp) {
		return trace.SpanContext{}
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": tp})
	return trace.SpanContextFromContext(ctx)
}

// Link is a span link to the context tp names; ok is false when tp is not a traceparent.
func Link(tp string) (l trace.Link, ok bool) {
	sc := SpanContext(tp)
	return trace.Link{SpanContext: sc}, sc.IsValid()
}

// ContextWithRemote is ctx with tp as its remote parent (ctx itself when tp is not valid).
func ContextWithRemote(ctx context.Context, tp string) context.Context {
	sc := SpanContext(tp)
	if !sc.IsValid() {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}
