package client

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"strconv"
	"time"
)

// Topics (docs/topics.md): a publish appends to a topic's log, and every queue
// bound to the topic receives its own copy of each message its binding's filter selects.

// Topic is a topic's settings and the state of its log.
type Topic struct {
	ID   string `json:"id"`
	Slug string `json:"slug"`
	Name string `json:"name"`
	// Type is Standard or FIFO, fixed at creation; a topic binds queues of its own type.
	Type QueueType `json:"type"`
	// RetentionSeconds is how long the log keeps what was published (0: nothing beyond
	// fan-out).
	RetentionSeconds int       `json:"retentionSeconds"`
	CreatedAt        time.Time `json:"createdAt"`
	UpdatedAt        time.Time `json:"updatedAt"`
	// FirstSequence is the oldest sequence the log holds (LastSequence+1 when it holds none);
	// LastSequence the last one assigned (0 before the first publish).
	FirstSequence uint64 `json:"firstSequence"`
	LastSequence  uint64 `json:"lastSequence"`
	// StoredBytes are the bytes of the log and the keyed state.
	StoredBytes int64 `json:"storedBytes"`
	// Bindings counts the queues the topic feeds.
	Bindings int `json:"bindings"`
}

// CreateTopicInput describes a new topic; nil or empty settings take the service's
// defaults (standard, 86,400 s of retention).
type CreateTopicInput struct {
	Name             string    `json:"name"`
	Type             QueueType `json:"type,omitempty"`
	RetentionSeconds *int      `json:"retentionSeconds,omitempty"`
}

// UpdateTopicInput changes the settings that are not nil.
type UpdateTopicInput struct {
	RetentionSeconds *int `json:"retentionSeconds,omitempty"`
}

// ListTopicsInput selects a page of topics, optionally only names starting with Prefix.
type ListTopicsInput struct {
	Page
	Prefix string
}

// TopicPage is one page of topics, by name.
type TopicPage struct {
	Topics     []Topic `json:"topics"`
	NextCursor *string `json:"nextCursor"`
}

// CreateTopic creates a topic (scope queues:admin). A taken name is ErrTopicExists; past the
// project's maxTopics, quota_exceeded.
func (c *Client) CreateTopic(ctx context.Context, in CreateTopicInput) (*Topic, error) {
	var t Topic
	if err := c.Do(ctx, http.MethodPost, "/v1/topics", nil, in, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// GetTopic returns a topic by id, slug or name (scope queues:read).
func (c *Client) GetTopic(ctx context.Context, topic string) (*Topic, error) {
	var t Topic
	if err := c.Do(ctx, http.MethodGet, "/v1/topics/"+seg(topic), nil, nil, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// ListTopics lists one page of the project's topics by name (scope queues:read).
func (c *Client) ListTopics(ctx context.Context, in ListTopicsInput) (*TopicPage, error) {
	q := in.query()
	if in.Prefix != "" {
		q.Set("prefix", in.Prefix)
	}
	var p TopicPage
	if err := c.Do(ctx, http.MethodGet, "/v1/topics", q, nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// AllTopics iterates over every topic whose name starts with prefix, page by page. It stops
// at the first error, which it yields.
func (c *Client) AllTopics(ctx context.Context, prefix string) iter.Seq2[Topic, error] {
	return pages(func(cursor string) ([]Topic, *string, error) {
		p, err := c.ListTopics(ctx, ListTopicsInput{Prefix: prefix, Page: Page{Cursor: cursor}})
		if err != nil {
			return nil, nil, err
		}
		return p.Topics, p.NextCursor, nil
	})
}

// UpdateTopic changes a topic's settings and returns the topic after the change (scope
// queues:admin).
func (c *Client) UpdateTopic(ctx context.Context, topic string, in UpdateTopicInput) (*Topic, error) {
	var t Topic
	if err := c.Do(ctx, http.MethodPatch, "/v1/topics/"+seg(topic), nil, in, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// DeleteTopic deletes a topic with its log, keyed state and bindings; the bound queues and
// their messages stay (scope queues:admin).
func (c *Client) DeleteTopic(ctx context.Context, topic string) error {
	return c.Do(ctx, http.MethodDelete, "/v1/topics/"+seg(topic), nil, nil, nil)
}

// MaxPublishBatch is the most messages one publish takes.
const MaxPublishBatch = 10

// PublishMessage is one message to publish. GroupID is required on fifo topics and DedupID
// optional there (a second publish of it within 5 minutes answers the first one's id and
// sequence, Duplicate). Key also keeps the message as the key's state (Merge says how);
// Delete, with Key, publishes a null body, which deletes the key's state.
type PublishMessage struct {
	Body       string            `json:"body"`
	Attributes map[string]string `json:"attributes,omitempty"`
	GroupID    string            `json:"groupId,omitempty"`
	DedupID    string            `json:"dedupId,omitempty"`
	Key        string            `json:"key,omitempty"`
	Merge      MergeMode         `json:"merge,omitempty"`
	// Delete sends "body": null (Body must be empty); only with Key.
	Delete bool `json:"-"`
}

// MarshalJSON writes the message with a null body when Delete is set.
func (m PublishMessage) MarshalJSON() ([]byte, error) {
	type plain PublishMessage
	if !m.Delete {
		return marshal(plain(m))
	}
	out := struct {
		Body *string `json:"body"`
		plain
	}{plain: plain(m)}
	return marshal(out)
}

// PublishedMessage is a published message, by its index in the request.
type PublishedMessage struct {
	Index     int    `json:"index"`
	MessageID string `json:"messageId"`
	// Sequence is the message's position in the topic's log (the bookmark).
	Sequence uint64 `json:"sequence"`
	// Duplicate (fifo): the publish repeated a dedup id; MessageID and Sequence are the
	// original's and nothing was appended.
	Duplicate bool `json:"duplicate"`
}

// PublishResult is the answer to a publish: each message either published or failed.
type PublishResult struct {
	Messages []PublishedMessage
	Failed   []FailedMessage
}

// Err joins the failures of a publish (nil when every message was published).
func (r *PublishResult) Err() error {
	return (&SendResult{Failed: r.Failed}).Err()
}

// PublishBatch publishes 1–10 messages (scope messages:send). A problem with one message
// fails only that message, reported in the result's Failed; err is for the request as a
// whole. Success means recorded as durably as a send.
func (c *Client) PublishBatch(ctx context.Context, topic string, msgs []PublishMessage) (*PublishResult, error) {
	var wire struct {
		Messages []PublishedMessage `json:"messages"`
		Failed   []struct {
			Index int       `json:"index"`
			Error errorBody `json:"error"`
		} `json:"failed"`
	}
	if msgs == nil {
		msgs = []PublishMessage{}
	}
	if err := c.Do(ctx, http.MethodPost, "/v1/topics/"+seg(topic)+"/messages", nil, map[string]any{"messages": msgs}, &wire); err != nil {
		return nil, err
	}
	r := &PublishResult{Messages: wire.Messages}
	for _, f := range wire.Failed {
		r.Failed = append(r.Failed, FailedMessage{Index: f.Index, Err: f.Error.toError(0)})
	}
	return r, nil
}

// Publish publishes one message and returns its id and sequence; a problem with the message
// is its error.
func (c *Client) Publish(ctx context.Context, topic string, m PublishMessage) (PublishedMessage, error) {
	r, err := c.PublishBatch(ctx, topic, []PublishMessage{m})
	if err != nil {
		return PublishedMessage{}, err
	}
	if len(r.Failed) > 0 {
		return PublishedMessage{}, r.Failed[0].Err
	}
	if len(r.Messages) != 1 {
		return PublishedMessage{}, fmt.Errorf("queues: publish answered %d messages for 1", len(r.Messages))
	}
	return r.Messages[0], nil
}

// Position names a place in a topic's log: FromNow, FromEarliest (bindings only), a
// sequence (AtSequence) or a time (AtTime: the first entry published at or after it).
type Position string

// Positions a binding may start from.
const (
	FromNow      Position = "now"
	FromEarliest Position = "earliest"
)

// AtSequence is the position of one sequence.
func AtSequence(seq uint64) Position { return Position(strconv.FormatUint(seq, 10)) }

// AtTime is the position of the first entry published at or after t.
func AtTime(t time.Time) Position { return Position(t.UTC().Format(time.RFC3339Nano)) }

// UnmarshalJSON reads a position given as a string or, for a sequence, a JSON number.
func (p *Position) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*p = Position(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("queues: a position is a string or a sequence number, not %s", b)
	}
	*p = Position(n.String())
	return nil
}

// pages iterates over the items of a cursor-paged list from its first page; next reads the
// page after cursor.
func pages[T any](next func(cursor string) ([]T, *string, error)) iter.Seq2[T, error] {
	return pagesFrom("", next)
}
