package pushauth_test

import (
	"encoding/json"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/meta/memmeta"
	"github.com/queueshq/queues/pkg/pushauth"
)

// verify checks tok with go-jose against the JWKS as the ring publishes it (through JSON, as a
// receiver gets it), and returns the claims and the kid.
func verify(t *testing.T, r *pushauth.Ring, tok string, now time.Time) (josejwt.Claims, string, error) {
	t.Helper()
	set, err := r.JWKS(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(map[string]any{"keys": set})
	var jwks jose.JSONWebKeySet
	if err := json.Unmarshal(raw, &jwks); err != nil {
		t.Fatalf("go-jose reads not the JWKS: %v", err)
	}
	parsed, err := josejwt.ParseSigned(tok, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		t.Fatal(err)
	}
	kid := parsed.Headers[0].KeyID
	keys := jwks.Key(kid)
	if len(keys) != 1 {
		return josejwt.Claims{}, kid, errNoKey
	}
	var c josejwt.Claims
	if err := parsed.Claims(keys[0].Key, &c); err != nil {
		return c, kid, err
	}
	return c, kid, c.ValidateWithLeeway(josejwt.Expected{Issuer: "https://queues.example", AnyAudience: []string{"https://recv.example/hook"}, Time: now}, 0)
}

type errString string

func (e errString) Error() string { return string(e) }

const errNoKey = errString("kid not in the JWKS")

func TestTokenVerifiesAgainstJWKSAcrossRotation(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store := memmeta.New()
	r := pushauth.New(store, clk, "https://queues.example")
	tok, err := r.Token(t.Context(), "https://recv.example/hook", "proj/orders")
	if err != nil {
		t.Fatal(err)
	}
	c, kid1, err := verify(t, r, tok, clk.Now())
	if err != nil {
		t.Fatalf("fresh token: %v", err)
	}
	if c.Subject != "proj/orders" || c.Expiry.Time().Sub(c.IssuedAt.Time()) != 5*time.Minute {
		t.Fatalf("claims %+v", c)
	}
	// A second replica on the same store signs with the same key.
	other := pushauth.New(store, clk, "https://queues.example")
	tok2, _ := other.Token(t.Context(), "https://recv.example/hook", "proj/orders")
	if _, kid, err := verify(t, r, tok2, clk.Now()); err != nil || kid != kid1 {
		t.Fatalf("other replica: kid %s (want %s), %v", kid, kid1, err)
	}
	// Expired after 5 minutes.
	if _, _, err := verify(t, r, tok, clk.Now().Add(6*time.Minute)); err == nil {
		t.Fatal("a 6-minute-old token verifies")
	}
	// 30 days on: a new key signs; a token of the old key minted just before still verifies
	// against the published set, which holds both.
	clk.Advance(pushauth.KeyLifetime - time.Minute)
	old, _ := r.Token(t.Context(), "https://recv.example/hook", "proj/orders")
	clk.Advance(2 * time.Minute)
	tok3, err := other.Token(t.Context(), "https://recv.example/hook", "proj/orders")
	if err != nil {
		t.Fatal(err)
	}
	_, kid3, err := verify(t, r, tok3, clk.Now())
	if err != nil || kid3 == kid1 {
		t.Fatalf("after rotation: kid %s (old %s), %v", kid3, kid1, err)
	}
	if _, kid, err := verify(t, r, old, clk.Now()); err != nil || kid != kid1 {
		t.Fatalf("the old key's last token, after rotation: %v", err)
	}
	if ks, _ := store.SigningKeys(t.Context()); len(ks) != 2 {
		t.Fatalf("stored keys after one rotation by two replicas: %d, want 2", len(ks))
	}
	// Once its tokens expired the old key is no longer published.
	clk.Advance(10 * time.Minute)
	set, _ := r.JWKS(t.Context())
	if len(set) != 1 || set[0].Kid != kid3 {
		t.Fatalf("published after the old key's tokens expired: %+v", set)
	}
}
