package webhook

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

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
