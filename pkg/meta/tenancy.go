package meta

import (
	"context"
	"maps"
	"time"

	"github.com/queueshq/queues/pkg/ids"
)

// The project limits, by their API names.
const (
	LimitMaxQueues          = "maxQueues"
	LimitMaxSubscriptions   = "maxSubscriptions"
	LimitMaxTopics          = "maxTopics"
	LimitMaxStoredBytes     = "maxStoredBytes"
	LimitRequestsPerSecond  = "requestsPerSecond"
	LimitMaxWaitingReceives = "maxWaitingReceives"
	LimitSendBytesPerSecond = "sendBytesPerSecond"
)

// LimitNames lists every project limit in the order the API shows them.
var LimitNames = []string{LimitMaxQueues, LimitMaxSubscriptions, LimitMaxTopics, LimitMaxStoredBytes, LimitRequestsPerSecond, LimitMaxWaitingReceives, LimitSendBytesPerSecond}

// Limits are the limit values a project has of its own, by name; an absent name takes the
// operator's default.
type Limits map[string]int64

// LimitsPatch changes a project's own limits: a value sets one, nil removes it (back to the
// default); names absent from the patch keep what they had.
type LimitsPatch map[string]*int64

// Apply returns l changed by p (l itself is not modified).
func (l Limits) Apply(p LimitsPatch) Limits {
	out := maps.Clone(l)
	if out == nil {
		out = Limits{}
	}
	for k, v := range p {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = *v
		}
	}
	return out
}

// ProjectCounts are the counted resources of a project.
type ProjectCounts struct {
	Queues        int64
	Subscriptions int64
	Topics        int64
}

// Counters are one project's metered use over one UTC hour.
type Counters struct {
	Requests          int64
	MessagesSent      int64
	MessagesDelivered int64
	MessagesAcked     int64
	BytesIn           int64
	BytesOut          int64
	PushAttempts      int64
	StoredByteHours   int64
	// MessagesPublished counts messages appended to topics' logs (duplicates not counted);
	// their copies into queues count in MessagesSent.
	MessagesPublished int64
}

// Add adds o to c.
func (c *Counters) Add(o Counters) {
	c.Requests += o.Requests
	c.MessagesSent += o.MessagesSent
	c.MessagesDelivered += o.MessagesDelivered
	c.MessagesAcked += o.MessagesAcked
	c.BytesIn += o.BytesIn
	c.BytesOut += o.BytesOut
	c.PushAttempts += o.PushAttempts
	c.StoredByteHours += o.StoredByteHours
	c.MessagesPublished += o.MessagesPublished
}

// IsZero reports whether nothing was counted.
func (c Counters) IsZero() bool { return c == Counters{} }

// UsageHour is a project's counters for the UTC hour that starts at Hour.
type UsageHour struct {
	Project ids.ID
	Hour    time.Time
	Counters
}

// UsageFlush is one replica's counts since its previous flush. Seq increases with every flush
// of a Replica; a store applies a (Replica, Seq) pair at most once, so a flush retried after
// an unknown outcome cannot count twice.
type UsageFlush struct {
	Replica string
	Seq     uint64
	Hours   []UsageHour
}

// MaxUsageRange bounds one usage read (31 days).
const MaxUsageRange = 31 * 24 * time.Hour

// TenancyStore keeps what tenancy needs beside the metadata: the projects' own limits, the
// counts the queue and subscription quotas are checked against, and the hourly usage meters.
// Errors carry apierr codes like Store's; a quota that a create would pass is
// QuotaExceeded with details.limit naming it.
type TenancyStore interface {
	// GetLimits reads a project's own limits (NotFound for a missing project).
	GetLimits(ctx context.Context, project ids.ID) (Limits, error)
	// UpdateLimits applies patch to a project's own limits and returns the result.
	UpdateLimits(ctx context.Context, project ids.ID, patch LimitsPatch) (Limits, error)
	// Counts reads how many queues, subscriptions and topics a project has.
	Counts(ctx context.Context, project ids.ID) (ProjectCounts, error)
	// CreateQueueWithin is CreateQueue that also fails with QuotaExceeded (maxQueues) when the
	// project already has maxQueues queues, checked atomically with the create so concurrent
	// creates through any number of replicas never pass it. maxQueues <= 0: no limit.
	CreateQueueWithin(ctx context.Context, q Queue, maxQueues int64) error
	// CreateSubscriptionWithin is CreateSubscription with the maxSubscriptions quota, the same
	// way.
	CreateSubscriptionWithin(ctx context.Context, s Subscription, maxSubscriptions int64) error
	// AddUsage adds a flush's counters to the projects' hours, at most once per (Replica, Seq).
	AddUsage(ctx context.Context, f UsageFlush) error
	// AddStoredSample adds byteHours to a project's storedByteHours of the hour that starts at
	// hour, unless a sample for this slot of the hour (or a later one) was already added — by
	// any replica — so that every replica may sample every project and the total still counts
	// each slot once.
	AddStoredSample(ctx context.Context, project ids.ID, hour time.Time, slot int, byteHours int64) error
	// Usage reads a project's hours in [from, to), in hour order; hours with no use are absent.
	Usage(ctx context.Context, project ids.ID, from, to time.Time) ([]UsageHour, error)
}

// HourOf is the start of t's UTC hour.
func HourOf(t time.Time) time.Time { return t.UTC().Truncate(time.Hour) }
