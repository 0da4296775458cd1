package webhook

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
)

// Asymmetric signatures (Standard Webhooks "v1a"): the sender signs "id.timestamp.body" with
// an ed25519 private key; receivers hold only the public key, so none of them can forge a push.
const (
	// PublicKeyPrefix marks an ed25519 public key: "whpk_" + base64 of its 32 bytes.
	PublicKeyPrefix = "whpk_"
	// PrivateKeyPrefix marks an ed25519 private key: "whsk_" + base64 of its 64 bytes
	// (seed and public key, as crypto/ed25519 keeps it). The service never shows it.
	PrivateKeyPrefix = "whsk_"
)

// ErrBadPublicKey: a key that is not whpk_ + base64 of 32 bytes.
var ErrBadPublicKey = errors.New("queues: push: a public key is not whpk_<base64 of 32 bytes>")

// NewKeyPair returns a new ed25519 signing key pair as (whpk_…, whsk_…).
func NewKeyPair() (public, private string) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader) // crypto/rand never fails
	return PublicKeyPrefix + base64.StdEncoding.EncodeToString(pub), PrivateKeyPrefix + base64.StdEncoding.EncodeToString(priv)
}

// PublicKey decodes a whpk_ public key.
func PublicKey(s string) (ed25519.PublicKey, error) {
	b64, ok := strings.CutPrefix(s, PublicKeyPrefix)
	if !ok {
		return nil, ErrBadPublicKey
	}
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, ErrBadPublicKey
	}
	return ed25519.PublicKey(b), nil
}

// privateKey decodes a whsk_ private key.
func privateKey(s string) (ed25519.PrivateKey, error) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, PrivateKeyPrefix))
	if err != nil || len(b) != ed25519.PrivateKeySize {
		return nil, ErrBadSecret
	}
	return ed25519.PrivateKey(b), nil
}

// signedContent is what both schemes sign: "id.timestamp.body".
func signedContent(id, timestamp string, body []byte) []byte {
	msg := make([]byte, 0, len(id)+len(timestamp)+2+len(body))
	msg = append(append(append(append(append(msg, id...), '.'), timestamp...), '.'), body...)
	return msg
}

// signV1a returns "v1a,<base64 ed25519 signature>".
func signV1a(private, id string, timestamp int64, body []byte) (string, error) {
	key, err := privateKey(private)
	if err != nil {
		return "", err
	}
	sig := ed25519.Sign(key, signedContent(id, strconv.FormatInt(timestamp, 10), body))
	return "v1a," + base64.StdEncoding.EncodeToString(sig), nil
}

// verifyV1a reports whether one of the v1a signatures is pub's signature of the request.
func verifyV1a(pub ed25519.PublicKey, given [][]byte, id, timestamp string, body []byte) bool {
	msg := signedContent(id, timestamp, body)
	for _, sig := range given {
		if ed25519.Verify(pub, msg, sig) {
			return true
		}
	}
	return false
}
