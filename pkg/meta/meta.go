// Package meta defines the metadata of the service (projects, tokens, queues) and the Store
// interface that the DynamoDB store (package dynamometa) and the embedded store implement.
// Package metatest holds the conformance suite every Store must pass.
package meta

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// ErrVersionConflict is returned by UpdateQueue when the queue changed since it was read.
var ErrVersionConflict = errors.New("meta: queue changed concurrently")

// Project is a tenant.
type Project struct {
	ID        ids.ID
	Name      string
	CreatedAt time.Time
}

// Token is a project's API credential. The bearer secret itself (a JWT) is never stored: the
// record is what revocation and expiry are checked against.
type Token struct {
	ID        ids.ID
	ProjectID ids.ID
	Name      string
	Scopes    []string
	CreatedAt time.Time
	ExpiresAt *time.Time // nil: never
	RevokedAt *time.Time // nil: live
}

// Redrive is a queue's dead-letter policy as stored.
type Redrive struct {
	DeadLetterQueue ids.ID
	MaxReceiveCount int
}

// Queue is a queue's stored settings.
type Queue struct {
	ID                       ids.ID
	ProjectID                ids.ID
	Name                     string
	Type                     string // "standard" or "fifo"
	CreatedAt                time.Time
	UpdatedAt                time.Time
	VisibilityTimeoutSeconds int
	RetentionSeconds         int
	DelaySeconds             int
	ReceiveWaitSeconds       int
	Redrive                  *Redrive
	ContentBasedDedup        bool
	// Fairness decides between receives waiting on the queue
	// (docs/delivery-options.md#consumers-backlogs-and-fairness): "fast" (also ""), "roundRobin" or
	// "proportional".
	Fairness string
	// Delivery is DeliveryAtLeastOnce or DeliveryAtMostOnce
	// (docs/delivery-options.md#at-most-once-queues), fixed at creation; "" (queues stored before
	// the setting existed) reads as DeliveryAtLeastOnce.
	Delivery string
	// MaxCancels is how many cancels a message of the queue may take
	// (docs/delivery-options.md#cancel); nil (queues stored before the setting existed, or created
	// without it) reads as engine.DefaultMaxCancels.
	MaxCancels *int
	// MaxMessageBytes is the most a message's body and attributes may hold together
	// (docs/api-tour.md, 1,024 to engine.MaxMessageBytes); 0 (queues stored before the setting
	// existed) reads as MaxMessageBytesOrDefault says.
	MaxMessageBytes int
	// GroupPolicy is a fifo queue's group policy (engine.GroupPolicy): "sequenced" (also "",
	// queues stored before the setting existed) or "exclusive".
	GroupPolicy string
	// GroupAffinitySeconds is how long an exclusive binding lasts without activity; 0 reads
	// as the default (engine.DefaultGroupAffinity).
	GroupAffinitySeconds int
	// MaxGroupsPerConsumer caps one consumer's bindings; 0 reads as the default
	// (engine.DefaultMaxGroupsPerConsumer).
	MaxGroupsPerConsumer int
	// OnDeadLetter is a fifo queue's poison policy (engine.PoisonPolicy: "continue", "park",
	// "parkGroup"); "" (queues stored before the setting existed) reads as "continue".
	OnDeadLetter string
	// Tags are the queue's cost-allocation tags (SQS TagQueue), nil when none.
	Tags map[string]string
	// SQSAttributes keeps the SQS queue attributes that have no /v1 setting (such as
	// RedriveAllowPolicy or MaximumMessageSize) as SQS wrote them, nil when none.
	SQSAttributes map[string]string
	// Version increases with every update (optimistic concurrency for UpdateQueue).
	Version int64
}

// Delivery modes of a queue (docs/delivery-options.md#at-most-once-queues).
const (
	DeliveryAtLeastOnce = "atLeastOnce"
	DeliveryAtMostOnce  = "atMostOnce"
)

// DeliveryMode is q's delivery mode, DeliveryAtLeastOnce when unset.
func (q Queue) DeliveryMode() string {
	if q.Delivery == "" {
		return DeliveryAtLeastOnce
	}
	return q.Delivery
}

// AtMostOnce tells whether a receive removes what it returns.
func (q Queue) AtMostOnce() bool { return q.Delivery == DeliveryAtMostOnce }

// Page is a page of a listing. Cursor is opaque; "" asks for the first page. NextCursor is ""
// on the last page.
type Page struct {
	Limit  int
	Cursor string
}

// Page sizes: a Page with Limit <= 0 gets DefaultLimit; larger limits are cut to MaxLimit.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// Size is the number of records the page holds at most: Limit, or DefaultLimit when Limit
// is <= 0, and never more than MaxLimit.
func (p Page) Size() int {
	switch {
	case p.Limit <= 0:
		return DefaultLimit
	case p.Limit > MaxLimit:
		return MaxLimit
	}
	return p.Limit
}

// Store keeps metadata. Errors carry apierr codes: NotFound for a missing record,
// ErrQueueNameTaken (QueueExists) for a taken name, QueueInUse for deleting a dead-letter
// queue still named by another queue, ErrBadCursor (InvalidArgument) for a bad cursor,
// Unavailable when the backend cannot be reached; the refusals (errors.go) name no field.
type Store interface {
	CreateProject(ctx context.Context, p Project) error
	GetProject(ctx context.Context, id ids.ID) (Project, error)
	ListProjects(ctx context.Context, page Page) (ps []Project, nextCursor string, err error)

	CreateToken(ctx context.Context, t Token) error
	GetToken(ctx context.Context, projectID, tokenID ids.ID) (Token, error)
	// TokenProject answers the project a token belongs to (NotFound for an unknown token): an
	// SQS access key names the token alone.
	TokenProject(ctx context.Context, tokenID ids.ID) (ids.ID, error)
	// RevokeToken sets RevokedAt (idempotent: a second revoke keeps the first time).
	RevokeToken(ctx context.Context, projectID, tokenID ids.ID, at time.Time) error

	// CreateQueue stores a new queue; its name must be free in the project, and a redrive's
	// dead-letter queue must exist in the same project (else ErrDeadLetterNotFound, code
	// NotFound). The store records the reference so the dead-letter queue
	// cannot be deleted while named.
	CreateQueue(ctx context.Context, q Queue) error
	// GetQueue finds a queue by id within a project.
	GetQueue(ctx context.Context, projectID, queueID ids.ID) (Queue, error)
	// GetQueueByName finds a queue by name within a project.
	GetQueueByName(ctx context.Context, projectID ids.ID, name string) (Queue, error)
	// GetQueueByID finds a queue by id alone (receipt handles carry only the queue id).
	GetQueueByID(ctx context.Context, queueID ids.ID) (Queue, error)
	// ListQueues lists a project's queues whose names start with prefix, in name order.
	ListQueues(ctx context.Context, projectID ids.ID, prefix string, page Page) (qs []Queue, nextCursor string, err error)
	// UpdateQueue replaces the settings (with Tags and SQSAttributes) of q if its stored Version equals q.Version (else
	// ErrVersionConflict: the caller re-reads and re-applies its change), and moves dead-letter
	// references when the redrive changes (ErrDeadLetterNotFound, code NotFound, for a
	// missing dead-letter queue). Name, type, project and CreatedAt are never changed. It
	// returns the stored queue with the new Version.
	UpdateQueue(ctx context.Context, q Queue) (Queue, error)
	// DeleteQueue deletes a queue and frees its name; QueueInUse while another queue names it
	// as dead-letter queue. It returns the deleted queue.
	DeleteQueue(ctx context.Context, projectID, queueID ids.ID) (Queue, error)

	// Ping checks that the store is reachable (readiness).
	Ping(ctx context.Context) error
}

// QueueByID is what EngineQueue reads: a store, the metadata cache, or a map of queues.
type QueueByID interface {
	GetQueueByID(ctx context.Context, queueID ids.ID) (Queue, error)
}

// EngineQueue is the one resolution of a queue plus its dead-letter queue into what the
// engine needs (the API, the pusher and the sweeper all use it). A dead-letter queue that is
// not found drops the policy rather than failing every receive (named dead-letter queues
// cannot be deleted, so this only happens to data left inconsistent); any other error is
// returned.
func EngineQueue(ctx context.Context, store QueueByID, q Queue) (engine.Queue, error) {
	if q.Redrive == nil {
		return q.Engine(nil), nil
	}
	dlq, err := store.GetQueueByID(ctx, q.Redrive.DeadLetterQueue)
	switch {
	case err == nil:
		return q.Engine(&dlq), nil
	case errors.Is(err, ErrNotFound):
		return q.Engine(nil), nil
	default:
		return engine.Queue{}, err
	}
}

// Engine returns the settings the queue engine needs for q, with dlq's when q has a redrive
// policy and dlq is not nil (a dead-letter queue's own redrive is never followed).
func (q Queue) Engine(dlq *Queue) engine.Queue {
	eq := engine.Queue{
		ID: q.ID, Project: q.ProjectID, Type: engine.Type(q.Type),
		VisibilityTimeout: time.Duration(q.VisibilityTimeoutSeconds) * time.Second,
		Retention:         time.Duration(q.RetentionSeconds) * time.Second,
		Delay:             time.Duration(q.DelaySeconds) * time.Second,
		ContentBasedDedup: q.ContentBasedDedup,
		AtMostOnce:        q.AtMostOnce(),
		MaxCancels:        q.MaxCancelsOrDefault(),
		MaxMessageBytes:   q.MaxMessageBytesOrDefault(),
		OnDeadLetter:      engine.PoisonPolicy(q.OnDeadLetter),
	}
	if q.Type == string(engine.FIFO) {
		eq.GroupPolicy = engine.GroupPolicy(q.GroupPolicyOrDefault())
		eq.GroupAffinity = q.GroupAffinityOrDefault()
		eq.MaxGroupsPerConsumer = q.MaxGroupsPerConsumerOrDefault()
	}
	if q.Redrive != nil && dlq != nil {
		d := dlq.Engine(nil)
		eq.Redrive = &engine.Redrive{DeadLetter: &d, MaxReceiveCount: q.Redrive.MaxReceiveCount}
	}
	return eq
}

// OnDeadLetterOrDefault is the queue's poison policy, "continue" when unset.
func (q Queue) OnDeadLetterOrDefault() string {
	if q.OnDeadLetter == "" {
		return string(engine.PoisonContinue)
	}
	return q.OnDeadLetter
}

// MaxMessageBytesOrDefault is the queue's maxMessageBytes. A queue stored without one reads
// as the MaximumMessageSize the SQS door kept among its SQSAttributes before the setting
// existed, else engine.DefaultMaxMessageBytes.
func (q Queue) MaxMessageBytesOrDefault() int {
	if q.MaxMessageBytes > 0 {
		return q.MaxMessageBytes
	}
	// Looked up before parsing: every send reads this, and Atoi of a missing value allocates
	// its error.
	if v, ok := q.SQSAttributes["MaximumMessageSize"]; ok {
		if n, err := strconv.Atoi(v); err == nil && n >= engine.MinMaxMessageBytes && n <= engine.MaxMessageBytes {
			return n
		}
	}
	return engine.DefaultMaxMessageBytes
}

// MaxCancelsOrDefault is the queue's maxCancels, engine.DefaultMaxCancels when unset.
func (q Queue) MaxCancelsOrDefault() int {
	if q.MaxCancels == nil {
		return engine.DefaultMaxCancels
	}
	return *q.MaxCancels
}

// GroupPolicyOrDefault is a fifo queue's group policy, "sequenced" when unset.
func (q Queue) GroupPolicyOrDefault() string {
	if q.GroupPolicy == "" {
		return string(engine.GroupSequenced)
	}
	return q.GroupPolicy
}

// GroupAffinityOrDefault is the queue's groupAffinitySeconds as a duration, the default when
// unset.
func (q Queue) GroupAffinityOrDefault() time.Duration {
	if q.GroupAffinitySeconds <= 0 {
		return engine.DefaultGroupAffinity
	}
	return time.Duration(q.GroupAffinitySeconds) * time.Second
}

// MaxGroupsPerConsumerOrDefault is the queue's maxGroupsPerConsumer, the default when unset.
func (q Queue) MaxGroupsPerConsumerOrDefault() int {
	if q.MaxGroupsPerConsumer <= 0 {
		return engine.DefaultMaxGroupsPerConsumer
	}
	return q.MaxGroupsPerConsumer
}
