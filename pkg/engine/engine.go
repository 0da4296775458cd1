// Package engine defines the queue engine: the data plane that stores messages and moves them
// through their life (sent, delayed, visible, in flight, acknowledged, dead-lettered, expired,
// purged). The HTTP API and the pusher talk to an Engine; the Redis engine (package
// redisengine) and the embedded engine implement it, and package enginetest holds the
// conformance suite that every implementation must pass.
//
// The engine knows nothing of projects, tokens or metadata storage: callers pass the queue's
// settings (Queue) with every call, taken from their metadata cache, so no message operation
// reads the metadata store. Time comes from the caller's injected clock; implementations never
// read the wall clock for deadlines.
package engine

import (
	"context"
	"time"

	"github.com/queueshq/queues/pkg/filter"
	"github.com/queueshq/queues/pkg/ids"
)

// Type is a queue's type.
type Type string

// Queue types.
const (
	Standard Type = "standard"
	FIFO     Type = "fifo"
)

// Limits shared by every engine and by the API's validation.
const (
	MaxBatch          = 10                // messages per send or receive
	MaxMessageBytes   = 1024 * 1024       // ceiling of a queue's maxMessageBytes: body + attribute names and values, in UTF-8 bytes
	MaxAttributes     = 10                // attributes per message
	MaxInFlight       = 12 * time.Hour    // from the receive, however often extended
	MaxVisibility     = 12 * time.Hour    // a single visibility timeout
	MaxPartitions     = 64                // partitions a queue can grow to
	DedupWindow       = 5 * time.Minute   // fifo deduplication window
	DefaultDLQReason  = "consumer"        // reason recorded for a consumer's dead-letter without one
	RedriveReason     = "maxReceiveCount" // reason recorded for redrive at receive time
	PurgeInterval     = 60 * time.Second  // at most one purge per queue per interval
	MaxReceiveCountHi = 1000
	MaxPriority       = 9 // highest message priority (docs/delivery-options.md#priority)
	// DefaultMaxCancels and MaxCancelsHi bound a queue's maxCancels
	// (docs/delivery-options.md#cancel).
	DefaultMaxCancels = 10
	MaxCancelsHi      = 1000
	// CancelReason is the dead-letter reason of the cancel beyond a queue's maxCancels.
	CancelReason = "max_cancels"
	// DefaultMaxMessageBytes and MinMaxMessageBytes are a queue's maxMessageBytes when unset
	// and the least it may be (docs/api-tour.md; SQS's MaximumMessageSize default and minimum).
	DefaultMaxMessageBytes = 256 * 1024
	MinMaxMessageBytes     = 1024
)

// DeliveryJump is how far a message's delivery attempt (Delivery.Attempt) jumps when it
// leaves a queue by a dead-letter or a move without a record of the attempts before it (one
// stored by a version whose dead-letters and moves restarted attempts at 0): past any attempt
// a handle of its earlier lives can name, so none of those handles matches a later delivery.
// A message's attempts otherwise go on from where they were across dead-letters and moves.
const DeliveryJump = 1 << 24

// Queue carries the settings of a queue that the engine needs for an operation. The caller
// reads them from its metadata cache.
type Queue struct {
	ID ids.ID
	// Project owns the queue; the engine keeps the project's stored-bytes counter
	// (docs/stored-bytes.md) beside its messages.
	Project ids.ID
	// MaxStoredBytes is the project's maxStoredBytes limit: a send that would take the
	// project's stored bytes past it fails whole and stores nothing. 0 means no limit.
	MaxStoredBytes    int64
	Type              Type
	VisibilityTimeout time.Duration
	Retention         time.Duration
	Delay             time.Duration
	ContentBasedDedup bool
	// AtMostOnce is an at-most-once queue (standard only,
	// docs/delivery-options.md#at-most-once-queues): a receive removes every message it returns in
	// the same atomic step as the hand-out, so nothing is ever in flight or delivered twice, and
	// the deliveries it returns name no live message (their handles are stale from the start).
	AtMostOnce bool
	// MaxCancels is how many cancels a message may take (docs/delivery-options.md#cancel): the one
	// beyond it dead-letters the message with CancelReason. The caller sets it (meta gives the
	// default, DefaultMaxCancels); 0 means the first cancel dead-letters.
	MaxCancels int
	// MaxMessageBytes is the queue's maxMessageBytes (docs/api-tour.md): the most a message's body
	// and attributes may hold together (PayloadBytes). 0 means the ceiling, MaxMessageBytes; meta
	// gives the default (DefaultMaxMessageBytes) of a queue stored without one.
	MaxMessageBytes int
	// Redrive is nil when the queue has no redrive policy.
	Redrive *Redrive
	// GroupPolicy is a fifo queue's group policy (grouppolicy.go): "" and GroupSequenced
	// hand a group to any receive, GroupExclusive binds it to a consumer.
	GroupPolicy GroupPolicy
	// GroupAffinity is how long an exclusive binding lasts without activity (0: the
	// default, Affinity).
	GroupAffinity time.Duration
	// MaxGroupsPerConsumer caps the bindings of one consumer (0: the default, GroupCap).
	MaxGroupsPerConsumer int
	// OnDeadLetter is a fifo queue's poison policy (docs/fifo.md): what happens to the rest
	// of a group when one of its messages is dead-lettered. "" is PoisonContinue.
	OnDeadLetter PoisonPolicy
}

// ParkGroupReason is the dead-letter reason of the messages that follow a dead-lettered one
// of their group to the dead-letter queue (PoisonParkGroup).
const ParkGroupReason = "parkGroup"

// PoisonPolicy is what a fifo queue does with a group when one of its messages is
// dead-lettered (queue setting onDeadLetter).
type PoisonPolicy string

// Poison policies.
const (
	// PoisonContinue lets the group go on with its next message (the default).
	PoisonContinue PoisonPolicy = "continue"
	// PoisonPark parks the group: its other messages, and later sends to it, wait
	// undelivered until the dead-lettered message comes back (a move task) or the group is
	// released (ReleaseGroup). The message that comes back takes its old place at the head.
	PoisonPark PoisonPolicy = "park"
	// PoisonParkGroup parks the group and moves every message it holds to the dead-letter
	// queue after the dead-lettered one, in order; the group stays parked (later sends wait)
	// until all of them came back, each to its old place, or the group is released.
	PoisonParkGroup PoisonPolicy = "parkGroup"
)

// Valid reports whether p is one of the poison policies ("" counts as PoisonContinue).
func (p PoisonPolicy) Valid() bool {
	return p == "" || p == PoisonContinue || p == PoisonPark || p == PoisonParkGroup
}

// Parking is the poison policy that q's dead-letters follow: PoisonContinue unless q is a
// fifo queue with a dead-letter queue and a park policy (without a dead-letter queue a
// dead-lettered message is deleted and nothing can come back to unpark its group).
func (q Queue) Parking() PoisonPolicy {
	if q.Type != FIFO || q.Redrive == nil || q.Redrive.DeadLetter == nil {
		return PoisonContinue
	}
	if q.OnDeadLetter == PoisonPark || q.OnDeadLetter == PoisonParkGroup {
		return q.OnDeadLetter
	}
	return PoisonContinue
}

// MessageLimit is the most bytes (PayloadBytes) a message of q may hold: its MaxMessageBytes,
// never above the ceiling MaxMessageBytes.
func (q Queue) MessageLimit() int {
	if q.MaxMessageBytes <= 0 || q.MaxMessageBytes > MaxMessageBytes {
		return MaxMessageBytes
	}
	return q.MaxMessageBytes
}

// Redrive is a queue's dead-letter policy.
type Redrive struct {
	// DeadLetter is the dead-letter queue (same project, same type). Its own Redrive is ignored:
	// a message is moved one hop only.
	DeadLetter      *Queue
	MaxReceiveCount int
}

// Message is what a producer sends. The API validates it before the engine sees it.
type Message struct {
	Body       string
	Attributes map[string]string
	// Delay overrides the queue's delay when non-nil (standard queues only).
	Delay   *time.Duration
	GroupID string // fifo only, required there
	DedupID string // fifo only, optional
	// Key conflates the message (standard queues only,
	// docs/lifecycle.md#conflation-and-delta-publish): when a message sent with the same key waits
	// in the queue never delivered, this send changes that one (Merge says how) instead of storing
	// another. "" stores a new message as usual.
	Key string
	// Merge is how a keyed send changes the waiting message; ignored without Key.
	Merge MergeMode
	// Barrier marks a barrier message (standard queues, docs/delivery-options.md#barrier-messages):
	// it is delivered only once every message the queue accepted before it has left the queue, and
	// no message accepted after it is delivered until it has left. Ignored on fifo queues (the API
	// refuses it).
	Barrier bool
	// Priority is 0 to MaxPriority (standard queues, docs/delivery-options.md#priority): a receive
	// takes the visible messages of the highest priority first, oldest first within one. Ignored on
	// fifo queues (the API refuses it). A dead-lettered or moved message arrives at priority 0.
	Priority int
	// EndGroup marks the last message of a piece of a fifo group's work: on an exclusive
	// queue its settlement (ack or dead-letter) ends the group's binding (grouppolicy.go).
	// Stored with the message; ignored on standard queues (the API refuses it).
	EndGroup bool
}

// MergeMode is how a keyed send changes the waiting message of its key.
type MergeMode uint8

// Merge modes.
const (
	// MergeReplace replaces the waiting message's body and attributes (the default).
	MergeReplace MergeMode = iota
	// MergePatch applies the new body as an RFC 7396 JSON Merge Patch to the waiting body
	// (both must be JSON objects) and merges attributes, the new values winning.
	MergePatch
)

// SendResult is the outcome of one sent message, in request order.
//
// Send returns an error for the whole call only when no message of it was stored; once one
// was, it answers every message, and a message it could not store has Err set. (An engine
// that stores a batch all-or-nothing never sets Err.)
type SendResult struct {
	MessageID ids.ID
	// Duplicate is true when a fifo send matched an earlier send within the dedup window; the
	// message was not stored again and MessageID is the original's.
	Duplicate bool
	// Merged is true when a keyed send changed the waiting message of its key instead of
	// storing one; MessageID is that message's.
	Merged bool
	// Partition the message was stored in (informational; -1 for duplicates and failures).
	Partition int
	// SequenceNumber (fifo only; 0 otherwise) is the number a receive of the message reports
	// (Received.SequenceNumber); a duplicate answers the original's.
	SequenceNumber uint64
	// Err is nil when the message was stored (or answered as a duplicate). Non-nil, the
	// message was not stored by this call and MessageID is zero; the error is one of the
	// errors of errors.go (a refusal, *StoredBytesExceeded included, or a failure) or a
	// context error. When the storage failed without an answer (a lost
	// connection, a timeout) the message may in fact have been stored: a retry of a fifo
	// message with the same dedup id then answers it as a duplicate.
	Err error
}

// ReceiveRequest asks for up to Max messages with a visibility timeout.
type ReceiveRequest struct {
	Max        int
	Visibility time.Duration
	// Consumer, when set, names the receiving consumer
	// (docs/delivery-options.md#consumers-backlogs-and-fairness, consumers.go): the receive takes
	// no more than the room left in its backlog, and its deliveries carry its tag.
	Consumer *ConsumerOf
	// Filter, when not empty, selects the messages to take by their attributes
	// (docs/delivery-options.md#filtered-receive-and-browse): the receive examines at most
	// filter.MaxCandidates candidates in its normal delivery order (fifo: each available group's
	// next message; a group ends its batch at its first message that does not match) and takes the
	// matching ones. A message that does not match is left as it was: not claimed, not
	// dead-lettered, its receiveCount unchanged.
	Filter *filter.Filter
	// BindTo is the consumer an exclusive fifo queue binds groups to (grouppolicy.go). The
	// engines set it from Consumer; a receive of an exclusive queue with neither is
	// ErrConsumerRequired.
	BindTo string
}

// DeadLetterInfo describes how a message came to a dead-letter queue.
type DeadLetterInfo struct {
	SourceQueue ids.ID
	Reason      string
	At          time.Time
}

// Delivery names one delivery of one message: what a receipt handle carries.
type Delivery struct {
	Queue     ids.ID
	Partition int
	MessageID ids.ID
	// Attempt numbers this delivery among every delivery of the message id, in any queue: a
	// later receive raises it, which is what makes older handles stale, and it never repeats
	// across dead-letters and moves (where receiveCount starts again at 0), so a handle of an
	// earlier life of the message never settles a later delivery.
	Attempt uint32
	// Consumer is the tag of the consumer that received it (0: none named), so that settling
	// it updates that consumer's holdings.
	Consumer ConsumerTag
}

// Received is a message handed to a consumer.
type Received struct {
	Delivery
	Body               string
	Attributes         map[string]string
	ReceiveCount       int
	SentAt             time.Time
	VisibilityDeadline time.Time // zero on an at-most-once queue: removed, never in flight
	GroupID            string
	SequenceNumber     uint64 // fifo only; increasing in send order within the queue
	DeadLetter         *DeadLetterInfo
	Priority           int // 0 to MaxPriority; always 0 on fifo queues
}

// ReceiveResult is the answer to a receive.
type ReceiveResult struct {
	Messages []Received
	// NextVisibleAt, when not zero and Messages is empty, is the earliest time at which a
	// delayed or in-flight message becomes visible: a long poll can sleep until then.
	NextVisibleAt time.Time
	// BacklogFull is true when the receive's consumer had no room in its backlog: it took
	// nothing and left the queue untouched.
	BacklogFull bool
}

// VisibilityChange sets a delivery's visibility timeout: 0 releases it, d>0 keeps it in flight
// until now+d (extend, or retry after d).
type VisibilityChange struct {
	Delivery   Delivery
	Visibility time.Duration
}

// DeadLetterRequest dead-letters a delivery now with a reason ("" means DefaultDLQReason).
type DeadLetterRequest struct {
	Delivery Delivery
	Reason   string
}

// State is a message's visible state, for browsing and counts.
type State string

// Message states.
const (
	StateVisible  State = "visible"
	StateInFlight State = "inFlight"
	StateDelayed  State = "delayed"
)

// Counts are a queue's message counts by state. A message retried after d counts as in flight
// until d has passed; an in-flight message whose deadline passed counts as visible.
type Counts struct {
	Visible  int64
	InFlight int64
	Delayed  int64
	// Truncated is true when a count is beyond the exact range (100,000) and may be approximate.
	Truncated bool
	// OldestSentAt is the send time of the oldest message, zero when the queue is empty.
	OldestSentAt time.Time
}

// Stats are a queue's counts and partition count.
type Stats struct {
	Counts
	Partitions int
	// ParkedGroups counts the fifo groups a poison policy holds parked (Queue.OnDeadLetter).
	ParkedGroups int64
}

// BrowseRequest pages through messages in one state without leasing them.
type BrowseRequest struct {
	State  State
	Limit  int
	Cursor string // opaque, from a previous page; "" for the first
	// Filter, when not empty, leaves out the messages it does not select
	// (docs/delivery-options.md#filtered-receive-and-browse). A page then examines at most
	// filter.MaxCandidates messages, so it may hold fewer than Limit (none, even) and still name a
	// next cursor; it names none once no message follows.
	Filter *filter.Filter
	// MaxBytes, when positive, bounds the bytes of the messages the page reads (each one's
	// stored payload as the engine keeps it): the page holds at least one message, ends
	// before the one that would take it past MaxBytes, and then names a next cursor. Move
	// tasks read their batches so (MaxMoveBatchBytes).
	MaxBytes int64
}

// BrowsedMessage is a message seen by browsing: no receipt handle.
type BrowsedMessage struct {
	MessageID      ids.ID
	Body           string
	Attributes     map[string]string
	ReceiveCount   int
	SentAt         time.Time
	VisibleAt      time.Time // when it becomes (or became) visible
	State          State
	GroupID        string
	SequenceNumber uint64
	DeadLetter     *DeadLetterInfo
	Priority       int // 0 to MaxPriority; always 0 on fifo queues
}

// BrowsePage is one page of browsed messages.
type BrowsePage struct {
	Messages   []BrowsedMessage
	NextCursor string // "" on the last page
}

// Group is a fifo message group's state.
type Group struct {
	GroupID  string
	Messages int64 // visible, in flight and delayed together
	InFlight bool  // whether a batch of the group is in flight
	// ConsumerID is the consumer the group is bound to on an exclusive queue ("": none).
	ConsumerID string
	// State is GroupParked while a park policy holds the group (Queue.OnDeadLetter), else
	// GroupActive. A parked group is listed even when it holds no message.
	State GroupState
	// HeadReceiveCount is the receiveCount of the group's first message (0: none, or never
	// received).
	HeadReceiveCount int
	// LastError is the reason of the dead-letter that parked the group ("" when active).
	LastError string
}

// GroupState is a fifo group's state in a listing.
type GroupState string

// Group states.
const (
	GroupActive GroupState = "active"
	GroupParked GroupState = "parked"
)

// Valid reports whether s is a group state ("" means any, and is valid too).
func (s GroupState) Valid() bool { return s == "" || s == GroupActive || s == GroupParked }

// GroupPage is one page of groups.
type GroupPage struct {
	Groups     []Group
	NextCursor string
}

// Engine is the queue data plane. All methods are safe for concurrent use. Errors are the
// sentinels of errors.go where the caller can act on them (ErrStale, ErrNoMessage,
// ErrPurgeTooSoon, …, matched with errors.Is; they carry no client text: the doors word
// them); storage failures are ErrUnavailable or ErrFault with their cause. The project byte
// quota is a *StoredBytesExceeded and the size check a *TooLarge, refusals that carry their
// figures (pkg/service words them, for the doors and for the fan-out's binding records).
//
// Batch settle operations return one error per entry (nil for success) in request order, and a
// non-nil error of their own only when the whole call failed before changing anything.
type Engine interface {
	// CreateQueue prepares storage for a new queue (one partition).
	CreateQueue(ctx context.Context, q Queue) error
	// DeleteQueue removes every message of the queue; its handles go stale.
	DeleteQueue(ctx context.Context, q ids.ID) error

	// Send stores messages durably before returning. The messages are valid (the API checks
	// sizes, UTF-8, attribute names, group and dedup ids).
	Send(ctx context.Context, q Queue, msgs []Message) ([]SendResult, error)
	// Receive claims up to req.Max visible messages. Messages found received MaxReceiveCount
	// times are moved to the dead-letter queue instead of being returned; expired ones are
	// dropped. On an at-most-once queue the messages returned are removed by the same step
	// (their stored bytes with them).
	Receive(ctx context.Context, q Queue, req ReceiveRequest) (ReceiveResult, error)

	// Ack deletes the deliveries' messages.
	Ack(ctx context.Context, q Queue, ds []Delivery) ([]error, error)
	// ChangeVisibility extends, releases or delays deliveries (12 h cap from the receive).
	ChangeVisibility(ctx context.Context, q Queue, cs []VisibilityChange) ([]error, error)
	// Cancel makes deliveries' messages visible again at once without counting the delivery
	// (docs/delivery-options.md#cancel): receiveCount goes back by one. A message cancelled more
	// than q.MaxCancels times goes to the dead-letter queue with CancelReason instead (deleted
	// without a redrive policy). Cancelling a cancelled delivery again succeeds and counts nothing.
	Cancel(ctx context.Context, q Queue, ds []Delivery) ([]error, error)
	// CancelAfter is the pusher's answer to a throttle (a 429 or 503 with Retry-After): like
	// Cancel it does not count the delivery, but the message stays in flight until delay has
	// passed (capped at MaxInFlight from its receive), and a delivery whose cancel would pass
	// q.MaxCancels is not dead-lettered: it is retried after delay as ChangeVisibility would,
	// counted. So an endpoint that keeps asking for time never loses a message to it, and
	// never keeps one uncounted forever.
	CancelAfter(ctx context.Context, q Queue, ds []Delivery, delay time.Duration) ([]error, error)
	// DeadLetter moves deliveries to the queue's dead-letter queue now (or drops them when the
	// queue has no redrive policy).
	DeadLetter(ctx context.Context, q Queue, rs []DeadLetterRequest) ([]error, error)

	// DeleteMessage removes one visible or delayed message by id
	// (docs/lifecycle.md#delete-a-waiting-message): nil when it was removed, ErrMessageInFlight
	// while a consumer holds it, ErrNoMessage when the queue holds no such message.
	DeleteMessage(ctx context.Context, q Queue, id ids.ID) error

	// Purge removes every message sent before it; later sends are kept.
	Purge(ctx context.Context, q Queue) error
	// Stats returns exact counts and the partition count.
	Stats(ctx context.Context, q Queue) (Stats, error)
	// Browse pages through messages in one state without leasing them.
	Browse(ctx context.Context, q Queue, req BrowseRequest) (BrowsePage, error)

	// Groups lists a fifo queue's groups in state ("": any); PurgeGroup removes one group's
	// messages.
	Groups(ctx context.Context, q Queue, limit int, cursor string, state GroupState) (GroupPage, error)
	PurgeGroup(ctx context.Context, q Queue, groupID string) error
	// ReleaseGroup ends the parking of a parked group (Queue.OnDeadLetter): its messages are
	// delivered again from its head, and the ones still in the dead-letter queue come back,
	// when moved, as new messages at its end. ErrNoSuchGroup when the queue holds no message
	// of the group and it is not parked, ErrGroupNotParked when it is not parked.
	ReleaseGroup(ctx context.Context, q Queue, groupID string) error

	// Watch returns a channel that is signalled (without blocking the sender; signals may
	// coalesce) whenever messages may have become visible in queue q on any replica: a send, a
	// release, a purge or delete of the queue. Call cancel to stop watching.
	Watch(q ids.ID) (ch <-chan struct{}, cancel func())
	// WatchFilter is Watch for a receive with filter f
	// (docs/delivery-options.md#filtered-receive-and-browse): a send signals it only when the send
	// may hold a message f selects (its messages' attribute digests, filter.WakeDigests, travel
	// with the wake-up; a collision may wake it needlessly, nothing f selects is missed). Every
	// other wake-up signals it as Watch's do. An empty f is Watch.
	WatchFilter(q ids.ID, f *filter.Filter) (ch <-chan struct{}, cancel func())

	// StoredBytes is the project's stored payload bytes (PayloadBytes of every message it
	// holds in any state, dead-letter queues and moves under way included), exact within
	// seconds of any change.
	StoredBytes(ctx context.Context, project ids.ID) (int64, error)

	// ActiveQueues lists the queues that may have background work (messages that will
	// expire, dead-letter moves to finish, fifo bookkeeping): every queue holding a message is
	// listed, and a queue drops out some time after it was last seen empty. The sweeper sweeps
	// these instead of every queue. A listed queue that no longer exists is cleaned up with
	// DeleteQueue.
	ActiveQueues(ctx context.Context) ([]ids.ID, error)

	// Sweep does one round of background work for the queues given: deletes expired messages,
	// finishes dead-letter moves interrupted by a crash. Safe to run on every replica at once.
	Sweep(ctx context.Context, qs []Queue) error

	// Mover moves visible messages to other queues (move tasks, move.go).
	Mover
	// Consumers lists consumers and follows their settlements (consumers.go).
	Consumers
}

// PayloadBytes is a message's size as a queue's maxMessageBytes measures it and as stored bytes are
// counted (docs/stored-bytes.md#what-is-counted): the UTF-8 bytes of its body and of every
// attribute name and value (the reserved TraceparentAttribute and ReplayOfAttribute excepted).
func PayloadBytes(body string, attrs map[string]string) int64 {
	n := int64(len(body))
	for k, v := range attrs {
		if !reservedAttribute(k) {
			n += int64(len(k) + len(v))
		}
	}
	return n
}

// CheckSize refuses a message of body and attrs over q's MessageLimit with a *TooLarge, for
// paths that store messages the API did not validate against this queue (a topic's copies
// into its bound queues, replays).
func (q Queue) CheckSize(body string, attrs map[string]string) error {
	if n := PayloadBytes(body, attrs); n > int64(q.MessageLimit()) {
		return &TooLarge{Bytes: n, Limit: int64(q.MessageLimit())}
	}
	return nil
}
