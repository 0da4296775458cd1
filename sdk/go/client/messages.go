package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// MaxSendBatch is the most messages one send takes; MaxReceiveBatch the most one receive
// returns; MaxReceiptBatch the most entries one batch receipt call takes.
const (
	MaxSendBatch    = 10
	MaxReceiveBatch = 10
	MaxReceiptBatch = 100
)

// SendMessage is one message to send. DelaySeconds (up to the queue's retention), DeliverAt,
// Key and Merge are for standard queues; GroupID is required on fifo queues and DedupID
// optional there.
type SendMessage struct {
	Body         string            `json:"body"`
	Attributes   map[string]string `json:"attributes,omitempty"`
	DelaySeconds int               `json:"delaySeconds,omitempty"`
	// DeliverAt, when not zero, is when the message becomes visible (instead of
	// DelaySeconds); a time already past delivers at once.
	DeliverAt time.Time `json:"-"`
	GroupID   string    `json:"groupId,omitempty"`
	DedupID   string    `json:"dedupId,omitempty"`
	// Key conflates: while the key's earlier message waits never delivered, this send
	// changes it (Merge says how) and answers its id with Merged.
	Key string `json:"key,omitempty"`
	// Merge is MergeReplace (default) or MergePatch (an RFC 7396 JSON Merge Patch of JSON
	// object bodies); only with Key.
	Merge MergeMode `json:"merge,omitempty"`
	// Barrier makes it a barrier message (standard queues): delivered once every message
	// sent before it has left the queue, and holding back every message sent after it until
	// it has left.
	Barrier bool `json:"barrier,omitempty"`
	// Priority is 0 (default) to 9 (standard queues): receives and pushes take the highest
	// priority first, the oldest first within one.
	Priority int `json:"priority,omitempty"`
	// EndGroup (fifo queues): on an exclusive queue, settling this message (ack or
	// dead-letter) ends its group's binding to its consumer.
	EndGroup bool `json:"endGroup,omitempty"`
	// Traceparent is the message's W3C trace context; empty, the send's context (ctx's span,
	// when the program uses OpenTelemetry) is stored with it.
	Traceparent string `json:"traceparent,omitempty"`
}

// SentMessage is a stored message of a send, by its index in the request.
type SentMessage struct {
	Index     int    `json:"index"`
	MessageID string `json:"messageId"`
	// Duplicate (fifo): the send was a duplicate and MessageID is the original's.
	Duplicate bool `json:"duplicate"`
	// Merged: the send (with a Key) changed the key's waiting message, whose id MessageID is.
	Merged bool `json:"merged"`
	// SequenceNumber (fifo only; "" otherwise) is the message's sequence number, a decimal
	// string, the one its receives carry (ReceivedMessage.SequenceNumber); a duplicate's is
	// the original's.
	SequenceNumber string `json:"sequenceNumber,omitempty"`
}

// MergeMode is how a keyed send changes the waiting message of its key.
type MergeMode string

// Merge modes.
const (
	MergeReplace MergeMode = "replace"
	MergePatch   MergeMode = "patch"
)

// MarshalJSON writes the message with deliverAt as an RFC 3339 time when it is set.
func (m SendMessage) MarshalJSON() ([]byte, error) {
	type plain SendMessage
	out := struct {
		plain
		DeliverAt string `json:"deliverAt,omitempty"`
	}{plain: plain(m)}
	if !m.DeliverAt.IsZero() {
		out.DeliverAt = m.DeliverAt.UTC().Format(time.RFC3339Nano)
	}
	return marshal(out)
}

// DeleteMessage removes one visible or delayed message by its id (scope messages:send): a
// message in flight fails with message_in_flight (IsConflict), one the queue does not hold
// with not_found (IsNotFound).
func (c *Client) DeleteMessage(ctx context.Context, queue, messageID string) error {
	return c.Do(ctx, http.MethodDelete, "/v1/queues/"+seg(queue)+"/messages/"+seg(messageID), nil, nil, nil)
}

// FailedMessage is a message of a send that was not stored, and why.
type FailedMessage struct {
	Index int
	Err   *Error
}

// SendResult is the answer to a batch send: each message either stored or failed.
type SendResult struct {
	Messages []SentMessage
	Failed   []FailedMessage
}

// Err joins the failures of a send (nil when every message was stored).
func (r *SendResult) Err() error {
	var errs []error
	for _, f := range r.Failed {
		errs = append(errs, fmt.Errorf("message %d: %w", f.Index, f.Err))
	}
	return errors.Join(errs...)
}

// SendBatch sends 1–10 messages (scope messages:send). A problem with one message fails only
// that message, reported in the result's Failed; err is for the request as a whole.
func (c *Client) SendBatch(ctx context.Context, queue string, msgs []SendMessage) (*SendResult, error) {
	var wire struct {
		Messages []SentMessage `json:"messages"`
		Failed   []struct {
			Index int       `json:"index"`
			Error errorBody `json:"error"`
		} `json:"failed"`
	}
	if msgs == nil {
		msgs = []SendMessage{}
	}
	if err := c.Do(ctx, http.MethodPost, "/v1/queues/"+seg(queue)+"/messages", nil, map[string]any{"messages": msgs}, &wire); err != nil {
		return nil, err
	}
	r := &SendResult{Messages: wire.Messages}
	for _, f := range wire.Failed {
		r.Failed = append(r.Failed, FailedMessage{Index: f.Index, Err: f.Error.toError(0)})
	}
	return r, nil
}

// Send sends one message and returns its id; a problem with the message is its error.
func (c *Client) Send(ctx context.Context, queue string, m SendMessage) (SentMessage, error) {
	r, err := c.SendBatch(ctx, queue, []SendMessage{m})
	if err != nil {
		return SentMessage{}, err
	}
	if len(r.Failed) > 0 {
		return SentMessage{}, r.Failed[0].Err
	}
	if len(r.Messages) != 1 {
		return SentMessage{}, fmt.Errorf("queues: send answered %d messages for 1", len(r.Messages))
	}
	return r.Messages[0], nil
}

// ReceiveInput shapes a receive. Nil fields take the queue's settings; MaxMessages 0 is 1.
type ReceiveInput struct {
	MaxMessages              int  `json:"maxMessages,omitempty"`
	VisibilityTimeoutSeconds *int `json:"visibilityTimeoutSeconds,omitempty"`
	// WaitSeconds is the long-polling wait (0–20; nil: the queue's receiveWaitSeconds).
	WaitSeconds *int `json:"waitSeconds,omitempty"`
	// ConsumerID names the receiving consumer (1–128 characters from '!' to '~'): its
	// deliveries count as its holdings until settled or lapsed, and ListConsumers shows it.
	ConsumerID string `json:"consumerId,omitempty"`
	// MaxBacklog bounds what ConsumerID holds (1–10,000; 0: no bound): the receive returns
	// fewer, or waits, to stay within it. It needs ConsumerID.
	MaxBacklog int `json:"maxBacklog,omitempty"`
	// Filter, when set, takes only the messages it selects (see Filter).
	Filter *Filter `json:"filter,omitempty"`
}

// DeadLetterInfo is on a message that was moved to this queue as its dead-letter queue.
type DeadLetterInfo struct {
	SourceQueue string    `json:"sourceQueue"`
	Reason      string    `json:"reason"`
	At          time.Time `json:"at"`
}

// Message is a received (or pushed) message. Its ReceiptHandle settles this delivery; it and
// VisibilityDeadline are empty on an at-most-once queue, whose receive removed the message.
type Message struct {
	MessageID          string            `json:"messageId"`
	Body               string            `json:"body"`
	Attributes         map[string]string `json:"attributes"`
	ReceiptHandle      string            `json:"receiptHandle"`
	ReceiveCount       int               `json:"receiveCount"`
	SentAt             time.Time         `json:"sentAt"`
	VisibilityDeadline time.Time         `json:"visibilityDeadline"`
	GroupID            string            `json:"groupId,omitempty"`
	SequenceNumber     string            `json:"sequenceNumber,omitempty"`
	DeadLetter         *DeadLetterInfo   `json:"deadLetter,omitempty"`
	// Traceparent is the W3C trace context stored with the message at its send, if any.
	Traceparent string `json:"traceparent,omitempty"`
	// Priority is the message's priority, 0 to 9 (always 0 on fifo queues).
	Priority int `json:"priority,omitempty"`
	// ReplayOf, on a message a topic's replay copied, names the log entry it copies.
	ReplayOf *ReplayOf `json:"replayOf,omitempty"`
}

// Receive claims up to in.MaxMessages messages (scope messages:receive), waiting for them as
// in.WaitSeconds says. It returns none when the wait ends empty.
func (c *Client) Receive(ctx context.Context, queue string, in ReceiveInput) ([]Message, error) {
	return c.receive(ctx, queue, in, in.MaxMessages)
}

// receive sends a receive with body (a ReceiveInput, or the consumer's RawBody) for up to most
// messages.
func (c *Client) receive(ctx context.Context, queue string, body any, most int) ([]Message, error) {
	r := receiveAnswer{Messages: make([]Message, 0, min(max(most, 1), MaxReceiveBatch))} // decoded in place, not grown
	if err := c.Do(ctx, http.MethodPost, "/v1/queues/"+seg(queue)+"/receive", nil, body, &r); err != nil {
		return nil, err
	}
	return r.Messages, nil
}

// MessageState is a state of a message, for Browse.
type MessageState string

// Message states.
const (
	StateVisible  MessageState = "visible"
	StateInFlight MessageState = "inFlight"
	StateDelayed  MessageState = "delayed"
)

// BrowseInput selects a page of messages in one state (default visible).
type BrowseInput struct {
	Page
	State MessageState
	// Filter, when set, lists only the messages it selects. A filtered page examines at
	// most 1,000 messages, so it may hold fewer than the limit and still have a NextCursor.
	Filter *Filter
}

// BrowsedMessage is a message seen without leasing it.
type BrowsedMessage struct {
	MessageID      string            `json:"messageId"`
	Body           string            `json:"body"`
	Attributes     map[string]string `json:"attributes"`
	ReceiveCount   int               `json:"receiveCount"`
	SentAt         time.Time         `json:"sentAt"`
	State          MessageState      `json:"state"`
	VisibleAt      time.Time         `json:"visibleAt"`
	GroupID        string            `json:"groupId,omitempty"`
	SequenceNumber string            `json:"sequenceNumber,omitempty"`
	DeadLetter     *DeadLetterInfo   `json:"deadLetter,omitempty"`
	Traceparent    string            `json:"traceparent,omitempty"`
	Priority       int               `json:"priority,omitempty"` // 0 to 9 (0 on fifo queues)
	ReplayOf       *ReplayOf         `json:"replayOf,omitempty"`
}

// BrowsePage is one page of browsed messages.
type BrowsePage struct {
	Messages   []BrowsedMessage `json:"messages"`
	NextCursor *string          `json:"nextCursor"`
}

// Browse lists messages in one state without leasing them (scope queues:read).
func (c *Client) Browse(ctx context.Context, queue string, in BrowseInput) (*BrowsePage, error) {
	q := in.query()
	if in.State != "" {
		q.Set("state", string(in.State))
	}
	in.Filter.addQuery(q)
	var p BrowsePage
	if err := c.Do(ctx, http.MethodGet, "/v1/queues/"+seg(queue)+"/messages", q, nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// BatchErrors holds one error per entry of a batch receipt call, in the request's order (nil
// for an entry that succeeded).
type BatchErrors []error

// Err joins the entries' errors (nil when all succeeded).
func (b BatchErrors) Err() error {
	var errs []error
	for i, e := range b {
		if e != nil {
			errs = append(errs, fmt.Errorf("entry %d: %w", i, e))
		}
	}
	return errors.Join(errs...)
}

func (c *Client) batch(ctx context.Context, path string, body any, n int) (BatchErrors, error) {
	var r streamAnswer // the same results; decoded without reflection (settle_decode.go)
	if err := c.Do(ctx, http.MethodPost, path, nil, body, &r); err != nil {
		return nil, err
	}
	out := make(BatchErrors, n)
	for _, res := range r.Results {
		if res.Error != nil && res.Index >= 0 && res.Index < n {
			out[res.Index] = res.Error.toError(0).typed()
		}
	}
	return out, nil
}

// Ack acknowledges (deletes) one delivery's message. No credential is needed: the handle is
// one. A stale handle is ErrStale.
func (c *Client) Ack(ctx context.Context, receiptHandle string) error {
	return c.Do(ctx, http.MethodPost, "/v1/receipts/ack", nil, map[string]string{"receiptHandle": receiptHandle}, nil)
}

// AckBatch acknowledges 1–100 deliveries; each gets its own result.
func (c *Client) AckBatch(ctx context.Context, receiptHandles []string) (BatchErrors, error) {
	return c.batch(ctx, "/v1/receipts/ack", map[string]any{"receiptHandles": receiptHandles}, len(receiptHandles))
}

// Cancel returns one delivery's message without counting the delivery
// (docs/delivery-options.md#cancel): visible again at once, its receiveCount one lower; the cancel
// beyond the queue's maxCancels moves it to the dead-letter queue with reason "max_cancels". A
// stale handle is ErrStale.
func (c *Client) Cancel(ctx context.Context, receiptHandle string) error {
	return c.Do(ctx, http.MethodPost, "/v1/receipts/cancel", nil, map[string]string{"receiptHandle": receiptHandle}, nil)
}

// CancelBatch cancels 1–100 deliveries; each gets its own result.
func (c *Client) CancelBatch(ctx context.Context, receiptHandles []string) (BatchErrors, error) {
	return c.batch(ctx, "/v1/receipts/cancel", map[string]any{"receiptHandles": receiptHandles}, len(receiptHandles))
}

// VisibilityEntry changes one delivery's visibility: its deadline becomes now +
// VisibilityTimeoutSeconds (0 releases it at once).
type VisibilityEntry struct {
	ReceiptHandle            string `json:"receiptHandle"`
	VisibilityTimeoutSeconds int    `json:"visibilityTimeoutSeconds"`
}

// ChangeVisibility sets one delivery's deadline to now + visibilityTimeoutSeconds: extend,
// release (0) or retry after d.
func (c *Client) ChangeVisibility(ctx context.Context, receiptHandle string, visibilityTimeoutSeconds int) error {
	return c.Do(ctx, http.MethodPost, "/v1/receipts/visibility", nil, VisibilityEntry{receiptHandle, visibilityTimeoutSeconds}, nil)
}

// Release makes one delivery's message visible again at once (visibility 0).
func (c *Client) Release(ctx context.Context, receiptHandle string) error {
	return c.ChangeVisibility(ctx, receiptHandle, 0)
}

// ChangeVisibilityBatch changes 1–100 deliveries' visibility; each gets its own result.
func (c *Client) ChangeVisibilityBatch(ctx context.Context, entries []VisibilityEntry) (BatchErrors, error) {
	return c.batch(ctx, "/v1/receipts/visibility", map[string]any{"entries": entries}, len(entries))
}

// DeadLetterEntry dead-letters one delivery, with a reason (empty: "consumer").
type DeadLetterEntry struct {
	ReceiptHandle string `json:"receiptHandle"`
	Reason        string `json:"reason,omitempty"`
}

// DeadLetter moves one delivery's message to the queue's dead-letter queue now (dropping it
// when the queue has no redrive policy), recording reason (empty: "consumer").
func (c *Client) DeadLetter(ctx context.Context, receiptHandle, reason string) error {
	return c.Do(ctx, http.MethodPost, "/v1/receipts/dead-letter", nil, DeadLetterEntry{receiptHandle, reason}, nil)
}

// DeadLetterBatch dead-letters 1–100 deliveries; each gets its own result.
func (c *Client) DeadLetterBatch(ctx context.Context, entries []DeadLetterEntry) (BatchErrors, error) {
	return c.batch(ctx, "/v1/receipts/dead-letter", map[string]any{"entries": entries}, len(entries))
}
