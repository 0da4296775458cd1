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

// Subscription is a queue's push subscription (SPEC §6): at most one per queue.
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
	CreatedAt         time.Time
	UpdatedAt         time.Time
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
// while its overlap lasts.
func (s Subscription) Secrets(now time.Time) []string {
	out := []string{s.Secret}
	if s.PreviousSecret != "" && now.Before(s.PreviousExpiresAt) {
		out = append(out, s.PreviousSecret)
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
