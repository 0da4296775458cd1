// Package client is the Go SDK of Queues: a typed client for every route of the HTTP API
// (openapi.yaml), a consumer that makes at-least-once processing the easy path, and an
// http.Handler that receives push deliveries.
//
// # Client
//
// New (or FromEnv, which reads QUEUES_URL and QUEUES_TOKEN) returns a Client. Every call
// takes a context. Calls answered 429 rate_limited or 503 unavailable are retried with
// exponential backoff and jitter, waiting at least the answer's Retry-After (up to
// RetryPolicy.MaxRetryAfter). An error answer is an *Error carrying the API's code, message,
// details.field and HTTP status, inside the typed error of its family (NotFoundError,
// ConflictError, StaleReceiptError, RateLimitedError, QuotaExceededError, …); match it with
// errors.As (on an *Error or a typed error), errors.Is against ErrNotFound, ErrStale and the
// other sentinels, or helpers such as IsNotFound and IsStale.
//
// Every paginated list has an iterator (AllProjects, AllQueues, AllGroups, BrowseAll, …) that
// follows the pages' cursors; breaking out of its loop fetches no further page.
//
// # Consumer
//
// Consume long-polls a queue and runs a Handler per message with bounded concurrency. What
// the handler returns settles the message (docs/clients.md): nil or Ack() acknowledges it, Retry()
// makes it visible again now, RetryAfter(d) after d, DeadLetter(reason) moves it to the
// dead-letter queue, and an error or a panic retries it. Handlers that run long get their
// message's visibility extended (heartbeat); acknowledgements are sent in batches; when the
// context ends the consumer stops receiving, waits for its handlers up to a deadline and
// releases what they still hold.
//
//	c, _ := client.FromEnv()
//	err := c.Consume(ctx, "orders", func(ctx context.Context, m *client.Message) error {
//		return process(m.Body) // nil acks; an error retries
//	}, client.ConsumeOptions{Concurrency: 32})
//
// # Producer
//
// NewProducer sends to one queue as fast as the service takes it: Send returns a SendFuture at
// once, concurrent sends are gathered into batches written pipelined on the queue's send
// stream (a WebSocket; each batch confirmed once stored), and plain HTTP sends take over when
// the stream cannot be opened. Flush waits for what was sent; Close for everything.
//
//	p := c.NewProducer("orders", client.ProducerOptions{})
//	defer p.Close(ctx)
//	f := p.Send(ctx, client.SendMessage{Body: "hello"})
//	m, err := f.Wait(ctx) // m.MessageID once stored
//
// # Push receiver
//
// PushReceiver is the endpoint of a push subscription: it verifies the Standard Webhooks
// signature (current and previous secret, 5-minute timestamp tolerance), runs the same kind
// of Handler per message and answers each message's outcome.
//
//	http.Handle("/queues", client.NewPushReceiver(handle, os.Getenv("QUEUES_SIGNING_SECRET")))
package client
