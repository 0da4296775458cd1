package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// A Producer sends messages to one queue as fast as the service takes them: concurrent Sends
// are gathered into batches of up to 10 messages, and the batches are written, pipelined, on
// the queue's send stream (GET /v1/queues/{queue}/send-stream, a WebSocket; docs/streaming.md),
// each confirmed asynchronously once its messages are stored. Each Send returns a SendFuture
// that resolves to the message's id or its error. When the stream cannot be opened (a proxy
// that refuses WebSocket upgrades, say) the Producer sends the same batches with POST
// /v1/queues/{queue}/messages instead, and tries the stream again later.
//
// Order: the messages of one fifo group are stored in the order of their Sends (Sends from
// one goroutine, or otherwise ordered). Delivery: every future resolves exactly once. A batch
// refused whole (rate_limited, quota_exceeded, unavailable, …) resolves its futures with that
// error and is not sent again: the caller decides (the error carries the Retry-After). A batch
// left unconfirmed by a service that drained (a deploy) was not stored and is sent again on a
// new stream; one left unconfirmed by a broken connection resolves with ErrUnconfirmed (it may
// or may not be stored; a fifo queue's DedupID makes a resend safe).
type Producer struct {
	c     *Client
	queue string
	o     ProducerOptions
	// ctx is the producer's own; cancelled when Close gives up waiting.
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	cond    *sync.Cond
	pending []pendingSend
	// inflight counts batches written and not yet answered.
	inflight int
	// busy counts, per fifo group, the HTTP batches in flight holding it: two concurrent
	// requests must not share a group, or its order would be the race's (the stream needs no
	// such care: the service stores a fifo queue's frames in order).
	busy   map[string]int
	closed bool
	// conn is the open send stream (nil: none); httpUntil, when in the future, is until
	// when batches go over HTTP because the stream could not be opened.
	conn      *sendConn
	httpUntil time.Time
	seq       uint64
	// epoch and unresolved let Flush wait for the sends made before it, not for later ones.
	epoch      uint64
	unresolved map[uint64]int
	pumped     chan struct{}
}

// DefaultProducerWindow is a Producer's default Window: as many frames as a standard queue's
// send stream stores at once (16), so a busy producer keeps the service's storers busy and
// their sends share script calls. A smaller window caps the rate at 4 frames a round trip
// (docs/streaming.md "Why the default window is 16").
const DefaultProducerWindow = 16

// ProducerOptions tune a Producer; the zero value takes the defaults.
type ProducerOptions struct {
	// Window is the most batches in flight at once, written and not yet confirmed (default
	// DefaultProducerWindow). While the window is full, Sends gather into the next batches.
	Window int
	// MaxBatch is the most messages one batch carries (1–10, default 10).
	MaxBatch int
	// MaxPending is the most messages waiting to be batched (default 10,000); a Send beyond
	// it waits for room (or for its ctx).
	MaxPending int
	// DisableStream sends every batch with POST .../messages, never on the send stream.
	DisableStream bool
	// StreamRetry is how long after the stream could not be opened the Producer sends over
	// HTTP before it tries the stream again (default 30 s).
	StreamRetry time.Duration
}

func (o ProducerOptions) withDefaults() ProducerOptions {
	if o.Window <= 0 {
		o.Window = DefaultProducerWindow
	}
	if o.MaxBatch <= 0 || o.MaxBatch > MaxSendBatch {
		o.MaxBatch = MaxSendBatch
	}
	if o.MaxPending <= 0 {
		o.MaxPending = 10_000
	}
	if o.StreamRetry <= 0 {
		o.StreamRetry = 30 * time.Second
	}
	return o
}

// ErrProducerClosed resolves the futures of Sends made after Close.
var ErrProducerClosed = errors.New("queues: the producer is closed")

// ErrUnconfirmed is in the error of a message whose batch was written on a send stream that
// broke before the batch's confirmation arrived: it may or may not have been stored.
var ErrUnconfirmed = errors.New("queues: the send stream broke before the batch was confirmed; the message may or may not be stored")

// SendFuture is the outcome of one Producer.Send, available once Done is closed.
type SendFuture struct {
	done  chan struct{}
	once  sync.Once
	res   SentMessage
	err   error
	epoch uint64
}

// Done is closed once the send's outcome is known.
func (f *SendFuture) Done() <-chan struct{} { return f.done }

// Wait waits for the outcome (or ctx) and returns the stored message (Index is 0) or the
// message's error: an *Error (inside its typed error for a batch refused whole), ErrUnconfirmed,
// ErrProducerClosed or a context's error.
func (f *SendFuture) Wait(ctx context.Context) (SentMessage, error) {
	select {
	case <-f.done:
		return f.res, f.err
	case <-ctx.Done():
		return SentMessage{}, ctx.Err()
	}
}

// Result waits for the outcome and returns it, as Wait does without a context.
func (f *SendFuture) Result() (SentMessage, error) {
	<-f.done
	return f.res, f.err
}

type pendingSend struct {
	m SendMessage
	f *SendFuture
}

// NewProducer returns a Producer of queue. It opens its stream with its first batch.
func (c *Client) NewProducer(queue string, o ProducerOptions) *Producer {
	ctx, cancel := context.WithCancel(context.Background())
	p := &Producer{c: c, queue: queue, o: o.withDefaults(), ctx: ctx, cancel: cancel, busy: map[string]int{},
		unresolved: map[uint64]int{}, pumped: make(chan struct{})}
	p.cond = sync.NewCond(&p.mu)
	go p.pump()
	return p
}

// Send queues m to be sent and returns its future at once. It waits only while MaxPending
// messages are already waiting (ctx bounds that wait; its error is then the future's). When
// m has no Traceparent, ctx's span (if any) becomes it, as a send request's header would.
func (p *Producer) Send(ctx context.Context, m SendMessage) *SendFuture {
	f := &SendFuture{done: make(chan struct{})}
	if m.Traceparent == "" && trace.SpanContextFromContext(ctx).IsValid() {
		mc := propagation.MapCarrier{}
		propagation.TraceContext{}.Inject(ctx, mc)
		m.Traceparent = mc["traceparent"]
	}
	p.mu.Lock()
	if p.full(ctx) {
		// Only a Send that must wait registers for ctx's end (a registration per Send cost
		// the hot path a lock of ctx's and an allocation).
		p.mu.Unlock()
		stop := context.AfterFunc(ctx, p.wake)
		defer stop()
		p.mu.Lock()
		for p.full(ctx) {
			p.cond.Wait()
		}
	}
	defer p.mu.Unlock()
	switch {
	case p.closed:
		f.resolveNow(SentMessage{}, ErrProducerClosed)
		return f
	case ctx.Err() != nil:
		f.resolveNow(SentMessage{}, ctx.Err())
		return f
	}
	f.epoch = p.epoch
	p.unresolved[f.epoch]++
	p.pending = append(p.pending, pendingSend{m: m, f: f})
	p.cond.Broadcast()
	return f
}

// full reports whether a Send must wait for room (under mu).
func (p *Producer) full(ctx context.Context) bool {
	return !p.closed && len(p.pending) >= p.o.MaxPending && ctx.Err() == nil
}

// wake wakes every waiter, to look at its context.
func (p *Producer) wake() {
	p.mu.Lock()
	p.cond.Broadcast()
	p.mu.Unlock()
}

// Flush waits until every message Sent before it has its outcome, or ctx ends.
func (p *Producer) Flush(ctx context.Context) error {
	stop := context.AfterFunc(ctx, p.wake)
	defer stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.epoch
	p.epoch++
	for p.waiting(e) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		p.cond.Wait()
	}
	return nil
}

// waiting reports whether a send of epoch e or earlier has no outcome yet (under mu).
func (p *Producer) waiting(e uint64) bool {
	for k := range p.unresolved {
		if k <= e {
			return true
		}
	}
	return false
}

// Close stops taking Sends (later ones resolve with ErrProducerClosed), waits for every
// message sent to have its outcome and closes the stream. When ctx ends first, what is still
// waiting resolves with ctx's error (a batch in flight may still be stored) and Close returns it.
func (p *Producer) Close(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	p.cond.Broadcast()
	p.mu.Unlock()
	err := p.Flush(ctx)
	if err != nil {
		p.cancel() // ends the writes, requests and stream still under way
		p.mu.Lock()
		pend := p.pending
		p.pending = nil
		p.mu.Unlock()
		p.resolveAll(pend, err)
	}
	<-p.pumped
	p.mu.Lock()
	conn := p.conn
	p.conn = nil
	p.mu.Unlock()
	if conn != nil {
		conn.closeWith(err)
	}
	p.cancel()
	return err
}

// pump takes batches off pending while the window has room and sends them, until the producer
// is closed and nothing is left.
func (p *Producer) pump() {
	defer close(p.pumped)
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		for len(p.pending) == 0 || p.inflight >= p.o.Window {
			// Closed, it ends once nothing is pending or in flight: a drained stream's
			// batches come back to pending and are sent again.
			if p.closed && len(p.pending) == 0 && p.inflight == 0 || p.ctx.Err() != nil {
				return
			}
			p.cond.Wait()
		}
		batch := p.take()
		if len(batch) == 0 {
			p.cond.Wait() // its head's group is held by an HTTP batch in flight
			continue
		}
		p.inflight++
		p.mu.Unlock()
		p.dispatch(batch)
		p.mu.Lock()
	}
}

// take cuts the next batch off pending (under mu). Over HTTP it stops before a message whose
// fifo group a batch in flight holds.
func (p *Producer) take() []pendingSend {
	n := min(len(p.pending), p.o.MaxBatch)
	if p.overHTTP() {
		for i := 0; i < n; i++ {
			if g := p.pending[i].m.GroupID; g != "" && p.busy[g] > 0 {
				n = i
				break
			}
		}
	}
	batch := make([]pendingSend, n)
	copy(batch, p.pending)
	p.pending = p.pending[n:]
	if len(p.pending) == 0 {
		p.pending = nil // let the backing array go
	}
	p.cond.Broadcast() // room for Sends waiting on MaxPending
	return batch
}

// overHTTP reports whether batches now go over HTTP (under mu).
func (p *Producer) overHTTP() bool {
	return p.o.DisableStream || (p.conn == nil && time.Now().Before(p.httpUntil))
}

// dispatch sends one batch, on the stream when it is (or can be) open, else over HTTP.
func (p *Producer) dispatch(batch []pendingSend) {
	p.mu.Lock()
	useHTTP := p.overHTTP()
	conn := p.conn
	p.mu.Unlock()
	if !useHTTP && conn == nil {
		var err error
		conn, err = p.open()
		p.mu.Lock()
		if err != nil {
			p.httpUntil = time.Now().Add(p.o.StreamRetry)
			useHTTP = true
		} else {
			p.conn = conn
		}
		p.mu.Unlock()
	}
	if useHTTP {
		p.sendHTTP(batch)
		return
	}
	conn.write(batch)
}

// sendHTTP sends batch with POST .../messages in its own goroutine, holding its fifo groups.
func (p *Producer) sendHTTP(batch []pendingSend) {
	msgs := make([]SendMessage, len(batch))
	p.mu.Lock()
	for i, s := range batch {
		msgs[i] = s.m
		if s.m.GroupID != "" {
			p.busy[s.m.GroupID]++
		}
	}
	p.mu.Unlock()
	go func() {
		r, err := p.c.SendBatch(p.ctx, p.queue, msgs)
		p.resolveBatch(batch, r, err)
		p.mu.Lock()
		for _, s := range batch {
			if g := s.m.GroupID; g != "" {
				if p.busy[g]--; p.busy[g] <= 0 {
					delete(p.busy, g)
				}
			}
		}
		p.inflight--
		p.cond.Broadcast()
		p.mu.Unlock()
	}()
}

// resolveBatch resolves a batch's futures from its answer (or its error).
func (p *Producer) resolveBatch(batch []pendingSend, r *SendResult, err error) {
	if err != nil {
		p.resolveAll(batch, err)
		return
	}
	out := make([]bool, len(batch))
	did := make([]bool, len(batch))
	for _, m := range r.Messages {
		if m.Index >= 0 && m.Index < len(batch) && !out[m.Index] {
			out[m.Index] = true
			i := m.Index
			m.Index = 0
			did[i] = batch[i].f.resolveNow(m, nil)
		}
	}
	for _, f := range r.Failed {
		if f.Index >= 0 && f.Index < len(batch) && !out[f.Index] {
			out[f.Index] = true
			did[f.Index] = batch[f.Index].f.resolveNow(SentMessage{}, f.Err.typed())
		}
	}
	for i, done := range out {
		if !done {
			did[i] = batch[i].f.resolveNow(SentMessage{}, fmt.Errorf("queues: the send's answer did not name message %d", i))
		}
	}
	p.resolved(batch, did)
}

func (p *Producer) resolveAll(batch []pendingSend, err error) {
	did := make([]bool, len(batch))
	for i, s := range batch {
		did[i] = s.f.resolveNow(SentMessage{}, err)
	}
	p.resolved(batch, did)
}

// resolved counts the futures of batch that did[i] says were resolved, for Flush, under one
// lock for the batch (one per message cost the confirmation's reader a lock each).
func (p *Producer) resolved(batch []pendingSend, did []bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, s := range batch {
		if !did[i] {
			continue
		}
		if p.unresolved[s.f.epoch]--; p.unresolved[s.f.epoch] <= 0 {
			delete(p.unresolved, s.f.epoch)
			p.cond.Broadcast()
		}
	}
}

// resolveNow sets f's outcome once; it reports whether this call did.
func (f *SendFuture) resolveNow(m SentMessage, err error) bool {
	did := false
	f.once.Do(func() {
		f.res, f.err, did = m, err, true
		close(f.done)
	})
	return did
}

// requeue puts the batches of a drained stream back at the head of pending, in their order.
func (p *Producer) requeue(batches [][]pendingSend) {
	var back []pendingSend
	for _, b := range batches {
		back = append(back, b...)
	}
	p.mu.Lock()
	p.pending = append(back, p.pending...)
	p.inflight -= len(batches)
	p.cond.Broadcast()
	p.mu.Unlock()
}

// open dials the queue's send stream.
func (p *Producer) open() (*sendConn, error) {
	c := p.c
	u := *c.base
	u.Path += "/v1/queues/" + seg(p.queue) + "/send-stream"
	u.RawPath = ""
	h := http.Header{}
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
	if c.userAgent != "" {
		h.Set("User-Agent", c.userAgent)
	}
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, u.String(), &websocket.DialOptions{HTTPClient: c.hc, HTTPHeader: h, CompressionMode: websocket.CompressionDisabled}) //nolint:bodyclose // the websocket library owns the upgraded connection
	if err != nil {
		if resp != nil && resp.StatusCode >= 300 {
			raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
			return nil, decodeError(resp, raw, parseRetryAfter(resp.Header.Get("Retry-After")))
		}
		return nil, fmt.Errorf("queues: opening the send stream of %s: %w", p.queue, err)
	}
	ws.SetReadLimit(1 << 20) // confirmations are small: ten ids and errors
	sc := &sendConn{p: p, ws: ws, frames: map[uint64][]pendingSend{}}
	go sc.read()
	return sc, nil
}

// sendConn is one open send stream of a Producer.
type sendConn struct {
	p  *Producer
	ws *websocket.Conn

	mu     sync.Mutex
	frames map[uint64][]pendingSend // written, unconfirmed, by seq
	dead   bool
	// err is the service's stream error ({"error"} frame), when it sent one.
	err error
}

// write writes batch as the next frame. A frame that cannot be written is left to read's
// ending, which settles every unconfirmed frame.
func (sc *sendConn) write(batch []pendingSend) {
	p := sc.p
	p.mu.Lock()
	seq := p.seq
	p.seq++
	p.mu.Unlock()
	sc.mu.Lock()
	if sc.dead {
		sc.mu.Unlock()
		p.requeue([][]pendingSend{batch}) // never written: the next stream takes it
		return
	}
	sc.frames[seq] = batch
	sc.mu.Unlock()
	b := appendSendFrame(make([]byte, 0, 256*len(batch)), seq, batch)
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	err := sc.ws.Write(ctx, websocket.MessageText, b)
	cancel()
	if err != nil {
		_ = sc.ws.CloseNow() // read ends and settles the frame
	}
}

// read takes the service's confirmations until the stream ends, then settles what is left.
func (sc *sendConn) read() {
	var err error
	for {
		var data []byte
		_, data, err = sc.ws.Read(context.Background())
		if err != nil {
			break
		}
		var c sendConfirmation
		if !c.decode(data) {
			err = fmt.Errorf("queues: an unexpected send stream frame: %.60q", data)
			break
		}
		if c.seq == nil {
			if c.err != nil {
				sc.mu.Lock()
				sc.err = c.err.toError(0).typed()
				sc.mu.Unlock()
			}
			continue // the close that follows ends the loop
		}
		sc.confirm(*c.seq, &c)
	}
	sc.end(err)
}

// confirm resolves frame seq's futures.
func (sc *sendConn) confirm(seq uint64, c *sendConfirmation) {
	sc.mu.Lock()
	batch, ok := sc.frames[seq]
	delete(sc.frames, seq)
	sc.mu.Unlock()
	if !ok {
		return
	}
	p := sc.p
	if c.err != nil {
		e := c.err.toError(0)
		e.RetryAfter = time.Duration(c.retryAfter) * time.Second
		p.resolveAll(batch, e.typed())
	} else {
		p.resolveBatch(batch, &c.result, nil)
	}
	p.mu.Lock()
	p.inflight--
	p.cond.Broadcast()
	p.mu.Unlock()
}

// end settles the frames still unconfirmed when the stream ended: a drained service's (1001)
// were not stored and go back to pending; others resolve with ErrUnconfirmed (or the
// service's stream error).
func (sc *sendConn) end(cause error) {
	_ = sc.ws.CloseNow()
	sc.mu.Lock()
	sc.dead = true
	seqs := make([]uint64, 0, len(sc.frames))
	for s := range sc.frames {
		seqs = append(seqs, s)
	}
	frames := sc.frames
	sc.frames = map[uint64][]pendingSend{}
	serr := sc.err
	sc.mu.Unlock()
	sortUint64(seqs)
	p := sc.p
	p.mu.Lock()
	if p.conn == sc {
		p.conn = nil
	}
	p.mu.Unlock()
	if websocket.CloseStatus(cause) == websocket.StatusGoingAway && p.ctx.Err() == nil {
		batches := make([][]pendingSend, len(seqs))
		for i, s := range seqs {
			batches[i] = frames[s]
		}
		p.requeue(batches)
		return
	}
	err := serr
	if err == nil {
		err = fmt.Errorf("%w: %w", ErrUnconfirmed, cause)
	}
	for _, s := range seqs {
		p.resolveAll(frames[s], err)
	}
	p.mu.Lock()
	p.inflight -= len(seqs)
	p.cond.Broadcast()
	p.mu.Unlock()
}

// closeWith ends the stream: a normal close once everything is confirmed.
func (sc *sendConn) closeWith(err error) {
	if err != nil {
		_ = sc.ws.CloseNow()
		return
	}
	_ = sc.ws.Close(websocket.StatusNormalClosure, "")
}

func sortUint64(s []uint64) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// appendSendFrame appends batch as a send stream frame: {"seq":n,"messages":[…]}, each message
// as SendMessage's JSON, written without reflection.
func appendSendFrame(b []byte, seq uint64, batch []pendingSend) []byte {
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, `,"messages":[`...)
	for i := range batch {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendSendMessage(b, &batch[i].m)
	}
	return append(b, "]}"...)
}

// appendSendMessage appends m as SendMessage.MarshalJSON would (fields in another order).
func appendSendMessage(b []byte, m *SendMessage) []byte {
	b = append(b, `{"body":`...)
	b = appendJSONString(b, m.Body)
	if len(m.Attributes) > 0 {
		b = append(b, `,"attributes":{`...)
		first := true
		for k, v := range m.Attributes {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = appendJSONString(b, k)
			b = append(b, ':')
			b = appendJSONString(b, v)
		}
		b = append(b, '}')
	}
	if m.DelaySeconds != 0 {
		b = append(b, `,"delaySeconds":`...)
		b = strconv.AppendInt(b, int64(m.DelaySeconds), 10)
	}
	if !m.DeliverAt.IsZero() {
		b = append(b, `,"deliverAt":`...)
		b = appendJSONString(b, m.DeliverAt.UTC().Format(time.RFC3339Nano))
	}
	for _, f := range [...]struct{ name, v string }{
		{"groupId", m.GroupID}, {"dedupId", m.DedupID}, {"key", m.Key}, {"merge", string(m.Merge)}, {"traceparent", m.Traceparent},
	} {
		if f.v != "" {
			b = append(b, `,"`...)
			b = append(b, f.name...)
			b = append(b, `":`...)
			b = appendJSONString(b, f.v)
		}
	}
	if m.Barrier {
		b = append(b, `,"barrier":true`...)
	}
	if m.Priority != 0 {
		b = append(b, `,"priority":`...)
		b = strconv.AppendInt(b, int64(m.Priority), 10)
	}
	return append(b, '}')
}

// sendConfirmation is a frame of the service's on a send stream: a frame's confirmation
// ({"seq", "messages", "failed"}), its whole refusal ({"seq", "error", "retryAfterSeconds"}) or
// the stream's error ({"error"}, no seq).
type sendConfirmation struct {
	seq        *uint64
	err        *errorBody
	retryAfter int
	result     SendResult
}

func (c *sendConfirmation) decode(data []byte) bool {
	if c.decodeFast(data) {
		return true
	}
	*c = sendConfirmation{}
	var w struct {
		Seq               *uint64       `json:"seq"`
		Error             *errorBody    `json:"error"`
		RetryAfterSeconds int           `json:"retryAfterSeconds"`
		Messages          []SentMessage `json:"messages"`
		Failed            []struct {
			Index int       `json:"index"`
			Error errorBody `json:"error"`
		} `json:"failed"`
	}
	if json.Unmarshal(data, &w) != nil || (w.Seq == nil && w.Error == nil) {
		return false
	}
	c.seq, c.err, c.retryAfter = w.Seq, w.Error, w.RetryAfterSeconds
	c.result.Messages = w.Messages
	for _, f := range w.Failed {
		c.result.Failed = append(c.result.Failed, FailedMessage{Index: f.Index, Err: f.Error.toError(0)})
	}
	return true
}

// decodeFast reads the common confirmation, every message stored ({"seq", "failed": [],
// "messages": […]}), without reflection (consumer_decode.go's reader); false for anything
// else, which decode then reads with encoding/json.
func (c *sendConfirmation) decodeFast(b []byte) bool {
	seen := 0
	ok := members(b, func(k []byte, b []byte, i int) (int, bool) {
		switch {
		case bytes.Equal(k, []byte("seq")) && seen&1 == 0:
			seen |= 1
			end, ok := skip(b, i)
			if !ok {
				return 0, false
			}
			n, err := strconv.ParseUint(string(b[i:end]), 10, 64)
			c.seq = &n
			return end, err == nil
		case bytes.Equal(k, []byte("failed")) && seen&2 == 0:
			seen |= 2
			return items(b, i, func([]byte, int) (int, bool) { return 0, false }) // only an empty one
		case bytes.Equal(k, []byte("messages")) && seen&4 == 0:
			seen |= 4
			c.result.Messages = make([]SentMessage, 0, MaxSendBatch)
			return items(b, i, func(b []byte, i int) (int, bool) {
				c.result.Messages = append(c.result.Messages, SentMessage{})
				return decodeSent(b, i, &c.result.Messages[len(c.result.Messages)-1])
			})
		}
		return 0, false
	})
	return ok && seen == 7
}

// decodeSent reads one stored message of a send's answer.
func decodeSent(b []byte, i int, m *SentMessage) (int, bool) {
	seen := 0
	return object(b, i, func(k []byte, b []byte, i int) (int, bool) {
		var bit, end int
		var ok bool
		switch {
		case bytes.Equal(k, []byte("messageId")):
			bit = 1
			m.MessageID, end, ok = strAt(b, i)
		case bytes.Equal(k, []byte("sequenceNumber")):
			bit = 2
			m.SequenceNumber, end, ok = strAt(b, i)
		default:
			if end, ok = skip(b, i); !ok {
				return 0, false
			}
			v := string(b[i:end])
			switch {
			case bytes.Equal(k, []byte("index")):
				bit = 4
				var n int64
				n, ok = integer(b[i:end])
				m.Index = int(n)
			case bytes.Equal(k, []byte("duplicate")):
				bit = 8
				m.Duplicate, ok = v == "true", v == "true" || v == "false"
			case bytes.Equal(k, []byte("merged")):
				bit = 16
				m.Merged, ok = v == "true", v == "true" || v == "false"
			default:
				return end, true
			}
		}
		if seen&bit != 0 {
			return 0, false
		}
		seen |= bit
		return end, ok
	})
}
