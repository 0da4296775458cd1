package api

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/labstack/echo/v4"
)

// TrustedProxies are the networks of the proxies in front of the API
// (QUEUES_TRUSTED_PROXIES): a request whose TCP peer is in one of them is from the rightmost
// X-Forwarded-For address that is not itself trusted — the client the outermost trusted proxy
// saw. Any other request is from its TCP peer, and its X-Forwarded-For, which the caller
// writes, is ignored. Empty: no proxy is trusted.
type TrustedProxies []netip.Prefix

// ParseTrustedProxies reads a comma-separated list of CIDRs ("10.0.0.0/16, fd00::/8"); a bare
// address is its own /32 or /128. Empty is none.
func ParseTrustedProxies(s string) (TrustedProxies, error) {
	var out TrustedProxies
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			a, aerr := netip.ParseAddr(f)
			if aerr != nil {
				return nil, fmt.Errorf("%q is not a CIDR such as 10.0.0.0/16", f)
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// trusts reports whether a is one of the trusted proxies.
func (tp TrustedProxies) trusts(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range tp {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// clientIP is the API's echo.IPExtractor: the request's source as the type's comment says.
func (tp TrustedProxies) clientIP(r *http.Request) string {
	peer, ok := parseHostAddr(r.RemoteAddr)
	if !ok {
		return r.RemoteAddr
	}
	if !tp.trusts(peer) {
		return peer.String()
	}
	var hops []string
	for _, h := range r.Header.Values(echo.HeaderXForwardedFor) {
		hops = append(hops, strings.Split(h, ",")...)
	}
	src := peer
	for i := len(hops) - 1; i >= 0; i-- {
		a, ok := parseHostAddr(strings.TrimSpace(hops[i]))
		if !ok {
			break // a trusted proxy wrote something else: the last hop known is the source
		}
		src = a
		if !tp.trusts(a) {
			break
		}
	}
	return src.String()
}

// parseHostAddr reads an address with or without a port ("192.0.2.1", "192.0.2.1:80",
// "[2001:db8::1]:80", "2001:db8::1").
func parseHostAddr(s string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().WithZone(""), true
	}
	host, _, err := net.SplitHostPort(s)
	if err != nil {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}

// source is the address a request's forged-handle budget is kept for: the client as the
// trusted proxies show it (clientIP), IPv6 per /64 (one subscriber's allocation).
func source(c echo.Context) netip.Addr {
	a, ok := parseHostAddr(c.RealIP())
	if !ok {
		return netip.Addr{}
	}
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}
