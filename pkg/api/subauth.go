package api

import (
	"crypto/ed25519"
	"encoding/base64"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/sdk/go/webhook"
)

// Token auth and asymmetric signatures of push subscriptions (issue 37 item 4).

const maxAudienceLen = 1024

// subAuthJSON is the part of a subscription's JSON about its signatures and token.
type subAuthJSON struct {
	Signing          string `json:"signing"`
	SigningPublicKey string `json:"signingPublicKey,omitempty"`
	// The key a rotation replaced, while it still signs beside the new one: a receiver that
	// pins public keys adds the new one before this one stops.
	PreviousSigningPublicKey          string        `json:"previousSigningPublicKey,omitempty"`
	PreviousSigningPublicKeyExpiresAt string        `json:"previousSigningPublicKeyExpiresAt,omitempty"`
	Auth                              *pushAuthJSON `json:"auth,omitempty"`
}

type pushAuthJSON struct {
	Type     string `json:"type"`
	Audience string `json:"audience"`
}

func subAuthOut(s meta.Subscription, now time.Time) subAuthJSON {
	out := subAuthJSON{Signing: meta.SigningHMAC}
	if s.Signing == meta.SigningEd25519 {
		out.Signing, out.SigningPublicKey = meta.SigningEd25519, s.SigningPublicKey
		if pub := publicKeyOf(s.PreviousSigningPrivateKey); pub != "" && now.Before(s.PreviousExpiresAt) {
			out.PreviousSigningPublicKey, out.PreviousSigningPublicKeyExpiresAt = pub, formatTime(s.PreviousExpiresAt)
		}
	}
	if s.AuthType != "" {
		out.Auth = &pushAuthJSON{Type: s.AuthType, Audience: s.TokenAudience()}
	}
	return out
}

// publicKeyOf is the whpk_ public key of a whsk_ private key ("" for none or a malformed one):
// the store keeps only the previous private key of a rotation.
func publicKeyOf(private string) string {
	b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(private, webhook.PrivateKeyPrefix))
	if private == "" || err != nil || len(b) != ed25519.PrivateKeySize {
		return ""
	}
	pub, _ := ed25519.PrivateKey(b).Public().(ed25519.PublicKey)
	return webhook.PublicKeyPrefix + base64.StdEncoding.EncodeToString(pub)
}

// applySubAuth applies "signing" and "auth" when present. A change to ed25519 makes a new key
// pair (the private key never leaves the service); back to hmac drops it, and the previous
// key of a rotation with it. "auth": null removes the token.
func (s *Server) applySubAuth(o *object, sub *meta.Subscription) error {
	if o.has("signing") {
		v, _, err := o.str("signing")
		if err != nil {
			return err
		}
		switch v {
		case meta.SigningHMAC:
			sub.Signing, sub.SigningPublicKey, sub.SigningPrivateKey = meta.SigningHMAC, "", ""
			sub.PreviousSigningPrivateKey = ""
		case meta.SigningEd25519:
			if sub.Signing != meta.SigningEd25519 || sub.SigningPrivateKey == "" {
				// A new pair has no predecessor: a key dropped by a switch to hmac signs no more.
				sub.SigningPublicKey, sub.SigningPrivateKey = webhook.NewKeyPair()
				sub.PreviousSigningPrivateKey = ""
			}
			sub.Signing = meta.SigningEd25519
		default:
			return apierr.Invalid("signing", "must be \"hmac\" or \"ed25519\", not %q", v)
		}
	}
	if !o.has("auth") {
		return nil
	}
	if o.isNull("auth") {
		sub.AuthType, sub.AuthAudience = "", ""
		return nil
	}
	a, aerr := o.child("auth", "type", "audience")
	if aerr != nil {
		return aerr
	}
	typ, ok, err := a.str("type")
	if err != nil {
		return err
	}
	if !ok {
		return apierr.Invalid("auth.type", "is required: \"oidc\"")
	}
	if typ != meta.AuthOIDC {
		return apierr.Invalid("auth.type", "must be \"oidc\", not %q", typ)
	}
	if s.cfg.PushTokens == nil {
		return apierr.Invalid("auth.type", "\"oidc\" needs the service's public URL (QUEUES_PUBLIC_URL), which this deployment does not set")
	}
	aud, _, err := a.str("audience")
	if err != nil {
		return err
	}
	if len(aud) > maxAudienceLen || (a.has("audience") && strings.TrimSpace(aud) == "") {
		return apierr.Invalid("auth.audience", "must be a non-empty string of at most %d bytes (omit it for the endpoint URL)", maxAudienceLen)
	}
	sub.AuthType, sub.AuthAudience = meta.AuthOIDC, aud
	return nil
}

// jwks serves the keys that verify push tokens: unauthenticated, cacheable for five minutes
// (a verifier refetches the set when a token names a kid it has not seen: a rotation).
func (s *Server) jwks(c echo.Context) error {
	if s.cfg.PushTokens == nil {
		return apierr.New(apierr.NotFound, "this deployment signs no push tokens (no public URL configured)")
	}
	ctx, cancel := s.storageCtx(c)
	defer cancel()
	keys, err := s.cfg.PushTokens.JWKS(ctx)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "public, max-age=300")
	return c.JSON(http.StatusOK, map[string]any{"keys": keys})
}
