package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v4"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/service"
	"github.com/queueshq/queues/pkg/telemetry"
)

// The send stream (GET /v1/queues/{queue}/send-stream, docs/streaming.md): one WebSocket per
// producer. Each frame the producer writes is a send's body with a sequence number
// ({"seq", "messages"}); the service answers each with a confirmation frame carrying the same
// seq and what POST .../messages would have answered ({"seq", "messages", "failed"}), or
// {"seq", "error"} for a frame refused whole. Frames are pipelined: the producer need not wait
// for one's confirmation before it writes the next. Every frame runs through sendParsed, the
// code of POST .../messages, after the same admissions (the project's request rate and send
// bytes, its maxStoredBytes), so validation, limits, metering, fifo and delivery options are
// the HTTP send's; a confirmation is written only once the engine stored the frame's messages.
//
// Closing: the service confirms every frame it has read before the connection ends (but for a
// stream its guard ends: a dead token, idle). When it
// drains (a deploy) it stops taking frames, confirms those it took and closes with 1001 going
// away: a frame unconfirmed then was not stored, and may be sent again on a new stream. A frame
// unconfirmed when the connection broke otherwise may or may not have been stored.

const (
	// sendStreamWindow is how many frames the service reads ahead of its confirmations; past
	// it, it reads no more until one is confirmed (the producer's writes wait in TCP).
	sendStreamWindow = 64
	// sendStreamWorkers is how many frames of a standard queue's stream are stored at once:
	// as many as the 16 send requests a producer of docs/performance.md keeps in flight, so
	// that their sends share script calls in the engine's lanes as those requests do (with 4,
	// Redis spent 3.6 µs a message against 2.4). A fifo queue's are stored one at a time, in
	// order, so the order of a group's messages across frames is the order the frames were
	// written.
	sendStreamWorkers = 16
	// maxSendSeq bounds a frame's seq: any JSON number up to it is exact in every language.
	maxSendSeq = 1<<53 - 1
)

// sendStream is one open send stream. It is a stream (stream.go) for what the two share — the
// connection, writes, the token and idleness checks, pings — with out counting the frames
// taken and not yet confirmed, so a stream with frames under way is not idle.
type sendStream struct {
	*stream
	// tp is the upgrade request's traceparent, stored with messages that carry none (a
	// frame's own "traceparent" comes first).
	tp string

	work chan sendFrame
	// taking guards draining against the reader's taking a frame, so that once draining is
	// set no frame is added to taken.
	taking   sync.Mutex
	draining bool
	taken    sync.WaitGroup // frames taken and not yet confirmed
}

// sendFrame is one frame taken: its seq, its parsed body and its size (charged to the
// project's send bytes).
type sendFrame struct {
	seq  int64
	o    *object
	size int
}

func (s *Server) sendStream(c echo.Context) error {
	r := c.Request()
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return apierr.Invalid("Upgrade", "this route is a WebSocket: send Upgrade: websocket (docs/streaming.md)")
	}
	q, err := s.queue(c)
	if err != nil {
		return err
	}
	p := principal(c)
	release, err := s.acquireStream(q.ProjectID) // streamguard.go: the caps receive streams share
	if err != nil {
		return err
	}
	defer release()
	rc := http.NewResponseController(c.Response())
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	now := s.cfg.Clock.Now()
	tp := sendTraceparent(c)
	conn, err := websocket.Accept(c.Response(), r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return nil // Accept answered the failed handshake itself
	}
	// A frame is at most what a send's body may be, plus its seq.
	conn.SetReadLimit(MaxRequestBytes + 64)
	st := &stream{s: s, conn: conn, q: q, src: source(c), sends: true}
	st.cond = sync.NewCond(&st.mu)
	st.g = streamGuard{p: p, verified: now, active: now}
	ss := &sendStream{stream: st, tp: tp}
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	ss.run(ctx, cancel)
	return nil
}

func (ss *sendStream) run(ctx context.Context, cancel context.CancelFunc) {
	workers := sendStreamWorkers
	if ss.q.Type == string(engine.FIFO) {
		workers = 1
	}
	// Frames taken: those queued here, one per storer and one the reader waits to queue.
	ss.work = make(chan sendFrame, sendStreamWindow-workers-1)
	var wg, stores sync.WaitGroup
	for range workers {
		stores.Go(func() { ss.store(ctx) })
	}
	wg.Go(func() { ss.keepAlive(ctx) })
	wg.Go(func() { ss.guard(ctx, cancel) })
	wg.Go(func() {
		select {
		case <-ss.s.cfg.Draining:
			ss.drain(ctx)
		case <-ctx.Done():
		}
	})
	bad := ss.read(ctx)
	ss.stopTaking()
	ss.taken.Wait() // the confirmations of frames taken go out before the connection closes
	if bad != nil {
		ss.fail(ctx, bad)
	}
	close(ss.work)
	stores.Wait()
	cancel()
	ss.stop()
	wg.Wait()
	_ = ss.conn.CloseNow()
}

// drain stops taking frames, waits for those taken to be confirmed and closes with 1001: a
// producer may send what is unconfirmed again on a new stream (none of it was stored).
func (ss *sendStream) drain(ctx context.Context) {
	ss.stopTaking()
	if ss.s.streamDraining != nil {
		ss.s.streamDraining() // a test opens the frames under way only now
	}
	ss.taken.Wait()
	ss.close(websocket.StatusGoingAway, "the server is shutting down; reconnect")
}

func (ss *sendStream) stopTaking() {
	ss.taking.Lock()
	ss.draining = true
	ss.taking.Unlock()
}

// read takes the producer's frames until the connection ends. A frame whose seq cannot be
// read ends the stream (no confirmation could name it): read returns its error, for run to
// write once the frames taken before it are confirmed. Any other fault of a frame is answered
// to its seq.
func (ss *sendStream) read(ctx context.Context) *apierr.Error {
	for {
		typ, data, err := ss.conn.Read(ctx)
		if err != nil {
			return nil //nolint:nilerr // the connection's end is the stream's normal end, not a frame's fault
		}
		ss.touch()
		f, aerr := parseSendFrame(typ, data)
		if aerr != nil {
			return aerr
		}
		if !ss.take() {
			continue // draining: not stored, never confirmed
		}
		select {
		case ss.work <- f:
		case <-ctx.Done():
			ss.done1()
			return nil
		}
	}
}

// take counts one frame as taken, unless the stream drains.
func (ss *sendStream) take() bool {
	ss.taking.Lock()
	defer ss.taking.Unlock()
	if ss.draining {
		return false
	}
	ss.taken.Add(1)
	ss.mu.Lock()
	ss.out++
	ss.mu.Unlock()
	return true
}

// done1 ends one taken frame that was not stored.
func (ss *sendStream) done1() {
	ss.settle()
	ss.taken.Done()
}

// settle records a taken frame's end as the stream's activity: it no longer counts as out.
func (ss *sendStream) settle() {
	now := ss.s.cfg.Clock.Now()
	ss.mu.Lock()
	ss.out--
	ss.g.active = now
	ss.mu.Unlock()
}

// parseSendFrame reads a frame: {"seq": n, "messages": […], "traceparent"?: "…"}. Only a frame
// whose seq cannot be read is an error here; the messages are sendParsed's to check, and their
// faults are answered to the seq.
func parseSendFrame(typ websocket.MessageType, data []byte) (sendFrame, *apierr.Error) {
	if typ != websocket.MessageText {
		return sendFrame{}, apierr.Invalid("frame", "frames are JSON text")
	}
	o, aerr := parseObject(data, "", false, "seq", "messages", "traceparent")
	if aerr != nil {
		return sendFrame{}, aerr
	}
	seq, ok, aerr := o.integer("seq", 0, maxSendSeq)
	if aerr != nil {
		return sendFrame{}, aerr
	}
	if !ok {
		return sendFrame{}, apierr.Invalid("seq", "is required: an integer from 0 to %d naming the frame in its confirmation", int64(maxSendSeq))
	}
	return sendFrame{seq: seq, o: o, size: len(data)}, nil
}

// store is one of the stream's storers: it stores the frames taken, in the order read, and
// confirms each.
func (ss *sendStream) store(ctx context.Context) {
	for f := range ss.work {
		ss.storeFrame(ctx, f)
		ss.taken.Done()
	}
}

func (ss *sendStream) storeFrame(ctx context.Context, f sendFrame) {
	s, q := ss.s, ss.q
	sctx, cancel := context.WithTimeout(ctx, s.cfg.StorageTimeout)
	out, adm, err := ss.sendFrame(sctx, f)
	cancel()
	if err != nil {
		if code := asAPI(err).Code; code == apierr.Internal || code == apierr.Unavailable {
			// The frame's error names no cause (bodyOf): the log has it.
			s.cfg.Logger.Warn("send stream frame failed", "queue", q.ID.String(), "seq", f.seq, "err", err)
		}
	}
	b := appendSendConfirmation(make([]byte, 0, 64+96*len(out.sent)), f.seq, out, err)
	// The frame's confirmation is activity, and the frame is no longer out: both are recorded
	// before the write, so a producer that read the confirmation sees a stream whose idleness
	// counts from it.
	ss.settle()
	_ = ss.write(ctx, b)
	if err == nil {
		// Metered once its confirmation was written, as the HTTP send meters once answered
		// (whether or not the peer read it).
		out.meter(adm)
	}
}

// sendFrame admits one frame as POST .../messages admits a request (service.AdmitSend: the
// project's request rate, as a frame is one send request, its send bytes, a full project's
// refusal) and sends it through sendParsed.
func (ss *sendStream) sendFrame(ctx context.Context, f sendFrame) (sendOutcome, *service.AdmittedSend, error) {
	s, q := ss.s, ss.q
	adm, err := s.AdmitSend(ctx, service.SendRequest{Project: q.ProjectID, Queue: &q, Bytes: int64(f.size)})
	if err != nil {
		return sendOutcome{}, adm, err
	}
	tp := ss.tp
	if v, ok, aerr := f.o.str("traceparent"); aerr != nil {
		return sendOutcome{}, adm, aerr
	} else if ok {
		if !telemetry.ValidTraceparent(v) {
			return sendOutcome{}, adm, apierr.Invalid("traceparent", "must be a W3C traceparent: 00-<32 hex>-<16 hex>-<2 hex>, lowercase")
		}
		tp = v
	}
	out, err := s.sendParsed(ctx, q, adm, f.o, tp)
	return out, adm, err
}

// appendSendConfirmation appends a frame's confirmation: {"seq", "failed", "messages"} as the
// HTTP send answers, or {"seq", "error"[, "retryAfterSeconds"]} when the frame failed whole.
func appendSendConfirmation(b []byte, seq int64, out sendOutcome, err error) []byte {
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, seq, 10)
	if err != nil {
		ae := asAPI(err)
		enc, _ := json.Marshal(bodyOf(ae))
		b = append(append(b, `,"error":`...), enc...)
		if ae.RetryAfter > 0 {
			b = append(b, `,"retryAfterSeconds":`...)
			b = strconv.AppendInt(b, int64((ae.RetryAfter+time.Second-1)/time.Second), 10)
		}
		return append(b, '}')
	}
	if len(out.failed) == 0 {
		bp := bufPool.Get().(*[]byte)
		a := appendSendAnswer((*bp)[:0], out.sent) // {"failed":[],"messages":[…]}\n
		b = append(append(b, ','), a[1:len(a)-1]...)
		*bp = a[:0]
		bufPool.Put(bp)
		return b
	}
	failed, _ := json.Marshal(out.failed)
	sent, _ := json.Marshal(out.sent)
	b = append(append(b, `,"failed":`...), failed...)
	b = append(append(b, `,"messages":`...), sent...)
	return append(b, '}')
}
