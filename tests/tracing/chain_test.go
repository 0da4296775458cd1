// Package tracing_test checks that a message's trace context travels producer → queue →
// consumer and → push on serve's wiring (the embedded engine, the API and the pusher in one
// process), with an in-memory span exporter. It installs the global tracer provider, so it
// lives in a package of its own.
package tracing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/queueshq/queues/pkg/telemetry"
	"github.com/queueshq/queues/sdk/go/client"
	"github.com/queueshq/queues/services/queues/embedded"
)

const waitFor = 20 * time.Second

func setup(t *testing.T) (*tracetest.InMemoryExporter, *sdktrace.TracerProvider, *client.Client) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	telemetry.Install(tp) // before the node: the API registers its middleware when built
	n, err := embedded.Open(t.Context(), embedded.Options{DataDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler), SweepEvery: -1,
		BacklogTopN: -1, Push: embedded.PushOptions{AllowPrivate: true, Grace: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(n.Handler())
	t.Cleanup(func() {
		n.Drain()
		srv.Close()
		_ = n.Close()
	})
	cl, err := client.New(srv.URL, client.WithToken(n.Token))
	if err != nil {
		t.Fatal(err)
	}
	return exp, tp, cl
}

// span finds the one exported span named name for which ok holds.
func span(t *testing.T, exp *tracetest.InMemoryExporter, name string, ok func(tracetest.SpanStub) bool) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == name && (ok == nil || ok(s)) {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans named %q, want 1 (of %d exported)", len(found), name, len(exp.GetSpans()))
	}
	return found[0]
}

func attr(s tracetest.SpanStub, key string) string {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value.String()
		}
	}
	return ""
}

func inTrace(tid trace.TraceID) func(tracetest.SpanStub) bool {
	return func(s tracetest.SpanStub) bool { return s.SpanContext.TraceID() == tid }
}

func TestProducerQueueConsumer(t *testing.T) {
	exp, tp, cl := setup(t)
	ctx := t.Context()
	q, err := cl.CreateQueue(ctx, client.CreateQueueInput{Name: "orders"})
	if err != nil {
		t.Fatal(err)
	}
	pctx, produce := tp.Tracer("test").Start(ctx, "produce")
	if _, err := cl.Send(pctx, "orders", client.SendMessage{Body: "hello"}); err != nil {
		t.Fatal(err)
	}
	produce.End()
	tid := produce.SpanContext().TraceID()

	// The API's span for the send is the producer's child, and names the queue.
	send := span(t, exp, "POST /v1/queues/:queue/messages", inTrace(tid))
	if send.Parent.SpanID() != produce.SpanContext().SpanID() {
		t.Fatalf("send span's parent is %s, want the producer's %s", send.Parent.SpanID(), produce.SpanContext().SpanID())
	}
	if got := attr(send, "queues.queue"); got != q.ID {
		t.Errorf("send span queues.queue = %q, want %q", got, q.ID)
	}
	if attr(send, "http.response.status_code") != "200" || attr(send, "queues.project.id") == "" {
		t.Errorf("send span attributes: %v", send.Attributes)
	}

	// Browse shows the stored context: the send span's.
	page, err := cl.Browse(ctx, "orders", client.BrowseInput{})
	if err != nil || len(page.Messages) != 1 {
		t.Fatalf("browse: %v %+v", err, page)
	}
	want := telemetry.Traceparent(trace.ContextWithSpanContext(ctx, send.SpanContext))
	if page.Messages[0].Traceparent != want {
		t.Fatalf("browsed traceparent %q, want the send span's %q", page.Messages[0].Traceparent, want)
	}
	if len(page.Messages[0].Attributes) != 0 {
		t.Fatalf("the stored traceparent shows as an attribute: %v", page.Messages[0].Attributes)
	}

	// The consumer's handler runs under a span that is the send span's child.
	cctx, cancel := context.WithCancel(ctx)
	got := make(chan trace.SpanContext, 1)
	done := make(chan error, 1)
	go func() {
		done <- cl.Consume(cctx, "orders", func(hctx context.Context, m *client.Message) error {
			got <- trace.SpanContextFromContext(hctx)
			return nil
		}, client.ConsumeOptions{})
	}()
	var hsc trace.SpanContext
	select {
	case hsc = <-got:
	case <-time.After(waitFor):
		t.Fatal("the consumer got no message")
	}
	cancel()
	<-done
	if hsc.TraceID() != tid {
		t.Fatalf("handler's trace %s, want the producer's %s", hsc.TraceID(), tid)
	}
	process := span(t, exp, "process orders", inTrace(tid))
	if process.Parent.SpanID() != send.SpanContext.SpanID() {
		t.Fatalf("process span's parent is %s, want the send span %s", process.Parent.SpanID(), send.SpanContext.SpanID())
	}
}

type pushed struct {
	header string
	body   struct {
		Messages []struct {
			Body        string `json:"body"`
			Traceparent string `json:"traceparent"`
		} `json:"messages"`
	}
}

func TestPushCarriesTraceparent(t *testing.T) {
	exp, tp, cl := setup(t)
	ctx := t.Context()
	got := make(chan pushed, 10)
	// The endpoint is the Go SDK's push receiver, whose handler runs under a process span.
	var receiver atomic.Pointer[client.PushReceiver]
	ready := make(chan struct{}) // closed once receiver is set: a push may come before CreateSubscription answers
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-ready
		var p pushed
		p.header = r.Header.Get("traceparent")
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &p.body)
		got <- p
		r.Body = io.NopCloser(bytes.NewReader(raw))
		receiver.Load().ServeHTTP(w, r)
	}))
	defer hook.Close()
	if _, err := cl.CreateQueue(ctx, client.CreateQueueInput{Name: "hooks"}); err != nil {
		t.Fatal(err)
	}
	// Both messages are stored before the subscription exists, so one batch carries them.
	other := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	pctx, produce := tp.Tracer("test").Start(ctx, "produce")
	if _, err := cl.SendBatch(pctx, "hooks", []client.SendMessage{{Body: "first"}, {Body: "second", Traceparent: other}}); err != nil {
		t.Fatal(err)
	}
	produce.End()
	tid := produce.SpanContext().TraceID()
	send := span(t, exp, "POST /v1/queues/:queue/messages", inTrace(tid))
	batch, window := 10, 1000
	sub, err := cl.CreateSubscription(ctx, "hooks", client.SubscriptionInput{Endpoint: hook.URL, BatchSize: &batch, BatchWindowMs: &window})
	if err != nil {
		t.Fatal(err)
	}
	receiver.Store(client.NewPushReceiver(func(context.Context, *client.Message) error { return nil }, sub.SigningSecret))
	close(ready)
	var p pushed
	select {
	case p = <-got:
	case <-time.After(waitFor):
		t.Fatal("nothing pushed")
	}
	if len(p.body.Messages) != 2 || p.body.Messages[0].Body != "first" {
		t.Fatalf("pushed %+v, want both messages in send order", p.body.Messages)
	}
	sendTP := telemetry.Traceparent(trace.ContextWithSpanContext(ctx, send.SpanContext))
	if p.body.Messages[0].Traceparent != sendTP || p.body.Messages[1].Traceparent != other {
		t.Fatalf("pushed traceparents %q, %q; want %q, %q", p.body.Messages[0].Traceparent, p.body.Messages[1].Traceparent, sendTP, other)
	}
	// The attempt's span is the first message's child, links to the second, and is what the
	// request's traceparent header names.
	var push tracetest.SpanStub
	deadline := time.Now().Add(waitFor)
	for {
		var n int
		for _, s := range exp.GetSpans() {
			if s.Name == "push" {
				push, n = s, n+1
			}
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d push spans exported, want 1", n)
		}
		time.Sleep(10 * time.Millisecond) // the span ends after the endpoint answered
	}
	if push.Parent.SpanID() != send.SpanContext.SpanID() || push.SpanContext.TraceID() != tid {
		t.Fatalf("push span's parent %s in trace %s, want the send span %s", push.Parent.SpanID(), push.SpanContext.TraceID(), send.SpanContext.SpanID())
	}
	if len(push.Links) != 1 || push.Links[0].SpanContext.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" {
		t.Fatalf("push span links %+v, want the second message's context", push.Links)
	}
	if want := telemetry.Traceparent(trace.ContextWithSpanContext(ctx, push.SpanContext)); p.header != want {
		t.Fatalf("push request traceparent %q, want the push span's %q", p.header, want)
	}
	if attr(push, "queues.subscription") == "" || attr(push, "http.response.status_code") != "200" {
		t.Errorf("push span attributes: %v", push.Attributes)
	}
	// The receiver's handler spans are children of each message's own context.
	if first := span(t, exp, "process hooks", inTrace(tid)); first.Parent.SpanID() != send.SpanContext.SpanID() {
		t.Errorf("first pushed message's process span's parent %s, want the send span", first.Parent.SpanID())
	}
	otherTrace := push.Links[0].SpanContext.TraceID()
	if second := span(t, exp, "process hooks", inTrace(otherTrace)); second.Parent.SpanID().String() != "b7ad6b7169203331" {
		t.Errorf("second pushed message's process span's parent %s, want its own context's", second.Parent.SpanID())
	}
}
