package client

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"
)

// Handler processes one message. What it returns settles the message (SPEC §7):
//
//	nil or Ack()        acknowledged (deleted)
//	Retry()             visible again now
//	RetryAfter(d)       visible again after d (it stays in flight until then)
//	DeadLetter(reason)  moved to the queue's dead-letter queue now, with reason
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
	}
	return fmt.Sprintf("OutcomeKind(%d)", int(k))
}

// Outcome is a settlement decision. Handlers return one through Ack, Retry, RetryAfter,
// DeadLetter and Defer; OutcomeOf reads it back from a handler's result.
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
	// Concurrency is how many handlers run at once (default 10). The consumer receives only
	// as many messages as it has idle handlers, so it holds none it is not working on.
	Concurrency int
	// Pollers is how many receives may be waiting at once (default Concurrency/10, at least 1).
	Pollers int
	// WaitSeconds is each receive's long-polling wait (default 20).
	WaitSeconds int
	// VisibilityTimeout is each receive's visibility timeout, rounded up to seconds. Default:
	// the queue's (read once with GetQueue), or 30 s when the token may not read the queue.
	// While a handler runs past half of it, the consumer extends the message's visibility by
	// this much again (heartbeat).
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
// settling each message from h's result (see Handler), until ctx ends. While a handler runs
// past half the visibility timeout, its message's visibility is extended. Acknowledgements
// are sent in batches.
//
// When ctx ends Consume stops receiving, waits up to ShutdownTimeout for running handlers,
// then cancels the context of those still running and releases their messages (visible again
// at once; their results are ignored), sends the acknowledgements it holds and returns nil.
// It returns early with an error the service will keep answering — the queue does not exist
// (ErrNotFound) or the token is not good for it (IsAuth) — after the same shutdown.
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

	sem      chan struct{}      // one token per idle handler slot
	hctx     context.Context    // handlers' context: ends at the shutdown deadline
	hcancel  context.CancelFunc // ends hctx
	handlers sync.WaitGroup
	settling sync.WaitGroup // settlements under way (of handlers not abandoned)
	acks     chan string
	ackDone  chan struct{}

	mu       sync.Mutex
	inflight map[*delivery]struct{}
	fatal    error
}

// delivery is a message a handler is working on.
type delivery struct {
	m         *Message
	abandoned bool // released at shutdown; the handler's result is ignored
}

func (c *Client) newConsumer(ctx context.Context, queue string, h Handler, o ConsumeOptions) (*consumer, error) {
	if h == nil {
		return nil, errors.New("queues: Consume needs a handler")
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 10
	}
	if o.Pollers <= 0 {
		o.Pollers = max(1, o.Concurrency/MaxReceiveBatch)
	}
	o.Pollers = min(o.Pollers, o.Concurrency)
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
	co := &consumer{
		c: c, queue: queue, h: h, o: o, vt: vt,
		sem:      make(chan struct{}, o.Concurrency),
		acks:     make(chan string, o.AckBatchSize),
		ackDone:  make(chan struct{}),
		inflight: map[*delivery]struct{}{},
	}
	for range o.Concurrency {
		co.sem <- struct{}{}
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
	var pollers sync.WaitGroup
	for range co.o.Pollers {
		pollers.Go(func() { co.poll(pctx, stopPolling) })
	}
	pollers.Wait()

	// Shutdown: no more receives. Wait for the handlers, up to the deadline.
	idle := make(chan struct{})
	go func() { co.handlers.Wait(); close(idle) }()
	t := time.NewTimer(co.o.ShutdownTimeout)
	select {
	case <-idle:
		t.Stop()
	case <-t.C:
		co.abandon()
	}
	co.settling.Wait()
	close(co.acks)
	<-co.ackDone
	co.mu.Lock()
	defer co.mu.Unlock()
	return co.fatal
}

// abandon cancels the handlers still running and releases their messages.
func (co *consumer) abandon() {
	co.hcancel()
	co.mu.Lock()
	var entries []VisibilityEntry
	var ids []string
	for d := range co.inflight {
		d.abandoned = true
		entries = append(entries, VisibilityEntry{ReceiptHandle: d.m.ReceiptHandle})
		ids = append(ids, d.m.MessageID)
	}
	clear(co.inflight)
	co.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for len(entries) > 0 {
		n := min(len(entries), MaxReceiptBatch)
		res, err := co.c.ChangeVisibilityBatch(ctx, entries[:n])
		if err != nil {
			co.report("release", "", err)
		}
		for i, e := range res {
			co.report("release", ids[i], e)
		}
		entries, ids = entries[n:], ids[n:]
	}
}

// poll receives as many messages as there are idle handlers and starts a handler for each.
func (co *consumer) poll(ctx context.Context, stop context.CancelFunc) {
	failures := 0
	for {
		// Take one idle slot (waiting for it), then any others that are idle.
		select {
		case <-ctx.Done():
			return
		case <-co.sem:
		}
		n := 1
	more:
		for n < MaxReceiveBatch {
			select {
			case <-co.sem:
				n++
			default:
				break more
			}
		}
		started := time.Now()
		msgs, err := co.c.Receive(ctx, co.queue, ReceiveInput{
			MaxMessages:              n,
			VisibilityTimeoutSeconds: Int(int(co.vt / time.Second)),
			WaitSeconds:              Int(co.o.WaitSeconds),
		})
		for range n - len(msgs) {
			co.sem <- struct{}{}
		}
		for i := range msgs {
			co.start(&msgs[i], started)
		}
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

// start runs the handler for m in its own goroutine, with a heartbeat, and settles m.
func (co *consumer) start(m *Message, leased time.Time) {
	d := &delivery{m: m}
	co.mu.Lock()
	co.inflight[d] = struct{}{}
	co.mu.Unlock()
	co.handlers.Go(func() {
		defer func() { co.sem <- struct{}{} }()
		stopBeat := co.heartbeat(d, leased)
		err := co.call(m)
		stopBeat()
		co.mu.Lock()
		abandoned := d.abandoned
		delete(co.inflight, d)
		if !abandoned {
			co.settling.Add(1) // before abandon can run, so shutdown waits for it
		}
		co.mu.Unlock()
		if !abandoned {
			co.settle(m, err)
			co.settling.Done()
		}
	})
}

func (co *consumer) call(m *Message) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return co.h(co.hctx, m)
}

// heartbeat extends m's visibility each time half the visibility timeout has passed, until
// the returned function is called.
func (co *consumer) heartbeat(d *delivery, leased time.Time) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		half := co.vt / 2
		t := time.NewTimer(time.Until(leased.Add(half)))
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-co.hctx.Done():
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(co.hctx, half)
			err := co.c.ChangeVisibility(ctx, d.m.ReceiptHandle, int(co.vt/time.Second))
			cancel()
			if err != nil {
				co.report("heartbeat", d.m.MessageID, err)
				if IsStale(err) || CodeOf(err) == CodeVisibilityLimitExceeded || CodeOf(err) == CodeReceiptHandleInvalid {
					return
				}
			}
			t.Reset(half)
		}
	})
	return func() { close(done); wg.Wait() }
}

// settle applies a handler's result to m.
func (co *consumer) settle(m *Message, err error) {
	o := OutcomeOf(err)
	if o.Err != nil {
		co.report("handler", m.MessageID, o.Err)
		if o.Kind == OutcomeRetry && co.o.ErrorRetryAfter != nil {
			o.Delay = co.o.ErrorRetryAfter(m, o.Err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	switch o.Kind {
	case OutcomeAck:
		co.acks <- m.ReceiptHandle
	case OutcomeRetry:
		co.report("retry", m.MessageID, co.c.ChangeVisibility(ctx, m.ReceiptHandle, secondsUp(o.Delay)))
	case OutcomeDeadLetter:
		co.report("dead-letter", m.MessageID, co.c.DeadLetter(ctx, m.ReceiptHandle, o.Reason))
	case OutcomeDefer:
	}
}

// acker sends acknowledgements in batches: when AckBatchSize are waiting, every AckInterval,
// and when the consumer stops.
func (co *consumer) acker() {
	defer close(co.ackDone)
	t := time.NewTicker(co.o.AckInterval)
	defer t.Stop()
	var batch []string
	flush := func() {
		if len(batch) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := co.c.AckBatch(ctx, batch)
		cancel()
		if err != nil {
			co.report("ack", "", err)
		}
		for _, e := range res {
			co.report("ack", "", e)
		}
		batch = batch[:0]
	}
	for {
		select {
		case h, ok := <-co.acks:
			if !ok {
				flush()
				return
			}
			batch = append(batch, h)
			if len(batch) >= co.o.AckBatchSize {
				flush()
			}
		case <-t.C:
			flush()
		}
	}
}
