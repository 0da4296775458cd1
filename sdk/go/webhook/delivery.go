package webhook

// The push request (docs/push.md) as the pusher and `queues listen` send it: its body and its
// headers. One definition, so a local forward is byte-for-byte the shape of a real push.

import (
	"net/http"
	"strconv"
)

// Message is one message of a push body.
type Message struct {
	MessageID          string            `json:"messageId"`
	Body               string            `json:"body"`
	Attributes         map[string]string `json:"attributes"`
	ReceiveCount       int               `json:"receiveCount"`
	SentAt             string            `json:"sentAt"`
	GroupID            string            `json:"groupId,omitempty"`
	SequenceNumber     string            `json:"sequenceNumber,omitempty"`
	ReceiptHandle      string            `json:"receiptHandle,omitempty"`      // absent on at-most-once queues
	VisibilityDeadline string            `json:"visibilityDeadline,omitempty"` // likewise
	Traceparent        string            `json:"traceparent,omitempty"`
	ReplayOf           *ReplayOf         `json:"replayOf,omitempty"`
}

// ReplayOf is a replayed message's origin (docs/topics.md#replay): the topic's id and the log
// entry's sequence.
type ReplayOf struct {
	Topic    string `json:"topic"`
	Sequence uint64 `json:"sequence"`
}

// Queue names the queue a push comes from.
type Queue struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Body is a push's JSON body.
type Body struct {
	Subscription string    `json:"subscription"`
	Queue        Queue     `json:"queue"`
	Messages     []Message `json:"messages"`
}

// SetHeaders gives a push request its headers: the content type, the sender's User-Agent,
// and the Standard Webhooks id, timestamp (unix seconds) and signature of body under each of
// secrets.
func SetHeaders(h http.Header, userAgent string, secrets []string, attemptID string, timestamp int64, body []byte) {
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", userAgent)
	h.Set(HeaderID, attemptID)
	h.Set(HeaderTimestamp, strconv.FormatInt(timestamp, 10))
	h.Set(HeaderSignature, SignAll(secrets, attemptID, timestamp, body))
}
