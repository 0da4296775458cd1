package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// A service that refuses ?encoding=binary (400 invalid_argument on the field "encoding")
// gets a JSON stream from Consume instead, not polling: the fake answers no receive.
func TestConsumeFallsBackToJSONBatches(t *testing.T) {
	var mu sync.Mutex
	var asked []string // each stream dial's encoding parameter
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/queues/q/stream" {
			http.Error(w, `{"error":{"code":"internal","message":"not this route"}}`, http.StatusInternalServerError)
			return
		}
		mu.Lock()
		asked = append(asked, r.URL.Query().Get("encoding"))
		mu.Unlock()
		if r.URL.Query().Has("encoding") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":{"code":"invalid_argument","message":"no","details":{"field":"encoding"}}}`))
			return
		}
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer conn.CloseNow()
		ctx := context.Background()
		if _, _, err := conn.Read(ctx); err != nil { // the credit
			return
		}
		batch := `{"messages":[{"messageId":"m1","body":"b","receiptHandle":"h1","sentAt":"2026-01-02T03:04:05Z","receiveCount":1}]}`
		if conn.Write(ctx, websocket.MessageText, []byte(batch)) != nil {
			return
		}
		for {
			if _, _, err := conn.Read(ctx); err != nil { // credit, acks: the test ends on the delivery
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, WithToken("t"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan Message, 1)
	err = c.Consume(ctx, "q", func(_ context.Context, m *Message) error {
		select {
		case got <- *m:
		default:
		}
		cancel()
		return nil
	}, ConsumeOptions{VisibilityTimeout: 30 * time.Second, ShutdownTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	m := <-got
	if m.MessageID != "m1" || m.Body != "b" || m.ReceiptHandle != "h1" {
		t.Fatalf("delivered %+v", m)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) < 2 || asked[0] != "binary" || asked[1] != "" {
		t.Fatalf("encodings asked: %q", asked)
	}
}
