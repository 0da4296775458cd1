package pusher

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
)

// SecretPrefix marks a Standard Webhooks signing secret.
const SecretPrefix = "whsec_"

// secretBytes is the length of a new signing secret (Standard Webhooks asks for 24 to 64).
const secretBytes = 32

// NewSecret returns a new random signing secret, "whsec_" + base64 of 32 bytes.
func NewSecret() string {
	b := make([]byte, secretBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it panics on a broken system source)
	return SecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// secretKey decodes a whsec_ secret to its HMAC key.
func secretKey(secret string) ([]byte, error) {
	rest, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, errors.New("signing secret without the whsec_ prefix")
	}
	return base64.StdEncoding.DecodeString(rest)
}

// Signature returns the webhook-signature header value for one request: "v1,<base64
// HMAC-SHA256(key, id.timestamp.body)>" for each secret, space-separated (Standard Webhooks
// lets a sender sign with several secrets while one rotates). Secrets that do not decode are
// skipped.
func Signature(secrets []string, id string, timestamp int64, body []byte) string {
	var sigs []string
	for _, s := range secrets {
		key, err := secretKey(s)
		if err != nil {
			continue
		}
		m := hmac.New(sha256.New, key)
		m.Write([]byte(id))
		m.Write([]byte{'.'})
		m.Write([]byte(strconv.FormatInt(timestamp, 10)))
		m.Write([]byte{'.'})
		m.Write(body)
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)))
	}
	return strings.Join(sigs, " ")
}
