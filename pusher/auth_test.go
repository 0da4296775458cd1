package pusher_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"

	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/pushauth"
	"github.com/queueshq/queues/pusher"
	"github.com/queueshq/queues/sdk/go/webhook"
)

// TestPushEd25519AndToken: a subscription with signing "ed25519" and auth "oidc" gets a v1a
// signature (alone: no HMAC) that its public key verifies, and a bearer JWT that go-jose
// verifies against the ring's JWKS served over HTTP, with iss, aud (the endpoint by default),
// sub and a 5-minute exp; the SDK's TokenVerifier accepts it too.
func TestPushEd25519AndToken(t *testing.T) {
	e := newEnv(t)
	ep := newEndpoint(t, false, status(204))
	ring := pushauth.New(e.store, e.clk, "https://queues.example")
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		set, err := ring.JWKS(r.Context())
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": set})
	}))
	t.Cleanup(jwks.Close)
	pub, priv := webhook.NewKeyPair()
	q := e.queue("standard", nil)
	sub := e.subscribe(q, ep.URL+"/hook", func(s *meta.Subscription) {
		s.Signing, s.SigningPublicKey, s.SigningPrivateKey, s.AuthType = meta.SigningEd25519, pub, priv, meta.AuthOIDC
	})
	e.pusher(func(c *pusher.Config) { c.AllowPrivate, c.Tokens = true, ring })
	e.applied(q, func(meta.Subscription) bool { return true })
	e.send(q, "signed")
	got := ep.next(t)

	sig := got.header.Get("webhook-signature")
	if !strings.HasPrefix(sig, "v1a,") || strings.Contains(sig, " ") {
		t.Fatalf("webhook-signature %q, want one v1a signature", sig)
	}
	h := got.header
	if err := webhook.Verify([]string{pub}, h.Get("webhook-id"), h.Get("webhook-timestamp"), sig, got.raw, time.Now(), 0); err != nil {
		t.Fatalf("v1a with the public key: %v", err)
	}
	otherPub, _ := webhook.NewKeyPair()
	if err := webhook.Verify([]string{otherPub}, h.Get("webhook-id"), h.Get("webhook-timestamp"), sig, got.raw, time.Now(), 0); err == nil {
		t.Fatal("another public key verifies the push")
	}

	tok, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer ")
	if !ok {
		t.Fatalf("Authorization %q", h.Get("Authorization"))
	}
	resp, err := http.Get(jwks.URL)
	if err != nil {
		t.Fatal(err)
	}
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	parsed, err := josejwt.ParseSigned(tok, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		t.Fatal(err)
	}
	keys := set.Key(parsed.Headers[0].KeyID)
	if len(keys) != 1 {
		t.Fatalf("kid %q not in the JWKS", parsed.Headers[0].KeyID)
	}
	var c josejwt.Claims
	if err := parsed.Claims(keys[0].Key, &c); err != nil {
		t.Fatalf("go-jose: %v", err)
	}
	want := josejwt.Expected{Issuer: "https://queues.example", Subject: meta.TokenSubject(sub.ProjectID, q.Name), AnyAudience: []string{ep.URL + "/hook"}, Time: e.clk.Now()}
	if err := c.Validate(want); err != nil || c.Expiry.Time().Sub(c.IssuedAt.Time()) != 5*time.Minute {
		t.Fatalf("claims %+v: %v", c, err)
	}
	v := &webhook.TokenVerifier{Issuer: "https://queues.example", Audience: ep.URL + "/hook", JWKSURL: jwks.URL, Now: e.clk.Now}
	if _, err := v.Verify(t.Context(), tok); err != nil {
		t.Fatalf("SDK TokenVerifier: %v", err)
	}
	v2 := &webhook.TokenVerifier{Issuer: "https://queues.example", Audience: "https://else.example", JWKSURL: jwks.URL, Now: e.clk.Now}
	if _, err := v2.Verify(t.Context(), tok); err == nil {
		t.Fatal("SDK TokenVerifier accepts another audience")
	}
}
