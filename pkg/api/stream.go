package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v4"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/filter"
	"github.com/queueshq/queues/pkg/meta"
)

// The receive stream (GET /v1/queues/{queue}/stream, docs/streaming.md): one WebSocket per
// consumer. The consumer grants credit (how many more messages it will take); the service
// receives for it, as POST .../receive would, whenever it holds credit, and writes each batch
// as it comes. Settlements travel the other way in the bodies of the receipt routes, each
// answered by its id. Every receive and every settlement runs through the same code as the
// HTTP routes (Receive with its long poll, runReceipts), so visibility, receiveCount,
// redrive, fifo groups and the tenancy limits are theirs.

const (
	// maxStreamCredit bounds the messages one stream may hold granted and undelivered.
	maxStreamCredit = 1000
	// streamFetchers is how many receives one stream runs at once: with credit for more than
	// one batch, the next receive is under way while the last batch is written.
	streamFetchers = 4
	// streamPing is how often the service pings an open stream, well inside the idle timeouts
	// of load balancers (60 s is common), so an idle consumer's connection stays up.
	streamPing = 25 * time.Second
	// streamSettlers is how many settlement frames of one stream run at once.
	streamSettlers = 8
	// streamIdleRetry is how long a stream waits before it receives again when a receive
	// answered empty without waiting (every waiting slot of the project taken).
	streamIdleRetry = time.Second
)

// stream is one open receive stream.
type stream struct {
	s    *Server
	conn *websocket.Conn
	q    meta.Queue
	src  netip.Addr
	vis  time.Duration
	max  int // messages per receive
	// filter selects the messages every receive of the stream takes (nil: all).
	filter *filter.Filter
	// consumer is the consumerId the stream's receives name (nil: none; an exclusive
	// queue's stream needs one).
	consumer *engine.ConsumerOf
	// binary: batches go out as binary frames (binframe.go), not JSON text.
	binary bool

	settlers chan struct{}  // one token per settlement frame running
	settling sync.WaitGroup // settlement frames running

	mu     sync.Mutex
	cond   *sync.Cond
	credit int
	// out is credit taken by receives under way (not yet delivered or given back).
	out  int
	done bool
	// g is what the stream re-checks while open (streamguard.go; under mu).
	g streamGuard
	// sends: a send stream (sendstream.go) uses this stream's connection, checks and writes.
	sends bool
	// failOnce writes the first stream-level error only.
	failOnce sync.Once
}

func (s *Server) receiveStream(c echo.Context) error {
	r := c.Request()
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return apierr.Invalid("Upgrade", "this route is a WebSocket: send Upgrade: websocket (docs/streaming.md)")
	}
	q, err := s.queue(c)
	if err != nil {
		return err
	}
	maxN, vis, err := streamParams(c, q)
	if err != nil {
		return err
	}
	flt, err := filterOfQuery(c.QueryParams()) // filter.go: as browse takes it
	if err != nil {
		return err
	}
	consumer, err := streamConsumer(c, q) // grouppolicy.go
	if err != nil {
		return err
	}
	bin, err := streamEncoding(c.QueryParam("encoding")) // binframe.go
	if err != nil {
		return err
	}
	p := principal(c)
	release, err := s.acquireStream(q.ProjectID) // streamguard.go: the caps
	if err != nil {
		return err
	}
	defer release()
	// The server's read and write timeouts bound requests; a stream lives as long as its
	// consumer, so they are lifted for this connection before it is taken over.
	rc := http.NewResponseController(c.Response())
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	// The stream is live (verified, active) from before its upgrade is answered: a client
	// holding the answer never sees a stream whose clock starts later.
	now := s.cfg.Clock.Now()
	conn, err := websocket.Accept(c.Response(), r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return nil // Accept answered the failed handshake itself
	}
	conn.SetReadLimit(MaxRequestBytes)
	st := &stream{s: s, conn: conn, q: q, src: source(c), vis: vis, max: maxN, filter: flt, consumer: consumer, binary: bin, settlers: make(chan struct{}, streamSettlers)}
	st.cond = sync.NewCond(&st.mu)
	st.g = streamGuard{p: p, verified: now, active: now}
	// The request's context ends when the handler returns; the stream's ends with the
	// connection or the server's drain.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	st.run(ctx, cancel)
	return nil
}

// streamParams reads the query: maxMessages (per receive, default 10) and
// visibilityTimeoutSeconds (default the queue's).
func streamParams(c echo.Context, q meta.Queue) (int, time.Duration, error) {
	maxN, vis := int64(engine.MaxBatch), int64(q.VisibilityTimeoutSeconds)
	for _, p := range []struct {
		name   string
		lo, hi int64
		dst    *int64
	}{{"maxMessages", 1, engine.MaxBatch, &maxN}, {"visibilityTimeoutSeconds", 0, maxVisibility, &vis}} {
		v := c.QueryParam(p.name)
		if v == "" {
			continue
		}
		n, err := parseQueryInt(v)
		if err != nil || n < p.lo || n > p.hi {
			return 0, 0, apierr.Invalid(p.name, "must be an integer from %d to %d", p.lo, p.hi)
		}
		*p.dst = n
	}
	return int(maxN), time.Duration(vis) * time.Second, nil
}

func parseQueryInt(v string) (int64, error) {
	var n int64
	if v == "" || len(v) > 6 {
		return 0, errors.New("bad integer")
	}
	for _, ch := range v {
		if ch < '0' || ch > '9' {
			return 0, errors.New("bad integer")
		}
		n = n*10 + int64(ch-'0')
	}
	return n, nil
}

func (st *stream) run(ctx context.Context, cancel context.CancelFunc) {
	var wg sync.WaitGroup
	for range streamFetchers {
		wg.Go(func() { st.fetch(ctx, cancel) })
	}
	wg.Go(func() { st.keepAlive(ctx) })
	wg.Go(func() { st.guard(ctx, cancel) })
	wg.Go(func() {
		select {
		case <-st.s.cfg.Draining:
			st.close(websocket.StatusGoingAway, "the server is shutting down; reconnect")
		case <-ctx.Done():
		}
	})
	st.read(ctx)
	st.settling.Wait() // their answers go out before the connection closes
	cancel()
	st.stop()
	wg.Wait()
	_ = st.conn.CloseNow()
}

// stop wakes every fetcher waiting for credit, for them to return.
func (st *stream) stop() {
	st.mu.Lock()
	st.done = true
	st.mu.Unlock()
	st.cond.Broadcast()
}

func (st *stream) close(code websocket.StatusCode, reason string) {
	st.stop()
	_ = st.conn.Close(code, reason)
}

// fail writes a stream-level error ({"error": …}) and closes the stream. Only the first
// failure is written (a fetcher and the guard may find the same dead token at once); a
// later caller returns once the first has closed, so its cancel cannot cut the close
// handshake short.
func (st *stream) fail(ctx context.Context, err error) {
	st.failOnce.Do(func() { st.failNow(ctx, err) })
}

func (st *stream) failNow(ctx context.Context, err error) {
	ae := asAPI(err)
	b, _ := json.Marshal(map[string]errorBody{"error": bodyOf(ae)})
	_ = st.write(ctx, b)
	code := websocket.StatusPolicyViolation
	if ae.Code == apierr.Internal || ae.Code == apierr.Unavailable {
		code = websocket.StatusInternalError
	}
	st.close(code, string(ae.Code))
}

func (st *stream) write(ctx context.Context, b []byte) error {
	return st.writeAs(ctx, websocket.MessageText, b)
}

func (st *stream) writeAs(ctx context.Context, typ websocket.MessageType, b []byte) error {
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return st.conn.Write(wctx, typ, b)
}

// take waits for credit and takes up to one receive's worth (0: the stream ended). While
// another receive of the stream is out it waits for a whole receive's worth: credit comes
// back a few messages at a time as the consumer's handlers finish, and a receive for each
// few would cost a receive a few messages (the extra fetchers are there to have the next
// full receive under way while a batch is written, not to split one).
func (st *stream) take() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	for !st.done && (st.credit == 0 || (st.out > 0 && st.credit < st.max)) {
		st.cond.Wait()
	}
	if st.done {
		return 0
	}
	n := min(st.credit, st.max)
	st.credit -= n
	st.out += n
	return n
}

// give ends a receive that took n of credit and used used of it: the rest is returned.
func (st *stream) give(n, used int) {
	st.mu.Lock()
	st.out -= n
	st.credit += n - used
	st.mu.Unlock()
	// Unused credit is back, or this was the receive others waited behind.
	st.cond.Broadcast()
}

// fetch is one of the stream's receivers: while it holds credit it receives (long-polling up
// to the longest wait) and writes what came.
func (st *stream) fetch(ctx context.Context, cancel context.CancelFunc) {
	s := st.s
	for {
		n := st.take()
		if n == 0 {
			return
		}
		if ok, end := st.admitted(ctx, cancel, nil); !ok {
			st.give(n, 0)
			if end {
				return
			}
			continue
		}
		started := s.cfg.Clock.Now()
		msgs, err := st.receive(ctx, n)
		if ctx.Err() != nil {
			st.give(n, 0)
			st.giveBack(ctx, msgs) // never written: visible again at once
			return
		}
		if err != nil {
			st.give(n, 0)
			ae := asAPI(err)
			if ae.Code == apierr.RateLimited || ae.Code == apierr.Unavailable {
				// Over a limit, or storage failing: the stream waits and receives again
				// instead of answering, as a client would after a 429 or 503.
				if !sleepCtx(ctx, max(ae.RetryAfter, streamIdleRetry)) {
					return
				}
				continue
			}
			st.fail(ctx, err)
			cancel()
			return
		}
		if len(msgs) == 0 {
			st.give(n, 0)
			select {
			case <-s.cfg.Draining:
				return
			default:
			}
			if s.cfg.Clock.Now().Sub(started) < streamIdleRetry/2 && !sleepCtx(ctx, streamIdleRetry) {
				return
			}
			continue
		}
		// The token is checked before every batch: once its record shows it revoked or
		// expired, nothing more goes out (streamguard.go).
		if ok, end := st.admitted(ctx, cancel, msgs); !ok {
			st.give(n, 0)
			if end {
				return
			}
			continue
		}
		out := s.receivedOut(st.q, msgs)
		bp := bufPool.Get().(*[]byte)
		var werr error
		if st.binary {
			b := appendReceiveBinary((*bp)[:0], out)
			werr = st.writeAs(ctx, websocket.MessageBinary, b)
			*bp = b
		} else {
			b := appendReceiveAnswer((*bp)[:0], out)
			werr = st.write(ctx, b)
			*bp = b
		}
		b := *bp
		*bp = b[:0]
		bufPool.Put(bp)
		st.give(n, len(msgs))
		st.touch()
		if werr != nil {
			// The consumer is gone; what it was sent returns when its visibility ends.
			cancel()
			return
		}
		s.meterDelivered(st.q.ProjectID, msgs)
	}
}

// receive is one receive of the stream, counted against the project's request rate as a
// POST .../receive is.
func (st *stream) receive(ctx context.Context, n int) ([]engine.Received, error) {
	s := st.s
	actx, cancel := context.WithTimeout(ctx, s.cfg.StorageTimeout)
	err := s.admit(actx, st.q.ProjectID)
	cancel()
	if err != nil {
		return nil, err
	}
	return s.Receive(ctx, st.q, engine.ReceiveRequest{Max: n, Visibility: st.vis, Filter: st.filter, Consumer: st.consumer}, time.Duration(maxReceiveWait)*time.Second)
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (st *stream) keepAlive(ctx context.Context) {
	t := time.NewTicker(streamPing)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			pctx, cancel := context.WithTimeout(ctx, streamPing)
			err := st.conn.Ping(pctx)
			cancel()
			if err != nil && ctx.Err() == nil {
				st.close(websocket.StatusGoingAway, "no answer to ping")
				return
			}
		}
	}
}

// read handles the consumer's frames until the connection ends.
func (st *stream) read(ctx context.Context) {
	for {
		typ, data, err := st.conn.Read(ctx)
		if err != nil {
			return
		}
		if typ != websocket.MessageText {
			st.fail(ctx, apierr.Invalid("frame", "frames are JSON text"))
			return
		}
		st.touch()
		if err := st.frame(ctx, data); err != nil {
			st.fail(ctx, err)
			return
		}
	}
}

// streamOps are the settlements a frame may carry, by field name.
var streamOps = []string{"ack", "visibility", "deadLetter"}

// frame handles one frame: {"credit": n} or {"id": "…", "ack"|"visibility"|"deadLetter": body
// of that receipt route}. An error is the stream's (a malformed frame); a settlement's own
// failure is answered to its id.
func (st *stream) frame(ctx context.Context, data []byte) error {
	o, aerr := parseObject(data, "", false, "credit", "id", "ack", "visibility", "deadLetter")
	if aerr != nil {
		return aerr
	}
	if o.has("credit") {
		return st.grant(o)
	}
	id, ok, aerr := o.str("id")
	if aerr != nil {
		return aerr
	}
	if !ok || id == "" || len(id) > 64 {
		return apierr.Invalid("id", "a settlement frame needs an id of 1 to 64 characters")
	}
	var op string
	for _, name := range streamOps {
		if o.has(name) {
			if op != "" {
				return apierr.Invalid(name, "a frame carries one settlement: %s or %s", op, name)
			}
			op = name
		}
	}
	if op == "" {
		return apierr.Invalid("frame", "needs credit, or an id and one of ack, visibility, deadLetter")
	}
	body := o.fields[op]
	select {
	case st.settlers <- struct{}{}:
	case <-ctx.Done():
		return nil
	}
	st.settling.Go(func() {
		defer func() { <-st.settlers }()
		st.settle(ctx, id, op, body)
	})
	return nil
}

// grant adds a credit frame's credit ({"credit": n}, alone in its frame; the receive and the
// topic stream take it alike).
func (st *stream) grant(o *object) error {
	if len(o.fields) != 1 {
		return apierr.Invalid("credit", "a credit frame carries credit alone")
	}
	n, _, aerr := o.integer("credit", 1, maxStreamCredit)
	if aerr != nil {
		return aerr
	}
	st.mu.Lock()
	if st.credit+int(n) > maxStreamCredit {
		st.mu.Unlock()
		return apierr.Invalid("credit", "the stream would hold more than %d messages of credit", maxStreamCredit)
	}
	st.credit += int(n)
	st.mu.Unlock()
	st.cond.Broadcast()
	return nil
}

// settle runs one settlement frame as its receipt route would and answers its id:
// {"id", "results": […]} for the batch form, {"id"} for the single form, {"id", "error"}
// when the call failed as a whole.
func (st *stream) settle(ctx context.Context, id, op string, body []byte) {
	s := st.s
	var r receiptOp
	switch op {
	case "ack":
		r = s.ackOp()
	case "visibility":
		r = s.visibilityOp()
	default:
		r = s.deadLetterOp()
	}
	sctx, cancel := context.WithTimeout(ctx, s.cfg.StorageTimeout)
	defer cancel()
	entries, isBatch, err := s.runReceipts(sctx, st.src, body, r)
	if err == nil && !isBatch && entries[0].err != nil {
		err = entries[0].err
	}
	b := append(make([]byte, 0, 64+16*len(entries)), `{"id":`...)
	b = appendJSONString(b, id)
	switch {
	case err != nil:
		enc, _ := json.Marshal(bodyOf(asAPI(err)))
		b = append(append(b, `,"error":`...), enc...)
		b = append(b, '}')
	case isBatch:
		b = append(b, ',')
		b = append(b, appendResults(nil, entries)[1:]...)
	default:
		b = append(b, '}')
	}
	_ = st.write(ctx, b)
}
