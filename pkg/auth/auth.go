// Package auth issues and verifies the bearer credentials of the API: project tokens (JWTs
// signed with the service's keys, scoped to one project) and the operator credential (a secret
// from configuration). Revocation is not checked here: the API checks the verified token id
// against its metadata cache, which bounds how long a revoked token keeps working.
package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"slices"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/signingkeys"
)

// Scopes a project token may hold.
const (
	ScopeAll             = "*"
	ScopeQueuesAdmin     = "queues:admin"
	ScopeQueuesRead      = "queues:read"
	ScopeMessagesSend    = "messages:send"
	ScopeMessagesReceive = "messages:receive"
)

// AllScopes lists the scopes a token can be given.
var AllScopes = []string{ScopeAll, ScopeQueuesAdmin, ScopeQueuesRead, ScopeMessagesSend, ScopeMessagesReceive}

const issuer = "queues"

// Principal is who a request acts as.
type Principal struct {
	Operator  bool
	ProjectID ids.ID
	TokenID   ids.ID
	Scopes    []string
}

// Has reports whether the principal holds scope. "*" holds every project scope and
// queues:admin implies queues:read. The operator holds no project scope.
func (p Principal) Has(scope string) bool {
	if p.Operator {
		return false
	}
	for _, s := range p.Scopes {
		if s == scope || s == ScopeAll || (s == ScopeQueuesAdmin && scope == ScopeQueuesRead) {
			return true
		}
	}
	return false
}

type claims struct {
	Scopes []string `json:"scp"`
	jwt.RegisteredClaims
}

// Authority signs and verifies credentials.
type Authority struct {
	ring     *signingkeys.Ring
	derived  map[string][]byte
	sqs      [][]byte // per key, signing key first: derives SQS secret access keys
	operator [32]byte
	hasOp    bool
	now      func() time.Time
}

// New returns an Authority. operatorToken may be empty (no operator access).
func New(ring *signingkeys.Ring, operatorToken string, now func() time.Time) *Authority {
	a := &Authority{ring: ring, derived: map[string][]byte{}, now: now}
	for _, k := range ring.All() {
		a.derived[k.ID] = k.Derive(signingkeys.PurposeToken)
		a.sqs = append(a.sqs, k.Derive(signingkeys.PurposeSQS))
	}
	if operatorToken != "" {
		a.operator = sha256.Sum256([]byte(operatorToken))
		a.hasOp = true
	}
	return a
}

// Issue signs a project token. expiresAt nil means no expiry.
func (a *Authority) Issue(projectID, tokenID ids.ID, scopes []string, issuedAt time.Time, expiresAt *time.Time) (string, error) {
	c := claims{
		Scopes: scopes,
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    issuer,
			Subject:   projectID.String(),
			ID:        tokenID.String(),
			IssuedAt:  jwt.NewNumericDate(issuedAt),
			NotBefore: jwt.NewNumericDate(issuedAt.Add(-time.Minute)),
		},
	}
	if expiresAt != nil {
		c.ExpiresAt = jwt.NewNumericDate(*expiresAt)
	}
	k := a.ring.Signing()
	t := jwt.NewWithClaims(jwt.SigningMethodHS256, c)
	t.Header["kid"] = k.ID
	return t.SignedString(a.derived[k.ID])
}

// MaxTokenBytes bounds a bearer credential. Ours are a few hundred bytes; anything longer is
// refused before a byte of it is base64- or JSON-decoded, so a huge token costs no parsing.
const MaxTokenBytes = 4 << 10

var errUnauth = apierr.New(apierr.Unauthenticated, "missing, malformed, expired or unknown bearer token")

// Verify checks a bearer credential. It answers the operator for the configured operator
// secret, a project principal for a valid JWT, and unauthenticated otherwise.
func (a *Authority) Verify(bearer string) (Principal, error) {
	if bearer == "" || len(bearer) > MaxTokenBytes {
		return Principal{}, errUnauth
	}
	if a.hasOp {
		sum := sha256.Sum256([]byte(bearer))
		if hmac.Equal(sum[:], a.operator[:]) {
			return Principal{Operator: true}, nil
		}
	}
	var c claims
	_, err := jwt.ParseWithClaims(bearer, &c, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		if k, ok := a.derived[kid]; ok {
			return k, nil
		}
		return nil, errors.New("unknown key id")
	},
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithIssuer(issuer),
		jwt.WithTimeFunc(a.now),
		jwt.WithLeeway(5*time.Second),
		jwt.WithIssuedAt(),
	)
	if err != nil {
		return Principal{}, errUnauth
	}
	pid, err1 := ids.ParseUUID(c.Subject)
	tid, err2 := ids.ParseUUID(c.ID)
	if err1 != nil || err2 != nil || len(c.Scopes) == 0 {
		return Principal{}, errUnauth
	}
	for _, s := range c.Scopes {
		if !slices.Contains(AllScopes, s) {
			return Principal{}, errUnauth
		}
	}
	return Principal{ProjectID: pid, TokenID: tid, Scopes: c.Scopes}, nil
}

// SQSSecret is a token's SQS secret access key (docs/sqs.md): derived from the token id with the
// signing key, so it is never stored and the operator can show it again.
func (a *Authority) SQSSecret(tokenID ids.ID) string { return sqsSecret(a.sqs[0], tokenID) }

// SQSSecrets are the token's secret under every key of the ring, the signing key's first: a
// request signed with any of them verifies, so secrets survive a key rotation until the old
// key leaves the ring.
func (a *Authority) SQSSecrets(tokenID ids.ID) []string {
	out := make([]string, len(a.sqs))
	for i, k := range a.sqs {
		out[i] = sqsSecret(k, tokenID)
	}
	return out
}

// sqsSecret is 40 characters, the length of an AWS secret access key: 30 bytes of
// HMAC-SHA256(key, token id), base64url.
func sqsSecret(key []byte, tokenID ids.ID) string {
	m := hmac.New(sha256.New, key)
	m.Write(tokenID[:])
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:30])
}
