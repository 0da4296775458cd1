package client

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Handler processes one message. What it returns settles the message (docs/clients.md):
//
//	nil or Ack()        acknowledged (deleted)
//	Retry()             visible again now
//	RetryAfter(d)       visible again after d (it stays in flight until then)
//	DeadLetter(reason)  moved to the queue's dead-letter queue now, with reason
//	Cancel()            visible again now, this delivery not counted (receiveCount one
//	                    lower; past the queue's maxCancels: dead-lettered, max_cancels)
//	Defer()             not settled: in flight until its deadline, for the application to
//	                    settle by its receipt handle (a push receiver answers "defer")
//	any other error     retried, like Retry() (see ConsumeOptions.ErrorRetryAfter)
//
// A handler that panics is retried too. The outcome functions' errors may be wrapped.
type Handler func(ctx context.Context, m *Message) error

// OutcomeKind is what a handler's result does to its message.
type OutcomeKind int

// Outcome kinds.
const (
	OutcomeAck OutcomeKind = iota
	OutcomeRetry
	OutcomeDeadLetter
	OutcomeDefer
	OutcomeCancel
)

func (k OutcomeKind) String() string {
	switch k {
	case OutcomeAck:
		return "ack"
	case OutcomeRetry:
		return "retry"
	case OutcomeDeadLetter:
		return "dead-letter"
	case OutcomeDefer:
		return "defer"
	case OutcomeCancel:
		return "cancel"
	}
	return fmt.Sprintf("OutcomeKind(%d)", int(k))
}

// Outcome is a settlement decision. Handlers return one through Ack, Retry, RetryAfter,
// DeadLetter, Cancel and Defer; OutcomeOf reads it back from a handler's result.
type Outcome struct {
	Kind OutcomeKind
	// Delay is how long a retried message stays in flight (0: visible again now).
	Delay time.Duration
	// Reason is recorded with a dead-lettered message (empty: "consumer").
	Reason string
	// Err is the handler's own error (or a *PanicError) when that is what caused a retry.
	Err error
}

func (o *Outcome) Error() string {
	switch {
	case o.Err != nil:
		return fmt.Sprintf("%s: %v", o.Kind, o.Err)
	case o.Kind == OutcomeRetry && o.Delay > 0:
		return fmt.Sprintf("retry after %s", o.Delay)
	case o.Kind == OutcomeDeadLetter && o.Reason != "":
		return "dead-letter: " + o.Reason
	}
	return o.Kind.String()
}

func (o *Outcome) Unwrap() error { return o.Err }

// Ack acknowledges the message (the same as returning nil).
func Ack() error { return &Outcome{Kind: OutcomeAck} }

// Retry makes the message visible again now.
func Retry() error { return &Outcome{Kind: OutcomeRetry} }

// RetryAfter makes the message visible again after d (rounded up to whole seconds).
func RetryAfter(d time.Duration) error { return &Outcome{Kind: OutcomeRetry, Delay: max(d, 0)} }

// DeadLetter moves the message to the queue's dead-letter queue now, recording reason.
func DeadLetter(reason string) error { return &Outcome{Kind: OutcomeDeadLetter, Reason: reason} }

// Defer leaves the message in flight, unsettled, for the application to settle later by its
// receipt handle (Client.Ack, ChangeVisibility, DeadLetter) before its deadline.
func Defer() error { return &Outcome{Kind: OutcomeDefer} }

// Cancel returns the message without counting this delivery (docs/delivery-options.md#cancel):
// visible again now, its receiveCount one lower. The cancel beyond the queue's maxCancels
// dead-letters it.
func Cancel() error { return &Outcome{Kind: OutcomeCancel} }

// PanicError is a handler's panic, recovered.
type PanicError struct {
	Value any
	Stack []byte
}

func (p *PanicError) Error() string { return fmt.Sprintf("handler panicked: %v", p.Value) }

// OutcomeOf returns the settlement that a handler's result asks for: nil is an ack, an
// outcome (possibly wrapped) is itself, and any other error a retry now with Err set.
func OutcomeOf(err error) Outcome {
	if err == nil {
		return Outcome{Kind: OutcomeAck}
	}
	var o *Outcome
	if errors.As(err, &o) {
		return *o
	}
	return Outcome{Kind: OutcomeRetry, Err: err}
}

// secondsUp rounds d up to whole seconds.
func secondsUp(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int((d + time.Second - 1) / time.Second)
}

// ConsumeOptions tune Consume; the zero value is a sensible consumer.
type ConsumeOptions struct {
	// Concurrency is how many handlers run at once (default 10).
	Concurrency int
	// Prefetch is how many received messages may wait for a free handler, beyond those the
	// handlers are working on (default Concurrency, at most Concurrency; -1 for none, so the
	// consumer holds only messages it is working on). Waiting messages are heartbeaten like
	// running ones, and released (visible again at once) when the consumer stops.
	Prefetch int
	// Pollers is how many receives may be in flight at once (default (Concurrency +
	// Prefetch) / 10, at least 1, so that each can ask for a full batch). A poller asks for
	// as many messages as there is room for, up to 10.
	Pollers int
	// WaitSeconds is each receive's long-polling wait (default 20).
	WaitSeconds int
	// Filter, when set, receives only the messages it selects
	// (docs/delivery-options.md#filtered-receive-and-browse); the others stay for other consumers.
	Filter *Filter
	// ConsumerID names this consumer on every receive
	// (docs/delivery-options.md#consumers-backlogs-and-fairness): required on an exclusive fifo
	// queue, whose groups bind to it (docs/fifo.md "Group policies").
	ConsumerID string
	// VisibilityTimeout is each receive's visibility timeout, rounded up to seconds. Default:
	// the queue's (read once with GetQueue), or 30 s when the token may not read the queue.
	// While a message is held past half of it, the consumer extends the message's visibility
	// by this much again (heartbeat).
	VisibilityTimeout time.Duration
	// ShutdownTimeout is how long, once ctx ends, Consume waits for running handlers before it
	// cancels their context and releases their messages (default 30 s).
	ShutdownTimeout time.Duration
	// AckBatchSize is how many acknowledgements go in one call (default and most 100).
	AckBatchSize int
	// AckInterval is the longest an acknowledgement waits to be sent (default 50 ms).
	AckInterval time.Duration
	// ErrorRetryAfter, when set, says how long a message whose handler failed (returned an
	// error or panicked) stays in flight before it is retried; nil retries it at once.
	ErrorRetryAfter func(m *Message, err error) time.Duration
	// Polling receives with long polls (POST .../receive) even where the service offers the
	// receive stream, which Consume otherwise uses (docs/streaming.md).
	Polling bool
	// OnError is told about the errors the consumer meets and carries on after: failed
	// receives, settlements and heartbeats, handler errors and panics. Default: ignored.
	OnError func(error)
}

// ConsumerError is an error the consumer met and carried on after, as OnError sees it.
type ConsumerError struct {
	// Op is "receive", "ack", "retry", "dead-letter", "heartbeat", "release" or "handler".
	Op        string
	MessageID string
	Err       error
}

func (e *ConsumerError) Error() string {
	if e.MessageID != "" {
		return fmt.Sprintf("queues consumer: %s %s: %v", e.Op, e.MessageID, e.Err)
	}
	return fmt.Sprintf("queues consumer: %s: %v", e.Op, e.Err)
}

func (e *ConsumerError) Unwrap() error { return e.Err }

// Consume receives messages from queue and runs h for each, with bounded concurrency,
// settling each message from h's result (see Handler), until ctx ends. While a message is
// held past half the visibility timeout, its visibility is extended. Acknowledgements are
// sent in batches.
//
// Where the service offers it, messages come over one receive stream (a WebSocket, see
// Client.Stream), which carries the acknowledgements too; otherwise several receives are in
// flight at once (Pollers), each asking for up to 10 messages, and
// up to Prefetch received messages wait for a free handler, so the handlers do not wait for
// a receive's round trip.
//
// When ctx ends Consume stops receiving, releases the messages no handler has started,
// waits up to ShutdownTimeout for running handlers, then cancels the context of those still
// running and releases their messages (visible again at once; their results are ignored),
// sends the acknowledgements it holds and returns nil. It returns early with an error the
// service will keep answering — the queue does not exist (ErrNotFound) or the token is not
// good for it (IsAuth) — after the same shutdown.
func (c *Client) Consume(ctx context.Context, queue string, h Handler, opts ConsumeOptions) error {
	co, err := c.newConsumer(ctx, queue, h, opts)
	if err != nil {
		return err
	}
	return co.run(ctx)
}

type consumer struct {
	c     *Client
	queue string
	h     Handler
	o     ConsumeOptions
	vt    time.Duration

	room     chan struct{}      // one token per message the consumer may still hold
	gather   chan struct{}      // held by the poller taking room (see take)
	work     chan *delivery     // received messages waiting for a handler
	stopping atomic.Bool        // ctx ended: handlers start no more messages
	inHand   atomic.Int32       // received messages whose room has not come back yet
	hctx     context.Context    // handlers' context: ends at the shutdown deadline
	hcancel  context.CancelFunc // ends hctx
	handlers sync.WaitGroup
	settling sync.WaitGroup // settlements under way (of deliveries not abandoned)
	acks     chan string
	ackDone  chan struct{}

	stream atomic.Pointer[Stream] // the receive stream while one is open (acks go over it)

	mu    sync.Mutex
	held  map[*delivery]struct{} // received and not settled: waiting or running
	fatal error
}

// delivery is a message the consumer holds, from its receive until it is settled.
type delivery struct {
	m *Message
	// Guarded by consumer.mu:
	extended  time.Time // when its visibility deadline was last set (receive or heartbeat)
	noBeat    bool      // a heartbeat found the handle no longer extendable
	abandoned bool      // released at shutdown; the handler's result is ignored
}

func (o *ConsumeOptions) defaults() {
	if o.Concurrency <= 0 {
		o.Concurrency = 10
	}
	switch {
	case o.Prefetch < 0:
		o.Prefetch = 0
	case o.Prefetch == 0 || o.Prefetch > o.Concurrency:
		o.Prefetch = o.Concurrency
	}
	held := o.Concurrency + o.Prefetch
	if o.Pollers <= 0 {
		o.Pollers = max(1, held/MaxReceiveBatch)
	}
	o.Pollers = min(o.Pollers, held)
	if o.WaitSeconds <= 0 {
		o.WaitSeconds = 20
	}
	o.WaitSeconds = min(o.WaitSeconds, 20)
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = 30 * time.Second
	}
	if o.AckBatchSize <= 0 || o.AckBatchSize > MaxReceiptBatch {
		o.AckBatchSize = MaxReceiptBatch
	}
	if o.AckInterval <= 0 {
		o.AckInterval = 50 * time.Millisecond
	}
}

func (c *Client) newConsumer(ctx context.Context, queue string, h Handler, o ConsumeOptions) (*consumer, error) {
	if h == nil {
		return nil, errors.New("queues: Consume needs a handler")
	}
	o.defaults()
	vt := o.VisibilityTimeout
	if vt <= 0 {
		q, err := c.GetQueue(ctx, queue)
		switch {
		case err == nil && q.VisibilityTimeoutSeconds > 0:
			vt = time.Duration(q.VisibilityTimeoutSeconds) * time.Second
		case err == nil || IsAuth(err):
			vt = 30 * time.Second
		default:
			return nil, err
		}
	}
	vt = time.Duration(max(secondsUp(vt), 1)) * time.Second
	held := o.Concurrency + o.Prefetch
	co := &consumer{
		c: c, queue: queue, h: h, o: o, vt: vt,
		room:    make(chan struct{}, held),
		gather:  make(chan struct{}, 1),
		work:    make(chan *delivery, held),
		acks:    make(chan string, 4*o.AckBatchSize),
		ackDone: make(chan struct{}),
		held:    map[*delivery]struct{}{},
	}
	for range held {
		co.room <- struct{}{}
	}
	co.hctx, co.hcancel = context.WithCancel(context.WithoutCancel(ctx))
	return co, nil
}

func (co *consumer) report(op, id string, err error) {
	if co.o.OnError != nil && err != nil {
		co.o.OnError(&ConsumerError{Op: op, MessageID: id, Err: err})
	}
}

func (co *consumer) run(ctx context.Context) error {
	defer co.hcancel()
	pctx, stopPolling := context.WithCancel(ctx)
	defer stopPolling()
	go co.acker()
	beatDone := make(chan struct{})
	go co.heartbeats(beatDone)
	for range co.o.Concurrency {
		co.handlers.Add(1)
		go func() {
			defer co.handlers.Done()
			co.handle()
		}()
	}
	co.receiveLoop(pctx, stopPolling)

	// Shutdown: no more receives, no more handlers started. The messages still waiting go
	// back at once; the running handlers have until the deadline.
	co.stopping.Store(true)
	close(co.work)
	co.release(co.waiting())
	idle := make(chan struct{})
	go func() { co.handlers.Wait(); close(idle) }()
	t := time.NewTimer(co.o.ShutdownTimeout)
	select {
	case <-idle:
		t.Stop()
	case <-t.C:
	}
	// Whatever is still held now is released: at the deadline, the running handlers' messages
	// (their context is cancelled, after they are marked abandoned so that a handler that
	// returns at once is not settled); otherwise the waiting messages a handler skipped.
	left := co.abandonAll()
	co.hcancel()
	<-beatDone
	co.release(left)
	co.settling.Wait()
	close(co.acks)
	<-co.ackDone
	co.mu.Lock()
	defer co.mu.Unlock()
	return co.fatal
}

// pollers runs Pollers pollers until ctx ends.
func (co *consumer) pollers(ctx context.Context, stop context.CancelFunc) {
	var pollers sync.WaitGroup
	for range co.o.Pollers {
		pollers.Add(1)
		go func() {
			defer pollers.Done()
			co.poll(ctx, stop)
		}()
	}
	pollers.Wait()
}

// poll receives as many messages as there is room for (up to 10 per receive) and hands them
// to the handlers.
func (co *consumer) poll(ctx context.Context, stop context.CancelFunc) {
	failures := 0
	// The receive bodies, one per batch size, written once.
	var bodies [MaxReceiveBatch + 1][]byte
	for n := 1; n <= MaxReceiveBatch; n++ {
		bodies[n] = fmt.Appendf(nil, `{"maxMessages":%d,"visibilityTimeoutSeconds":%d,"waitSeconds":%d%s}`, n, int(co.vt/time.Second), co.o.WaitSeconds, co.filterField()+co.consumerField())
	}
	for {
		n := co.take(ctx)
		if n == 0 {
			return
		}
		started := time.Now()
		msgs, err := co.c.receive(ctx, co.queue, RawBody{ContentType: "application/json", Data: bodies[n]}, n)
		for range n - len(msgs) {
			co.room <- struct{}{}
		}
		co.hold(msgs, started)
		if err == nil {
			failures = 0
			continue
		}
		if ctx.Err() != nil {
			return
		}
		switch CodeOf(err) {
		case CodeNotFound, CodeUnauthenticated, CodePermissionDenied, CodeInvalidArgument:
			co.mu.Lock()
			if co.fatal == nil {
				co.fatal = err
			}
			co.mu.Unlock()
			stop()
			return
		}
		co.report("receive", "", err)
		failures++
		backoff := min(100*time.Millisecond<<min(failures, 6), 5*time.Second)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// take takes room for up to a batch of messages for one receive and returns how many (0
// when ctx ended). It waits for the first; then, for up to gatherWait, for a full batch
// while handlers are running (each returns its room when it finishes, so with quick handlers
// room comes back a message at a time, microseconds apart); with no received message in
// hand it receives at once what there is room for. One poller gathers at a time,
// so returning room fills one receive instead of being split between all of them.
func (co *consumer) take(ctx context.Context) int {
	select {
	case <-ctx.Done():
		return 0
	case co.gather <- struct{}{}:
	}
	defer func() { <-co.gather }()
	select {
	case <-ctx.Done():
		return 0
	case <-co.room:
	}
	n := 1
	var t *time.Timer
	deadline := time.Now().Add(gatherWait)
gather:
	for n < MaxReceiveBatch {
		select {
		case <-co.room:
			n++
			continue
		default:
		}
		wait := time.Until(deadline)
		if wait <= 0 || co.inHand.Load() == 0 {
			break
		}
		if t == nil {
			t = time.NewTimer(wait)
		} else {
			t.Reset(wait)
		}
		select {
		case <-co.room:
			n++
		case <-t.C:
			break gather
		case <-ctx.Done():
			break gather
		}
	}
	if t != nil {
		t.Stop()
	}
	return n
}

// hold records received messages as held and queues them for the handlers. The work
// channel has room for every message the consumer may hold, so this never blocks.
func (co *consumer) hold(msgs []Message, leased time.Time) {
	if len(msgs) == 0 {
		return
	}
	ds := make([]delivery, len(msgs))
	co.mu.Lock()
	for i := range msgs {
		// A message of an at-most-once queue has no handle: nothing to extend or settle.
		ds[i] = delivery{m: &msgs[i], extended: leased, noBeat: msgs[i].ReceiptHandle == ""}
		co.held[&ds[i]] = struct{}{}
	}
	co.mu.Unlock()
	co.inHand.Add(int32(len(ds)))
	for i := range ds {
		co.work <- &ds[i]
	}
}

// handle is one handler slot: it runs the handler for each message it takes and settles it,
// until the consumer stops.
func (co *consumer) handle() {
	for d := range co.work {
		if co.stopping.Load() {
			continue // left held: released at shutdown
		}
		err := co.call(d.m)
		co.mu.Lock()
		abandoned := d.abandoned
		if !abandoned {
			delete(co.held, d)
			co.settling.Add(1) // before abandonAll can run, so shutdown waits for it
		}
		co.mu.Unlock()
		if abandoned {
			return // released at the deadline; the consumer is gone
		}
		co.settle(d.m, err)
		co.settling.Done()
		co.inHand.Add(-1)
		co.room <- struct{}{}
	}
}

func (co *consumer) call(m *Message) (err error) {
	ctx, span := startProcessSpan(co.hctx, co.queue, m)
	defer func() { endProcessSpan(m, span, err) }() // after the recover below sets err
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return co.h(ctx, m)
}

// settle applies a handler's result to m. A message without a receipt handle (an
// at-most-once queue's) left the queue when it was received: its result settles nothing.
func (co *consumer) settle(m *Message, err error) {
	o := OutcomeOf(err)
	if o.Err != nil {
		co.report("handler", m.MessageID, o.Err)
		if o.Kind == OutcomeRetry && co.o.ErrorRetryAfter != nil {
			o.Delay = co.o.ErrorRetryAfter(m, o.Err)
		}
	}
	if m.ReceiptHandle == "" {
		return
	}
	switch o.Kind {
	case OutcomeAck:
		co.acks <- m.ReceiptHandle
		return
	case OutcomeDefer:
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	switch o.Kind {
	case OutcomeRetry:
		co.report("retry", m.MessageID, co.changeVisibility(ctx, m.ReceiptHandle, secondsUp(o.Delay)))
	case OutcomeDeadLetter:
		co.report("dead-letter", m.MessageID, co.c.DeadLetter(ctx, m.ReceiptHandle, o.Reason))
	case OutcomeCancel:
		co.report("cancel", m.MessageID, co.c.Cancel(ctx, m.ReceiptHandle))
	}
}
