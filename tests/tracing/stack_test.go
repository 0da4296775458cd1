package tracing_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/queueshq/queues/pkg/meta/dynamometa"
	"github.com/queueshq/queues/pkg/signingkeys"
	"github.com/queueshq/queues/pkg/telemetry"
	"github.com/queueshq/queues/pkg/testservers"
	"github.com/queueshq/queues/sdk/go/client"
	"github.com/queueshq/queues/services/queues/stack"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testservers.StopAll()
	os.Exit(code)
}

const stackOperator = "tracing-operator-secret"

// setupStack builds the production tiers as `queues api` and `queues pusher` build them, each
// with a Redis client of its own (two processes' worth) on one real redis-server, and a
// DynamoDB Local client traced as config.go traces it; tracing is on with an in-memory
// exporter. It returns a client with an every-scope token of a fresh project.
func setupStack(t *testing.T) (*tracetest.InMemoryExporter, *sdktrace.TracerProvider, *client.Client) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	telemetry.Install(tp) // before the tiers: their hooks and middleware are added when built
	ctx := t.Context()
	addr := testservers.Redis(t)
	plain, err := testservers.DynamoClient(ctx, testservers.DynamoDB(t))
	if err != nil {
		t.Fatal(err)
	}
	ddb := dynamodb.New(plain.Options(), func(o *dynamodb.Options) { o.TracerProvider = telemetry.AWSTracerProvider() })
	table := testservers.TableName("tracing")
	if err := dynamometa.Migrate(ctx, ddb, table); err != nil {
		t.Fatal(err)
	}
	ring, err := signingkeys.Generate("tr")
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	apiRedis, pushRedis := redis.NewClient(&redis.Options{Addr: addr}), redis.NewClient(&redis.Options{Addr: addr})
	r, err := stack.New(ctx, stack.Options{Redis: apiRedis, Dynamo: ddb, Table: table, Keys: ring,
		OperatorToken: stackOperator, Logger: quiet, SweepEvery: -1, PushAllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(r.Handler())
	p, err := stack.NewPusher(stack.PusherOptions{Redis: pushRedis, Dynamo: ddb, Table: table, Keys: ring,
		AllowPrivate: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	pctx, stopPusher := context.WithCancel(context.Background())
	pushed := make(chan struct{})
	go func() { defer close(pushed); _ = p.Run(pctx) }()
	t.Cleanup(func() {
		stopPusher()
		<-pushed
		_ = p.Close()
		r.Drain()
		srv.Close()
		_ = r.Close()
		_ = apiRedis.Close()
		_ = pushRedis.Close()
	})
	op, err := client.New(srv.URL, client.WithToken(stackOperator))
	if err != nil {
		t.Fatal(err)
	}
	proj, err := op.CreateProject(ctx, "tracing")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := op.CreateToken(ctx, proj.ID, client.CreateTokenInput{Name: "all", Scopes: []string{client.ScopeAll}})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(srv.URL, client.WithToken(tok.Token))
	if err != nil {
		t.Fatal(err)
	}
	return exp, tp, cl
}

// childOf is a span filter: in trace tid, with parent parent.
func childOf(parent trace.SpanContext) func(tracetest.SpanStub) bool {
	return func(s tracetest.SpanStub) bool {
		return s.SpanContext.TraceID() == parent.TraceID() && s.Parent.SpanID() == parent.SpanID()
	}
}

// awaitSpan waits for the span named name ("": any name) for which ok holds to be exported (spans end after
// the work they time, so some are exported after the test saw the work done).
func awaitSpan(t *testing.T, exp *tracetest.InMemoryExporter, name string, ok func(tracetest.SpanStub) bool) tracetest.SpanStub {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		for _, s := range exp.GetSpans() {
			if (name == "" || s.Name == name) && ok(s) {
				return s
			}
		}
		if time.Now().After(deadline) {
			var names []string
			for _, s := range exp.GetSpans() {
				names = append(names, s.Name)
			}
			t.Fatalf("no span %q as wanted among %d exported: %s", name, len(names), strings.Join(names, ", "))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStackChain follows one message's trace on the production tiers: producer span → the
// API's send span → its EVALSHA send script span, DynamoDB spans under the API's queue
// creation, the consumer's process span (the send span's child), and on the separate pusher
// the push span (the send span's child) whose context is the push request's traceparent and
// the parent of the push receiver's process span.
func TestStackChain(t *testing.T) {
	exp, tp, cl := setupStack(t)
	ctx := t.Context()
	tracer := tp.Tracer("test")

	// Queue creation writes DynamoDB: its calls are spans under the API's request span.
	cctx, create := tracer.Start(ctx, "create")
	if _, err := cl.CreateQueue(cctx, client.CreateQueueInput{Name: "pulled"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.CreateQueue(cctx, client.CreateQueueInput{Name: "pushed"}); err != nil {
		t.Fatal(err)
	}
	create.End()
	createReq := awaitSpan(t, exp, "POST /v1/queues", childOf(create.SpanContext()))
	awaitSpan(t, exp, "", func(s tracetest.SpanStub) bool {
		return strings.HasPrefix(s.Name, "DynamoDB.") && s.SpanContext.TraceID() == createReq.SpanContext.TraceID()
	})

	// Pulled: producer → send → script; consumer's process span is the send span's child.
	pctx, produce := tracer.Start(ctx, "produce")
	if _, err := cl.Send(pctx, "pulled", client.SendMessage{Body: "hello"}); err != nil {
		t.Fatal(err)
	}
	produce.End()
	send := awaitSpan(t, exp, "POST /v1/queues/:queue/messages", childOf(produce.SpanContext()))
	script := awaitSpan(t, exp, "EVALSHA send", childOf(send.SpanContext))
	if attr(script, "db.system.name") != "redis" || attr(script, "queues.script") != "send" {
		t.Errorf("script span attributes: %v", script.Attributes)
	}
	hctxs := make(chan trace.SpanContext, 1)
	cctx2, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- cl.Consume(cctx2, "pulled", func(hctx context.Context, m *client.Message) error {
			hctxs <- trace.SpanContextFromContext(hctx)
			return nil
		}, client.ConsumeOptions{})
	}()
	var hsc trace.SpanContext
	select {
	case hsc = <-hctxs:
	case <-time.After(waitFor):
		t.Fatal("the consumer got no message")
	}
	cancel()
	<-done
	process := awaitSpan(t, exp, "process pulled", childOf(send.SpanContext))
	if hsc.SpanID() != process.SpanContext.SpanID() {
		t.Errorf("the handler's context is %s, want the process span %s", hsc.SpanID(), process.SpanContext.SpanID())
	}

	// Pushed by the separate pusher: send → push (whose context the request carries) and the
	// receiver's process span.
	var receiver atomic.Pointer[client.PushReceiver]
	ready := make(chan struct{}) // closed once receiver is set
	headers := make(chan string, 10)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-ready
		headers <- r.Header.Get("traceparent")
		receiver.Load().ServeHTTP(w, r)
	}))
	defer hook.Close()
	sub, err := cl.CreateSubscription(ctx, "pushed", client.SubscriptionInput{Endpoint: hook.URL})
	if err != nil {
		t.Fatal(err)
	}
	receiver.Store(client.NewPushReceiver(func(context.Context, *client.Message) error { return nil }, sub.SigningSecret))
	close(ready)
	pctx, produce = tracer.Start(ctx, "produce-push")
	if _, err := cl.Send(pctx, "pushed", client.SendMessage{Body: "hook"}); err != nil {
		t.Fatal(err)
	}
	produce.End()
	send = awaitSpan(t, exp, "POST /v1/queues/:queue/messages", childOf(produce.SpanContext()))
	var header string
	select {
	case header = <-headers:
	case <-time.After(waitFor):
		t.Fatal("nothing pushed")
	}
	push := awaitSpan(t, exp, "push", childOf(send.SpanContext))
	if want := telemetry.Traceparent(trace.ContextWithSpanContext(ctx, push.SpanContext)); header != want {
		t.Fatalf("push request traceparent %q, want the push span's %q", header, want)
	}
	if attr(push, "queues.subscription") == "" || attr(push, "http.response.status_code") != "200" {
		t.Errorf("push span attributes: %v", push.Attributes)
	}
	awaitSpan(t, exp, "process pushed", childOf(send.SpanContext))
}
