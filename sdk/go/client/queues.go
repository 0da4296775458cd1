package client

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Project is a tenant. Limits and Usage are set by GetProject, OwnProject and
// UpdateProjectLimits (not in listings).
type Project struct {
	ID        string        `json:"id"`
	Slug      string        `json:"slug"`
	Name      string        `json:"name"`
	CreatedAt time.Time     `json:"createdAt"`
	Limits    *Limits       `json:"limits,omitempty"`
	Usage     *ProjectUsage `json:"usage,omitempty"`
}

// ProjectPage is one page of projects.
type ProjectPage struct {
	Projects   []Project `json:"projects"`
	NextCursor *string   `json:"nextCursor"`
}

// Page selects one page of a list: Limit items (0: the server's default) after Cursor (the
// previous page's NextCursor; empty for the first page).
type Page struct {
	Limit  int
	Cursor string
}

func (p Page) query() url.Values {
	q := url.Values{}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.Cursor != "" {
		q.Set("cursor", p.Cursor)
	}
	return q
}

// Scopes a project token may hold.
const (
	ScopeAll             = "*"
	ScopeQueuesAdmin     = "queues:admin"
	ScopeQueuesRead      = "queues:read"
	ScopeMessagesSend    = "messages:send"
	ScopeMessagesReceive = "messages:receive"
)

// CreateTokenInput describes a project token to issue.
type CreateTokenInput struct {
	Name   string   `json:"name"`
	Scopes []string `json:"scopes"`
	// TTLSeconds is the token's lifetime; nil for a token that never expires.
	TTLSeconds *int `json:"ttlSeconds,omitempty"`
}

// Token is an issued project token; Token is the JWT, shown only once.
type Token struct {
	ID        string     `json:"id"`
	Slug      string     `json:"slug"`
	Name      string     `json:"name"`
	Token     string     `json:"token"`
	Scopes    []string   `json:"scopes"`
	CreatedAt time.Time  `json:"createdAt"`
	ExpiresAt *time.Time `json:"expiresAt"`
	// SQSSecretAccessKey signs SQS requests with the token's slug as access key id.
	SQSSecretAccessKey string `json:"sqsSecretAccessKey"`
}

// SQSCredentials are a token's AWS Signature Version 4 key pair for the SQS door.
type SQSCredentials struct {
	AccessKeyID     string `json:"accessKeyId"`
	SecretAccessKey string `json:"secretAccessKey"`
}

// CreateProject creates a tenant (operator credential).
func (c *Client) CreateProject(ctx context.Context, name string) (*Project, error) {
	var p Project
	if err := c.Do(ctx, http.MethodPost, "/v1/projects", nil, map[string]string{"name": name}, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// ListProjects lists one page of projects, oldest first (operator credential).
func (c *Client) ListProjects(ctx context.Context, page Page) (*ProjectPage, error) {
	var p ProjectPage
	if err := c.Do(ctx, http.MethodGet, "/v1/projects", page.query(), nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// GetProject returns a project by id or slug (operator credential).
func (c *Client) GetProject(ctx context.Context, project string) (*Project, error) {
	var p Project
	if err := c.Do(ctx, http.MethodGet, "/v1/projects/"+seg(project), nil, nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// CreateToken issues a token for a project (operator credential).
func (c *Client) CreateToken(ctx context.Context, project string, in CreateTokenInput) (*Token, error) {
	var t Token
	if err := c.Do(ctx, http.MethodPost, "/v1/projects/"+seg(project)+"/tokens", nil, in, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// SQSCredentials shows a token's SQS key pair again (operator credential).
func (c *Client) SQSCredentials(ctx context.Context, project, token string) (*SQSCredentials, error) {
	var out SQSCredentials
	if err := c.Do(ctx, http.MethodGet, "/v1/projects/"+seg(project)+"/tokens/"+seg(token)+"/sqs-credentials", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RevokeToken revokes a token by id or slug (operator credential).
func (c *Client) RevokeToken(ctx context.Context, project, token string) error {
	return c.Do(ctx, http.MethodDelete, "/v1/projects/"+seg(project)+"/tokens/"+seg(token), nil, nil, nil)
}

// QueueType is standard or fifo.
type QueueType string

// Queue types.
const (
	Standard QueueType = "standard"
	FIFO     QueueType = "fifo"
)

// Redrive is a queue's dead-letter policy: a message received MaxReceiveCount times moves to
// DeadLetterQueue (its id; when creating or updating, its id or slug).
type Redrive struct {
	DeadLetterQueue string `json:"deadLetterQueue"`
	MaxReceiveCount int    `json:"maxReceiveCount"`
}

// QueueCounts are a queue's message counts (exact up to 100,000 each, else Truncated).
type QueueCounts struct {
	Visible                 int64 `json:"visible"`
	InFlight                int64 `json:"inFlight"`
	Delayed                 int64 `json:"delayed"`
	Truncated               bool  `json:"truncated"`
	OldestMessageAgeSeconds int64 `json:"oldestMessageAgeSeconds"`
}

// Queue is a queue's settings, counts and partitions.
type Queue struct {
	ID                       string    `json:"id"`
	Slug                     string    `json:"slug"`
	Name                     string    `json:"name"`
	Type                     QueueType `json:"type"`
	CreatedAt                time.Time `json:"createdAt"`
	UpdatedAt                time.Time `json:"updatedAt"`
	VisibilityTimeoutSeconds int       `json:"visibilityTimeoutSeconds"`
	RetentionSeconds         int       `json:"retentionSeconds"`
	DelaySeconds             int       `json:"delaySeconds"`
	ReceiveWaitSeconds       int       `json:"receiveWaitSeconds"`
	Redrive                  *Redrive  `json:"redrive"`
	ContentBasedDedup        bool      `json:"contentBasedDedup"`
	Fairness                 Fairness  `json:"fairness"`
	MaxCancels               int       `json:"maxCancels"`
	// MaxMessageBytes is the most a message's body and attributes may hold together (1,024
	// to 1,048,576; 262,144 by default).
	MaxMessageBytes int `json:"maxMessageBytes"`
	// GroupPolicy, GroupAffinitySeconds and MaxGroupsPerConsumer are a fifo queue's group
	// policy settings (zero on standard queues; docs/fifo.md "Group policies").
	GroupPolicy          GroupPolicy `json:"groupPolicy,omitempty"`
	GroupAffinitySeconds int         `json:"groupAffinitySeconds,omitempty"`
	MaxGroupsPerConsumer int         `json:"maxGroupsPerConsumer,omitempty"`
	// OnDeadLetter is a fifo queue's poison policy (docs/fifo.md).
	OnDeadLetter OnDeadLetter `json:"onDeadLetter"`
	Delivery     Delivery     `json:"delivery"`
	Partitions   int          `json:"partitions"`
	Counts       QueueCounts  `json:"counts"`
}

// CreateQueueInput describes a new queue; nil settings take the service's defaults.
type CreateQueueInput struct {
	Name                     string    `json:"name"`
	Type                     QueueType `json:"type,omitempty"`
	VisibilityTimeoutSeconds *int      `json:"visibilityTimeoutSeconds,omitempty"`
	RetentionSeconds         *int      `json:"retentionSeconds,omitempty"`
	DelaySeconds             *int      `json:"delaySeconds,omitempty"`
	ReceiveWaitSeconds       *int      `json:"receiveWaitSeconds,omitempty"`
	Redrive                  *Redrive  `json:"redrive,omitempty"`
	ContentBasedDedup        bool      `json:"contentBasedDedup,omitempty"`
	Fairness                 Fairness  `json:"fairness,omitempty"`
	MaxCancels               *int      `json:"maxCancels,omitempty"`
	// MaxMessageBytes is the largest message the queue takes, body and attributes together
	// (1,024 to 1,048,576; nil: 262,144).
	MaxMessageBytes *int `json:"maxMessageBytes,omitempty"`
	// GroupPolicy (fifo queues): "" takes the default, GroupSequenced.
	GroupPolicy GroupPolicy `json:"groupPolicy,omitempty"`
	// GroupAffinitySeconds (fifo, 1–86,400; nil: 60) and MaxGroupsPerConsumer (fifo,
	// 1–10,000; nil: 100) tune GroupExclusive.
	GroupAffinitySeconds *int `json:"groupAffinitySeconds,omitempty"`
	MaxGroupsPerConsumer *int `json:"maxGroupsPerConsumer,omitempty"`
	// OnDeadLetter is a fifo queue's poison policy; "" takes the default, continue. park and
	// parkGroup need a Redrive.
	OnDeadLetter OnDeadLetter `json:"onDeadLetter,omitempty"`
	// Delivery is fixed at creation; "" takes the default, DeliveryAtLeastOnce.
	Delivery Delivery `json:"delivery,omitempty"`
}

// Fairness decides between receives waiting on a queue at the same moment
// (docs/delivery-options.md#consumers-backlogs-and-fairness).
type Fairness string

// Fairness settings.
const (
	FairnessFast         Fairness = "fast"         // whichever receive asks first (the default)
	FairnessRoundRobin   Fairness = "roundRobin"   // consumers with room in their backlog take turns
	FairnessProportional Fairness = "proportional" // the lowest share of its backlog in use first
)

// GroupPolicy is a fifo queue's group policy (docs/fifo.md "Group policies").
type GroupPolicy string

// Group policies.
const (
	// GroupSequenced hands a group's next batch to any receive (the default).
	GroupSequenced GroupPolicy = "sequenced"
	// GroupExclusive binds a group to the consumer (ConsumerID) that received its first
	// batch; every receive of the queue must name a ConsumerID.
	GroupExclusive GroupPolicy = "exclusive"
)

// OnDeadLetter is what a dead-letter does to the rest of a fifo group (docs/fifo.md).
type OnDeadLetter string

// Poison policies.
const (
	OnDeadLetterContinue  OnDeadLetter = "continue"  // the group goes on (the default)
	OnDeadLetterPark      OnDeadLetter = "park"      // the group waits until the message comes back or it is released
	OnDeadLetterParkGroup OnDeadLetter = "parkGroup" // the group's later messages follow it to the dead-letter queue
)

// Delivery is a queue's delivery mode (docs/delivery-options.md#at-most-once-queues).
type Delivery string

// Delivery modes. DeliveryAtMostOnce (standard queues only) removes every message a receive
// or push hands out: it comes without a receipt handle and is never delivered again.
const (
	DeliveryAtLeastOnce Delivery = "atLeastOnce"
	DeliveryAtMostOnce  Delivery = "atMostOnce"
)

// UpdateQueueInput changes the settings that are not nil. RemoveRedrive removes the redrive
// policy (sends "redrive": null).
type UpdateQueueInput struct {
	VisibilityTimeoutSeconds *int
	RetentionSeconds         *int
	DelaySeconds             *int
	ReceiveWaitSeconds       *int
	Redrive                  *Redrive
	RemoveRedrive            bool
	ContentBasedDedup        *bool
	Fairness                 Fairness // "" leaves it unchanged
	MaxCancels               *int
	MaxMessageBytes          *int
	GroupPolicy              GroupPolicy // "" leaves it unchanged
	GroupAffinitySeconds     *int
	MaxGroupsPerConsumer     *int
	OnDeadLetter             OnDeadLetter // "" leaves it unchanged
}

// MarshalJSON writes the PATCH body: only the fields being changed.
func (u UpdateQueueInput) MarshalJSON() ([]byte, error) {
	m := map[string]any{}
	put := func(k string, v *int) {
		if v != nil {
			m[k] = *v
		}
	}
	put("visibilityTimeoutSeconds", u.VisibilityTimeoutSeconds)
	put("retentionSeconds", u.RetentionSeconds)
	put("delaySeconds", u.DelaySeconds)
	put("receiveWaitSeconds", u.ReceiveWaitSeconds)
	put("maxCancels", u.MaxCancels)
	put("maxMessageBytes", u.MaxMessageBytes)
	put("groupAffinitySeconds", u.GroupAffinitySeconds)
	put("maxGroupsPerConsumer", u.MaxGroupsPerConsumer)
	if u.GroupPolicy != "" {
		m["groupPolicy"] = u.GroupPolicy
	}
	switch {
	case u.RemoveRedrive:
		m["redrive"] = nil
	case u.Redrive != nil:
		m["redrive"] = u.Redrive
	}
	if u.ContentBasedDedup != nil {
		m["contentBasedDedup"] = *u.ContentBasedDedup
	}
	if u.OnDeadLetter != "" {
		m["onDeadLetter"] = u.OnDeadLetter
	}
	if u.Fairness != "" {
		m["fairness"] = u.Fairness
	}
	return json.Marshal(m)
}

// ListQueuesInput selects a page of queues, optionally only names starting with Prefix.
type ListQueuesInput struct {
	Page
	Prefix string
}

// QueuePage is one page of queues, by name.
type QueuePage struct {
	Queues     []Queue `json:"queues"`
	NextCursor *string `json:"nextCursor"`
}

// CreateQueue creates a queue (scope queues:admin).
func (c *Client) CreateQueue(ctx context.Context, in CreateQueueInput) (*Queue, error) {
	var q Queue
	if err := c.Do(ctx, http.MethodPost, "/v1/queues", nil, in, &q); err != nil {
		return nil, err
	}
	return &q, nil
}

// ListQueues lists one page of the project's queues by name (scope queues:read).
func (c *Client) ListQueues(ctx context.Context, in ListQueuesInput) (*QueuePage, error) {
	q := in.query()
	if in.Prefix != "" {
		q.Set("prefix", in.Prefix)
	}
	var p QueuePage
	if err := c.Do(ctx, http.MethodGet, "/v1/queues", q, nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// AllQueues iterates over every queue whose name starts with prefix, page by page. It stops
// at the first error, which it yields.
func (c *Client) AllQueues(ctx context.Context, prefix string) iter.Seq2[Queue, error] {
	return func(yield func(Queue, error) bool) {
		in := ListQueuesInput{Prefix: prefix}
		for {
			p, err := c.ListQueues(ctx, in)
			if err != nil {
				yield(Queue{}, err)
				return
			}
			for _, q := range p.Queues {
				if !yield(q, nil) {
					return
				}
			}
			if p.NextCursor == nil || *p.NextCursor == "" {
				return
			}
			in.Cursor = *p.NextCursor
		}
	}
}

// GetQueue returns a queue by id, slug or name, with its counts (scope queues:read).
func (c *Client) GetQueue(ctx context.Context, queue string) (*Queue, error) {
	var q Queue
	if err := c.Do(ctx, http.MethodGet, "/v1/queues/"+seg(queue), nil, nil, &q); err != nil {
		return nil, err
	}
	return &q, nil
}

// UpdateQueue changes a queue's settings and returns the queue after the change (scope
// queues:admin).
func (c *Client) UpdateQueue(ctx context.Context, queue string, in UpdateQueueInput) (*Queue, error) {
	var q Queue
	if err := c.Do(ctx, http.MethodPatch, "/v1/queues/"+seg(queue), nil, in, &q); err != nil {
		return nil, err
	}
	return &q, nil
}

// DeleteQueue deletes a queue, its subscription and its messages (scope queues:admin).
func (c *Client) DeleteQueue(ctx context.Context, queue string) error {
	return c.Do(ctx, http.MethodDelete, "/v1/queues/"+seg(queue), nil, nil, nil)
}

// PurgeQueue removes every message sent before now and returns the purge's time (scope
// queues:admin). Once per 60 s per queue: sooner is ErrPurgeTooSoon, with RetryAfter.
func (c *Client) PurgeQueue(ctx context.Context, queue string) (time.Time, error) {
	var r struct {
		PurgedAt time.Time `json:"purgedAt"`
	}
	err := c.Do(ctx, http.MethodPost, "/v1/queues/"+seg(queue)+"/purge", nil, nil, &r)
	return r.PurgedAt, err
}

// Group is a fifo queue's message group.
type Group struct {
	GroupID string `json:"groupId"`
	// Messages counts the group's messages, visible, in flight and delayed.
	Messages int64 `json:"messages"`
	// InFlight: a batch of the group is in flight (the group is blocked).
	InFlight bool `json:"inFlight"`
	// ConsumerID is the consumer the group is bound to on an exclusive queue ("": none).
	ConsumerID string `json:"consumerId"`
	// State is GroupParked while a poison policy holds the group (docs/fifo.md).
	State GroupState `json:"state"`
	// ReceiveCount is the receiveCount of the group's first message.
	ReceiveCount int `json:"receiveCount"`
	// LastError is the reason of the dead-letter that parked the group (nil while active).
	LastError *string `json:"lastError"`
}

// GroupState is a fifo group's state.
type GroupState string

// Group states.
const (
	GroupActive GroupState = "active"
	GroupParked GroupState = "parked"
)

// GroupPage is one page of groups.
type GroupPage struct {
	Groups     []Group `json:"groups"`
	NextCursor *string `json:"nextCursor"`
}

// ListGroups lists a fifo queue's message groups (scope queues:read).
func (c *Client) ListGroups(ctx context.Context, queue string, page Page) (*GroupPage, error) {
	return c.ListGroupsInState(ctx, queue, "", page)
}

// ListGroupsInState lists a fifo queue's message groups in state ("": any; scope
// queues:read).
func (c *Client) ListGroupsInState(ctx context.Context, queue string, state GroupState, page Page) (*GroupPage, error) {
	var p GroupPage
	q := page.query()
	if state != "" {
		q.Set("state", string(state))
	}
	if err := c.Do(ctx, http.MethodGet, "/v1/queues/"+seg(queue)+"/groups", q, nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// ReleaseGroup ends the parking of a fifo group a poison policy parked (scope queues:admin):
// its messages are delivered again from its head. ErrGroupNotParked when it is not parked.
func (c *Client) ReleaseGroup(ctx context.Context, queue, groupID string) error {
	return c.Do(ctx, http.MethodPost, "/v1/queues/"+seg(queue)+"/groups/"+seg(groupID)+"/release", nil, nil, nil)
}

// Consumer is a consumer of a queue seen in the last 5 minutes
// (docs/delivery-options.md#consumers-backlogs-and-fairness).
type Consumer struct {
	ConsumerID string `json:"consumerId"`
	// InFlight is what it holds now: received, not settled, visibility not lapsed.
	InFlight int `json:"inFlight"`
	// MaxBacklog is the bound its latest receive named (nil: none).
	MaxBacklog *int      `json:"maxBacklog"`
	LastSeenAt time.Time `json:"lastSeenAt"`
}

// ConsumerPage is one page of consumers, by consumerId.
type ConsumerPage struct {
	Consumers  []Consumer `json:"consumers"`
	NextCursor *string    `json:"nextCursor"`
}

// ListConsumers lists the queue's consumers seen in the last 5 minutes (scope queues:read).
func (c *Client) ListConsumers(ctx context.Context, queue string, page Page) (*ConsumerPage, error) {
	var p ConsumerPage
	if err := c.Do(ctx, http.MethodGet, "/v1/queues/"+seg(queue)+"/consumers", page.query(), nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// DeleteGroup deletes every message of one group of a fifo queue (scope queues:admin).
func (c *Client) DeleteGroup(ctx context.Context, queue, groupID string) error {
	return c.Do(ctx, http.MethodDelete, "/v1/queues/"+seg(queue)+"/groups/"+seg(groupID), nil, nil, nil)
}

// Health checks liveness (GET /healthz).
func (c *Client) Health(ctx context.Context) error {
	return c.Do(ctx, http.MethodGet, "/healthz", nil, nil, nil)
}

// Ready checks readiness (GET /readyz): nil when the service's storage is reachable, else an
// *Error with code unavailable.
func (c *Client) Ready(ctx context.Context) error {
	once := *c // not ready is an answer, not something to wait out
	once.retry.MaxAttempts = 1
	return once.Do(ctx, http.MethodGet, "/readyz", nil, nil, nil)
}
