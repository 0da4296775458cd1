// Package endpoint decides which push endpoints and addresses the pusher may reach: the URL
// check the API runs when a subscription is written and the dial-time address check.
package endpoint

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"

	"code.dny.dev/ssrf"
)

// ErrBlockedAddress is returned (wrapped) when an endpoint resolves to an address the pusher
// refuses to connect to.
var ErrBlockedAddress = errors.New("address not allowed for push endpoints")

// guardian decides which addresses a push may connect to. Its tables are code.dny.dev/ssrf's,
// generated from IANA's special-purpose registries (IPv4: private, loopback, link-local —
// where AWS, GCP, Azure and OpenStack keep 169.254.169.254 —, CGNAT — Alibaba's 100.100.100.200
// —, documentation, benchmarking, multicast, reserved and broadcast; IPv6: everything outside
// global unicast 2000::/3, which takes in loopback, link-local, unique-local — AWS's
// fd00:ec2::254 —, IPv4-mapped and -compatible forms and NAT64, plus 6to4, Teredo and the
// documentation ranges inside it), kept up to date by its maintainer rather than by hand here.
// extraDenied adds what those registries do not list. Any port is allowed (endpoints on 8443
// are common); only TCP is.
var guardian = ssrf.New(
	ssrf.WithAnyPort(),
	ssrf.WithNetworks("tcp", "tcp4", "tcp6"),
	ssrf.WithDeniedV4Prefixes(extraDenied...),
)

// extraDenied are the addresses a push must not reach that IANA's registries leave public.
var extraDenied = []netip.Prefix{
	netip.MustParsePrefix("168.63.129.16/32"), // Azure's host endpoint (wireserver: DHCP, health, VM agent)
}

// CheckAddr reports whether a push may connect to ip: nil for a public unicast address, an
// error wrapping ErrBlockedAddress otherwise.
func CheckAddr(ip netip.Addr) error {
	if !ip.IsValid() {
		return fmt.Errorf("%w: invalid address", ErrBlockedAddress)
	}
	if err := guardian.SafeAddr(ip.WithZone("")); err != nil {
		return fmt.Errorf("%w: %v", ErrBlockedAddress, err)
	}
	return nil
}

// DialControl is the net.Dialer Control hook: it runs for every connection attempt on the
// address actually dialled, after DNS resolution, so DNS rebinding cannot route around it.
func DialControl(network, address string, c syscall.RawConn) error {
	if err := guardian.Safe(network, address, c); err != nil {
		return fmt.Errorf("%w: %v", ErrBlockedAddress, err)
	}
	return nil
}

// Validate checks an endpoint URL when a subscription is created or changed: https
// (http too when allowPrivate), a host, no user info or fragment, and — unless allowPrivate —
// no literal address or well-known local name that CheckAddr would refuse. The check that
// counts is the dialer's, at connect time; this one gives the user an early, precise answer.
func Validate(raw string, allowPrivate bool) error {
	if len(raw) > 2048 {
		return errors.New("must be at most 2048 characters")
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Opaque != "" {
		return errors.New("must be an absolute URL")
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && allowPrivate:
	case u.Scheme == "http":
		return errors.New("must use https (this server does not allow plain http endpoints)")
	default:
		return fmt.Errorf("must use https, not %q", u.Scheme)
	}
	if u.User != nil {
		return errors.New("must not contain user information")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return errors.New("must not contain a fragment")
	}
	host := u.Hostname()
	if host == "" {
		return errors.New("must name a host")
	}
	if p := u.Port(); p != "" {
		if _, err := net.LookupPort("tcp", p); err != nil || p == "0" {
			return fmt.Errorf("has an invalid port %q", p)
		}
	}
	if allowPrivate {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if err := CheckAddr(ip); err != nil {
			return errors.New("must not be a loopback, private, link-local or otherwise non-public address")
		}
		return nil
	}
	lh := strings.ToLower(strings.TrimSuffix(host, "."))
	if numericHost(lh) {
		// 0x7f.1, 0177.0.0.1, 127.1, 2130706433: inet_aton's forms, which some resolvers and
		// URL parsers turn into an address. No top-level domain is numeric (WHATWG URL: a host
		// whose last label is a number is an IPv4 address).
		return errors.New("must not be an IP address in a non-standard (octal, hex or shortened) form")
	}
	if lh == "localhost" || strings.HasSuffix(lh, ".localhost") || strings.HasSuffix(lh, ".internal") ||
		strings.HasSuffix(lh, ".local") || !strings.Contains(lh, ".") {
		return errors.New("must name a public host (not localhost, a single-label or an .internal/.local name)")
	}
	return nil
}

// numericHost reports whether the last label of host is a number (decimal, 0x hex or octal):
// then it is an IPv4 address in one of inet_aton's forms, not a name.
func numericHost(host string) bool {
	labels := strings.Split(host, ".")
	last := labels[len(labels)-1]
	if h, ok := strings.CutPrefix(last, "0x"); ok {
		last = h
		if last == "" {
			return true
		}
		return strings.Trim(last, "0123456789abcdef") == ""
	}
	return last != "" && strings.Trim(last, "0123456789") == ""
}
