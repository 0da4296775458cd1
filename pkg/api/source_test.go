package api

import (
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// A request's source is its TCP peer unless that peer is a trusted proxy; then it is the
// rightmost X-Forwarded-For address not itself trusted.
func TestTrustedProxiesSource(t *testing.T) {
	tp, err := ParseTrustedProxies(" 10.0.0.0/16, fd00::/8,192.0.2.7 ")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, peer string
		xff        []string // X-Forwarded-For headers, in order
		trusted    TrustedProxies
		want       string
	}{
		{"no proxies: the peer", "198.51.100.7:1", []string{"203.0.113.1"}, nil, "198.51.100.7"},
		{"untrusted peer: XFF ignored", "198.51.100.7:1", []string{"203.0.113.1"}, tp, "198.51.100.7"},
		{"trusted peer: the client it saw", "10.0.3.4:1", []string{"203.0.113.1"}, tp, "203.0.113.1"},
		{"spoofed left entries are ignored", "10.0.3.4:1", []string{"1.1.1.1, 203.0.113.1"}, tp, "203.0.113.1"},
		{"trusted hops are skipped", "10.0.3.4:1", []string{"1.1.1.1, 203.0.113.1, 10.0.9.9"}, tp, "203.0.113.1"},
		{"headers joined in order", "10.0.3.4:1", []string{"1.1.1.1", "203.0.113.2, 192.0.2.7"}, tp, "203.0.113.2"},
		{"bare address trusted as /32", "192.0.2.7:1", []string{"203.0.113.3"}, tp, "203.0.113.3"},
		{"neighbour of a bare address is not", "192.0.2.8:1", []string{"203.0.113.3"}, tp, "192.0.2.8"},
		{"trusted peer, no XFF: the peer", "10.0.3.4:1", nil, tp, "10.0.3.4"},
		{"all hops trusted: the leftmost", "10.0.3.4:1", []string{"10.0.1.1, 10.0.2.2"}, tp, "10.0.1.1"},
		{"garbage after a trusted hop: the last known", "10.0.3.4:1", []string{"203.0.113.1, garbage"}, tp, "10.0.3.4"},
		{"XFF entry with a port", "10.0.3.4:1", []string{"203.0.113.4:5555"}, tp, "203.0.113.4"},
		{"IPv6 proxy and client, per /64", "[fd00::1]:1", []string{"2001:db8:1:2::9"}, tp, "2001:db8:1:2::"},
		{"IPv4-mapped peer is trusted", "[::ffff:10.0.3.4]:1", []string{"203.0.113.5"}, tp, "203.0.113.5"},
		{"IPv4-mapped XFF entry", "10.0.3.4:1", []string{"::ffff:203.0.113.6"}, tp, "203.0.113.6"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := New(Config{Registry: prometheus.NewRegistry(), TrustedProxies: c.trusted})
			req := httptest.NewRequest("POST", "/v1/receipts/ack", nil)
			req.RemoteAddr = c.peer
			for _, h := range c.xff {
				req.Header.Add("X-Forwarded-For", h)
			}
			if got := source(s.e.NewContext(req, httptest.NewRecorder())); got.String() != c.want {
				t.Fatalf("source = %v; want %s", got, c.want)
			}
		})
	}
	for _, bad := range []string{"10.0.0.0/33", "ten", "10.0.0.0/16,,x"} {
		if _, err := ParseTrustedProxies(bad); err == nil {
			t.Errorf("ParseTrustedProxies(%q) accepted", bad)
		}
	}
}
