package api

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/auth"
	"github.com/queueshq/queues/pkg/receipt"
	"github.com/queueshq/queues/pkg/signingkeys"
)

// bareServer is an API with no storage behind it: enough for answers decided before any
// storage call (routing, authentication, body limits).
func bareServer(t *testing.T) (*Server, *prometheus.Registry) {
	t.Helper()
	ring, err := signingkeys.Generate("t")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	return New(Config{Auth: auth.New(ring, "op-secret", time.Now), Receipts: receipt.NewSigner(ring), Registry: reg}), reg
}

func seriesCount(t *testing.T, g prometheus.Gatherer, name string) int {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return len(mf.GetMetric())
		}
	}
	return 0
}

// Invented method tokens (answered 404/405) must not each mint a metric series.
func TestMethodLabelBounded(t *testing.T) {
	s, reg := bareServer(t)
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	for i := range 300 {
		for _, path := range []string{"/v1/queues", "/healthz", "/no-such-route"} {
			req, _ := http.NewRequest(fmt.Sprintf("INVENTED%d", i), srv.URL+path, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
	}
	for _, name := range []string{"queues_http_requests_total", "queues_http_request_duration_seconds"} {
		if n := seriesCount(t, reg, name); n == 0 || n > 10 {
			t.Fatalf("%s has %d series after 900 requests with 300 invented methods; want 1..10", name, n)
		}
	}
}

// countingBody reports each Read call, so the test knows the handler has gone past whatever it
// reserves before reading (the second Read blocks: one byte was sent).
type countingBody struct {
	io.ReadCloser
	once  sync.Once
	reads int
	ready func()
}

func (b *countingBody) Read(p []byte) (int, error) {
	b.reads++
	if b.reads == 2 {
		b.once.Do(b.ready)
	}
	return b.ReadCloser.Read(p)
}

type drainable struct{ h http.Handler }

func (d drainable) Handler() http.Handler { return d.h }
func (d drainable) Drain()                {}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// serveOn serves h with Serve (the production http.Server settings) until the test ends.
func serveOn(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, ln, drainable{h}, time.Second, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

// Headers over MaxHeaderBytes are answered 431 by the server before any handler runs.
func TestHeaderCap(t *testing.T) {
	s, _ := bareServer(t)
	addr := serveOn(t, s.Handler())
	get := func(size int) int {
		req, _ := http.NewRequest("GET", "http://"+addr+"/healthz", nil)
		req.Header.Set("X-Pad", strings.Repeat("a", size))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := get(32 << 10); got != http.StatusOK {
		t.Fatalf("32 KiB header: %d; want 200", got)
	}
	if got := get(100 << 10); got != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("100 KiB header: %d; want 431", got)
	}
}

// Connections that announce a 3 MiB body and send one byte hold no more than a small buffer
// each: the body is read as it arrives, not reserved from Content-Length.
func TestAnnouncedBodyNotReserved(t *testing.T) {
	const conns = 40
	s, _ := bareServer(t)
	var wg sync.WaitGroup
	wg.Add(conns)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = &countingBody{ReadCloser: r.Body, ready: wg.Done}
		s.Handler().ServeHTTP(w, r)
	})
	addr := serveOn(t, h)
	before := heapInUse()
	var cs []net.Conn
	for range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
		fmt.Fprintf(c, "POST /v1/receipts/ack HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", MaxRequestBytes)
	}
	wg.Wait() // every handler is blocked reading its body
	growth := int64(heapInUse()) - int64(before)
	for _, c := range cs {
		c.Close()
	}
	t.Logf("%d connections announcing %d bytes: heap grew %d KiB", conns, MaxRequestBytes, growth>>10)
	if limit := int64(conns * 128 << 10); growth > limit {
		t.Fatalf("heap grew %d KiB for %d idle bodies; want under %d KiB", growth>>10, conns, limit>>10)
	}
}

func TestReadUpTo(t *testing.T) {
	for _, n := range []int{0, 1, 511, 512, initialBodyBuffer, initialBodyBuffer + 1, 1 << 20} {
		body := bytes.Repeat([]byte("a"), n)
		for _, announced := range []int64{-1, int64(n)} {
			got, err := readUpTo(bytes.NewReader(body), announced)
			if err != nil || !bytes.Equal(got, body) {
				t.Fatalf("readUpTo(%d bytes, announced %d) = %d bytes, %v", n, announced, len(got), err)
			}
		}
	}
	if _, err := readUpTo(strings.NewReader("short"), 10); err == nil {
		t.Fatal("a body shorter than announced was accepted")
	}
}

// Batch results report one entry's failure with bodyOf: internal and unavailable entries get
// the fixed messages there too, never the cause's text.
func TestBodyOfHidesCauses(t *testing.T) {
	for _, c := range []apierr.Code{apierr.Internal, apierr.Unavailable} {
		b := bodyOf(&apierr.Error{Code: c, Message: "ack: redis unavailable: dial tcp 10.1.2.3:6379: connection refused"})
		if strings.Contains(b.Message, "10.1.2.3") || strings.Contains(b.Message, "dial") {
			t.Errorf("%s: %q", c, b.Message)
		}
	}
	if b := bodyOf(apierr.Invalid("x", "must be an integer")); b.Message != "must be an integer" {
		t.Errorf("client errors keep their message: %q", b.Message)
	}
}
