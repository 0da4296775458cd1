package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/queueshq/queues/pkg/ids"
)

// FuzzVerify: the token parser never panics, and accepts only what it could have issued: at
// most MaxTokenBytes, HS256 under one of our keys (the signature recomputed here, independently
// of golang-jwt), our issuer, a project, a token id and known scopes.
func FuzzVerify(f *testing.F) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a, r := authority(f, now)
	exp := now.Add(time.Hour)
	good, _ := a.Issue(ids.New(), ids.New(), []string{ScopeAll}, now, &exp)
	forever, _ := a.Issue(ids.New(), ids.New(), []string{ScopeQueuesRead, ScopeMessagesSend}, now, nil)
	none := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"iss": issuer, "sub": ids.New().String()})
	ns, _ := none.SignedString(jwt.UnsafeAllowNoneSignatureType)
	for _, s := range []string{good, forever, ns, "operator-secret", "", "a.b.c", good + "x", strings.Replace(good, ".", "..", 1),
		`eyJhbGciOiJIUzI1NiIsImtpZCI6IiJ9.e30.`, strings.Repeat("A", MaxTokenBytes+1)} {
		f.Add(s)
	}
	key := a.derived[r.Signing().ID]
	f.Fuzz(func(t *testing.T, tok string) {
		p, err := a.Verify(tok)
		if err != nil {
			return
		}
		if p.Operator {
			if tok != "operator-secret" {
				t.Fatalf("operator from %q", tok)
			}
			return
		}
		if len(tok) > MaxTokenBytes {
			t.Fatalf("accepted a %d-byte token", len(tok))
		}
		parts := strings.Split(tok, ".")
		if len(parts) != 3 {
			t.Fatalf("accepted %d parts", len(parts))
		}
		m := hmac.New(sha256.New, key)
		m.Write([]byte(parts[0] + "." + parts[1]))
		sig, err := base64.RawURLEncoding.DecodeString(parts[2])
		if err != nil || !hmac.Equal(sig, m.Sum(nil)) {
			t.Fatalf("accepted a token whose signature is not ours: %q", tok)
		}
		if p.ProjectID == (ids.ID{}) || p.TokenID == (ids.ID{}) || len(p.Scopes) == 0 {
			t.Fatalf("accepted principal %+v", p)
		}
	})
}
