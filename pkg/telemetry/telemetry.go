// Package telemetry sets up OpenTelemetry tracing for the queues processes (queues api,
// queues pusher, queues serve) from the standard OTEL_* environment variables, and holds the
// small helpers the other packages use to make spans and to carry a W3C traceparent.
//
// Tracing is off unless configured: with no OTLP endpoint and no OTEL_TRACES_EXPORTER=otlp,
// Setup installs nothing, Enabled reports false, and the instrumented code paths skip their
// span work entirely (no middleware is registered, no hook is added), so tracing off costs
// nothing on the hot path.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of every span the service makes.
const ScopeName = "github.com/queueshq/queues"

var enabled atomic.Bool

// Enabled reports whether a tracer provider is installed (Setup found tracing configured, or
// a test called Install). Instrumentation checks it once, when it is wired, not per request.
func Enabled() bool { return enabled.Load() }

// Tracer is the service's tracer from the global provider.
func Tracer() trace.Tracer { return otel.Tracer(ScopeName) }

// Config is what Setup read from the environment.
type Config struct {
	// On is true when traces are to be exported.
	On bool
}

// FromEnv reads the standard variables: OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER ("otlp" or
// "none"), OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and
// OTEL_EXPORTER_OTLP_PROTOCOL / OTEL_EXPORTER_OTLP_TRACES_PROTOCOL (http/protobuf only).
// The exporter itself reads the other OTEL_EXPORTER_OTLP_* variables (headers, timeout,
// compression, certificates), the SDK OTEL_TRACES_SAMPLER(_ARG) and OTEL_BSP_*, and the
// resource OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
func FromEnv(getenv func(string) string) (Config, error) {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return Config{}, nil
	}
	on := getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "":
	case "none":
		return Config{}, nil
	case "otlp":
		on = true
	default:
		return Config{}, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: this build exports traces with \"otlp\" (or \"none\")", exp)
	}
	if !on {
		return Config{}, nil
	}
	proto := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if proto != "" && proto != "http/protobuf" {
		return Config{}, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: this build exports OTLP over http/protobuf only (port 4318)", proto)
	}
	return Config{On: true}, nil
}

// Setup installs the global tracer provider and propagator when the environment configures
// tracing, for the process named service (the default service.name, "queues-api" and so on;
// OTEL_SERVICE_NAME overrides it). The returned shutdown flushes and stops the exporter; it
// is a no-op when tracing is off.
func Setup(ctx context.Context, service string) (shutdown func(context.Context) error, err error) {
	noop := func(context.Context) error { return nil }
	cfg, err := FromEnv(os.Getenv)
	if err != nil || !cfg.On {
		return noop, err
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return noop, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(service)))
	if err != nil {
		return noop, err
	}
	// From the environment last, so OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win.
	envRes, err := resource.New(ctx, resource.WithFromEnv())
	if err != nil {
		return noop, err
	}
	if res, err = resource.Merge(res, envRes); err != nil {
		return noop, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	Install(tp)
	return func(ctx context.Context) error {
		return errors.Join(tp.ForceFlush(ctx), tp.Shutdown(ctx))
	}, nil
}

// Install makes tp the global tracer provider with the W3C trace-context and baggage
// propagators, and turns the instrumentation on. Setup calls it; tests call it with an
// in-memory exporter before building the servers they trace.
func Install(tp trace.TracerProvider) {
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	enabled.Store(true)
}
