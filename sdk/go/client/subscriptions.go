package client

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// Subscription is a queue's push subscription (docs/push.md).
type Subscription struct {
	ID             string `json:"id"`
	Slug           string `json:"slug"`
	Queue          string `json:"queue,omitempty"`
	Endpoint       string `json:"endpoint"`
	BatchSize      int    `json:"batchSize"`
	BatchWindowMs  int    `json:"batchWindowMs"`
	MaxInFlight    int    `json:"maxInFlight"`
	TimeoutSeconds int    `json:"timeoutSeconds"`
	Paused         bool   `json:"paused"`
	// Endpoint health: DisableAfterSeconds (0 never), State ("active" or "disabled", with
	// DisabledReason and DisabledAt), and Health (GetSubscription only).
	DisableAfterSeconds int                 `json:"disableAfterSeconds"`
	State               string              `json:"state"`
	DisabledReason      string              `json:"disabledReason,omitempty"`
	DisabledAt          *time.Time          `json:"disabledAt,omitempty"`
	Health              *SubscriptionHealth `json:"health,omitempty"`
	// MaxMessagesPerSecond bounds the messages pushed a second (0: no bound); FlowControl,
	// when set, bounds each key's share (docs/push.md, "Rate and keyed flow control").
	MaxMessagesPerSecond int          `json:"maxMessagesPerSecond"`
	FlowControl          *FlowControl `json:"flowControl,omitempty"`
	CreatedAt            time.Time    `json:"createdAt"`
	UpdatedAt            time.Time    `json:"updatedAt"`
	// Signing is "hmac" (v1 signatures with the whsec_ secret) or "ed25519" (v1a signatures,
	// checked with SigningPublicKey, whpk_…); Auth, when set, adds an OIDC Bearer token to each
	// push (docs/push.md, "Token auth and asymmetric signatures").
	Signing          string `json:"signing"`
	SigningPublicKey string `json:"signingPublicKey,omitempty"`
	// PreviousSigningPublicKey is, for 24 hours after a rotation, the replaced key that still
	// signs a second v1a signature until PreviousSigningPublicKeyExpiresAt.
	PreviousSigningPublicKey          string     `json:"previousSigningPublicKey,omitempty"`
	PreviousSigningPublicKeyExpiresAt *time.Time `json:"previousSigningPublicKeyExpiresAt,omitempty"`
	Auth                              *PushAuth  `json:"auth,omitempty"`
	// SigningSecret (whsec_…) is returned only by CreateSubscription and RotateSecret.
	SigningSecret string `json:"signingSecret,omitempty"`
	// Extra holds the fields of the answer this type does not name.
	Extra map[string]json.RawMessage `json:"-"`
}

// UnmarshalJSON decodes a subscription and keeps unnamed fields in Extra.
func (s *Subscription) UnmarshalJSON(b []byte) error {
	type plain Subscription
	if err := json.Unmarshal(b, (*plain)(s)); err != nil {
		return err
	}
	return keepExtra(b, &s.Extra, "id", "slug", "queue", "endpoint", "batchSize", "batchWindowMs",
		"maxInFlight", "timeoutSeconds", "paused", "createdAt", "updatedAt", "signingSecret",
		"disableAfterSeconds", "state", "disabledReason", "disabledAt", "health",
		"maxMessagesPerSecond", "flowControl", "signing", "signingPublicKey", "auth")
}

// PushAuth is a subscription's token auth: Type "oidc", and the Audience its JWTs name.
type PushAuth struct {
	Type     string `json:"type"`
	Audience string `json:"audience"`
}

// Subscription states.
const (
	SubscriptionActive   = "active"
	SubscriptionDisabled = "disabled"
)

// SubscriptionHealth is the endpoint's health as the pusher fleet records it.
type SubscriptionHealth struct {
	// SuccessRate5m and SuccessRate24h are the share of 2xx answers (nil: no attempt in the
	// window); Attempts5m and Attempts24h the attempts counted.
	SuccessRate5m       *float64     `json:"successRate5m"`
	SuccessRate24h      *float64     `json:"successRate24h"`
	Attempts5m          int64        `json:"attempts5m"`
	Attempts24h         int64        `json:"attempts24h"`
	LastSuccessAt       *time.Time   `json:"lastSuccessAt"`
	LastError           *HealthError `json:"lastError"`
	ConsecutiveFailures int64        `json:"consecutiveFailures"`
	FailingSince        *time.Time   `json:"failingSince"`
	// FlowControlLimit is the batches the subscription may have in flight now.
	FlowControlLimit int        `json:"flowControlLimit"`
	ThrottledUntil   *time.Time `json:"throttledUntil"`
}

// HealthError is a subscription's last failed push attempt.
type HealthError struct {
	Status  *int      `json:"status"` // nil: no response
	Error   string    `json:"error"`
	Message string    `json:"message"`
	At      time.Time `json:"at"`
}

// SubscriptionInput creates a subscription (Endpoint required) or, with UpdateSubscription,
// changes the fields that are set. Nil fields take the defaults on create.
type SubscriptionInput struct {
	Endpoint       string `json:"endpoint,omitempty"`
	BatchSize      *int   `json:"batchSize,omitempty"`
	BatchWindowMs  *int   `json:"batchWindowMs,omitempty"`
	MaxInFlight    *int   `json:"maxInFlight,omitempty"`
	TimeoutSeconds *int   `json:"timeoutSeconds,omitempty"`
	Paused         *bool  `json:"paused,omitempty"`
	// DisableAfterSeconds and State: endpoint health (State "active" resumes a disabled one).
	DisableAfterSeconds *int   `json:"disableAfterSeconds,omitempty"`
	State               string `json:"state,omitempty"`
	// MaxMessagesPerSecond sets the subscription's rate (0 removes it).
	MaxMessagesPerSecond *int `json:"maxMessagesPerSecond,omitempty"`
	// FlowControl sets keyed flow control (the whole setting); NoFlowControl turns it off.
	FlowControl   *FlowControl `json:"-"`
	NoFlowControl bool         `json:"-"`
	// Signing is "hmac" or "ed25519" (a new key pair; "" leaves it as it is).
	Signing string `json:"signing,omitempty"`
	// Auth sets token auth (an empty Audience: the endpoint URL); NoAuth removes it.
	Auth   *PushAuth `json:"-"`
	NoAuth bool      `json:"-"`
}

// FlowControl is keyed flow control: messages whose attribute KeyAttribute has the same value
// share one key's budget of Parallelism pushes in flight (0 on input: the default, 1) and
// MessagesPerSecond messages a second (0: no bound).
type FlowControl struct {
	KeyAttribute      string `json:"keyAttribute"`
	Parallelism       int    `json:"parallelism,omitempty"`
	MessagesPerSecond int    `json:"messagesPerSecond"`
}

// MarshalJSON writes the input, with flowControl and auth each an object, null (NoFlowControl,
// NoAuth) or absent.
func (in SubscriptionInput) MarshalJSON() ([]byte, error) {
	type plain SubscriptionInput
	raw, err := json.Marshal(plain(in))
	if err != nil || (in.FlowControl == nil && !in.NoFlowControl && in.Auth == nil && !in.NoAuth) {
		return raw, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if err := setOrNull(m, "flowControl", in.FlowControl, in.FlowControl != nil, in.NoFlowControl); err != nil {
		return nil, err
	}
	var auth map[string]string
	if in.Auth != nil {
		// An empty audience is omitted, not sent: the service reads it as the endpoint URL.
		auth = map[string]string{"type": in.Auth.Type}
		if in.Auth.Audience != "" {
			auth["audience"] = in.Auth.Audience
		}
	}
	if err := setOrNull(m, "auth", auth, in.Auth != nil, in.NoAuth); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// setOrNull sets m[key] to v's JSON when set, to null when clear, else leaves it out.
func setOrNull(m map[string]json.RawMessage, key string, v any, set, clear bool) error {
	switch {
	case set:
		raw, err := json.Marshal(v)
		m[key] = raw
		return err
	case clear:
		m[key] = json.RawMessage("null")
	}
	return nil
}

// Attempt is one push request as the subscription's attempts log keeps it.
type Attempt struct {
	At         time.Time `json:"at"`
	AttemptID  string    `json:"attemptId"`
	MessageIDs []string  `json:"messageIds"`
	// StatusCode is the endpoint's answer (0: none — a timeout or connection error).
	StatusCode int   `json:"statusCode,omitempty"`
	LatencyMs  int64 `json:"latencyMs"`
	// Outcome is acknowledged, deferred, settled, throttled or failed.
	Outcome string `json:"outcome"`
	// Error is an error class on failure, Detail a short explanation.
	Error  string `json:"error,omitempty"`
	Detail string `json:"detail,omitempty"`
	// Extra holds the fields of the answer this type does not name.
	Extra map[string]json.RawMessage `json:"-"`
}

// UnmarshalJSON decodes an attempt and keeps unnamed fields in Extra.
func (a *Attempt) UnmarshalJSON(b []byte) error {
	type plain Attempt
	if err := json.Unmarshal(b, (*plain)(a)); err != nil {
		return err
	}
	return keepExtra(b, &a.Extra, "at", "attemptId", "messageIds", "statusCode", "latencyMs", "outcome", "error", "detail")
}

func keepExtra(b []byte, extra *map[string]json.RawMessage, named ...string) error {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	for _, n := range named {
		delete(all, n)
	}
	if len(all) > 0 {
		*extra = all
	}
	return nil
}

// AttemptPage is a page of recent push attempts, newest first.
type AttemptPage struct {
	Attempts   []Attempt `json:"attempts"`
	NextCursor *string   `json:"nextCursor"`
}

func subPath(queue string) string { return "/v1/queues/" + seg(queue) + "/subscription" }

// CreateSubscription creates the queue's push subscription (scope queues:admin); the answer
// carries its SigningSecret, shown only here. A second one is ErrSubscriptionExists.
func (c *Client) CreateSubscription(ctx context.Context, queue string, in SubscriptionInput) (*Subscription, error) {
	var s Subscription
	if err := c.Do(ctx, http.MethodPost, subPath(queue), nil, in, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// GetSubscription returns the queue's push subscription (scope queues:read).
func (c *Client) GetSubscription(ctx context.Context, queue string) (*Subscription, error) {
	var s Subscription
	if err := c.Do(ctx, http.MethodGet, subPath(queue), nil, nil, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// UpdateSubscription changes the set fields of the subscription (scope queues:admin).
func (c *Client) UpdateSubscription(ctx context.Context, queue string, in SubscriptionInput) (*Subscription, error) {
	var s Subscription
	if err := c.Do(ctx, http.MethodPatch, subPath(queue), nil, in, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// PauseSubscription stops pushing from the queue until ResumeSubscription.
func (c *Client) PauseSubscription(ctx context.Context, queue string) (*Subscription, error) {
	return c.UpdateSubscription(ctx, queue, SubscriptionInput{Paused: Bool(true)})
}

// ResumeSubscription resumes pushing: unpaused, and active again if it was disabled.
func (c *Client) ResumeSubscription(ctx context.Context, queue string) (*Subscription, error) {
	return c.UpdateSubscription(ctx, queue, SubscriptionInput{Paused: Bool(false), State: SubscriptionActive})
}

// DeleteSubscription deletes the queue's push subscription (scope queues:admin).
func (c *Client) DeleteSubscription(ctx context.Context, queue string) error {
	return c.Do(ctx, http.MethodDelete, subPath(queue), nil, nil, nil)
}

// RotateSecret gives the subscription a new signing secret, returned in SigningSecret; the
// previous one keeps signing alongside for 24 hours (scope queues:admin).
func (c *Client) RotateSecret(ctx context.Context, queue string) (*Subscription, error) {
	var s Subscription
	if err := c.Do(ctx, http.MethodPost, subPath(queue)+"/rotate-secret", nil, nil, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// ListAttempts returns the subscription's recent push attempts (scope queues:read); limit 0
// is the server's default. ListAttemptsPage reads the pages after it; AllAttempts iterates.
func (c *Client) ListAttempts(ctx context.Context, queue string, limit int) (*AttemptPage, error) {
	return c.ListAttemptsPage(ctx, queue, Page{Limit: limit})
}

// JWKS is a JWK Set: the public keys that sign the push tokens of subscriptions with
// auth type "oidc" (docs/push.md). Each key is kept as the service wrote it.
type JWKS struct {
	Keys []map[string]any `json:"keys"`
}

// PushJWKS returns the keys a receiver checks a push's Authorization: Bearer JWT against
// (GET /.well-known/jwks.json; webhook.TokenVerifier fetches the same document).
func (c *Client) PushJWKS(ctx context.Context) (*JWKS, error) {
	var k JWKS
	if err := c.Do(ctx, http.MethodGet, "/.well-known/jwks.json", nil, nil, &k); err != nil {
		return nil, err
	}
	return &k, nil
}
