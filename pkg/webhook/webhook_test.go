package webhook

import (
	"encoding/base64"
	"errors"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
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

func TestValidateEndpoint(t *testing.T) {
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
		err := ValidateEndpoint(c.url, c.private)
		if (err == nil) != c.ok {
			t.Errorf("%q (private %v): err %v, want ok=%v", c.url, c.private, err, c.ok)
		}
	}
}

// TestSignatureVerifiesWithReferenceLibrary checks our signatures with the Standard Webhooks
// reference verifier, for each secret of a rotation.
func TestSignatureVerifiesWithReferenceLibrary(t *testing.T) {
	t.Parallel()
	cur, prev := NewSecret(), NewSecret()
	if !strings.HasPrefix(cur, "whsec_") || cur == prev {
		t.Fatalf("secrets %q %q", cur, prev)
	}
	body := []byte(`{"subscription":"qsb_x","messages":[]}`)
	ts := time.Now().Unix()
	sig := SignAll([]string{cur, prev}, "attempt-1", ts, body)
	if n := len(strings.Fields(sig)); n != 2 {
		t.Fatalf("signature header %q has %d signatures, want 2", sig, n)
	}
	h := http.Header{}
	h.Set("webhook-id", "attempt-1")
	h.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	h.Set("webhook-signature", sig)
	for _, s := range []string{cur, prev} {
		wh, err := standardwebhooks.NewWebhook(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(body, h); err != nil {
			t.Fatalf("reference verifier rejects: %v", err)
		}
		if err := wh.Verify(append(body, ' '), h); err == nil {
			t.Fatal("reference verifier accepts a changed body")
		}
	}
	other, _ := standardwebhooks.NewWebhook(NewSecret())
	if err := other.Verify(body, h); err == nil {
		t.Fatal("another secret verifies")
	}
	// The reference signer and ours agree byte for byte.
	wh, _ := standardwebhooks.NewWebhook(cur)
	ref, err := wh.Sign("attempt-1", time.Unix(ts, 0), body)
	if err != nil {
		t.Fatal(err)
	}
	if got := SignAll([]string{cur}, "attempt-1", ts, body); got != ref {
		t.Fatalf("signature %q, reference %q", got, ref)
	}
}

// TestVerify: our verifier accepts the reference signer's signatures, for either secret of a
// rotation, and refuses a changed body, a stale timestamp, missing headers and a bad secret.
func TestVerify(t *testing.T) {
	t.Parallel()
	cur, prev := NewSecret(), NewSecret()
	body := []byte(`{"messages":[]}`)
	now := time.Now()
	ts := strconv.FormatInt(now.Unix(), 10)
	wh, _ := standardwebhooks.NewWebhook(prev)
	ref, err := wh.Sign("a-1", time.Unix(now.Unix(), 0), body)
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify([]string{cur, "", prev}, "a-1", ts, "v1,bm9wZQ== "+ref, body, now, 0); err != nil {
		t.Fatalf("the previous secret's signature: %v", err)
	}
	for name, c := range map[string]struct {
		secrets     []string
		id, ts, sig string
		body        []byte
		want        error
	}{
		"changed body": {[]string{cur, prev}, "a-1", ts, ref, append(body, ' '), ErrNoMatchingSecret},
		"other secret": {[]string{cur}, "a-1", ts, ref, body, ErrNoMatchingSecret},
		"stale":        {[]string{prev}, "a-1", strconv.FormatInt(now.Add(-6*time.Minute).Unix(), 10), ref, body, ErrStaleTimestamp},
		"not a number": {[]string{prev}, "a-1", "soon", ref, body, ErrBadTimestamp},
		"no id":        {[]string{prev}, "", ts, ref, body, ErrMissingHeaders},
		"empty key":    {[]string{"whsec_"}, "a-1", ts, ref, body, ErrBadSecret},
		"no prefix":    {[]string{"c2VjcmV0"}, "a-1", ts, ref, body, ErrBadSecret},
	} {
		if err := Verify(c.secrets, c.id, c.ts, c.sig, c.body, now, 0); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
}

// TestEmptyKeyNeverSigns: a secret whose key is empty is refused by Key and Sign and skipped
// by SignAll (an HMAC under an empty key is one anybody can compute).
func TestEmptyKeyNeverSigns(t *testing.T) {
	t.Parallel()
	if _, err := Key("whsec_"); !errors.Is(err, ErrBadSecret) {
		t.Fatalf("Key(whsec_): %v", err)
	}
	if _, err := Sign("whsec_", "a", 1, nil); !errors.Is(err, ErrBadSecret) {
		t.Fatalf("Sign with an empty key: %v", err)
	}
	if got := SignAll([]string{"whsec_"}, "a", 1, nil); got != "" {
		t.Fatalf("SignAll with an empty key signed: %q", got)
	}
}

// TestUnsetSecretNeverVerifies: a receiver whose secret variable is unset passes "" (or no
// secret at all); a push signed with the empty key — which anybody can compute — must not
// verify, nor one signed with any other key.
func TestUnsetSecretNeverVerifies(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	ts := strconv.FormatInt(now.Unix(), 10)
	body := []byte(`{"messages":[]}`)
	forged := "v1," + base64.StdEncoding.EncodeToString(mac(nil, "a-1", ts, body))
	for _, secrets := range [][]string{nil, {}, {""}, {"", ""}} {
		if err := Verify(secrets, "a-1", ts, forged, body, now, 0); !errors.Is(err, ErrNoMatchingSecret) {
			t.Fatalf("Verify(%q) of an empty-key signature: %v, want ErrNoMatchingSecret", secrets, err)
		}
	}
}
