package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// fakeSendStream is a send stream service whose connections behave as first says for the
// first connection (then confirm everything): "drain" closes 1001 after reading one frame
// without confirming it, "break" drops the connection after reading one frame.
type fakeSendStream struct {
	first string
	mu    sync.Mutex
	conns int
	seen  [][]string // bodies read, per connection
}

func (f *fakeSendStream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	f.mu.Lock()
	n := f.conns
	f.conns++
	f.seen = append(f.seen, nil)
	f.mu.Unlock()
	ctx := context.Background()
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			return
		}
		var fr struct {
			Seq      uint64 `json:"seq"`
			Messages []struct {
				Body string `json:"body"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(data, &fr); err != nil {
			_ = conn.Close(websocket.StatusPolicyViolation, "bad frame")
			return
		}
		f.mu.Lock()
		for _, m := range fr.Messages {
			f.seen[n] = append(f.seen[n], m.Body)
		}
		f.mu.Unlock()
		if n == 0 {
			switch f.first {
			case "drain":
				_ = conn.Close(websocket.StatusGoingAway, "draining")
				return
			case "break":
				_ = conn.CloseNow()
				return
			}
		}
		b := fmt.Appendf(nil, `{"seq":%d,"failed":[],"messages":[`, fr.Seq)
		for i, m := range fr.Messages {
			if i > 0 {
				b = append(b, ',')
			}
			b = fmt.Appendf(b, `{"index":%d,"messageId":"id-%s","duplicate":false,"merged":false}`, i, m.Body)
		}
		b = append(b, "]}"...)
		if err := conn.Write(ctx, websocket.MessageText, b); err != nil {
			return
		}
	}
}

func fakeProducer(t *testing.T, first string) (*Producer, *fakeSendStream) {
	t.Helper()
	f := &fakeSendStream{first: first}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, WithToken("t"))
	if err != nil {
		t.Fatal(err)
	}
	return c.NewProducer("q", ProducerOptions{Window: 1}), f
}

// A batch left unconfirmed by a service that drained (close 1001: it was not stored) is sent
// again on a new stream, and its future resolves from there.
func TestProducerResendsAfterDrain(t *testing.T) {
	p, f := fakeProducer(t, "drain")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m, err := p.Send(ctx, SendMessage{Body: "a"}).Wait(ctx)
	if err != nil || m.MessageID != "id-a" {
		t.Fatalf("after the drain: %+v, %v", m, err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conns != 2 || len(f.seen[0]) != 1 || len(f.seen[1]) != 1 {
		t.Fatalf("connections %d, frames %v; want the batch on the first and again on the second", f.conns, f.seen)
	}
}

// A batch left unconfirmed by a broken connection resolves with ErrUnconfirmed (it may have
// been stored), is not sent again, and later sends go on a new stream.
func TestProducerUnconfirmed(t *testing.T) {
	p, f := fakeProducer(t, "break")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := p.Send(ctx, SendMessage{Body: "a"}).Wait(ctx); !errors.Is(err, ErrUnconfirmed) {
		t.Fatalf("after the break: %v, want ErrUnconfirmed", err)
	}
	if m, err := p.Send(ctx, SendMessage{Body: "b"}).Wait(ctx); err != nil || m.MessageID != "id-b" {
		t.Fatalf("the next send: %+v, %v", m, err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conns != 2 || fmt.Sprint(f.seen) != "[[a] [b]]" {
		t.Fatalf("connections %d, frames %v; want a on the first, b alone on the second", f.conns, f.seen)
	}
}

// Flush waits for the sends made before it; Close with an ended context resolves what is
// left with its error.
func TestProducerCloseGivesUp(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		for { // reads, never confirms
			if _, _, err := conn.Read(context.Background()); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	c, err := New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	p := c.NewProducer("q", ProducerOptions{})
	f := p.Send(context.Background(), SendMessage{Body: "never confirmed"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Flush(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("flush: %v", err)
	}
	if err := p.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("close: %v", err)
	}
	if _, err := f.Result(); err == nil {
		t.Fatal("the unconfirmed send resolved without an error")
	}
}

// The confirmation reader without reflection reads what encoding/json reads, and leaves
// anything else (failures, errors, the stream's error) to it.
func TestSendConfirmationDecode(t *testing.T) {
	for _, c := range []struct {
		in   string
		fast bool
	}{
		{`{"seq":3,"failed":[],"messages":[{"index":0,"messageId":"a","duplicate":false,"merged":true},{"index":1,"messageId":"b","duplicate":true,"merged":false,"sequenceNumber":"7"}]}`, true},
		{`{"seq":0,"failed":[],"messages":[]}`, true},
		{`{"seq":4,"failed":[{"index":0,"error":{"code":"invalid_argument","message":"m","details":{"field":"messages[0].body"}}}],"messages":[]}`, false},
		{`{"seq":5,"error":{"code":"rate_limited","message":"slow"},"retryAfterSeconds":2}`, false},
		{`{"error":{"code":"idle","message":"bye"}}`, false},
		{`{"seq":6,"seq":7,"failed":[],"messages":[]}`, false},
	} {
		var fast sendConfirmation
		if got := fast.decodeFast([]byte(c.in)); got != c.fast {
			t.Fatalf("%s: fast %v, want %v", c.in, got, c.fast)
		}
		var full sendConfirmation
		if !full.decode([]byte(c.in)) {
			t.Fatalf("%s: not decoded", c.in)
		}
		if !c.fast {
			continue
		}
		var w struct {
			Seq      uint64        `json:"seq"`
			Messages []SentMessage `json:"messages"`
		}
		if err := json.Unmarshal([]byte(c.in), &w); err != nil {
			t.Fatal(err)
		}
		if *fast.seq != w.Seq || fmt.Sprint(fast.result.Messages) != fmt.Sprint(w.Messages) {
			t.Fatalf("%s: fast %d %v, encoding/json %d %v", c.in, *fast.seq, fast.result.Messages, w.Seq, w.Messages)
		}
	}
}

// FuzzDecodeBinaryBatch: any bytes decode to messages or to an error, never a panic, and a
// frame that decodes has no bytes left over.
func FuzzDecodeBinaryBatch(f *testing.F) {
	f.Add([]byte{0x01, 0x00})
	f.Add([]byte{0x01, 0x01, 1, 'a', 1, 'b', 0, 0, 0, 0, 0, 0, 1, 0xff, 0, 0})
	f.Add([]byte{0x01, 0x01, 1, 'a', 1, 'b', 1, 'h', 24, '2', '0', '2', '6', '-', '0', '1', '-', '0', '1', 'T', '0', '0', ':', '0', '0', ':', '0', '0', '.', '0', '0', '0', 'Z', 0, 1, 'g', 1, '1', 0, 2, 0, 1, 1, 'k', 1, 'v', 3, 0, 0, 0, 1, 't', 7})
	f.Add([]byte{0x02})
	f.Fuzz(func(t *testing.T, b []byte) {
		msgs, err := decodeBinaryBatch(b)
		if err == nil && len(msgs) > len(b) {
			t.Fatalf("%d messages from %d bytes", len(msgs), len(b))
		}
	})
}

// A Send beyond MaxPending waits for room, and its context's end (while it waits) resolves its
// future with the context's error; the sends before it stay pending.
func TestProducerSendWaitsForRoom(t *testing.T) {
	read := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		for { // reads, never confirms
			if _, _, err := conn.Read(context.Background()); err != nil {
				return
			}
			read <- struct{}{}
		}
	}))
	defer srv.Close()
	c, err := New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	p := c.NewProducer("q", ProducerOptions{Window: 1, MaxBatch: 1, MaxPending: 1})
	first := p.Send(context.Background(), SendMessage{Body: "in flight"})
	<-read // the window is full: the next send stays pending
	second := p.Send(context.Background(), SendMessage{Body: "pending"})
	inner, cancel := context.WithCancel(context.Background())
	ctx := &watchedCtx{Context: inner, watched: make(chan struct{})}
	third := make(chan *SendFuture, 1)
	go func() { third <- p.Send(ctx, SendMessage{Body: "no room"}) }()
	<-ctx.watched // the send registered for the context's end: it is about to wait for room
	cancel()
	if _, err := (<-third).Result(); !errors.Is(err, context.Canceled) {
		t.Fatalf("the send beyond MaxPending: %v, want context.Canceled", err)
	}
	for _, f := range []*SendFuture{first, second} {
		select {
		case <-f.Done():
			t.Fatal("a send before it resolved")
		default:
		}
	}
	gone, stop := context.WithCancel(context.Background())
	stop()
	_ = p.Close(gone)
}

// watchedCtx is a context that says (watched closed) when something first asks for its Done.
type watchedCtx struct {
	context.Context
	once    sync.Once
	watched chan struct{}
}

func (c *watchedCtx) Done() <-chan struct{} {
	c.once.Do(func() { close(c.watched) })
	return c.Context.Done()
}
