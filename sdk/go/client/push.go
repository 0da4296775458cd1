package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/queueshq/queues/sdk/go/webhook"
)

// Standard Webhooks headers of a push (docs/push.md).
const (
	HeaderWebhookID        = webhook.HeaderID
	HeaderWebhookTimestamp = webhook.HeaderTimestamp
	HeaderWebhookSignature = webhook.HeaderSignature
)

// DefaultTolerance is how far a push's webhook-timestamp may be from the receiver's clock.
const DefaultTolerance = webhook.DefaultTolerance

// Signature verification failures (all answered 401 by a PushReceiver). They are package
// webhook's, the one implementation the pusher signs with.
var (
	ErrMissingHeaders   = webhook.ErrMissingHeaders
	ErrBadTimestamp     = webhook.ErrBadTimestamp
	ErrStaleTimestamp   = webhook.ErrStaleTimestamp
	ErrNoMatchingSecret = webhook.ErrNoMatchingSecret
	ErrBadSecret        = webhook.ErrBadSecret
)

// Sign returns the webhook-signature value ("v1,<base64>") of a push signed with secret: an
// HMAC-SHA256 of "id.timestamp.body". Tests of a receiver use it to play the pusher.
func Sign(secret, id string, timestamp time.Time, body []byte) (string, error) {
	return webhook.Sign(secret, id, timestamp.Unix(), body)
}

// Verify checks a push's Standard Webhooks signature: the headers are present, the timestamp
// is within tolerance of now (0: DefaultTolerance), and one of the space-separated "v1,…"
// signatures is the HMAC of "id.timestamp.body" under one of the secrets (the current and,
// for 24 h after a rotation, the previous one; empty strings are skipped). Comparisons take
// constant time.
func Verify(secrets []string, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	return webhook.Verify(secrets, h.Get(HeaderWebhookID), h.Get(HeaderWebhookTimestamp), h.Get(HeaderWebhookSignature), body, now, tolerance)
}

// PushBatch is the body of a push.
type PushBatch struct {
	// Subscription is the subscription's slug (qsb_…).
	Subscription string    `json:"subscription"`
	Queue        QueueRef  `json:"queue"`
	Messages     []Message `json:"messages"`
}

// QueueRef names a queue.
type QueueRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// PushResult is one message's outcome in a push receiver's answer.
type PushResult struct {
	MessageID         string `json:"messageId"`
	Outcome           string `json:"outcome"` // ack, retry, dead-letter or defer
	RetryAfterSeconds *int   `json:"retryAfterSeconds,omitempty"`
	Reason            string `json:"reason,omitempty"`
}

type pushBatchKey struct{}

// PushBatchFrom returns the push a PushReceiver's handler is running for (its subscription,
// queue and every message of the batch).
func PushBatchFrom(ctx context.Context) (*PushBatch, bool) {
	b, ok := ctx.Value(pushBatchKey{}).(*PushBatch)
	return b, ok
}

// PushReceiver is an http.Handler for a push subscription's endpoint. It verifies each
// push's signature (401 when it does not verify), decodes the batch, runs Handler for each
// message — in order within a message group, concurrently otherwise — and answers 200 with
// each message's outcome, taken from the handler's result as for Consume (a panic or an
// error is a retry; Defer() answers "defer", leaving the message for the application to
// settle by its receipt handle).
type PushReceiver struct {
	// Secrets are the signing secrets that verify (the current one, and the previous one
	// during a rotation).
	Secrets []string
	Handler Handler
	// Tolerance bounds the timestamp's distance from Now (default DefaultTolerance).
	Tolerance time.Duration
	// Concurrency bounds the handlers running at once for one push (default 10).
	Concurrency int
	// MaxBodyBytes bounds a push's body (default 32 MiB).
	MaxBodyBytes int64
	// ErrorRetryAfter, when set, says how long a message whose handler failed waits before it
	// is retried (answered as retryAfterSeconds); nil retries it at once.
	ErrorRetryAfter func(m *Message, err error) time.Duration
	// OnError is told about rejected pushes and handler failures. Default: ignored.
	OnError func(error)
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// NewPushReceiver returns a receiver that verifies with the given secrets and runs h.
func NewPushReceiver(h Handler, secrets ...string) *PushReceiver {
	return &PushReceiver{Secrets: secrets, Handler: h}
}

func (p *PushReceiver) report(err error) {
	if p.OnError != nil {
		p.OnError(err)
	}
}

func pushError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

// ServeHTTP handles one push.
func (p *PushReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		pushError(w, http.StatusMethodNotAllowed, "method_not_allowed", "a push is a POST")
		return
	}
	limit := p.MaxBodyBytes
	if limit <= 0 {
		limit = 32 << 20
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		pushError(w, http.StatusRequestEntityTooLarge, "payload_too_large", "the push body is too large")
		return
	}
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	if err := Verify(p.Secrets, r.Header, body, now(), p.Tolerance); err != nil {
		p.report(err)
		pushError(w, http.StatusUnauthorized, "unauthenticated", "the push signature does not verify")
		return
	}
	var batch PushBatch
	if err := json.Unmarshal(body, &batch); err != nil {
		p.report(fmt.Errorf("queues: push: decoding the batch: %w", err))
		pushError(w, http.StatusBadRequest, "invalid_argument", "the push body is not a batch")
		return
	}
	results := p.run(context.WithValue(r.Context(), pushBatchKey{}, &batch), &batch)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(map[string]any{"results": results})
}

// run runs the handler for each message: one lane per message group (in order within it),
// one per message without a group, at most Concurrency lanes at once.
func (p *PushReceiver) run(ctx context.Context, b *PushBatch) []PushResult {
	results := make([]PushResult, len(b.Messages))
	var lanes [][]int
	byGroup := map[string]int{}
	for i, m := range b.Messages {
		if m.GroupID == "" {
			lanes = append(lanes, []int{i})
			continue
		}
		l, ok := byGroup[m.GroupID]
		if !ok {
			l = len(lanes)
			byGroup[m.GroupID] = l
			lanes = append(lanes, nil)
		}
		lanes[l] = append(lanes[l], i)
	}
	n := p.Concurrency
	if n <= 0 {
		n = 10
	}
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for _, lane := range lanes {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			for _, i := range lane {
				results[i] = p.one(ctx, b.Queue.Name, &b.Messages[i])
			}
		}()
	}
	wg.Wait()
	return results
}

func (p *PushReceiver) one(ctx context.Context, queue string, m *Message) PushResult {
	ctx, span := startProcessSpan(ctx, queue, m)
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = &PanicError{Value: r}
			}
		}()
		return p.Handler(ctx, m)
	}()
	endProcessSpan(m, span, err)
	o := OutcomeOf(err)
	if o.Err != nil {
		p.report(&ConsumerError{Op: "handler", MessageID: m.MessageID, Err: o.Err})
		if o.Kind == OutcomeRetry && p.ErrorRetryAfter != nil {
			o.Delay = p.ErrorRetryAfter(m, o.Err)
		}
	}
	r := PushResult{MessageID: m.MessageID, Outcome: o.Kind.String()}
	switch o.Kind {
	case OutcomeRetry:
		if s := secondsUp(o.Delay); s > 0 {
			r.RetryAfterSeconds = &s
		}
	case OutcomeDeadLetter:
		r.Reason = o.Reason
	}
	return r
}
