package metatest

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/meta"
)

// testSubAuthFields: the token-auth and ed25519 settings round-trip through create and update.
func testSubAuthFields(t *testing.T, s SubscriptionStore) {
	p := newProject(t, s, "p")
	q := newQueue(t, s, p.ID, "q", nil)
	sub := subValue(q)
	sub.Signing, sub.SigningPublicKey, sub.SigningPrivateKey = meta.SigningEd25519, "whpk_cHVi", "whsk_cHJpdg=="
	sub.PreviousSigningPrivateKey, sub.PreviousExpiresAt = "whsk_b2xk", base.Add(24*time.Hour)
	sub.AuthType, sub.AuthAudience = meta.AuthOIDC, "https://aud.example"
	must(t, s.CreateSubscription(ctxOf(t), sub), "CreateSubscription")
	sub.Version = 1
	got, err := s.GetSubscription(ctxOf(t), q.ID)
	must(t, err, "GetSubscription")
	sameSub(t, "read back", got, sub)
	if keys := got.Secrets(base.Add(time.Hour)); !slices.Equal(keys, []string{"whsk_cHJpdg==", "whsk_b2xk"}) {
		t.Fatalf("ed25519 keys signing during the overlap: %v", keys)
	}
	if keys := got.Secrets(base.Add(25 * time.Hour)); !slices.Equal(keys, []string{"whsk_cHJpdg=="}) {
		t.Fatalf("ed25519 keys signing after the overlap: %v", keys)
	}
	got.PreviousSigningPrivateKey = ""
	got.AuthAudience, got.Signing, got.SigningPublicKey, got.SigningPrivateKey = "", meta.SigningHMAC, "", ""
	upd, err := s.UpdateSubscription(ctxOf(t), got)
	must(t, err, "UpdateSubscription")
	got.Version = upd.Version
	sameSub(t, "updated", upd, got)
}

// testSigningKeys: keys round-trip oldest first; AddSigningKey refuses when a key at or after
// notBefore exists (one rotation among racing replicas); DeleteSigningKey removes one.
func testSigningKeys(t *testing.T, s SubscriptionStore) {
	ctx := ctxOf(t)
	ks, err := s.SigningKeys(ctx)
	must(t, err, "SigningKeys of an empty store")
	if len(ks) != 0 {
		t.Fatalf("empty store has keys %v", ks)
	}
	k1 := meta.SigningKey{KID: "k1", PrivateKeyDER: []byte{1, 2, 3}, CreatedAt: base, RetireAt: base.Add(30 * 24 * time.Hour)}
	if ok, err := s.AddSigningKey(ctx, k1, base.Add(-time.Hour)); err != nil || !ok {
		t.Fatalf("AddSigningKey k1: %v %v", ok, err)
	}
	later := base.Add(10 * 24 * time.Hour)
	k2 := meta.SigningKey{KID: "k2", PrivateKeyDER: []byte{4}, CreatedAt: later, RetireAt: later.Add(30 * 24 * time.Hour)}
	if ok, err := s.AddSigningKey(ctx, k2, base); err != nil || ok {
		t.Fatalf("AddSigningKey with a key at notBefore: %v %v, want refused", ok, err)
	}
	if ok, err := s.AddSigningKey(ctx, k2, base.Add(time.Second)); err != nil || !ok {
		t.Fatalf("AddSigningKey k2: %v %v", ok, err)
	}
	ks, err = s.SigningKeys(ctx)
	must(t, err, "SigningKeys")
	if len(ks) != 2 || ks[0].KID != "k1" || ks[1].KID != "k2" || !bytes.Equal(ks[0].PrivateKeyDER, k1.PrivateKeyDER) ||
		!ks[0].CreatedAt.Equal(k1.CreatedAt) || !ks[1].RetireAt.Equal(k2.RetireAt) {
		t.Fatalf("keys %+v", ks)
	}
	must(t, s.DeleteSigningKey(ctx, "k1"), "DeleteSigningKey")
	ks, err = s.SigningKeys(ctx)
	must(t, err, "SigningKeys")
	if len(ks) != 1 || ks[0].KID != "k2" {
		t.Fatalf("after delete: %+v", ks)
	}
}
