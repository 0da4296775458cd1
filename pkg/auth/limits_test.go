package auth

import (
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/ids"
)

// A correctly signed token longer than MaxTokenBytes is refused: the length is checked before
// any decoding, so a megabyte of claims costs nothing to turn away.
func TestLongTokenRefusedBeforeDecoding(t *testing.T) {
	t.Parallel()
	now := time.Now()
	a, r := authority(t, now)
	sign := func(pad int) string {
		c := jwt.MapClaims{
			"iss": issuer, "sub": ids.New().String(), "jti": ids.New().String(), "scp": []string{ScopeAll},
			"iat": now.Unix(), "pad": strings.Repeat("x", pad),
		}
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, c)
		tok.Header["kid"] = r.Signing().ID
		s, err := tok.SignedString(a.derived[r.Signing().ID])
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	short := sign(100)
	if _, err := a.Verify(short); err != nil {
		t.Fatalf("a short padded token should verify: %v", err)
	}
	long := sign(MaxTokenBytes)
	if len(long) <= MaxTokenBytes {
		t.Fatalf("test token is only %d bytes", len(long))
	}
	if _, err := a.Verify(long); apierr.CodeOf(err) != apierr.Unauthenticated {
		t.Fatalf("a %d-byte token: %v; want unauthenticated", len(long), err)
	}
}
