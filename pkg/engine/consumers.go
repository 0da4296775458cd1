package engine

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"time"
)

// Consumer backlogs (docs/delivery-options.md#consumers-backlogs-and-fairness): a receive may name
// its consumer and a backlog bound; the engine then keeps the consumer's holdings — the messages it
// received and has not settled, whose visibility has not lapsed — and never hands it more than the
// bound.
const (
	MaxConsumerIDLen = 128             // consumerId: 1–128 characters from '!' to '~'
	MaxBacklogHi     = 10_000          // maxBacklog: 1–10,000
	ConsumerWindow   = 5 * time.Minute // the consumers list shows those seen this recently
	MaxConsumersPage = 1000            // the most consumers one list page holds
)

// ConsumerTag identifies a consumer in a receipt handle: the first 8 bytes of the SHA-256 of
// its consumerId (never 0, which means "no consumer"). A handle carries the tag rather than
// the id so that it stays short however long the id is; the engines key holdings by it.
type ConsumerTag uint64

// TagOf is the tag of a consumer id ("" has none).
func TagOf(consumerID string) ConsumerTag {
	if consumerID == "" {
		return 0
	}
	sum := sha256.Sum256([]byte(consumerID))
	t := ConsumerTag(binary.BigEndian.Uint64(sum[:8]))
	if t == 0 {
		t = 1
	}
	return t
}

// ValidConsumerID reports whether id is a consumerId: 1–128 characters from '!' to '~'.
func ValidConsumerID(id string) bool {
	if id == "" || len(id) > MaxConsumerIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < '!' || id[i] > '~' {
			return false
		}
	}
	return true
}

// ConsumerState is one consumer of a queue as the consumers list shows it.
type ConsumerState struct {
	ID string
	// InFlight is how many messages the consumer holds now: received, not settled, and
	// visibility not lapsed.
	InFlight int
	// MaxBacklog is the bound of the consumer's latest receive (0: it named none).
	MaxBacklog int
	LastSeen   time.Time
}

// ConsumerPage is one page of a queue's consumers, in consumerId order.
type ConsumerPage struct {
	Consumers  []ConsumerState
	NextCursor string // "" on the last page
}

// HeldChange tells the engine that a consumer's delivery was settled (Until zero: acked,
// released, dead-lettered) or that its visibility moved (Until: the new deadline), so the
// consumer's holdings follow. Only successful settlements of deliveries with a Consumer tag
// are reported.
type HeldChange struct {
	Delivery Delivery
	Until    time.Time
}

// Consumers is the engine side of consumer backlogs. Engine.Receive honours
// ReceiveRequest.Consumer; these calls list the consumers and keep holdings exact when a
// delivery is settled.
type Consumers interface {
	// ListConsumers pages through the consumers of q seen within ConsumerWindow, in
	// consumerId order, limit per page (1–MaxConsumersPage); cursor is "" or a previous
	// page's NextCursor.
	ListConsumers(ctx context.Context, q Queue, limit int, cursor string) (ConsumerPage, error)
	// Settled records successful settlements of consumers' deliveries (HeldChange) and
	// wakes receives that wait for room in a backlog.
	Settled(ctx context.Context, q Queue, cs []HeldChange) error
}

// ConsumerOf is the consumer a receive names, with its bound.
type ConsumerOf struct {
	ID string
	// MaxBacklog bounds what the consumer holds (1–MaxBacklogHi); 0 records the consumer
	// without a bound.
	MaxBacklog int
}

// Room is how many of want messages a consumer holding held may take under its bound.
func (c ConsumerOf) Room(held, want int) int {
	if c.MaxBacklog <= 0 {
		return want
	}
	return max(0, min(want, c.MaxBacklog-held))
}

// ConsumerCursor is the opaque cursor of the consumers list: the last listed consumerId,
// base64url-encoded.
func ConsumerCursor(lastID string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(lastID))
}

// ParseConsumerCursor is the consumerId a cursor resumes after; a cursor that is not one is
// ErrBadConsumerCursor.
func ParseConsumerCursor(c string) (string, error) {
	if c == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || !ValidConsumerID(string(b)) {
		return "", ErrBadConsumerCursor
	}
	return string(b), nil
}
