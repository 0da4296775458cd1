package pusher

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
)

// ErrBlockedAddress is returned (wrapped) when an endpoint resolves to an address the pusher
// refuses to connect to.
var ErrBlockedAddress = errors.New("address not allowed for push endpoints")

// blockedPrefixes are the ranges a push may never reach unless private endpoints are allowed:
// everything that is not the public Internet, and the IPv6 forms that embed an IPv4 address
// (so ::ffff:127.0.0.1 or 64:ff9b::7f00:1 cannot smuggle loopback through).
var blockedPrefixes = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		// IPv4
		"0.0.0.0/8",        // "this network"
		"10.0.0.0/8",       // private
		"100.64.0.0/10",    // carrier-grade NAT (also Alibaba's metadata 100.100.100.200)
		"127.0.0.0/8",      // loopback
		"169.254.0.0/16",   // link-local (AWS/GCP/Azure/OpenStack metadata 169.254.169.254)
		"172.16.0.0/12",    // private
		"192.0.0.0/24",     // IETF protocol assignments (Oracle metadata 192.0.0.192)
		"192.0.2.0/24",     // documentation
		"192.88.99.0/24",   // 6to4 relay anycast
		"192.168.0.0/16",   // private
		"198.18.0.0/15",    // benchmarking
		"198.51.100.0/24",  // documentation
		"203.0.113.0/24",   // documentation
		"224.0.0.0/4",      // multicast
		"240.0.0.0/4",      // reserved, and the broadcast address
		"168.63.129.16/32", // Azure's host endpoint (wireserver)
		// IPv6
		"::/128",         // unspecified
		"::1/128",        // loopback
		"::ffff:0:0/96",  // IPv4-mapped
		"::/96",          // IPv4-compatible (deprecated)
		"64:ff9b::/96",   // NAT64
		"64:ff9b:1::/48", // local-use NAT64
		"100::/64",       // discard
		"2001::/23",      // IETF protocol assignments (Teredo 2001::/32, ORCHID, …)
		"2001:db8::/32",  // documentation
		"2002::/16",      // 6to4 (embeds an IPv4 address)
		"fc00::/7",       // unique-local (AWS's IPv6 metadata fd00:ec2::254)
		"fe80::/10",      // link-local
		"fec0::/10",      // site-local (deprecated)
		"ff00::/8",       // multicast
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// CheckAddr reports whether a push may connect to ip: nil for a public unicast address, an
// error wrapping ErrBlockedAddress otherwise.
func CheckAddr(ip netip.Addr) error {
	if !ip.IsValid() {
		return fmt.Errorf("%w: invalid address", ErrBlockedAddress)
	}
	ip = ip.WithZone("")
	if !ip.IsGlobalUnicast() || ip.IsPrivate() {
		return fmt.Errorf("%w: %s is not a public unicast address", ErrBlockedAddress, ip)
	}
	for _, p := range blockedPrefixes {
		if p.Contains(ip) {
			return fmt.Errorf("%w: %s is in %s", ErrBlockedAddress, ip, p)
		}
	}
	return nil
}

// dialControl is the net.Dialer Control hook: it runs for every connection attempt on the
// address actually dialled, after DNS resolution, so DNS rebinding cannot route around it.
func dialControl(network, address string, _ syscall.RawConn) error {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return fmt.Errorf("%w: network %s", ErrBlockedAddress, network)
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrBlockedAddress, address, err)
	}
	return CheckAddr(ap.Addr())
}

// ValidateEndpoint checks an endpoint URL when a subscription is created or changed: https
// (http too when allowPrivate), a host, no user info or fragment, and — unless allowPrivate —
// no literal address or well-known local name that CheckAddr would refuse. The check that
// counts is the dialer's, at connect time; this one gives the user an early, precise answer.
func ValidateEndpoint(raw string, allowPrivate bool) error {
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
	if lh == "localhost" || strings.HasSuffix(lh, ".localhost") || strings.HasSuffix(lh, ".internal") ||
		strings.HasSuffix(lh, ".local") || !strings.Contains(lh, ".") {
		return errors.New("must name a public host (not localhost, a single-label or an .internal/.local name)")
	}
	return nil
}
