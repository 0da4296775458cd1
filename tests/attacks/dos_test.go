package attacks

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/api"
	"github.com/queueshq/queues/services/queues/stack"
)

// rssKiB is this process's resident set (the server runs in it).
func rssKiB(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	t.Skip("no VmRSS")
	return 0
}

func heapKiB() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc >> 10)
}

// waitGoroutines waits until the goroutine count is at most n, or fails after 20 s.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines remain; want at most %d", runtime.NumGoroutine(), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// bodyWatch counts, per request, the reads of its body, and reports once a request has asked
// for its second chunk: it is then past whatever it reserves before reading.
type bodyWatch struct {
	io.ReadCloser
	reads int
	once  sync.Once
	wg    *sync.WaitGroup
}

func (b *bodyWatch) Read(p []byte) (int, error) {
	if b.reads++; b.reads == 2 {
		b.once.Do(b.wg.Done)
	}
	return b.ReadCloser.Read(p)
}

// The flood: two waves of 400 connections announce a 3 MiB body to the
// credential-free /v1/receipts/ack and send one byte. The server may hold a small buffer per
// connection, not the announced size: heap and RSS growth are bounded (the second wave is the
// one RSS shows — the first one's untouched fresh pages are not resident, but reused ones
// are), and every goroutine ends when the connections go.
func TestAnnouncedBodiesFlood(t *testing.T) {
	const conns = 400
	var wg sync.WaitGroup
	base, _, stop, err := e.serveWrapped(stack.Options{}, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/receipts/ack" {
				r.Body = &bodyWatch{ReadCloser: r.Body, wg: &wg}
			}
			h.ServeHTTP(w, r)
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	goroutines := runtime.NumGoroutine()
	heap0, rss0 := heapKiB(), rssKiB(t)
	addr := strings.TrimPrefix(base, "http://")
	for wave := 1; wave <= 2; wave++ {
		wg.Add(conns)
		var cs []net.Conn
		for range conns {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			cs = append(cs, c)
			fmt.Fprintf(c, "POST /v1/receipts/ack HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", api.MaxRequestBytes)
		}
		wg.Wait()
		heap, rss := heapKiB()-heap0, rssKiB(t)-rss0
		t.Logf("wave %d: %d connections announcing %d bytes each: heap %+d KiB, RSS %+d KiB, goroutines %d -> %d",
			wave, conns, api.MaxRequestBytes, heap, rss, goroutines, runtime.NumGoroutine())
		// The service still answers others meanwhile.
		callTo(t, base, "GET", "/healthz", "", nil, nil).is(t, 200, "", "")
		for _, c := range cs {
			c.Close()
		}
		if heap > 48<<10 || rss > 128<<10 {
			t.Fatalf("heap grew %d KiB, RSS %d KiB for %d idle bodies; want under 48 MiB and 128 MiB", heap, rss, conns)
		}
		// A leak here is one goroutine per connection (hundreds); the service's own
		// background work and the keep-alive of the /healthz call above may add a few, so
		// the bound is a tenth of the wave, not an exact count.
		waitGoroutines(t, goroutines+conns/10)
	}
}

// X35: slowloris. 200 connections trickle a request header one byte per 100 ms and never end
// it. Each is closed at the 5 s header deadline, while other clients are served; afterwards no
// goroutine is left.
func TestSlowloris(t *testing.T) {
	const conns = 200
	goroutines := runtime.NumGoroutine()
	addr := strings.TrimPrefix(e.base, "http://")
	stopTrickle := make(chan struct{})
	defer close(stopTrickle)
	closed := make(chan time.Duration, conns)
	start := time.Now()
	for range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			defer c.Close()
			_, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stopTrickle:
					return
				case <-tick.C:
					if _, err := c.Write([]byte("a")); err != nil {
						closed <- time.Since(start)
						return
					}
				}
			}
		}()
		go func() {
			// The server closing the connection ends this read.
			_, _ = io.Copy(io.Discard, bufio.NewReader(c))
		}()
	}
	callTo(t, e.base, "GET", "/healthz", "", nil, nil).is(t, 200, "", "")
	var last time.Duration
	for range conns {
		select {
		case d := <-closed:
			last = max(last, d)
		case <-time.After(30 * time.Second):
			t.Fatal("slow connections still open after 30 s; want closed at the 5 s header deadline")
		}
	}
	t.Logf("%d slow connections: all closed by the server, the last after %v", conns, last.Round(100*time.Millisecond))
	waitGoroutines(t, goroutines+10)
}

// X36, X37: a 100 KiB header is 431; a body over 3 MiB is 413 payload_too_large whether it
// announces its length or is chunked; more than 10 messages is 400.
func TestOversizedRequests(t *testing.T) {
	_, tok := project(t)
	call(t, "POST", "/v1/queues", tok, map[string]any{"name": "x37"}).is(t, 201, "", "")
	big := callTo(t, e.base, "GET", "/healthz", "", nil, http.Header{"X-Pad": {strings.Repeat("p", 100<<10)}})
	if big.status != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("100 KiB header: %d; want 431", big.status)
	}
	body := `{"messages":[{"body":"` + strings.Repeat("a", api.MaxRequestBytes) + `"}]}`
	call(t, "POST", "/v1/queues/x37/messages", tok, body).is(t, 413, "payload_too_large", "")
	// Chunked: no Content-Length, so only the reader's cap stops it.
	req, _ := http.NewRequest("POST", e.base+"/v1/queues/x37/messages", io.MultiReader(strings.NewReader(body)))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = -1
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Fatalf("chunked 3 MiB body: %d; want 413", resp.StatusCode)
	}
	msgs := make([]any, 11)
	for i := range msgs {
		msgs[i] = map[string]any{"body": "x"}
	}
	call(t, "POST", "/v1/queues/x37/messages", tok, map[string]any{"messages": msgs}).is(t, 400, "invalid_argument", "messages")
	if c := call(t, "GET", "/v1/queues/x37", tok, nil).body["counts"].(map[string]any); c["visible"] != float64(0) {
		t.Errorf("a refused send stored messages: %v", c)
	}
}

// Invented method tokens do not grow the metrics (the issue measured 5,700 series from 300
// requests): series stay bounded, and the admin listener serves them with the Go and process
// collectors while the public port serves neither metrics nor pprof.
func TestMetricSeriesBounded(t *testing.T) {
	series := func() (total int, text string) {
		a := callTo(t, e.admin, "GET", "/metrics", "", nil, nil)
		a.is(t, 200, "", "")
		for _, line := range strings.Split(string(a.raw), "\n") {
			if strings.HasPrefix(line, "queues_http_requests_total{") {
				total++
			}
		}
		return total, string(a.raw)
	}
	before, _ := series()
	for i := range 300 {
		for _, path := range []string{"/v1/queues", "/v1/receipts/ack", "/nowhere"} {
			req, _ := http.NewRequest(fmt.Sprintf("M%03dX", i), e.base+path, nil)
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
	}
	after, text := series()
	t.Logf("queues_http_requests_total series: %d before 900 requests with 300 invented methods, %d after", before, after)
	if after-before > 6 || strings.Contains(text, `method="M0`) {
		t.Fatalf("series grew from %d to %d", before, after)
	}
	for _, want := range []string{"go_goroutines", "process_resident_memory_bytes", `method="other"`} {
		if !strings.Contains(text, want) {
			t.Errorf("admin /metrics lacks %s", want)
		}
	}
	callTo(t, e.admin, "GET", "/debug/pprof/", "", nil, nil).is(t, 200, "", "")
	for _, path := range []string{"/metrics", "/debug/pprof/", "/debug/pprof/heap"} {
		call(t, "GET", path, operator, nil).is(t, 404, "not_found", "")
	}
}
