package meta

import (
	"context"
	"errors"
	"time"

	"github.com/queueshq/queues/pkg/ids"
)

// ErrSubscriptionConflict is returned by UpdateSubscription when the subscription changed since
// it was read (its Version differs).
var ErrSubscriptionConflict = errors.New("meta: subscription changed concurrently")

// Subscription is a queue's push subscription (docs/push.md): at most one per queue.
type Subscription struct {
	ID             ids.ID
	QueueID        ids.ID
	ProjectID      ids.ID
	Endpoint       string
	BatchSize      int
	BatchWindowMs  int
	MaxInFlight    int
	TimeoutSeconds int
	Paused         bool
	// Endpoint health (issue 37). DisableAfterSeconds is how long every push attempt must
	// have failed before the pusher disables the subscription (0: never). Disabled stops
	// pushing until a PATCH makes it active again; DisabledReason and DisabledAt say why and
	// since when.
	DisableAfterSeconds int
	Disabled            bool
	DisabledReason      string
	DisabledAt          time.Time
	// MaxMessagesPerSecond bounds the messages the subscription pushes per second (0: no
	// bound); FlowControl bounds each key's share (rate and keyed flow control).
	MaxMessagesPerSecond int
	FlowControl          FlowControl
	// Secret is the current signing secret ("whsec_" + base64). PreviousSecret, when not empty,
	// keeps signing alongside until PreviousExpiresAt (rotation).
	Secret            string
	PreviousSecret    string
	PreviousExpiresAt time.Time
	// Token auth and asymmetric signatures (issue 37 item 4). Signing is "" or "hmac" (the
	// secrets above) or "ed25519": then SigningPrivateKey ("whsk_" + base64 of the 64-byte
	// ed25519 private key) signs v1a and SigningPublicKey ("whpk_" + base64) is shown.
	// AuthType "oidc" adds a bearer JWT whose aud is AuthAudience (empty: the endpoint).
	// PreviousSigningPrivateKey, when not empty, is the private key a rotation replaced: it
	// keeps signing beside the new one until PreviousExpiresAt, as the previous secret does,
	// so a receiver still holding the old public key verifies every push while it switches.
	Signing                   string
	SigningPublicKey          string
	SigningPrivateKey         string
	PreviousSigningPrivateKey string
	AuthType                  string
	AuthAudience              string
	CreatedAt                 time.Time
	UpdatedAt                 time.Time
	// Version increases with every update (optimistic concurrency for UpdateSubscription).
	Version int64
}

// FlowControl is a subscription's keyed flow control: messages whose attribute KeyAttribute has
// the same value (absent counts as the empty value) share one key's budget of Parallelism
// batches in flight and MessagesPerSecond messages a second (0: no rate bound). An empty
// KeyAttribute turns it off.
type FlowControl struct {
	KeyAttribute      string `json:",omitempty"`
	Parallelism       int    `json:",omitempty"`
	MessagesPerSecond int    `json:",omitempty"`
}

// Keyed reports whether keyed flow control is on.
func (f FlowControl) Keyed() bool { return f.KeyAttribute != "" }

// Secrets returns the secrets that sign at time now: the current one, and the previous one
// while its overlap lasts — for ed25519 signing, the private keys (current, then previous)
// instead of the HMAC secrets.
func (s Subscription) Secrets(now time.Time) []string {
	current, previous := s.Secret, s.PreviousSecret
	if s.Signing == SigningEd25519 {
		current, previous = s.SigningPrivateKey, s.PreviousSigningPrivateKey
	}
	out := []string{current}
	if previous != "" && now.Before(s.PreviousExpiresAt) {
		out = append(out, previous)
	}
	return out
}

// SubscriptionStore keeps push subscriptions, keyed by their queue. Errors carry apierr
// codes: NotFound for a missing subscription (or, on create, a missing queue),
// SubscriptionExists when the queue already has one, ErrBadCursor (InvalidArgument) for a
// bad cursor, Unavailable when the backend cannot be reached.
type SubscriptionStore interface {
	// CreateSubscription stores a new subscription with Version 1 for an existing queue of the
	// same project that has none yet.
	CreateSubscription(ctx context.Context, s Subscription) error
	// GetSubscription reads the subscription of a queue.
	GetSubscription(ctx context.Context, queueID ids.ID) (Subscription, error)
	// UpdateSubscription replaces the settings and secrets of s if its stored Version equals
	// s.Version (else ErrSubscriptionConflict), and returns what is stored, with the new Version.
	// ID, QueueID, ProjectID and CreatedAt never change.
	UpdateSubscription(ctx context.Context, s Subscription) (Subscription, error)
	// DeleteSubscription deletes the subscription of a queue (NotFound when it has none).
	DeleteSubscription(ctx context.Context, queueID ids.ID) error
	// ListSubscriptions lists every subscription of every project in queue id order (the
	// pusher fleet's work list).
	ListSubscriptions(ctx context.Context, page Page) (subs []Subscription, nextCursor string, err error)
}

// TokenSubject is the sub claim of a push token: the subscription, as "<project id>/<queue name>".
func TokenSubject(projectID ids.ID, queueName string) string {
	return projectID.String() + "/" + queueName
}

// TokenAudience is the aud claim of a push token: the audience set, else the endpoint.
func (s Subscription) TokenAudience() string {
	if s.AuthAudience != "" {
		return s.AuthAudience
	}
	return s.Endpoint
}

// Signing schemes of a subscription.
const (
	SigningHMAC    = "hmac"
	SigningEd25519 = "ed25519"
)

// AuthOIDC is the auth type that adds a service-signed bearer JWT to each push.
const AuthOIDC = "oidc"

// SigningKey is one of the service's RS256 keys for push JWTs, shared by every api and pusher
// replica through the metadata store.
type SigningKey struct {
	KID string
	// PrivateKeyDER is the PKCS#8 DER of the RSA private key.
	PrivateKeyDER []byte
	CreatedAt     time.Time
	// RetireAt is when the key stops signing; it stays published until tokens it signed expired.
	RetireAt time.Time
}

// SigningKeyStore keeps the service's JWT signing keys.
type SigningKeyStore interface {
	// SigningKeys lists every stored key, oldest first.
	SigningKeys(ctx context.Context) ([]SigningKey, error)
	// AddSigningKey stores k unless a key created at or after notBefore exists already (another
	// replica rotated first): added reports whether k was stored.
	AddSigningKey(ctx context.Context, k SigningKey, notBefore time.Time) (added bool, err error)
	// DeleteSigningKey removes a key that is no longer published.
	DeleteSigningKey(ctx context.Context, kid string) error
}
