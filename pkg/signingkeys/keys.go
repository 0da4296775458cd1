// Package signingkeys holds the service's signing keys: an ordered list of (key id, secret) pairs from
// QUEUES_SIGNING_KEYS. The first key signs; every key verifies, so keys rotate by putting a new
// one first and dropping the old one once nothing it signed is in use. Tokens and receipt handles
// use separate keys derived from each secret, so a token's key never verifies a handle.
package signingkeys

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Purposes of derived keys.
const (
	PurposeToken   = "queues/token/v1"
	PurposeReceipt = "queues/receipt/v1"
	// PurposeSQS derives the keys that derive each token's SQS secret access key.
	PurposeSQS = "queues/sqs-secret/v1"
)

// Key is one signing key.
type Key struct {
	ID     string
	Secret []byte
}

// Derive returns the key for one purpose: HMAC-SHA256(secret, purpose).
func (k Key) Derive(purpose string) []byte {
	m := hmac.New(sha256.New, k.Secret)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

// Ring is an ordered key list; the first key signs.
type Ring struct {
	keys []Key
	byID map[string]Key
}

var kidPattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,32}$`)

// New builds a ring from keys; ids must be unique and secrets at least 32 bytes.
func New(ks ...Key) (*Ring, error) {
	if len(ks) == 0 {
		return nil, errors.New("keys: no signing keys")
	}
	r := &Ring{byID: make(map[string]Key, len(ks))}
	for _, k := range ks {
		if !kidPattern.MatchString(k.ID) {
			return nil, fmt.Errorf("keys: key id %q: want 1-32 of [A-Za-z0-9_.-]", k.ID)
		}
		if len(k.Secret) < 32 {
			return nil, fmt.Errorf("keys: key %q: secret must be at least 32 bytes, has %d", k.ID, len(k.Secret))
		}
		if _, dup := r.byID[k.ID]; dup {
			return nil, fmt.Errorf("keys: key id %q appears twice", k.ID)
		}
		r.keys = append(r.keys, k)
		r.byID[k.ID] = k
	}
	return r, nil
}

// Parse reads "kid:base64secret,kid:base64secret,…" (standard or URL base64, padded or not).
func Parse(s string) (*Ring, error) {
	var ks []Key
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		id, b64, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("keys: %q: want kid:base64secret", id)
		}
		secret, err := decodeBase64(b64)
		if err != nil {
			return nil, fmt.Errorf("keys: key %q: secret is not base64: %w", id, err)
		}
		ks = append(ks, Key{ID: id, Secret: secret})
	}
	return New(ks...)
}

func decodeBase64(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("invalid base64")
}

// Generate makes a ring of one random 32-byte key with the given id.
func Generate(id string) (*Ring, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	return New(Key{ID: id, Secret: secret})
}

// String renders the ring in the QUEUES_SIGNING_KEYS format.
func (r *Ring) String() string {
	parts := make([]string, len(r.keys))
	for i, k := range r.keys {
		parts[i] = k.ID + ":" + base64.StdEncoding.EncodeToString(k.Secret)
	}
	return strings.Join(parts, ",")
}

// Signing returns the key that signs.
func (r *Ring) Signing() Key { return r.keys[0] }

// All returns every key, the signing key first.
func (r *Ring) All() []Key { return append([]Key(nil), r.keys...) }

// Lookup finds a verifying key by id.
func (r *Ring) Lookup(id string) (Key, bool) {
	k, ok := r.byID[id]
	return k, ok
}
