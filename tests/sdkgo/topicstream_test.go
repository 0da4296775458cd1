package sdkgo

import (
	"context"
	"io"
	"iter"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queueshq/queues/sdk/go/client"
)

// cutProxy forwards TCP connections to addr until cut closes every one of them (the
// subscriber's connection dropping under it).
type cutProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newCutProxy(t *testing.T, addr string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", addr)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
	return p
}

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// TestTopicStreamReconnects: TopicStream (on the Redis stack) yields every entry in order,
// and when the connection drops under it, reconnects from its bookmark: no entry skipped,
// none twice — those published while it was cut included. Delta delivery yields patches.
func TestTopicStreamReconnects(t *testing.T) {
	tn := newTenant(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if _, err := tn.c.CreateTopic(ctx, client.CreateTopicInput{Name: "feed"}); err != nil {
		t.Fatal(err)
	}
	publish := func(from, to int) {
		for i := from; i <= to; i++ {
			if _, err := tn.c.Publish(ctx, "feed", client.PublishMessage{Body: strconv.Itoa(i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	publish(1, 5)
	proxy := newCutProxy(t, strings.TrimPrefix(srv.URL, "http://"))
	c, err := client.New("http://"+proxy.ln.Addr().String(), client.WithToken(tn.token(t, client.ScopeAll)))
	if err != nil {
		t.Fatal(err)
	}
	next, stop := iter.Pull2(c.TopicStream(ctx, "feed", client.TopicStreamOptions{From: client.FromEarliest, Window: 2, MaxMessages: 1}))
	defer stop()
	var got []string
	take := func(n int) {
		for range n {
			ev, err, ok := next()
			if !ok || err != nil || ev.Entry == nil {
				t.Fatalf("after %v: %+v, %v, %v", got, ev, err, ok)
			}
			if want := strconv.Itoa(len(got) + 1); ev.Entry.Body != want || ev.Entry.Sequence != uint64(len(got)+1) {
				t.Fatalf("after %v: entry %d %q, want %s", got, ev.Entry.Sequence, ev.Entry.Body, want)
			}
			got = append(got, ev.Entry.Body)
		}
	}
	take(3)
	proxy.cut()
	publish(6, 8)
	take(5)

	if _, err := tn.c.CreateTopic(ctx, client.CreateTopicInput{Name: "state"}); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{`{"a":1,"b":1}`, `{"a":1,"b":2}`} {
		if _, err := tn.c.Publish(ctx, "state", client.PublishMessage{Body: b, Key: "k"}); err != nil {
			t.Fatal(err)
		}
	}
	var bodies []string
	for ev, err := range c.TopicStream(ctx, "state", client.TopicStreamOptions{From: client.FromEarliest, Delta: true}) {
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, ev.Entry.Body+" "+strconv.FormatBool(ev.Entry.Delta))
		if len(bodies) == 2 {
			break
		}
	}
	if strings.Join(bodies, "; ") != `{"a":1,"b":1} false; {"b":2} true` {
		t.Fatalf("delta stream: %v", bodies)
	}
}
