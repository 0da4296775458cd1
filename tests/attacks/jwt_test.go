package attacks

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/signingkeys"
)

// claimsFor are claims a real token of project p would carry.
func claimsFor(p string, mod func(jwt.MapClaims)) jwt.MapClaims {
	pid, _ := ids.Parse(ids.ProjectPrefix, p)
	now := time.Now()
	c := jwt.MapClaims{"iss": "queues", "sub": pid.String(), "jti": ids.New().String(), "scp": []string{"*"},
		"iat": now.Unix(), "nbf": now.Add(-time.Minute).Unix()}
	if mod != nil {
		mod(c)
	}
	return c
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// X1–X9: every forged or misused token is 401 unauthenticated on a project route.
func TestForgedTokens(t *testing.T) {
	p, good := project(t)
	call(t, "GET", "/v1/queues", good, nil).is(t, 200, "", "")
	parts := strings.Split(good, ".")
	attacker, _ := signingkeys.Generate("k") // a key of the attacker's own
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	signed := func(m jwt.SigningMethod, key any, hdr map[string]any, c jwt.MapClaims) string {
		tok := jwt.NewWithClaims(m, c)
		for k, v := range hdr {
			tok.Header[k] = v
		}
		s, err := tok.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	var fetched atomic.Int32
	keyServer := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { fetched.Add(1) }))
	defer keyServer.Close()
	secret := attacker.Signing().Derive(signingkeys.PurposeToken)

	cases := map[string]string{
		// X1, X2: alg none and its case games, with and without a signature.
		"alg none":           b64(`{"alg":"none","typ":"JWT"}`) + "." + parts[1] + ".",
		"alg nOnE":           b64(`{"alg":"nOnE","typ":"JWT"}`) + "." + parts[1] + ".",
		"alg NONE, sig kept": b64(`{"alg":"NONE"}`) + "." + parts[1] + "." + parts[2],
		// X3: another algorithm; RS256 signed; HS256 under a key that is not ours.
		"HS512":             signed(jwt.SigningMethodHS512, secret, map[string]any{"kid": e.ring.Signing().ID}, claimsFor(p, nil)),
		"RS256":             signed(jwt.SigningMethodRS256, rsaKey, map[string]any{"kid": e.ring.Signing().ID}, claimsFor(p, nil)),
		"HS256 foreign key": signed(jwt.SigningMethodHS256, secret, map[string]any{"kid": e.ring.Signing().ID}, claimsFor(p, nil)),
		// X4: kid games.
		"kid traversal": signed(jwt.SigningMethodHS256, secret, map[string]any{"kid": "../../../../etc/passwd"}, claimsFor(p, nil)),
		"kid sql":       signed(jwt.SigningMethodHS256, secret, map[string]any{"kid": "' OR 1=1 --"}, claimsFor(p, nil)),
		"kid 3 KB":      signed(jwt.SigningMethodHS256, secret, map[string]any{"kid": strings.Repeat("k", 3000)}, claimsFor(p, nil)),
		"kid unknown":   signed(jwt.SigningMethodHS256, secret, map[string]any{"kid": "nope"}, claimsFor(p, nil)),
		// X5: key-location headers pointing at the attacker's server.
		"jku/x5u/jwk": signed(jwt.SigningMethodHS256, secret, map[string]any{"kid": "atk", "jku": keyServer.URL, "x5u": keyServer.URL,
			"jwk": map[string]any{"kty": "oct", "k": base64.RawURLEncoding.EncodeToString(secret)}}, claimsFor(p, nil)),
		// X6: signed with a key we do not hold, expired / not yet valid (our key would be needed
		// to test the clock alone: see TestTokenLifetimes).
		// X8: wrong issuer, header and payload swapped.
		"payload tampered": parts[0] + "." + b64(strings.Replace(string(mustDecode(t, parts[1])), `"scp":[`, `"scp":["*",`, 1)) + "." + parts[2],
		"signature cut":    parts[0] + "." + parts[1] + "." + parts[2][:10],
		"not a JWT":        "definitely-not-a-token",
		"two parts":        parts[0] + "." + parts[1],
		// X9: a credential of another kind: a receipt handle, the signing secret itself.
		"receipt handle": queueWithMessage(t, good, "x9", nil),
		"key material":   e.ring.Signing().ID,
	}
	for name, tok := range cases {
		a := call(t, "GET", "/v1/queues", tok, nil)
		if a.status != 401 || a.code() != "unauthenticated" {
			t.Errorf("%s: %d %s; want 401 unauthenticated", name, a.status, a.code())
		}
	}
	if n := fetched.Load(); n != 0 {
		t.Errorf("X5: the server fetched an attacker-named key %d times", n)
	}
}

func mustDecode(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// X6, X8: tokens signed with our key but outside their lifetime or from another issuer are
// refused; the server's own leeway is 5 s.
func TestTokenLifetimes(t *testing.T) {
	p, good := project(t)
	// The real token's id: each forgery below differs from a valid token in one claim only.
	var real map[string]any
	if err := json.Unmarshal(mustDecode(t, strings.Split(good, ".")[1]), &real); err != nil {
		t.Fatal(err)
	}
	k := e.ring.Signing()
	secret := k.Derive(signingkeys.PurposeToken)
	sign := func(mod func(jwt.MapClaims)) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, claimsFor(p, func(c jwt.MapClaims) {
			c["jti"] = real["jti"]
			if mod != nil {
				mod(c)
			}
		}))
		tok.Header["kid"] = k.ID
		s, _ := tok.SignedString(secret)
		return s
	}
	now := time.Now()
	call(t, "GET", "/v1/queues", sign(nil), nil).is(t, 200, "", "") // the control: one claim from each case
	for name, tok := range map[string]string{
		"expired a minute ago":    sign(func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Minute).Unix() }),
		"not valid for an hour":   sign(func(c jwt.MapClaims) { c["nbf"] = now.Add(time.Hour).Unix() }),
		"issued in the future":    sign(func(c jwt.MapClaims) { c["iat"] = now.Add(time.Hour).Unix() }),
		"another issuer":          sign(func(c jwt.MapClaims) { c["iss"] = "someone-else" }),
		"no project":              sign(func(c jwt.MapClaims) { delete(c, "sub") }),
		"unknown scope":           sign(func(c jwt.MapClaims) { c["scp"] = []string{"root"} }),
		"unknown token id (X13)":  sign(func(c jwt.MapClaims) { c["jti"] = ids.New().String() }),
		"deeply nested raw (X10)": b64(`{"alg":"HS256","kid":"`+k.ID+`"}`) + "." + b64(strings.Repeat(`{"a":`, 500)+"1"+strings.Repeat("}", 500)) + ".sig",
	} {
		a := call(t, "GET", "/v1/queues", tok, nil)
		if a.status != 401 || a.code() != "unauthenticated" {
			t.Errorf("%s: %d %s; want 401 unauthenticated", name, a.status, a.code())
		}
	}
}

// X10, X36: a 100 KiB Authorization header is refused by the server (431) and a 5 KiB token
// (over the 4 KiB cap) with 401 before it is decoded.
func TestHugeCredentials(t *testing.T) {
	_, good := project(t)
	a := call(t, "GET", "/v1/queues", good+strings.Repeat("A", 100<<10), nil)
	if a.status != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("100 KiB Authorization: %d; want 431", a.status)
	}
	call(t, "GET", "/v1/queues", good+"."+strings.Repeat("A", 5<<10), nil).is(t, 401, "unauthenticated", "")
	call(t, "GET", "/healthz", "", nil).is(t, 200, "", "")
}
