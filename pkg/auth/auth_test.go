package auth

import (
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/signingkeys"
)

func authority(t testing.TB, now time.Time) (*Authority, *signingkeys.Ring) {
	r, err := signingkeys.Generate("k1")
	if err != nil {
		t.Fatal(err)
	}
	return New(r, "operator-secret", func() time.Time { return now }), r
}

func TestIssueVerify(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a, _ := authority(t, now)
	p, tok := ids.New(), ids.New()
	exp := now.Add(time.Hour)
	s, err := a.Issue(p, tok, []string{ScopeQueuesAdmin}, now, &exp)
	if err != nil {
		t.Fatal(err)
	}
	got, err := a.Verify(s)
	if err != nil || got.ProjectID != p || got.TokenID != tok || got.Operator {
		t.Fatalf("Verify = %+v, %v", got, err)
	}
	if !got.Has(ScopeQueuesRead) || !got.Has(ScopeQueuesAdmin) || got.Has(ScopeMessagesSend) {
		t.Fatalf("scopes wrong: %+v", got)
	}
	later := New(mustRingFrom(t, a), "", func() time.Time { return exp.Add(time.Minute) })
	if _, err := later.Verify(s); apierr.CodeOf(err) != apierr.Unauthenticated {
		t.Fatalf("expired token accepted: %v", err)
	}
}

func mustRingFrom(t *testing.T, a *Authority) *signingkeys.Ring { return a.ring }

func TestOperator(t *testing.T) {
	t.Parallel()
	a, _ := authority(t, time.Now())
	p, err := a.Verify("operator-secret")
	if err != nil || !p.Operator || p.Has(ScopeQueuesRead) {
		t.Fatalf("operator = %+v, %v", p, err)
	}
	if _, err := a.Verify("operator-secreT"); apierr.CodeOf(err) != apierr.Unauthenticated {
		t.Fatal("near-miss operator secret accepted")
	}
}

func TestRejectsForeignAndNone(t *testing.T) {
	t.Parallel()
	now := time.Now()
	a, _ := authority(t, now)
	b, _ := authority(t, now)
	s, _ := b.Issue(ids.New(), ids.New(), []string{ScopeAll}, now, nil)
	if _, err := a.Verify(s); err == nil {
		t.Fatal("token of another key ring accepted")
	}
	// alg=none and a re-encoded header must fail.
	none := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"sub": ids.New().String(), "iss": "queues"})
	ns, _ := none.SignedString(jwt.UnsafeAllowNoneSignatureType)
	if _, err := a.Verify(ns); err == nil {
		t.Fatal("alg none accepted")
	}
	for _, bad := range []string{"", "x", "a.b.c", strings.Repeat("a", 5000)} {
		if _, err := a.Verify(bad); apierr.CodeOf(err) != apierr.Unauthenticated {
			t.Fatalf("Verify(%q) = %v", bad, err)
		}
	}
}

func TestSQSSecret(t *testing.T) {
	t.Parallel()
	k1, _ := signingkeys.Generate("k1")
	k2, _ := signingkeys.Generate("k2")
	both, _ := signingkeys.New(append(k2.All(), k1.All()...)...)
	a1, a2 := New(k1, "", time.Now), New(both, "", time.Now)
	tok, other := ids.New(), ids.New()
	s := a1.SQSSecret(tok)
	if len(s) != 40 || s != a1.SQSSecret(tok) || s == a1.SQSSecret(other) {
		t.Fatalf("secret %q: want 40 characters, stable, one per token", s)
	}
	// After a rotation the new key derives the shown secret and the old one still verifies.
	all := a2.SQSSecrets(tok)
	if len(all) != 2 || all[0] != a2.SQSSecret(tok) || all[1] != s || all[0] == s {
		t.Fatalf("secrets after rotation %v, old %q", all, s)
	}
}
