// Package ids holds the service's identifiers: 16-byte UUIDs and their slugs. A slug is a type
// prefix ("que_", "prj_", …) followed by the 26-character lowercase base32 (Crockford alphabet)
// encoding of the id's 16 bytes, so an id and its slug map to each other without a lookup.
package ids

import (
	"encoding/base32"
	"errors"
	"strings"

	"github.com/google/uuid"
)

// ID is a UUID in its 16 raw bytes.
type ID [16]byte

// Slug prefixes of the resource types.
const (
	ProjectPrefix      = "prj_"
	QueuePrefix        = "que_"
	SubscriptionPrefix = "qsb_"
	TokenPrefix        = "tok_"
	TopicPrefix        = "top_"
	BindingPrefix      = "qbd_"
)

var (
	enc = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)
	// ErrMalformed is returned for a value that is neither a UUID nor a slug of the wanted type.
	ErrMalformed = errors.New("malformed id")
)

// New returns a new time-ordered (version 7) id, so ids sort in creation order.
func New() ID {
	u, err := uuid.NewV7()
	if err != nil {
		// NewV7 fails only when the system's random source fails; nothing sensible remains.
		panic(err)
	}
	return ID(u)
}

// String formats the id as a lowercase UUID.
func (id ID) String() string { return uuid.UUID(id).String() }

// IsZero reports whether the id is all zeroes.
func (id ID) IsZero() bool { return id == ID{} }

// Slug returns prefix followed by the id's encoding.
func (id ID) Slug(prefix string) string { return prefix + enc.EncodeToString(id[:]) }

// LooksLikeUUID reports whether s has the 8-4-4-4-12 hex-digit shape (any case).
// It runs on every request that names a queue, so it is a loop, not a regexp (a regexp match
// costs a machine from its pool and a few hundred nanoseconds).
func LooksLikeUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !isHex(c) {
				return false
			}
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// ParseUUID parses a UUID in its 8-4-4-4-12 form.
func ParseUUID(s string) (ID, error) {
	if !LooksLikeUUID(s) {
		return ID{}, ErrMalformed
	}
	u, err := uuid.Parse(s)
	if err != nil {
		return ID{}, ErrMalformed
	}
	return ID(u), nil
}

// ParseSlug decodes a slug with the given prefix.
func ParseSlug(prefix, s string) (ID, error) {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok || len(rest) != 26 {
		return ID{}, ErrMalformed
	}
	b, err := enc.DecodeString(strings.ToLower(rest))
	if err != nil || len(b) != 16 {
		return ID{}, ErrMalformed
	}
	// 26 base32 characters carry 130 bits; the last two must be zero for a canonical slug.
	var id ID
	copy(id[:], b)
	if id.Slug(prefix) != prefix+strings.ToLower(rest) {
		return ID{}, ErrMalformed
	}
	return id, nil
}

// Parse accepts either the UUID or the slug with the given prefix.
func Parse(prefix, s string) (ID, error) {
	if strings.HasPrefix(s, prefix) {
		return ParseSlug(prefix, s)
	}
	return ParseUUID(s)
}

// FromBytes converts a 16-byte slice; ok is false for any other length.
func FromBytes(b []byte) (id ID, ok bool) {
	if len(b) != 16 {
		return ID{}, false
	}
	copy(id[:], b)
	return id, true
}
