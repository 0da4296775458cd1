package api

import (
	"net/http/httptest"
	"net/netip"
	"testing"
)

// FuzzClientIP: whatever a caller writes into X-Forwarded-For (and whatever the operator
// writes into QUEUES_TRUSTED_PROXIES), the source is an address — never a panic — and it is
// the TCP peer unless that peer is a trusted proxy.
func FuzzClientIP(f *testing.F) {
	f.Add("10.0.0.0/16", "10.0.0.7:4711", "203.0.113.9, 10.0.1.2")
	f.Add("", "192.0.2.1:80", "198.51.100.1")
	f.Add("fd00::/8, 10.0.0.1", "[fd00::1]:443", "2001:db8::1, garbage, [2001:db8::2]:80")
	f.Add("10.0.0.0/8", "10.1.1.1:1", ",,, ,")
	f.Fuzz(func(t *testing.T, proxies, peer, xff string) {
		tp, err := ParseTrustedProxies(proxies)
		if err != nil {
			return
		}
		r := httptest.NewRequest("GET", "/v1/receipts/ack", nil)
		r.RemoteAddr = peer
		r.Header.Set("X-Forwarded-For", xff)
		got := tp.clientIP(r)
		p, ok := parseHostAddr(peer)
		if !ok {
			if got != peer {
				t.Fatalf("an unreadable peer %q gave source %q", peer, got)
			}
			return
		}
		a, err := netip.ParseAddr(got)
		if err != nil {
			t.Fatalf("source %q is not an address (peer %q, X-Forwarded-For %q)", got, peer, xff)
		}
		if !tp.trusts(p) && a != p {
			t.Fatalf("an untrusted peer %s was taken for %s from X-Forwarded-For %q", p, a, xff)
		}
	})
}
