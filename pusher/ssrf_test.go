package pusher

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/queueshq/queues/pkg/endpoint"
)

// testDNS is a DNS server on loopback UDP answering every A query from a script: the i-th A
// query gets answers[i] (the last entry repeats). AAAA queries get no records.
type testDNS struct {
	mu      sync.Mutex
	answers [][]string
	queries int
}

// startDNS serves the script and returns a resolver that asks only it.
func startDNS(t *testing.T, answers ...[]string) (*net.Resolver, *testDNS) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	d := &testDNS{answers: answers}
	go d.serve(pc)
	addr := pc.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "udp", addr)
	}}, d
}

func (d *testDNS) serve(pc net.PacketConn) {
	buf := make([]byte, 1500)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		var p dnsmessage.Parser
		h, err := p.Start(buf[:n])
		if err != nil {
			continue
		}
		q, err := p.Question()
		if err != nil {
			continue
		}
		b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true})
		_ = b.StartQuestions()
		_ = b.Question(q)
		_ = b.StartAnswers()
		if q.Type == dnsmessage.TypeA {
			d.mu.Lock()
			ans := d.answers[min(d.queries, len(d.answers)-1)]
			d.queries++
			d.mu.Unlock()
			for _, a := range ans {
				ip := netip.MustParseAddr(a).As4()
				_ = b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 0}, dnsmessage.AResource{A: ip})
			}
		}
		out, err := b.Finish()
		if err == nil {
			_, _ = pc.WriteTo(out, from)
		}
	}
}

// errStopped ends a dial the guard allowed, so the test never sends a packet off this machine.
var errStopped = errors.New("test: stopped before connecting")

// recordingDialer is the pushes' dialer whose allowed connections are stopped and whose
// decisions are recorded.
func recordingDialer(o ClientOptions) (*net.Dialer, func() []string) {
	d := newDialer(o)
	inner := d.Control
	var mu sync.Mutex
	var seen []string
	d.Control = func(network, address string, c syscall.RawConn) error {
		var err error
		if inner != nil {
			err = inner(network, address, c)
		}
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%s allowed=%v", address, err == nil))
		mu.Unlock()
		if err != nil {
			return err
		}
		return errStopped
	}
	return d, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), seen...) }
}

// DNS rebinding: the name answers a public address, then loopback, then a public and a
// private address together. Each connection is checked on the address it dials.
func TestRebindingCheckedOnEveryConnection(t *testing.T) {
	res, _ := startDNS(t, []string{"93.184.216.34"}, []string{"127.0.0.1"}, []string{"93.184.216.34", "10.0.0.5"})
	d, seen := recordingDialer(ClientOptions{Resolver: res})
	ctx := t.Context()
	if _, err := d.DialContext(ctx, "tcp4", "rebind.test:443"); !errors.Is(err, errStopped) {
		t.Fatalf("first (public) answer: %v; want allowed", err)
	}
	if _, err := d.DialContext(ctx, "tcp4", "rebind.test:443"); !errors.Is(err, endpoint.ErrBlockedAddress) {
		t.Fatalf("rebound to 127.0.0.1: %v; want ErrBlockedAddress", err)
	}
	_, _ = d.DialContext(ctx, "tcp4", "rebind.test:443")
	got := strings.Join(seen(), "; ")
	for _, want := range []string{"93.184.216.34:443 allowed=true", "127.0.0.1:443 allowed=false", "10.0.0.5:443 allowed=false"} {
		if !strings.Contains(got, want) {
			t.Errorf("decisions %q lack %q", got, want)
		}
	}
}

// Numeric host forms a resolver may turn into loopback never get a connection: Go's resolver
// refuses some outright (no such host), and whatever an answer says is checked by the guard.
// ValidateEndpoint refuses them all up front; this is the connect-time check behind it.
func TestNumericHostFormsCheckedAtConnect(t *testing.T) {
	res, _ := startDNS(t, []string{"127.0.0.1"})
	d, _ := recordingDialer(ClientOptions{Resolver: res})
	for _, host := range []string{"0x7f.1", "0177.0.0.1", "127.1", "2130706433", "localhost.rebind.test"} {
		_, err := d.DialContext(t.Context(), "tcp4", net.JoinHostPort(host, "443"))
		var dnsErr *net.DNSError
		if !errors.Is(err, endpoint.ErrBlockedAddress) && !(errors.As(err, &dnsErr) && dnsErr.IsNotFound) {
			t.Errorf("%s: %v; want ErrBlockedAddress or no such host", host, err)
		}
		if err := endpoint.Validate("https://"+host+"/hook", false); err == nil && !strings.HasSuffix(host, ".test") {
			t.Errorf("ValidateEndpoint accepts https://%s/", host)
		}
	}
}

// A public-looking name whose A record is loopback: the push client refuses to connect, and
// the endpoint behind it never sees a request.
func TestClientRefusesNameResolvingPrivate(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	res, _ := startDNS(t, []string{"127.0.0.1"})
	hc := NewHTTPClient(ClientOptions{Resolver: res})
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	_, err := hc.Post("http://hooks.example-public.test:"+port+"/", "application/json", strings.NewReader("{}"))
	if !errors.Is(err, endpoint.ErrBlockedAddress) || hits.Load() != 0 {
		t.Fatalf("err %v, endpoint hits %d; want ErrBlockedAddress and none", err, hits.Load())
	}
}

// A 30x is an answer, never followed: the redirect target (a private address) gets nothing.
func TestRedirectNotFollowed(t *testing.T) {
	var inner atomic.Int32
	private := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { inner.Add(1) }))
	defer private.Close()
	for _, code := range []int{301, 302, 303, 307, 308} {
		public := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, private.URL+"/latest/meta-data/", code)
		}))
		// Private endpoints are allowed here only so the test can reach its own servers.
		resp, err := NewHTTPClient(ClientOptions{AllowPrivate: true}).Post(public.URL, "application/json", strings.NewReader("{}"))
		public.Close()
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != code {
			t.Errorf("redirect %d: got status %d", code, resp.StatusCode)
		}
	}
	if inner.Load() != 0 {
		t.Fatalf("the redirect target was requested %d times", inner.Load())
	}
}

// HTTPS_PROXY/HTTP_PROXY in the environment are not used: through a proxy the dialled address
// would be the proxy's, and the endpoint's address would escape the check.
func TestProxyEnvironmentIgnored(t *testing.T) {
	// net/http reads the proxy variables once per process, so the exchange below can only catch
	// an environment proxy when it runs first; the transport's setting is checked directly too.
	if tr, ok := NewHTTPClient(ClientOptions{}).Transport.(*http.Transport); !ok || tr.Proxy != nil {
		t.Fatal("the push transport has a Proxy function")
	}
	var proxied, direct atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { proxied.Add(1) }))
	defer proxy.Close()
	endpoint := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { direct.Add(1) }))
	defer endpoint.Close()
	for _, v := range []string{"HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "ALL_PROXY"} {
		t.Setenv(v, proxy.URL)
	}
	t.Setenv("NO_PROXY", "")
	// A name (not loopback) so that an environment proxy would apply to it.
	res, _ := startDNS(t, []string{"127.0.0.1"})
	_, port, _ := net.SplitHostPort(endpoint.Listener.Addr().String())
	resp, err := NewHTTPClient(ClientOptions{AllowPrivate: true, Resolver: res}).Post("http://endpoint.test:"+port+"/", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if proxied.Load() != 0 || direct.Load() != 1 {
		t.Fatalf("proxy saw %d requests, endpoint %d; want 0 and 1", proxied.Load(), direct.Load())
	}
}
