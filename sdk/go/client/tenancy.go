package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// Limits are a project's effective limits (its own values over the operator's defaults).
type Limits struct {
	MaxQueues          int64 `json:"maxQueues"`
	MaxSubscriptions   int64 `json:"maxSubscriptions"`
	MaxTopics          int64 `json:"maxTopics"`
	MaxStoredBytes     int64 `json:"maxStoredBytes"`
	RequestsPerSecond  int64 `json:"requestsPerSecond"`
	MaxWaitingReceives int64 `json:"maxWaitingReceives"`
	SendBytesPerSecond int64 `json:"sendBytesPerSecond"`
}

// ProjectUsage is what a project holds now.
type ProjectUsage struct {
	Queues        int64 `json:"queues"`
	Subscriptions int64 `json:"subscriptions"`
	Topics        int64 `json:"topics"`
	StoredBytes   int64 `json:"storedBytes"`
}

// The limits' names, for LimitsUpdate.Reset.
const (
	LimitMaxQueues          = "maxQueues"
	LimitMaxSubscriptions   = "maxSubscriptions"
	LimitMaxTopics          = "maxTopics"
	LimitMaxStoredBytes     = "maxStoredBytes"
	LimitRequestsPerSecond  = "requestsPerSecond"
	LimitMaxWaitingReceives = "maxWaitingReceives"
)

// LimitsUpdate changes a project's own limits: a non-nil field sets one; Reset names limits
// to return to the operator's default. Limits in neither keep what they have.
type LimitsUpdate struct {
	MaxQueues          *int64
	MaxSubscriptions   *int64
	MaxTopics          *int64
	MaxStoredBytes     *int64
	RequestsPerSecond  *int64
	MaxWaitingReceives *int64
	Reset              []string
}

func (u LimitsUpdate) body() map[string]any {
	m := map[string]any{}
	for name, v := range map[string]*int64{
		LimitMaxQueues: u.MaxQueues, LimitMaxSubscriptions: u.MaxSubscriptions, LimitMaxTopics: u.MaxTopics, LimitMaxStoredBytes: u.MaxStoredBytes,
		LimitRequestsPerSecond: u.RequestsPerSecond, LimitMaxWaitingReceives: u.MaxWaitingReceives,
	} {
		if v != nil {
			m[name] = *v
		}
	}
	for _, name := range u.Reset {
		m[name] = nil
	}
	return map[string]any{"limits": m}
}

// Int64 returns a pointer to v (for LimitsUpdate).
func Int64(v int64) *int64 { return &v }

// UpdateProjectLimits changes a project's limits and returns the project with its new limits
// (operator credential).
func (c *Client) UpdateProjectLimits(ctx context.Context, project string, u LimitsUpdate) (*Project, error) {
	var p Project
	if err := c.Do(ctx, http.MethodPatch, "/v1/projects/"+seg(project), nil, u.body(), &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// OwnProject returns the token's own project with its limits and usage (a project token of
// any scope).
func (c *Client) OwnProject(ctx context.Context) (*Project, error) {
	var p Project
	if err := c.Do(ctx, http.MethodGet, "/v1/project", nil, nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// UsageHour is a project's metered use in the UTC hour that starts at Hour.
type UsageHour struct {
	Hour              time.Time `json:"hour"`
	Requests          int64     `json:"requests"`
	MessagesSent      int64     `json:"messagesSent"`
	MessagesDelivered int64     `json:"messagesDelivered"`
	MessagesAcked     int64     `json:"messagesAcked"`
	BytesIn           int64     `json:"bytesIn"`
	BytesOut          int64     `json:"bytesOut"`
	PushAttempts      int64     `json:"pushAttempts"`
	StoredByteHours   int64     `json:"storedByteHours"`
	// MessagesPublished counts the messages published to the project's topics.
	MessagesPublished int64 `json:"messagesPublished"`
}

// UsageRange selects the hours of a usage read: [From, To), at most 31 days; zero values take
// the server's defaults (the last 24 hours).
type UsageRange struct {
	From, To time.Time
}

func (r UsageRange) query() url.Values {
	q := url.Values{}
	if !r.From.IsZero() {
		q.Set("from", r.From.UTC().Format(time.RFC3339Nano))
	}
	if !r.To.IsZero() {
		q.Set("to", r.To.UTC().Format(time.RFC3339Nano))
	}
	return q
}

// ProjectUsage reads a project's hourly usage, hours in order (operator credential).
func (c *Client) ProjectUsage(ctx context.Context, project string, r UsageRange) ([]UsageHour, error) {
	return c.usage(ctx, "/v1/projects/"+seg(project)+"/usage", r)
}

// OwnUsage reads the token's own project's hourly usage (a project token of any scope).
func (c *Client) OwnUsage(ctx context.Context, r UsageRange) ([]UsageHour, error) {
	return c.usage(ctx, "/v1/project/usage", r)
}

func (c *Client) usage(ctx context.Context, path string, r UsageRange) ([]UsageHour, error) {
	var out struct {
		Usage []UsageHour `json:"usage"`
	}
	if err := c.Do(ctx, http.MethodGet, path, r.query(), nil, &out); err != nil {
		return nil, err
	}
	return out.Usage, nil
}
