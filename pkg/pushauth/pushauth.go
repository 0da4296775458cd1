// Package pushauth signs the bearer JWTs of pushes to subscriptions with auth type "oidc"
// (issue 37 item 4) and publishes the keys that verify them (/.well-known/jwks.json). The
// RS256 keys live in the metadata store so the api, separate pushers and every replica sign
// with, and publish, the same ring: a key signs for KeyLifetime, then the next one takes over,
// and a retired key stays published until every token it signed has expired.
package pushauth

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/meta"
)

const (
	// KeyLifetime is how long a key signs before the next one is made.
	KeyLifetime = 30 * 24 * time.Hour
	// TokenTTL is the lifetime of a push token (its exp is iat + TokenTTL).
	TokenTTL = 5 * time.Minute
	// reloadEvery bounds how stale a replica's copy of the ring may be: another replica's
	// rotation is picked up within it (a verifier refetches the JWKS on an unknown kid).
	reloadEvery = time.Minute
	rsaBits     = 2048
)

// Ring is the shared key ring of one service.
type Ring struct {
	store  meta.SigningKeyStore
	clk    clock.Clock
	issuer string

	mu     sync.Mutex
	keys   []ringKey
	loaded time.Time
}

type ringKey struct {
	meta.SigningKey
	priv *rsa.PrivateKey
}

// New returns the ring kept in store; issuer is the service's public URL (the tokens' iss).
func New(store meta.SigningKeyStore, clk clock.Clock, issuer string) *Ring {
	if clk == nil {
		clk = clock.Real{}
	}
	return &Ring{store: store, clk: clk, issuer: issuer}
}

// ForURL is the ring kept in store whose tokens' iss is publicURL (QUEUES_PUBLIC_URL), nil
// when publicURL is empty: a deployment without a public URL signs no tokens.
func ForURL(store meta.SigningKeyStore, clk clock.Clock, publicURL string) *Ring {
	if publicURL == "" {
		return nil
	}
	return New(store, clk, strings.TrimSuffix(publicURL, "/"))
}

// Issuer is the tokens' iss.
func (r *Ring) Issuer() string { return r.issuer }

// Token returns the bearer token of one push: aud audience, sub subject, signed by the
// current key.
func (r *Ring) Token(ctx context.Context, audience, subject string) (string, error) {
	k, err := r.current(ctx)
	if err != nil {
		return "", err
	}
	now := r.clk.Now()
	t := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{
		"iss": r.issuer, "aud": audience, "sub": subject,
		"iat": now.Unix(), "exp": now.Add(TokenTTL).Unix(),
	})
	t.Header["kid"] = k.KID
	return t.SignedString(k.priv)
}

// current returns the signing key, rotating when the newest has reached its RetireAt.
func (r *Ring) current(ctx context.Context) (ringKey, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clk.Now()
	if err := r.refresh(ctx, now, false); err != nil {
		return ringKey{}, err
	}
	if k, ok := r.signing(now); ok {
		return k, nil
	}
	if err := r.rotate(ctx, now); err != nil {
		return ringKey{}, err
	}
	if k, ok := r.signing(now); ok {
		return k, nil
	}
	return ringKey{}, fmt.Errorf("pushauth: no signing key after rotation")
}

// signing is the newest key still signing at now.
func (r *Ring) signing(now time.Time) (ringKey, bool) {
	for i := len(r.keys) - 1; i >= 0; i-- {
		if k := r.keys[i]; !now.Before(k.CreatedAt) && now.Before(k.RetireAt) {
			return k, true
		}
	}
	return ringKey{}, false
}

// rotate stores a new key unless another replica stored one since the newest retired, then
// drops the keys whose tokens have all expired, and reloads.
func (r *Ring) rotate(ctx context.Context, now time.Time) error {
	priv, err := rsa.GenerateKey(rand.Reader, rsaBits)
	if err != nil {
		return fmt.Errorf("pushauth: new key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return fmt.Errorf("pushauth: new key: %w", err)
	}
	k := meta.SigningKey{KID: kid(&priv.PublicKey), PrivateKeyDER: der, CreatedAt: now, RetireAt: now.Add(KeyLifetime)}
	if _, err := r.store.AddSigningKey(ctx, k, now.Add(-KeyLifetime).Add(time.Second)); err != nil {
		return fmt.Errorf("pushauth: storing a new key: %w", err)
	}
	for _, o := range r.keys {
		if !now.Before(o.RetireAt.Add(TokenTTL)) {
			if err := r.store.DeleteSigningKey(ctx, o.KID); err != nil {
				return fmt.Errorf("pushauth: dropping key %s: %w", o.KID, err)
			}
		}
	}
	return r.refresh(ctx, now, true)
}

// refresh reloads the ring from the store when forced or stale.
func (r *Ring) refresh(ctx context.Context, now time.Time, force bool) error {
	if !force && !r.loaded.IsZero() && now.Sub(r.loaded) < reloadEvery && now.After(r.loaded) {
		return nil
	}
	stored, err := r.store.SigningKeys(ctx)
	if err != nil {
		return fmt.Errorf("pushauth: reading keys: %w", err)
	}
	keys := make([]ringKey, 0, len(stored))
	for _, s := range stored {
		p, err := x509.ParsePKCS8PrivateKey(s.PrivateKeyDER)
		priv, ok := p.(*rsa.PrivateKey)
		if err != nil || !ok {
			return fmt.Errorf("pushauth: key %s does not parse: %v", s.KID, err)
		}
		keys = append(keys, ringKey{SigningKey: s, priv: priv})
	}
	r.keys, r.loaded = keys, now
	return nil
}

// kid is the RFC 7638 thumbprint of an RSA public key.
func kid(pub *rsa.PublicKey) string {
	b, _ := json.Marshal(struct {
		E   string `json:"e"`
		Kty string `json:"kty"`
		N   string `json:"n"`
	}{b64(big.NewInt(int64(pub.E)).Bytes()), "RSA", b64(pub.N.Bytes())})
	sum := sha256.Sum256(b)
	return b64(sum[:])
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// JWK is one published key.
type JWK struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	N   string `json:"n"`
	E   string `json:"e"`
}

// JWKS returns the published keys: every key that signs now or signed a token not yet
// expired. With no key yet it makes the first one, so the set is never empty.
func (r *Ring) JWKS(ctx context.Context) ([]JWK, error) {
	if _, err := r.current(ctx); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clk.Now()
	out := []JWK{}
	for _, k := range r.keys {
		if now.Before(k.RetireAt.Add(TokenTTL)) {
			pub := &k.priv.PublicKey
			out = append(out, JWK{Kty: "RSA", Kid: k.KID, Use: "sig", Alg: "RS256", N: b64(pub.N.Bytes()), E: b64(big.NewInt(int64(pub.E)).Bytes())})
		}
	}
	return out, nil
}
