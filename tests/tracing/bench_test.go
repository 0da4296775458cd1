package tracing_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/queueshq/queues/pkg/telemetry"
	"github.com/queueshq/queues/services/queues/embedded"
)

// BenchmarkSendReceiveAck is the API hot path on serve's wiring, in process (no sockets, so
// the allocation count is the server's and the figures are steady on a shared machine): each
// op sends 10 messages of 64 bytes, receives them and acknowledges them in one call. Run it
// with tracing off (the default) to check that tracing costs nothing when off:
// go test -run '^$' -bench SendReceiveAck -benchmem ./tests/tracing/
func BenchmarkSendReceiveAck(b *testing.B) { benchSendReceiveAck(b) }

// BenchmarkSendReceiveAckTraced is the same with tracing on, every span sampled and kept in
// memory (run it after BenchmarkSendReceiveAck: it turns tracing on for the process).
func BenchmarkSendReceiveAckTraced(b *testing.B) {
	telemetry.Install(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(tracetest.NewNoopExporter()))))
	benchSendReceiveAck(b)
}

func benchSendReceiveAck(b *testing.B) {
	n, err := embedded.Open(b.Context(), embedded.Options{DataDir: b.TempDir(), Logger: slog.New(slog.DiscardHandler), SweepEvery: -1,
		BacklogTopN: -1, Push: embedded.PushOptions{Grace: time.Second}})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { n.Drain(); _ = n.Close() }()
	h := n.Handler()
	call := func(path, body string, auth bool) []byte {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if auth {
			req.Header.Set("Authorization", "Bearer "+n.Token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code >= 300 {
			b.Fatalf("%s: %d %s", path, w.Code, w.Body)
		}
		return w.Body.Bytes()
	}
	call("/v1/queues", `{"name":"bench"}`, true)
	msgs := make([]string, 10)
	for i := range msgs {
		msgs[i] = `{"body":"` + strings.Repeat("x", 64) + `"}`
	}
	send := `{"messages":[` + strings.Join(msgs, ",") + `]}`
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		call("/v1/queues/bench/messages", send, true)
		var got struct {
			Messages []struct {
				ReceiptHandle string `json:"receiptHandle"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(call("/v1/queues/bench/receive", `{"maxMessages":10,"waitSeconds":0}`, true), &got); err != nil {
			b.Fatal(err)
		}
		hs := make([]string, len(got.Messages))
		for i, m := range got.Messages {
			hs[i] = m.ReceiptHandle
		}
		var body bytes.Buffer
		_ = json.NewEncoder(&body).Encode(map[string]any{"receiptHandles": hs})
		call("/v1/receipts/ack", body.String(), false)
	}
}
