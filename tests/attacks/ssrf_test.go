package attacks

import (
	"strings"
	"testing"
)

// X21, X22, X23, X26: subscription endpoints that name a non-public address — literally, in
// inet_aton's numeric forms, as IPv6 that embeds IPv4, or as a local name — or a scheme other
// than https, or user information, are refused at registration with 400 naming the field, and
// no subscription is created. (The connect-time check behind it, DNS rebinding, redirects and
// proxies: pusher/ssrf_test.go, with a loopback DNS server.)
func TestSubscriptionEndpointsRefused(t *testing.T) {
	_, tok := project(t)
	call(t, "POST", "/v1/queues", tok, map[string]any{"name": "x21"}).is(t, 201, "", "")
	hosts := []string{
		// X21: literal addresses.
		"127.0.0.1", "127.1.2.3", "0.0.0.0", "10.0.0.1", "172.16.0.1", "192.168.1.1", "169.254.169.254",
		"100.64.0.1", "100.100.100.200", "168.63.129.16", "224.0.0.1", "255.255.255.255",
		"[::1]", "[fe80::1]", "[fc00::1]", "[fd00::1]", "[fd00:ec2::254]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]",
		"[64:ff9b::7f00:1]", "[2002:7f00:1::1]", "[2001:0::1]", "[::127.0.0.1]",
		// X22: numeric forms.
		"2130706433", "0x7f.1", "0x7f000001", "0177.0.0.1", "127.1", "017700000001", "0x7f.0.0.1",
		// X23: local names.
		"localhost", "api.localhost", "metadata.google.internal", "printer.local", "intranet",
	}
	for _, h := range hosts {
		call(t, "POST", "/v1/queues/x21/subscription", tok, map[string]any{"endpoint": "https://" + h + "/hook"}).
			is(t, 400, "invalid_argument", "endpoint")
	}
	// X26: scheme, user information, fragments.
	for _, u := range []string{"http://example.com/hook", "ftp://example.com/", "file:///etc/passwd", "gopher://example.com/",
		"https://good@127.0.0.1/", "https://user:pw@example.com/", "https://example.com/#x", "//example.com/", "https:///x"} {
		call(t, "POST", "/v1/queues/x21/subscription", tok, map[string]any{"endpoint": u}).is(t, 400, "invalid_argument", "endpoint")
	}
	call(t, "GET", "/v1/queues/x21/subscription", tok, nil).is(t, 404, "not_found", "")
	// A public https endpoint on an unusual port is the customer's choice; only the address is
	// checked (pushes never reach internal ports because they never reach internal addresses).
	a := call(t, "POST", "/v1/queues/x21/subscription", tok, map[string]any{"endpoint": "https://hooks.example.com:8443/in"})
	a.is(t, 201, "", "")
	if !strings.HasPrefix(a.body["signingSecret"].(string), "whsec_") {
		t.Errorf("X34: signing secret %v", a.body["signingSecret"])
	}
	// PATCH is checked the same way.
	call(t, "PATCH", "/v1/queues/x21/subscription", tok, map[string]any{"endpoint": "https://169.254.169.254/latest/meta-data/"}).
		is(t, 400, "invalid_argument", "endpoint")
}
