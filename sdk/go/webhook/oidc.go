package webhook

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Token verification failures.
var (
	ErrNoToken      = errors.New("queues: push: no Authorization: Bearer token")
	ErrBadToken     = errors.New("queues: push: the bearer token is not a valid RS256 JWT")
	ErrUnknownKey   = errors.New("queues: push: the token's kid is not in the service's JWKS")
	ErrTokenClaims  = errors.New("queues: push: the token's iss, aud or exp does not match")
	errJWKSNotFound = errors.New("queues: push: fetching the JWKS failed")
)

// Claims are the claims of a push token the receiver may want beyond the checks.
type Claims struct {
	Issuer   string `json:"iss"`
	Subject  string `json:"sub"` // the subscription: "<project id>/<queue name>"
	Audience string `json:"aud"`
	IssuedAt int64  `json:"iat"`
	Expiry   int64  `json:"exp"`
}

// TokenVerifier checks the bearer JWT of a push from a subscription with auth type "oidc":
// RS256 under a key of the service's JWKS (Issuer + "/.well-known/jwks.json", fetched once
// and again when a token names an unknown kid, at most every MinRefresh), iss equal to
// Issuer, aud equal to Audience, not expired (Leeway of clock skew allowed).
type TokenVerifier struct {
	Issuer   string // the service's public URL, e.g. "https://queues.example.com"
	Audience string // the subscription's audience (by default its endpoint URL)
	// JWKSURL overrides Issuer + "/.well-known/jwks.json".
	JWKSURL    string
	Client     *http.Client // nil: http.DefaultClient
	Leeway     time.Duration
	MinRefresh time.Duration // 0: one minute
	Now        func() time.Time

	mu      sync.Mutex
	keys    map[string]*rsa.PublicKey
	fetched time.Time
}

// VerifyRequest checks the Authorization header of a push request.
func (v *TokenVerifier) VerifyRequest(r *http.Request) (Claims, error) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" {
		return Claims{}, ErrNoToken
	}
	return v.Verify(r.Context(), tok)
}

// Verify checks one token.
func (v *TokenVerifier) Verify(ctx context.Context, token string) (Claims, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return Claims{}, ErrBadToken
	}
	var hdr struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	var c Claims
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || decodeSegment(parts[0], &hdr) != nil || decodeSegment(parts[1], &c) != nil || hdr.Alg != "RS256" {
		return Claims{}, ErrBadToken
	}
	key, err := v.key(ctx, hdr.Kid)
	if err != nil {
		return Claims{}, err
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if rsa.VerifyPKCS1v15(key, crypto.SHA256, sum[:], sig) != nil {
		return Claims{}, ErrBadToken
	}
	now := time.Now()
	if v.Now != nil {
		now = v.Now()
	}
	if c.Issuer != v.Issuer || c.Audience != v.Audience || c.Expiry == 0 || now.After(time.Unix(c.Expiry, 0).Add(v.Leeway)) {
		return Claims{}, ErrTokenClaims
	}
	return c, nil
}

func decodeSegment(s string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// key returns the public key of kid, refetching the JWKS when kid is unknown (a rotation).
func (v *TokenVerifier) key(ctx context.Context, kid string) (*rsa.PublicKey, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if k, ok := v.keys[kid]; ok {
		return k, nil
	}
	every := v.MinRefresh
	if every <= 0 {
		every = time.Minute
	}
	if !v.fetched.IsZero() && time.Since(v.fetched) < every {
		return nil, ErrUnknownKey
	}
	keys, err := v.fetch(ctx)
	if err != nil {
		return nil, err
	}
	v.keys, v.fetched = keys, time.Now()
	if k, ok := keys[kid]; ok {
		return k, nil
	}
	return nil, ErrUnknownKey
}

// JWK is one RSA key of a JWKS.
type JWK struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use,omitempty"`
	Alg string `json:"alg,omitempty"`
	N   string `json:"n"`
	E   string `json:"e"`
}

func (v *TokenVerifier) fetch(ctx context.Context) (map[string]*rsa.PublicKey, error) {
	u := v.JWKSURL
	if u == "" {
		u = strings.TrimSuffix(v.Issuer, "/") + "/.well-known/jwks.json"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	c := v.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errJWKSNotFound, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: status %d", errJWKSNotFound, resp.StatusCode)
	}
	var set struct {
		Keys []JWK `json:"keys"`
	}
	if err := json.Unmarshal(raw, &set); err != nil {
		return nil, fmt.Errorf("%w: %v", errJWKSNotFound, err)
	}
	out := map[string]*rsa.PublicKey{}
	for _, k := range set.Keys {
		if pk, ok := rsaKey(k); ok {
			out[k.Kid] = pk
		}
	}
	return out, nil
}

func rsaKey(k JWK) (*rsa.PublicKey, bool) {
	if k.Kty != "RSA" {
		return nil, false
	}
	n, err1 := base64.RawURLEncoding.DecodeString(k.N)
	e, err2 := base64.RawURLEncoding.DecodeString(k.E)
	if err1 != nil || err2 != nil || len(e) == 0 || len(e) > 4 {
		return nil, false
	}
	ei := 0
	for _, b := range e {
		ei = ei<<8 | int(b)
	}
	return &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: ei}, true
}
