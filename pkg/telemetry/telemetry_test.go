package telemetry_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/redisengine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/telemetry"
	"github.com/queueshq/queues/pkg/testservers"
)

func TestValidTraceparent(t *testing.T) {
	for tp, want := range map[string]bool{
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01":  true,
		"01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00":  true,
		"00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01":  false, // uppercase
		"ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01":  false, // version ff
		"00-00000000000000000000000000000000-b7ad6b7169203331-01":  false, // zero trace id
		"00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01":  false, // zero parent id
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331":     false,
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-": false,
		"00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01":  false,
		"00-0af7651916cd43dd8448eb211c80319g-b7ad6b7169203331-01":  false,
		"": false,
	} {
		if got := telemetry.ValidTraceparent(tp); got != want {
			t.Errorf("ValidTraceparent(%q) = %v, want %v", tp, got, want)
		}
	}
}

func TestFromEnv(t *testing.T) {
	for _, c := range []struct {
		env     map[string]string
		on, bad bool
	}{
		{env: nil},
		{env: map[string]string{"OTEL_SERVICE_NAME": "x"}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, on: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, on: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, on: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}},
		{env: map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, bad: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, bad: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, on: true},
	} {
		cfg, err := telemetry.FromEnv(func(k string) string { return c.env[k] })
		if (err != nil) != c.bad || cfg.On != c.on {
			t.Errorf("FromEnv(%v) = %+v, %v; want on=%v, error=%v", c.env, cfg, err, c.on, c.bad)
		}
	}
}

// TestRedisScriptSpans checks the engine's script calls on a real redis-server: one span per
// call named by script, the child of the caller's span.
func TestRedisScriptSpans(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	telemetry.Install(tp) // before the engine: it adds its hook when built
	rdb := redis.NewClient(&redis.Options{Addr: testservers.Redis(t)})
	defer rdb.Close()
	eng, err := redisengine.New(rdb, clock.Real{}, redisengine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ctx, parent := tp.Tracer("test").Start(context.Background(), "caller")
	q := engine.Queue{ID: ids.New(), Type: engine.Standard, VisibilityTimeout: 30 * time.Second, Retention: time.Hour}
	if err := eng.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Send(ctx, q, []engine.Message{{Body: "a"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Receive(ctx, q, engine.ReceiveRequest{Max: 1, Visibility: time.Second}); err != nil {
		t.Fatal(err)
	}
	parent.End()
	seen := map[string]trace.SpanID{}
	for _, s := range exp.GetSpans() {
		if s.Parent.SpanID() == parent.SpanContext().SpanID() {
			seen[s.Name] = s.Parent.SpanID()
			for _, a := range s.Attributes {
				if a.Key == "db.statement" || a.Key == "db.query.text" {
					t.Errorf("span %s carries the script text", s.Name)
				}
			}
		}
	}
	for _, name := range []string{"EVALSHA send", "EVALSHA receive"} {
		if _, ok := seen[name]; !ok {
			t.Errorf("no span %q under the caller's span; got %v", name, seen)
		}
	}
}
