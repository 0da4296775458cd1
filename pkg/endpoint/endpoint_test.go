package endpoint

import (
	"net/netip"
	"strings"
	"testing"
)

func TestCheckAddr(t *testing.T) {
	t.Parallel()
	blocked := []string{
		"127.0.0.1", "127.1.2.3", "0.0.0.0", "0.1.2.3", "10.0.0.1", "10.255.255.255", "172.16.0.1", "172.31.255.254",
		"192.168.1.1", "169.254.169.254", "169.254.0.1", "100.64.0.1", "100.127.255.254", "100.100.100.200",
		"192.0.0.192", "192.0.2.1", "198.18.0.1", "198.51.100.7", "203.0.113.9", "224.0.0.1", "239.255.255.250",
		"240.0.0.1", "255.255.255.255", "168.63.129.16",
		"::", "::1", "fe80::1", "fe80::1%eth0", "fc00::1", "fd00::1", "fd00:ec2::254", "fec0::1", "ff02::1",
		"::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:8.8.8.8", "::127.0.0.1", "64:ff9b::7f00:1", "64:ff9b::808:808",
		"64:ff9b:1::1", "2002:7f00:1::1", "2001::1", "2001:0::1", "2001:db8::1", "100::1",
	}
	for _, s := range blocked {
		if err := CheckAddr(netip.MustParseAddr(s)); err == nil {
			t.Errorf("%s: allowed, want refused", s)
		}
	}
	allowed := []string{"8.8.8.8", "1.1.1.1", "93.184.216.34", "100.63.255.255", "100.128.0.1", "172.32.0.1", "11.0.0.1",
		"2606:4700:4700::1111", "2a00:1450:4001:80b::200e", "2001:4860:4860::8888"}
	for _, s := range allowed {
		if err := CheckAddr(netip.MustParseAddr(s)); err != nil {
			t.Errorf("%s: refused (%v), want allowed", s, err)
		}
	}
	if err := CheckAddr(netip.Addr{}); err == nil {
		t.Error("the zero address is allowed")
	}
}

func TestDialControl(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		network, addr string
		ok            bool
	}{
		{"tcp4", "127.0.0.1:443", false}, {"tcp6", "[::1]:443", false}, {"tcp4", "169.254.169.254:80", false},
		{"tcp6", "[::ffff:127.0.0.1]:443", false}, {"tcp4", "8.8.8.8:443", true}, {"tcp6", "[2606:4700:4700::1111]:8443", true},
		{"udp", "8.8.8.8:53", false}, {"tcp", "not-an-address", false},
	} {
		err := DialControl(c.network, c.addr, nil)
		if (err == nil) != c.ok {
			t.Errorf("%s %s: err %v, want ok=%v", c.network, c.addr, err, c.ok)
		}
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		url     string
		private bool
		ok      bool
	}{
		{"https://example.com/hook", false, true},
		{"https://example.com:8443/hook?x=1", false, true},
		{"https://8.8.8.8/hook", false, true},
		{"http://example.com/hook", false, false},
		{"http://example.com/hook", true, true},
		{"ftp://example.com/", false, false},
		{"https://127.0.0.1/", false, false},
		{"https://[::1]/", false, false},
		{"https://10.0.0.1/", false, false},
		{"https://169.254.169.254/latest", false, false},
		{"https://[::ffff:127.0.0.1]/", false, false},
		{"https://localhost/", false, false},
		{"https://metadata.google.internal/", false, false},
		{"https://2130706433/", false, false},
		{"https://user:pw@example.com/", false, false},
		{"https://example.com/#frag", false, false},
		{"https:///nohost", false, false},
		{"/relative", false, false},
		{"https://example.com:0/", false, false},
		{"https://example.com:99999/", false, false},
		{"http://127.0.0.1:8080/", true, true},
		{"https://" + strings.Repeat("a", 2050) + ".com/", false, false},
	} {
		err := Validate(c.url, c.private)
		if (err == nil) != c.ok {
			t.Errorf("%q (private %v): err %v, want ok=%v", c.url, c.private, err, c.ok)
		}
	}
}

// TestSignatureVerifiesWithReferenceLibrary checks our signatures with the Standard Webhooks
// reference verifier, for each secret of a rotation.
