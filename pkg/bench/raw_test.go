package bench

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The raw client reads what net/http's server writes: answers with a length, chunked ones,
// 204s, a closed connection, and it sends a request again when a reused connection turns out
// to be closed.
func TestRawClient(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("Authorization") != "Bearer tok" && r.URL.Path != "/open" {
			http.Error(w, `{"error":{"code":"unauthenticated"}}`, http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/echo":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
		case "/chunked":
			fl := w.(http.Flusher)
			_, _ = io.WriteString(w, `{"messages":[`)
			fl.Flush()
			_, _ = io.WriteString(w, `{"body":"a","receiptHandle":"h"}]}`)
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		case "/close":
			w.Header().Set("Connection", "close")
			_, _ = io.WriteString(w, `{"results":[]}`)
		case "/open":
			_, _ = io.WriteString(w, strings.Repeat("x", 100_000))
		}
	}))
	defer srv.Close()
	c := newClient(srv.URL, "tok", 4)
	defer c.close()
	if c.raw == nil {
		t.Fatal("no raw client for a plain-http URL")
	}
	ctx := context.Background()
	var rr receiveResp
	if err := c.do(ctx, http.MethodPost, "/echo", []byte(`{"messages":[{"body":"b","receiptHandle":"x"}]}`), true, &rr); err != nil || len(rr.Messages) != 1 || rr.Messages[0].Body != "b" {
		t.Fatalf("echo: %+v, %v", rr, err)
	}
	rr = receiveResp{}
	if err := c.do(ctx, http.MethodPost, "/chunked", []byte(`{}`), true, &rr); err != nil || len(rr.Messages) != 1 || rr.Messages[0].ReceiptHandle != "h" {
		t.Fatalf("chunked: %+v, %v", rr, err)
	}
	if err := c.do(ctx, http.MethodDelete, "/empty", nil, true, nil); err != nil {
		t.Fatalf("204: %v", err)
	}
	var ar ackResp
	if err := c.do(ctx, http.MethodPost, "/close", []byte(`{}`), true, &ar); err != nil {
		t.Fatalf("connection close: %v", err)
	}
	if err := c.do(ctx, http.MethodGet, "/open", nil, false, nil); err != nil {
		t.Fatalf("large answer: %v", err)
	}
	err := c.do(ctx, http.MethodGet, "/echo", nil, false, nil)
	if e, ok := err.(*apiError); !ok || e.Status != http.StatusUnauthorized || e.Code != "unauthenticated" {
		t.Fatalf("401: %v", err)
	}
	// The server drops its idle connections: the next request goes out again on a new one.
	srv.CloseClientConnections()
	before := n.Load()
	if err := c.do(ctx, http.MethodPost, "/echo", []byte(`{}`), true, nil); err != nil {
		t.Fatalf("after the server closed idle connections: %v", err)
	}
	if got := n.Load() - before; got != 1 {
		t.Fatalf("the server saw %d requests, want 1", got)
	}
	// A context that ends interrupts a request waiting for its answer.
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer slow.Close()
	sc := newClient(slow.URL, "", 1)
	defer sc.close()
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := sc.do(cctx, http.MethodGet, "/", nil, false, nil); err == nil {
		t.Fatal("a request outlived its context")
	}
}
