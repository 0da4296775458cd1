// Package webhook is what the pusher, the API and the SDKs share about push deliveries
// (docs/push.md), signed the Standard Webhooks way: the signing secret (whsec_ + base64 of the
// HMAC key), the signature of one request (HMAC-SHA256 of "id.timestamp.body"), its
// verification, and the policy of which endpoints a push may go to. It is a leaf: no Redis,
// no storage, no HTTP server — the API imports it without the pusher.
package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Standard Webhooks headers of a push.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// SecretPrefix marks a Standard Webhooks signing secret.
const SecretPrefix = "whsec_"

// secretBytes is the length of a new signing secret (Standard Webhooks asks for 24 to 64).
const secretBytes = 32

// DefaultTolerance is how far a push's webhook-timestamp may be from the receiver's clock.
const DefaultTolerance = 5 * time.Minute

// Verification failures.
var (
	ErrMissingHeaders   = errors.New("queues: push: missing webhook-id, webhook-timestamp or webhook-signature")
	ErrBadTimestamp     = errors.New("queues: push: webhook-timestamp is not unix seconds")
	ErrStaleTimestamp   = errors.New("queues: push: webhook-timestamp is outside the tolerance")
	ErrNoMatchingSecret = errors.New("queues: push: no signature matches a signing secret")
	// ErrBadSecret: a secret without the prefix, not base64, or with an empty key — an empty
	// HMAC key would make every signature forgeable by anyone, so it never signs or verifies.
	ErrBadSecret = errors.New("queues: push: a signing secret is not whsec_<base64>")
)

// NewSecret returns a new random signing secret, "whsec_" + base64 of 32 bytes.
func NewSecret() string {
	b := make([]byte, secretBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it panics on a broken system source)
	return SecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// Key decodes a signing secret to its HMAC key.
func Key(secret string) ([]byte, error) {
	s, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, ErrBadSecret
	}
	key, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(key) == 0 {
		return nil, ErrBadSecret
	}
	return key, nil
}

// mac is the one HMAC of a push: HMAC-SHA256(key, "id.timestamp.body").
func mac(key []byte, id, timestamp string, body []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(id))
	h.Write([]byte{'.'})
	h.Write([]byte(timestamp))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// Sign returns the signature of one request under secret: "v1,<base64 HMAC>" for a whsec_
// secret, "v1a,<base64 ed25519 signature>" for a whsk_ private key. timestamp is the
// webhook-timestamp, unix seconds.
func Sign(secret, id string, timestamp int64, body []byte) (string, error) {
	if strings.HasPrefix(secret, PrivateKeyPrefix) {
		return signV1a(secret, id, timestamp, body)
	}
	key, err := Key(secret)
	if err != nil {
		return "", err
	}
	return "v1," + base64.StdEncoding.EncodeToString(mac(key, id, strconv.FormatInt(timestamp, 10), body)), nil
}

// SignAll returns the webhook-signature header value: a signature for each secret,
// space-separated (Standard Webhooks lets a sender sign with several secrets while one
// rotates). Secrets that do not decode are skipped.
func SignAll(secrets []string, id string, timestamp int64, body []byte) string {
	var sigs []string
	for _, s := range secrets {
		if sig, err := Sign(s, id, timestamp, body); err == nil {
			sigs = append(sigs, sig)
		}
	}
	return strings.Join(sigs, " ")
}

// Verify checks one request's signature: the three header values are present, the timestamp
// is within tolerance of now (0: DefaultTolerance), and one of the space-separated "v1,…"
// signatures is the HMAC under one of the secrets (the current and, for 24 h after a
// rotation, the previous one; empty strings are skipped, a malformed secret is an error) —
// or, for a secret that is an ed25519 public key (whpk_…), one of the "v1a,…" signatures is
// its signature. HMAC comparisons take constant time.
func Verify(secrets []string, id, timestamp, signatures string, body []byte, now time.Time, tolerance time.Duration) error {
	if id == "" || timestamp == "" || signatures == "" {
		return ErrMissingHeaders
	}
	secs, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return ErrBadTimestamp
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	if d := now.Sub(time.Unix(secs, 0)); d > tolerance || d < -tolerance {
		return ErrStaleTimestamp
	}
	given, givenA := parseSignatures(signatures)
	for _, secret := range secrets {
		if secret == "" { // an unset previous secret
			continue
		}
		if strings.HasPrefix(secret, PublicKeyPrefix) {
			pub, err := PublicKey(secret)
			if err != nil {
				return err
			}
			if verifyV1a(pub, givenA, id, timestamp, body) {
				return nil
			}
			continue
		}
		key, err := Key(secret)
		if err != nil {
			return err
		}
		want := mac(key, id, timestamp, body)
		for _, sig := range given {
			if hmac.Equal(sig, want) {
				return nil
			}
		}
	}
	return ErrNoMatchingSecret
}

// parseSignatures splits a webhook-signature header into its decoded v1 and v1a signatures
// (unknown versions and bad base64 are skipped, as Standard Webhooks asks).
func parseSignatures(signatures string) (v1, v1a [][]byte) {
	for _, s := range strings.Fields(signatures) {
		v, b64, ok := strings.Cut(s, ",")
		if !ok {
			continue
		}
		sig, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			continue
		}
		switch v {
		case "v1":
			v1 = append(v1, sig)
		case "v1a":
			v1a = append(v1a, sig)
		}
	}
	return v1, v1a
}
