package meta

import (
	"context"
	"errors"
	"time"

	"github.com/queueshq/queues/pkg/ids"
)

// ErrTopicConflict is returned by UpdateTopic when the topic changed since it was read.
var ErrTopicConflict = errors.New("meta: topic changed concurrently")

// ErrBindingConflict is returned by UpdateBinding when the binding changed since it was read.
var ErrBindingConflict = errors.New("meta: binding changed concurrently")

// Topic and binding bounds (docs/topics.md).
const (
	// MaxSourcesPerQueue bounds the bindings of one queue.
	MaxSourcesPerQueue = 10
	// MaxBindingsPerTopic bounds the bindings of one topic.
	MaxBindingsPerTopic = 100
	// MaxTopicRetentionSeconds bounds a topic's retentionSeconds (14 days).
	MaxTopicRetentionSeconds = 1_209_600
	// DefaultTopicRetentionSeconds is a topic's retentionSeconds when created without one.
	DefaultTopicRetentionSeconds = 86_400
)

// The details.limit names of the binding bounds' quota_exceeded (not limits a project sets).
const (
	LimitSourcesPerQueue  = "sourcesPerQueue"
	LimitBindingsPerTopic = "bindingsPerTopic"
)

// Topic is a topic's stored settings (docs/topics.md).
type Topic struct {
	ID        ids.ID
	ProjectID ids.ID
	Name      string
	Type      string // "standard" or "fifo", fixed at creation
	// RetentionSeconds is how long the topic's log keeps what was published (0: nothing
	// beyond fan-out).
	RetentionSeconds int
	CreatedAt        time.Time
	UpdatedAt        time.Time
	// Version increases with every update (optimistic concurrency for UpdateTopic).
	Version int64
}

// Binding is a queue's source: one topic, with a filter (docs/topics.md). Its fan-out state (the
// cursor, copied and failed counts) lives in the engine beside the topic's log.
type Binding struct {
	ID        ids.ID
	ProjectID ids.ID
	QueueID   ids.ID
	TopicID   ids.ID
	// Filter is the binding's attribute filter as the API accepted it (JSON; "" for none).
	Filter string
	// From is where the binding started as it was asked ("now", "earliest", a sequence or
	// an RFC 3339 time), and StartSequence the first sequence it takes.
	From          string
	StartSequence uint64
	CreatedAt     time.Time
	UpdatedAt     time.Time
	// Version increases with every update (optimistic concurrency for UpdateBinding).
	Version int64
}

// TopicStore keeps topics and bindings. Errors carry apierr codes: NotFound for a missing
// record, TopicExists for a taken topic name, BindingExists for a queue bound to the topic
// already, QuotaExceeded (details.limit maxTopics, sourcesPerQueue or bindingsPerTopic) for
// a bound a create would pass, ErrBadCursor (InvalidArgument) for a bad cursor, Unavailable
// when the backend cannot be reached.
type TopicStore interface {
	// CreateTopicWithin stores a new topic whose name is free among the project's topics,
	// failing with QuotaExceeded (maxTopics) when the project already has maxTopics topics,
	// checked atomically with the create. maxTopics <= 0: no limit.
	CreateTopicWithin(ctx context.Context, t Topic, maxTopics int64) error
	// GetTopic finds a topic by id within a project; GetTopicByName by name within a
	// project; GetTopicByID by id alone (the fan-out knows topics by id).
	GetTopic(ctx context.Context, projectID, topicID ids.ID) (Topic, error)
	GetTopicByName(ctx context.Context, projectID ids.ID, name string) (Topic, error)
	GetTopicByID(ctx context.Context, topicID ids.ID) (Topic, error)
	// ListTopics lists a project's topics whose names start with prefix, in name order.
	ListTopics(ctx context.Context, projectID ids.ID, prefix string, page Page) (ts []Topic, nextCursor string, err error)
	// CountTopics counts a project's topics.
	CountTopics(ctx context.Context, projectID ids.ID) (int64, error)
	// UpdateTopic replaces RetentionSeconds if the stored Version equals t.Version (else
	// ErrTopicConflict) and returns what is stored, with the new Version.
	UpdateTopic(ctx context.Context, t Topic) (Topic, error)
	// DeleteTopic deletes a topic and its bindings, frees its name, and returns the topic
	// and the bindings deleted.
	DeleteTopic(ctx context.Context, projectID, topicID ids.ID) (Topic, []Binding, error)

	// CreateBinding stores a new binding of an existing queue to an existing topic of the
	// same project (NotFound for either missing), at most MaxSourcesPerQueue per queue and
	// MaxBindingsPerTopic per topic (QuotaExceeded), one per queue and topic (BindingExists).
	CreateBinding(ctx context.Context, b Binding) error
	// GetBinding reads one binding of a queue.
	GetBinding(ctx context.Context, queueID, bindingID ids.ID) (Binding, error)
	// QueueBindings lists a queue's bindings (at most MaxSourcesPerQueue) and TopicBindings
	// a topic's (at most MaxBindingsPerTopic), in creation order: binding id order (ids.New
	// is time-ordered), as ListProjects.
	QueueBindings(ctx context.Context, queueID ids.ID) ([]Binding, error)
	TopicBindings(ctx context.Context, topicID ids.ID) ([]Binding, error)
	// UpdateBinding replaces Filter if the stored Version equals b.Version (else
	// ErrBindingConflict) and returns what is stored, with the new Version.
	UpdateBinding(ctx context.Context, b Binding) (Binding, error)
	// DeleteBinding deletes one binding of a queue and returns it.
	DeleteBinding(ctx context.Context, queueID, bindingID ids.ID) (Binding, error)
	// DeleteQueueBindings deletes every binding of a queue (the queue is being deleted) and
	// returns them.
	DeleteQueueBindings(ctx context.Context, queueID ids.ID) ([]Binding, error)
}

// CheckNew is what every store refuses before creating t: a zero id (or project id) or no
// name.
func (t Topic) CheckNew() error {
	if t.ID.IsZero() || t.ProjectID.IsZero() {
		return ZeroID("topic or project")
	}
	if t.Name == "" {
		return ErrEmptyName
	}
	return nil
}

// CheckNew is what every store refuses before creating b: a zero binding, queue or topic id.
func (b Binding) CheckNew() error {
	if b.ID.IsZero() || b.QueueID.IsZero() || b.TopicID.IsZero() {
		return ZeroID("binding, queue or topic")
	}
	return nil
}

// TopicNameTaken is ErrTopicNameTaken about name.
func TopicNameTaken(name string) error { return &Refusal{Err: ErrTopicNameTaken, Name: name} }

// BindingTaken is ErrBindingExists about a second binding of queueID to topicID.
func BindingTaken(queueID, topicID ids.ID) error {
	return &Refusal{Err: ErrBindingExists, ID: queueID, Other: topicID}
}

// TopicQuota is the ErrQuota of a topic create past the project's maxTopics.
func TopicQuota(maxTopics int64) error { return QuotaReached(LimitMaxTopics, maxTopics) }

// SourcesQuota is the ErrQuota of an 11th binding of one queue.
func SourcesQuota() error { return QuotaReached(LimitSourcesPerQueue, MaxSourcesPerQueue) }

// BindingsQuota is the ErrQuota of a 101st binding of one topic.
func BindingsQuota() error { return QuotaReached(LimitBindingsPerTopic, MaxBindingsPerTopic) }

// TopicNotFound is ErrNotFound about topic id.
func TopicNotFound(id ids.ID) error { return NotFound(KindTopic, id) }

// BindingNotFound is ErrNotFound about binding id.
func BindingNotFound(id ids.ID) error { return NotFound(KindBinding, id) }

// CloneTopic returns t with its times in UTC.
func CloneTopic(t Topic) Topic {
	t.CreatedAt, t.UpdatedAt = t.CreatedAt.UTC(), t.UpdatedAt.UTC()
	return t
}

// CloneBinding returns b with its times in UTC.
func CloneBinding(b Binding) Binding {
	b.CreatedAt, b.UpdatedAt = b.CreatedAt.UTC(), b.UpdatedAt.UTC()
	return b
}
