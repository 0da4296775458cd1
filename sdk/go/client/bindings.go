package client

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"time"
)

// Binding is a queue's source: one topic whose messages (those its Filter selects) the
// queue receives, exactly one copy each.
type Binding struct {
	ID      string `json:"id"`
	Slug    string `json:"slug"`
	QueueID string `json:"queueId"`
	Queue   string `json:"queue"` // the queue's name
	TopicID string `json:"topicId"`
	Topic   string `json:"topic"` // the topic's name
	// Filter selects what enters the queue (nil: everything).
	Filter *Filter `json:"filter"`
	// From is what the bind asked; StartSequence the first sequence it takes.
	From          Position `json:"from"`
	StartSequence uint64   `json:"startSequence"`
	// Sequence is the last sequence the binding has handled (copied, filtered out or
	// refused); Lag the topic's LastSequence minus it.
	Sequence uint64 `json:"sequence"`
	Lag      uint64 `json:"lag"`
	// Copied counts what entered the queue, Failed what the queue refused (LastFailure
	// says the last refusal's reason).
	Copied      int64           `json:"copied"`
	Failed      int64           `json:"failed"`
	LastFailure *BindingFailure `json:"lastFailure"`
	CreatedAt   time.Time       `json:"createdAt"`
	UpdatedAt   time.Time       `json:"updatedAt"`
}

// BindingFailure is why a queue last refused a binding's copy (its byte quota, a fifo dedup
// window), and when.
type BindingFailure struct {
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// BindInput binds a queue to Topic (id, slug or name). Filter nil takes every message; From
// empty is FromNow.
type BindInput struct {
	Topic  string   `json:"topic"`
	Filter *Filter  `json:"filter,omitempty"`
	From   Position `json:"from,omitempty"`
}

// Bind binds queue to a topic (POST /v1/queues/{queue}/sources; scope queues:admin). A
// queue is bound to one topic once (ErrBindingExists); a fifo topic binds fifo queues and a
// standard topic standard ones (invalid_argument, field topic); at most 10 sources per
// queue and 100 bindings per topic (quota_exceeded: sourcesPerQueue, bindingsPerTopic).
func (c *Client) Bind(ctx context.Context, queue string, in BindInput) (*Binding, error) {
	var b Binding
	if err := c.Do(ctx, http.MethodPost, "/v1/queues/"+seg(queue)+"/sources", nil, in, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// bindingList is the wire form of a list of bindings (one page: a queue has at most 10
// sources, a topic at most 100 bindings).
type bindingList struct {
	Sources  []Binding `json:"sources"`
	Bindings []Binding `json:"bindings"`
}

// ListSources returns the queue's bindings (scope queues:read).
func (c *Client) ListSources(ctx context.Context, queue string) ([]Binding, error) {
	var l bindingList
	if err := c.Do(ctx, http.MethodGet, "/v1/queues/"+seg(queue)+"/sources", nil, nil, &l); err != nil {
		return nil, err
	}
	return nonNil(l.Sources), nil
}

// TopicBindings returns the topic's bindings (scope queues:read).
func (c *Client) TopicBindings(ctx context.Context, topic string) ([]Binding, error) {
	var l bindingList
	if err := c.Do(ctx, http.MethodGet, "/v1/topics/"+seg(topic)+"/bindings", nil, nil, &l); err != nil {
		return nil, err
	}
	return nonNil(l.Bindings), nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// GetSource returns one of the queue's bindings by id or slug (scope queues:read).
func (c *Client) GetSource(ctx context.Context, queue, binding string) (*Binding, error) {
	var b Binding
	if err := c.Do(ctx, http.MethodGet, "/v1/queues/"+seg(queue)+"/sources/"+seg(binding), nil, nil, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// UpdateSourceFilter replaces a binding's filter (nil removes it: every message enters the
// queue) and returns the binding (scope queues:admin). Messages published after the answer
// are judged by the new filter.
func (c *Client) UpdateSourceFilter(ctx context.Context, queue, binding string, filter *Filter) (*Binding, error) {
	body := map[string]any{"filter": nil}
	if !filter.empty() {
		body["filter"] = filter
	}
	var b Binding
	if err := c.Do(ctx, http.MethodPatch, "/v1/queues/"+seg(queue)+"/sources/"+seg(binding), nil, body, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// Unbind deletes one of the queue's bindings: the queue receives nothing more from the
// topic and keeps what it has (scope queues:admin).
func (c *Client) Unbind(ctx context.Context, queue, binding string) error {
	return c.Do(ctx, http.MethodDelete, "/v1/queues/"+seg(queue)+"/sources/"+seg(binding), nil, nil, nil)
}

// LogEntry is one published message as a topic's log keeps it.
type LogEntry struct {
	Sequence    uint64            `json:"sequence"`
	MessageID   string            `json:"messageId"`
	Body        string            `json:"body"`
	Attributes  map[string]string `json:"attributes"`
	PublishedAt time.Time         `json:"publishedAt"`
	GroupID     string            `json:"groupId,omitempty"`
	DedupID     string            `json:"dedupId,omitempty"`
	Key         string            `json:"key,omitempty"`
	// Deleted: a keyed publish of a null body, which deleted the key's state.
	Deleted bool `json:"deleted,omitempty"`
}

// ReadLogInput selects a page of a topic's log: from From (AtSequence or AtTime; empty: the
// oldest entry held) to To (inclusive; empty: the last), Limit entries a page (1–1,000, 0:
// 100), only those Filter selects. A page examines at most 1,000 entries and 4 MiB, so a
// filtered page (or one of large entries) may hold fewer than Limit and still have a
// NextCursor; the next page takes the same To and Filter.
type ReadLogInput struct {
	Page
	From, To Position
	Filter   *Filter
}

// LogPage is one page of a topic's log, in sequence order.
type LogPage struct {
	Messages   []LogEntry `json:"messages"`
	NextCursor *string    `json:"nextCursor"`
}

// ReadLog reads one page of a topic's log (scope queues:read).
func (c *Client) ReadLog(ctx context.Context, topic string, in ReadLogInput) (*LogPage, error) {
	q := in.query()
	if in.From != "" {
		q.Set("from", string(in.From))
	}
	if in.To != "" {
		q.Set("to", string(in.To))
	}
	in.Filter.addQuery(q)
	var p LogPage
	if err := c.Do(ctx, http.MethodGet, "/v1/topics/"+seg(topic)+"/messages", q, nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// LogEntries iterates over the log entries in selects (in.Cursor ignored), page by page. It
// stops at the first error, which it yields.
func (c *Client) LogEntries(ctx context.Context, topic string, in ReadLogInput) iter.Seq2[LogEntry, error] {
	return pages(func(cursor string) ([]LogEntry, *string, error) {
		in.Cursor = cursor
		p, err := c.ReadLog(ctx, topic, in)
		if err != nil {
			return nil, nil, err
		}
		return p.Messages, p.NextCursor, nil
	})
}

// StateEntry is the latest state of one key of a topic: the last message published with the
// key (merged, for "patch" publishes).
type StateEntry struct {
	Key         string            `json:"key"`
	Body        string            `json:"body"`
	Attributes  map[string]string `json:"attributes"`
	Sequence    uint64            `json:"sequence"`
	PublishedAt time.Time         `json:"publishedAt"`
}

// StatePage is one page of a topic's keyed state, in key order.
type StatePage struct {
	State      []StateEntry `json:"state"`
	NextCursor *string      `json:"nextCursor"`
}

// State reads one key's state (scope queues:read); a key without state is ErrNotFound.
func (c *Client) State(ctx context.Context, topic, key string) (*StateEntry, error) {
	var s StateEntry
	q := map[string][]string{"key": {key}}
	if err := c.Do(ctx, http.MethodGet, "/v1/topics/"+seg(topic)+"/state", q, nil, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// ListState lists one page of a topic's keyed state in key order (scope queues:read).
func (c *Client) ListState(ctx context.Context, topic string, page Page) (*StatePage, error) {
	var p StatePage
	if err := c.Do(ctx, http.MethodGet, "/v1/topics/"+seg(topic)+"/state", page.query(), nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// AllState iterates over every key's state in key order, page by page. It stops at the
// first error, which it yields.
func (c *Client) AllState(ctx context.Context, topic string) iter.Seq2[StateEntry, error] {
	return pages(func(cursor string) ([]StateEntry, *string, error) {
		p, err := c.ListState(ctx, topic, Page{Cursor: cursor})
		if err != nil {
			return nil, nil, err
		}
		return p.State, p.NextCursor, nil
	})
}

// UnmarshalJSON reads a filter whose attributes map a name to one value or a list of values
// (bindings answer either form).
func (f *Filter) UnmarshalJSON(b []byte) error {
	var wire struct {
		Attributes map[string]json.RawMessage `json:"attributes"`
	}
	if err := json.Unmarshal(b, &wire); err != nil {
		return err
	}
	f.Attributes = make(map[string][]string, len(wire.Attributes))
	for name, raw := range wire.Attributes {
		var one string
		if json.Unmarshal(raw, &one) == nil {
			f.Attributes[name] = []string{one}
			continue
		}
		var many []string
		if err := json.Unmarshal(raw, &many); err != nil {
			return err
		}
		f.Attributes[name] = many
	}
	return nil
}
