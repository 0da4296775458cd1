package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"

	"github.com/queueshq/queues/sdk/go/webhook"
)

// TestPushTokenAndEd25519: on a deployment with a public URL, a subscription with signing
// "ed25519" and auth "oidc" shows its whpk_ public key (never the private one), and its
// pushes carry a v1a signature the public key verifies and a bearer JWT that go-jose verifies
// against /.well-known/jwks.json (no credential, cacheable); bad settings are 400s naming
// signing, auth.type, auth.audience; a deployment without a public URL refuses oidc.
func TestPushTokenAndEd25519(t *testing.T) {
	const issuer = "https://queues.test"
	srv, srvA, srvB := pushServersAt(t, issuer)
	type push struct {
		raw    []byte
		header http.Header
	}
	got := make(chan push, 10)
	ep := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		got <- push{raw, r.Header.Clone()}
		rw.WriteHeader(204)
	}))
	defer ep.Close()

	tn := newTenantOn(t, srvA, srvB)
	op := newClient(t, srv, tn.token)
	tn.queue(t, "signed", nil)
	path := "/v1/queues/signed/subscription"
	for _, c := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"signing": "rsa"}, "signing"},
		{map[string]any{"signing": 1}, "signing"},
		{map[string]any{"auth": map[string]any{"type": "basic"}}, "auth.type"},
		{map[string]any{"auth": map[string]any{}}, "auth.type"},
		{map[string]any{"auth": map[string]any{"type": "oidc", "audience": ""}}, "auth.audience"},
		{map[string]any{"auth": map[string]any{"type": "oidc", "audience": 5}}, "auth.audience"},
		{map[string]any{"auth": map[string]any{"type": "oidc", "aud": "x"}}, "auth.aud"},
		{map[string]any{"auth": "oidc"}, "auth"},
	} {
		c.body["endpoint"] = ep.URL + "/hook"
		op.do("POST", path, c.body).fails(t, 400, "invalid_argument", c.field)
	}
	// Servers without a public URL sign no tokens: oidc is refused, and no keys are published.
	if w.backend != backendEmbedded {
		tn.a.do("POST", path, map[string]any{"endpoint": "https://example.com/h", "auth": map[string]any{"type": "oidc"}}).fails(t, 400, "invalid_argument", "auth.type")
		newClient(t, srvA, "").do("GET", "/.well-known/jwks.json", nil).fails(t, 404, "not_found", "")
	}

	created := op.do("POST", path, map[string]any{"endpoint": ep.URL + "/hook", "signing": "ed25519", "auth": map[string]any{"type": "oidc"}}).must(t, 201)
	pub := created.str("signingPublicKey")
	if created.str("signing") != "ed25519" || !strings.HasPrefix(pub, "whpk_") || strings.Contains(string(created.raw), "whsk_") {
		t.Fatalf("created: %s", created.raw)
	}
	if a, _ := created.body["auth"].(map[string]any); a["type"] != "oidc" || a["audience"] != ep.URL+"/hook" {
		t.Fatalf("auth: %s", created.raw)
	}
	if g := op.do("GET", path, nil).must(t, 200); g.str("signingPublicKey") != pub || strings.Contains(string(g.raw), "whsk_") {
		t.Fatalf("get: %s", g.raw)
	}

	tn.a.send(t, "signed", "hello")
	var p push
	select {
	case p = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("nothing pushed within 30 s")
	}
	h := p.header
	if err := webhook.Verify([]string{pub}, h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature"), p.raw, time.Now(), 0); err != nil || !strings.HasPrefix(h.Get("webhook-signature"), "v1a,") {
		t.Fatalf("v1a %q: %v", h.Get("webhook-signature"), err)
	}

	jw := newClient(t, srv, "").do("GET", "/.well-known/jwks.json", nil).must(t, 200)
	if cc := jw.header.Get("Cache-Control"); !strings.Contains(cc, "max-age") {
		t.Fatalf("Cache-Control %q", cc)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(jw.raw, &set); err != nil {
		t.Fatalf("go-jose reads not the JWKS: %v", err)
	}
	tok := strings.TrimPrefix(h.Get("Authorization"), "Bearer ")
	parsed, err := josejwt.ParseSigned(tok, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		t.Fatalf("Authorization %q: %v", h.Get("Authorization"), err)
	}
	keys := set.Key(parsed.Headers[0].KeyID)
	if len(keys) != 1 {
		t.Fatalf("kid %q not in %s", parsed.Headers[0].KeyID, jw.raw)
	}
	var c josejwt.Claims
	if err := parsed.Claims(keys[0].Key, &c); err != nil {
		t.Fatalf("go-jose: %v", err)
	}
	if err := c.Validate(josejwt.Expected{Issuer: issuer, AnyAudience: []string{ep.URL + "/hook"}, Time: time.Now()}); err != nil ||
		!strings.HasSuffix(c.Subject, "/signed") {
		t.Fatalf("claims %+v: %v", c, err)
	}

	// Back to hmac: the key pair is dropped; auth null removes the token.
	back := op.do("PATCH", path, map[string]any{"signing": "hmac", "auth": nil}).must(t, 200)
	if back.str("signing") != "hmac" || back.body["signingPublicKey"] != nil || back.body["auth"] != nil {
		t.Fatalf("patched back: %s", back.raw)
	}
	aud := op.do("PATCH", path, map[string]any{"auth": map[string]any{"type": "oidc", "audience": "my-service"}}).must(t, 200)
	if a, _ := aud.body["auth"].(map[string]any); a["audience"] != "my-service" {
		t.Fatalf("audience: %s", aud.raw)
	}
}

// TestPushEd25519Rotation: rotate-secret on an ed25519 subscription makes a new key pair (and,
// as on every subscription, a new signingSecret); for the overlap each push carries two v1a
// signatures, so a receiver holding either public key verifies it; a second rotation retires
// the oldest key at once; a switch to hmac and back starts a pair with no predecessor.
func TestPushEd25519Rotation(t *testing.T) {
	srv, srvA, srvB := pushServers(t)
	type push struct {
		raw    []byte
		header http.Header
	}
	got := make(chan push, 10)
	ep := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		got <- push{raw, r.Header.Clone()}
		rw.WriteHeader(204)
	}))
	defer ep.Close()
	tn := newTenantOn(t, srvA, srvB)
	op := newClient(t, srv, tn.token)
	tn.queue(t, "rotating", nil)
	path := "/v1/queues/rotating/subscription"
	created := op.do("POST", path, map[string]any{"endpoint": ep.URL + "/hook", "signing": "ed25519"}).must(t, 201)
	// pushed sends one message and returns its push's signatures, checking which keys verify it.
	pushed := func(step string, verifying []string, failing ...string) []string {
		t.Helper()
		tn.a.send(t, "rotating", step)
		var p push
		select {
		case p = <-got:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: nothing pushed within 30 s", step)
		}
		h := p.header
		check := func(pub string) error {
			return webhook.Verify([]string{pub}, h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature"), p.raw, time.Now(), 0)
		}
		for _, pub := range verifying {
			if err := check(pub); err != nil {
				t.Fatalf("%s: key %s… does not verify %q: %v", step, pub[:12], h.Get("webhook-signature"), err)
			}
		}
		for _, pub := range failing {
			if check(pub) == nil {
				t.Fatalf("%s: retired key %s… still verifies %q", step, pub[:12], h.Get("webhook-signature"))
			}
		}
		sigs := strings.Fields(h.Get("webhook-signature"))
		for _, s := range sigs {
			if !strings.HasPrefix(s, "v1a,") {
				t.Fatalf("%s: signature %q is not v1a", step, s)
			}
		}
		return sigs
	}
	pub1 := created.str("signingPublicKey")
	if sigs := pushed("before", []string{pub1}); len(sigs) != 1 {
		t.Fatalf("before any rotation: %d signatures, want 1", len(sigs))
	}

	rotated := op.do("POST", path+"/rotate-secret", nil).must(t, 200)
	pub2 := rotated.str("signingPublicKey")
	if !strings.HasPrefix(pub2, "whpk_") || pub2 == pub1 || rotated.str("signingSecret") == created.str("signingSecret") ||
		rotated.str("signing") != "ed25519" || strings.Contains(string(rotated.raw), "whsk_") {
		t.Fatalf("rotated: %s", rotated.raw)
	}
	if created.has("previousSigningPublicKey") || rotated.str("previousSigningPublicKey") != pub1 {
		t.Fatalf("the previous public key: before the rotation %s, after it %s", created.raw, rotated.raw)
	}
	if g := op.do("GET", path, nil).must(t, 200); g.str("signingPublicKey") != pub2 || g.str("previousSigningPublicKey") != pub1 ||
		g.str("previousSigningPublicKeyExpiresAt") == "" || strings.Contains(string(g.raw), "whsk_") {
		t.Fatalf("get after the rotation: %s", g.raw)
	}
	if sigs := pushed("overlap", []string{pub1, pub2}); len(sigs) != 2 {
		t.Fatalf("during the overlap: %d signatures, want the new key's and the previous one's", len(sigs))
	}

	pub3 := op.do("POST", path+"/rotate-secret", map[string]any{}).must(t, 200).str("signingPublicKey")
	if sigs := pushed("second rotation", []string{pub3, pub2}, pub1); len(sigs) != 2 {
		t.Fatalf("after a second rotation: %d signatures", len(sigs))
	}

	op.do("PATCH", path, map[string]any{"signing": "hmac"}).must(t, 200)
	fresh := op.do("PATCH", path, map[string]any{"signing": "ed25519"}).must(t, 200)
	pub4 := fresh.str("signingPublicKey")
	if fresh.has("previousSigningPublicKey") {
		t.Fatalf("a new pair shows a previous key: %s", fresh.raw)
	}
	if sigs := pushed("new pair", []string{pub4}, pub3, pub2); len(sigs) != 1 {
		t.Fatalf("a new pair after hmac: %d signatures, want 1", len(sigs))
	}
}
