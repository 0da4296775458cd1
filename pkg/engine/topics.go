package engine

import (
	"context"
	"time"

	"github.com/queueshq/queues/pkg/ids"
)

// Topics (docs/topics.md) are logs that feed queues. A publish appends messages to a topic's log,
// each at the next sequence; the fan-out (package fanout) copies every log entry into each
// queue bound to the topic, exactly once per binding, by way of Copy and the bindings'
// cursors kept here beside the log.
//
// Exactly once per binding rests on one rule: a copy into a queue and the record that the
// binding has copied that sequence are written in the same atomic step of the queue's store
// (CopyMessage.Sequence against the binding's high-water mark kept with the queue), so a
// batch copied again after a crash — by this replica or another — stores nothing twice. The
// topic-side cursor (Binding.Sequence) only saves work; it may lag what was copied.

// MaxLogRead bounds the entries one ReadLog call returns.
const MaxLogRead = 1000

// MaxLogReadBytes bounds the payload bytes one ReadLog call returns (at least one entry is
// returned whatever its size).
const MaxLogReadBytes = 4 << 20

// Topic carries the settings of a topic that the engine needs for an operation. The caller
// reads them from its metadata cache.
type Topic struct {
	ID      ids.ID
	Project ids.ID
	// MaxStoredBytes is the project's maxStoredBytes limit: a publish that would take the
	// project's stored bytes (the log's and the keyed state's included) past it fails whole.
	// 0 means no limit.
	MaxStoredBytes int64
	Type           Type
	// Retention is how long the log keeps an entry after its publish. 0 keeps nothing beyond
	// fan-out: an entry goes once every binding's cursor has passed it.
	Retention time.Duration
}

// PublishResult is the outcome of one published message, in request order.
type PublishResult struct {
	MessageID ids.ID
	// Sequence is the message's position in the topic's log: strictly increasing per topic
	// and never reused (the bookmark).
	Sequence uint64
	// Duplicate is true when a fifo publish matched an earlier publish of the same dedup id
	// within DedupWindow: nothing was appended, MessageID and Sequence are the original's.
	Duplicate bool
}

// LogEntry is one published message as the log keeps it.
type LogEntry struct {
	Sequence    uint64
	MessageID   ids.ID
	PublishedAt time.Time
	Body        string
	Attributes  map[string]string
	GroupID     string // fifo topics
	DedupID     string // fifo topics: as published, "" when none was given
	Key         string // "" when published without a key
	// Deleted marks a keyed publish of a null body: it deleted the key's state. Body is "".
	Deleted bool
}

// LogBounds describe a topic's log: First is the oldest sequence it still holds (Last+1
// when it holds none), Last the last sequence ever assigned (0 before the first publish).
type LogBounds struct {
	First, Last uint64
	// Bytes are the stored bytes of the log and the keyed state (counted in storedBytes).
	Bytes int64
}

// Binding is the fan-out state of one binding, kept beside the topic's log.
type Binding struct {
	ID    ids.ID
	Queue ids.ID
	// Filter is the binding's attribute filter as the API accepted it (JSON, "" for none);
	// the fan-out judges each entry by the filter it reads after reading the entry, so a
	// filter changed before a publish is answered judges that publish.
	Filter string
	// Sequence: every entry up to it has been handled for this binding (copied, filtered
	// out or failed). A new binding starts at the sequence its "from" names, minus one.
	Sequence uint64
	// Copied and Failed count the entries copied into the queue and refused by it.
	Copied, Failed int64
	// LastError is why the last refused entry was refused, at LastErrorAt ("" when none).
	LastError   string
	LastErrorAt time.Time
}

// Advance records the fan-out's progress for one binding: every entry up to Through is
// handled; Copied and Failed are added to the counts; LastError, when not "", replaces the
// last refusal.
type Advance struct {
	Binding        ids.ID
	Through        uint64
	Copied, Failed int64
	LastError      string
}

// CopyMessage is one log entry copied into a queue by a binding.
type CopyMessage struct {
	Sequence uint64
	// Message is the entry as the queue stores it: Body, Attributes, GroupID and DedupID (a
	// fifo copy always has one: the published dedup id, else one derived from the message
	// id), and ID, the published message id, which the copy keeps in every queue.
	Message Message
	ID      ids.ID
}

// CopyBatch is a batch of one binding's entries, in sequence order.
type CopyBatch struct {
	Topic   ids.ID
	Binding ids.ID
	// Messages are the entries to copy (the ones the filter selected), ascending.
	Messages []CopyMessage
}

// Topics is the part of an engine that keeps topics' logs, keyed state and bindings, and
// copies entries into queues. Errors are the sentinels of errors.go where the caller can act
// on them (ErrNoState, ErrNoBinding), refusals carrying their figures for the limits a copy
// passes (*StoredBytesExceeded, *DedupTaken: the fan-out records pkg/service's words for them
// on the binding as its failure); storage failures are ErrUnavailable or ErrFault.
type Topics interface {
	// CreateTopic prepares storage for a new topic (an empty log at sequence 0).
	CreateTopic(ctx context.Context, t Topic) error
	// DeleteTopic removes the topic's log, state and bindings; its bytes leave storedBytes.
	DeleteTopic(ctx context.Context, t Topic) error

	// Publish appends msgs to the log durably before returning, all or nothing. The messages
	// are valid (the API checks them). A message with Key also sets the key's state: Merge
	// MergePatch merges its body into the state's (MergeState: both must be JSON objects,
	// else the publish fails whole with a *Refusal of ErrPatchNotObject or
	// ErrPatchWaitingNotObject whose Index is the message, which pkg/api answers as
	// invalid_argument naming messages[i].body: engines name no request fields) and the
	// merged message is what the log holds; a Deleted message (Body "" with Key and Delete
	// set) removes the state. Stored bytes: each entry counts PayloadBytes of its body and
	// attributes, and each key's state the same of the state's.
	Publish(ctx context.Context, t Topic, msgs []PublishMessage) ([]PublishResult, error)
	// ReadLog returns up to limit entries (at most MaxLogRead, MaxLogReadBytes) with
	// sequence ≥ from, ascending. An entry already trimmed is skipped.
	ReadLog(ctx context.Context, t Topic, from uint64, limit int) ([]LogEntry, error)
	// Bounds describes the log.
	Bounds(ctx context.Context, t Topic) (LogBounds, error)
	// SequenceAt is the first sequence published at or after at (Last+1 when none was).
	SequenceAt(ctx context.Context, t Topic, at time.Time) (uint64, error)
	// Trim drops the entries older than the retention (and, at retention 0, the entries
	// every binding has passed). It never blocks a publish for long: it works in bounded
	// steps.
	Trim(ctx context.Context, t Topic) error

	// State reads one key's state (ErrNoState when the key has none); StatePage pages
	// through every key in key order ("" cursor: the first page).
	State(ctx context.Context, t Topic, key string) (StateEntry, error)
	StatePage(ctx context.Context, t Topic, limit int, cursor string) ([]StateEntry, string, error)

	// Bind adds a binding with its filter and starting cursor (idempotent for the same id).
	Bind(ctx context.Context, t Topic, b Binding) error
	// SetFilter replaces a binding's filter; the next fan-out step that reads an entry
	// published after this returns judges it by the new filter.
	SetFilter(ctx context.Context, t Topic, binding ids.ID, filter string) error
	// Unbind removes a binding (no error when it is gone) and its high-water mark in queue q.
	Unbind(ctx context.Context, t Topic, binding ids.ID, q ids.ID) error
	// Bindings lists the topic's bindings with their cursors and counts.
	Bindings(ctx context.Context, t Topic) ([]Binding, error)
	// AdvanceBindings records the fan-out's progress (a binding that is gone is skipped). A
	// cursor never goes back: a Through below it adds the counts only (a holder that lost
	// its lease mid-round may still advance after the new holder did).
	AdvanceBindings(ctx context.Context, t Topic, as []Advance) error

	// Copy stores a binding's batch in queue q so that a batch (or any message of it) copied
	// again — after a crash, by any replica — stores nothing twice: every message whose
	// Sequence is at or below the binding's high-water mark kept with q is skipped, and the
	// mark rises to the batch's last Sequence in the same atomic step as the store. (A fifo
	// queue whose messages span partitions may rest this on its dedup markers instead: each
	// copy's dedup id names it, and a copy found as a duplicate of its own message id counts
	// as stored; the fan-out retries a batch well within DedupWindow.) It returns one error per message
	// (nil: stored now or earlier), set when the queue refused it (its project's byte quota,
	// a fifo dedup id held by another message); a non-nil error of its own means nothing of
	// the batch was stored by this call.
	Copy(ctx context.Context, q Queue, b CopyBatch) ([]error, error)

	// LeaseTopic takes or renews the fan-out lease of a topic for owner until ttl from now;
	// false when another owner holds it.
	LeaseTopic(ctx context.Context, topic ids.ID, owner string, ttl time.Duration) (bool, error)
	// ReleaseTopic gives the lease up if owner holds it.
	ReleaseTopic(ctx context.Context, topic ids.ID, owner string) error
	// ActiveTopics lists the topics that may have entries not yet fanned out or trimmed:
	// every topic published to (or woken) since it was last marked idle, and every idle topic
	// whose wakeAt has passed (engine clock).
	ActiveTopics(ctx context.Context) ([]ids.ID, error)
	// IdleTopic removes the topic from ActiveTopics unless a publish after sequence last
	// happened (the fan-out calls it once every binding reached last). When it does, wakeAt
	// replaces the topic's wake time: not zero, the topic is listed again once wakeAt has
	// passed (its oldest entry is then past the retention: the fan-out trims it), until it
	// is next idled; zero, it is not. The wake time survives a restart.
	IdleTopic(ctx context.Context, topic ids.ID, last uint64, wakeAt time.Time) error
	// WakeTopic lists the topic in ActiveTopics at once, as a publish does, until the fan-out
	// next idles it (a shortened retention applies without waiting for the wake time).
	WakeTopic(ctx context.Context, topic ids.ID) error
	// WatchTopic signals (coalescing, without blocking) whenever a publish to the topic may
	// have happened on any replica.
	WatchTopic(topic ids.ID) (ch <-chan struct{}, cancel func())
}

// PublishMessage is one message of a publish.
type PublishMessage struct {
	Message
	// Delete, with Key, publishes a null body: the key's state is deleted.
	Delete bool
}

// StateEntry is the latest value of one key of a topic (docs/topics.md, keyed state).
type StateEntry struct {
	Key         string
	Body        string
	Attributes  map[string]string
	Sequence    uint64
	PublishedAt time.Time
}
