package api

import (
	"context"
	"encoding/json"
	"net/http"
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

// The topic stream (GET /v1/topics/{topic}/stream, docs/streaming.md#the-topic-stream):
// publish/subscribe delivery of a topic's log over a WebSocket. Every entry the filter selects,
// from the asked position on, in sequence order; no acks and no leases — the subscriber keeps its
// bookmark (the last sequence it took) and reconnects with from = last+1. It shares the receive
// stream's connection handling, credit, token re-check, idle close and caps (stream.go,
// streamguard.go): a topic stream is a stream without a queue whose one sender reads the log where
// the receive stream's fetchers receive.

const (
	// defaultTopicFrame and maxTopicFrame bound the entries one frame carries (maxMessages).
	defaultTopicFrame = 100
	maxTopicFrame     = engine.MaxLogRead
	// topicFrameBytes bounds the payload bytes of one frame (at least one entry goes),
	// so a frame stays well inside a client's read limit whatever the bodies' sizes.
	topicFrameBytes = 1 << 20
	// topicStreamScan bounds the entries one read of a filtered stream examines before it
	// delivers what it found (the next read goes on from there).
	topicStreamScan = 10 * engine.MaxLogRead
	// topicStreamRecheck is how long a caught-up stream waits for a publish's signal before it
	// reads the log again anyway (signals are not durable: Redis pub/sub drops them while it
	// reconnects). Not a poll: a signal ends the wait at once.
	topicStreamRecheck = 15 * time.Second
	// topicCheckTicks is how many guard ticks pass between checks that the topic still
	// exists (through the metadata cache): a deleted topic publishes nothing to wake on.
	topicCheckTicks = 10
)

// topicStream is one open topic stream.
type topicStream struct {
	*stream // connection, credit, guard; its queue is unset
	t       meta.Topic
	et      engine.Topic
	flt     *filter.Filter
	// next is the next sequence to deliver (the sender's alone).
	next uint64
	// delta remembers what the stream delivered per key (nil without delta=true).
	delta *deltaMemory
}

// topicStreamStart is where a stream starts: next, and the gap when the asked position is
// no longer held.
type topicStreamStart struct {
	next uint64
	gap  *topicGap
}

// topicGap is the {"gap": …} frame: sequences From..FirstSequence-1 were trimmed from the
// log before the stream could deliver them. From is null when the stream was asked for a
// time older than the log holds: entries published at or after it may have been trimmed.
type topicGap struct {
	From          *uint64 `json:"from"`
	FirstSequence uint64  `json:"firstSequence"`
}

func (s *Server) topicStream(c echo.Context) error {
	r := c.Request()
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return apierr.Invalid("Upgrade", "this route is a WebSocket: send Upgrade: websocket (docs/streaming.md)")
	}
	from, maxN, delta, err := topicStreamParams(c)
	if err != nil {
		return err
	}
	flt, err := filterOfQuery(c.QueryParams()) // filter.go: as browse takes it
	if err != nil {
		return err
	}
	t, err := s.topic(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.storageCtx(c)
	start, err := s.topicStreamStart(ctx, engineTopic(t), from)
	cancel()
	if err != nil {
		return err
	}
	release, err := s.acquireStream(t.ProjectID) // streamguard.go: the caps, shared
	if err != nil {
		return err
	}
	defer release()
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
	st := &stream{s: s, conn: conn, src: source(c), max: maxN}
	st.cond = sync.NewCond(&st.mu)
	st.g = streamGuard{p: principal(c), verified: now, active: now}
	ts := &topicStream{stream: st, t: t, et: engineTopic(t), flt: flt, next: start.next}
	if delta {
		ts.delta = newDeltaMemory()
	}
	sctx, scancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer scancel()
	ts.run(sctx, scancel, start.gap)
	return nil
}

// topicStreamParams reads from ("now" by default, "earliest", a sequence or an RFC 3339
// time), maxMessages (1–1,000, default 100) and delta ("true" or "false").
func topicStreamParams(c echo.Context) (from bindingFrom, maxN int, delta bool, err error) {
	from = bindingFrom{asked: "now"}
	switch v := c.QueryParam("from"); v {
	case "", "now":
	case "earliest":
		from.asked = v
	default:
		b, berr := parseLogBound(c, "from")
		if berr != nil {
			return from, 0, false, apierr.Invalid("from", "must be \"now\", \"earliest\", a sequence (1 or more) or an RFC 3339 time")
		}
		from = bindingFrom{asked: v, seq: b.seq, at: b.at}
	}
	maxN = defaultTopicFrame
	if v := c.QueryParam("maxMessages"); v != "" {
		n, perr := parseQueryInt(v)
		if perr != nil || n < 1 || n > maxTopicFrame {
			return from, 0, false, apierr.Invalid("maxMessages", "must be an integer from 1 to %d", maxTopicFrame)
		}
		maxN = int(n)
	}
	switch c.QueryParam("delta") {
	case "", "false":
	case "true":
		delta = true
	default:
		return from, 0, false, apierr.Invalid("delta", "must be true or false")
	}
	return from, maxN, delta, nil
}

// topicStreamStart resolves from against the log. A sequence past the log's end (last+1)
// is refused: a bookmark from another topic of the same name would otherwise wait silently.
func (s *Server) topicStreamStart(ctx context.Context, et engine.Topic, from bindingFrom) (topicStreamStart, error) {
	b, err := s.cfg.TopicEngine.Bounds(ctx, et)
	if err != nil {
		return topicStreamStart{}, err
	}
	first := max(b.First, 1)
	switch {
	case from.seq > b.Last+1:
		return topicStreamStart{}, apierr.Invalid("from", "sequence %d is past the end of the log: its last sequence is %d, so from is at most %d", from.seq, b.Last, b.Last+1)
	case from.seq > 0 && from.seq < first:
		seq := from.seq
		return topicStreamStart{next: first, gap: &topicGap{From: &seq, FirstSequence: first}}, nil
	case from.seq > 0:
		return topicStreamStart{next: from.seq}, nil
	case !from.at.IsZero():
		seq, err := s.cfg.TopicEngine.SequenceAt(ctx, et, from.at)
		if err != nil {
			return topicStreamStart{}, err
		}
		seq = max(seq, first)
		// Entries before the first held were published no later than it, and perhaps at or
		// after the asked time: the stream cannot tell, so it says they may be gone.
		if seq == first && first > 1 && !from.at.After(s.cfg.Clock.Now()) {
			return topicStreamStart{next: seq, gap: &topicGap{FirstSequence: first}}, nil
		}
		return topicStreamStart{next: seq}, nil
	case from.asked == "earliest":
		return topicStreamStart{next: first}, nil
	}
	return topicStreamStart{next: b.Last + 1}, nil
}

func (ts *topicStream) run(ctx context.Context, cancel context.CancelFunc, gap *topicGap) {
	if gap != nil && ts.writeGap(ctx, gap) != nil {
		cancel()
	}
	var wg sync.WaitGroup
	wg.Go(func() { ts.send(ctx, cancel) })
	wg.Go(func() { ts.keepAlive(ctx) })
	wg.Go(func() { ts.guardTopic(ctx, cancel) })
	wg.Go(func() {
		select {
		case <-ts.s.cfg.Draining:
			ts.close(websocket.StatusGoingAway, "the server is shutting down; reconnect")
		case <-ctx.Done():
		}
	})
	ts.readFrames(ctx)
	cancel()
	ts.stop()
	wg.Wait()
	_ = ts.conn.CloseNow()
}

func (ts *topicStream) writeGap(ctx context.Context, g *topicGap) error {
	b, _ := json.Marshal(map[string]*topicGap{"gap": g})
	return ts.write(ctx, b)
}

// send is the stream's one sender (one, so entries go out in order): while it holds credit
// it reads the log from next and writes what the filter selects; caught up, it waits for
// the engine's signal of a publish (WatchTopic, subscribed before the first read so no
// publish is missed between a read and the wait).
func (ts *topicStream) send(ctx context.Context, cancel context.CancelFunc) {
	s := ts.s
	wake, unwatch := s.cfg.TopicEngine.WatchTopic(ts.t.ID)
	defer unwatch()
	for {
		n := ts.take()
		if n == 0 {
			return
		}
		if ok, end := ts.admitted(ctx, cancel, nil); !ok {
			ts.give(n, 0)
			if end {
				return
			}
			continue
		}
		batch, err := ts.readBatch(ctx, n)
		if ctx.Err() != nil {
			ts.give(n, 0)
			return
		}
		if err != nil {
			ts.give(n, 0)
			if ae := asAPI(err); ae.Code == apierr.RateLimited || ae.Code == apierr.Unavailable {
				if !sleepCtx(ctx, max(ae.RetryAfter, streamIdleRetry)) {
					return
				}
				continue
			}
			ts.fail(ctx, err)
			cancel()
			return
		}
		if !ts.deliver(ctx, cancel, n, batch) {
			return
		}
		if batch.caughtUp && len(batch.entries) == 0 && !ts.await(ctx, wake) {
			return
		}
	}
}

// await waits, caught up, for the engine's signal of a publish, or topicStreamRecheck
// without one: a signal lost in a Redis reconnect delays an entry by that much at worst.
// false: the stream ends.
func (ts *topicStream) await(ctx context.Context, wake <-chan struct{}) bool {
	t := time.NewTimer(topicStreamRecheck)
	defer t.Stop()
	select {
	case <-wake:
	case <-t.C:
	case <-ctx.Done():
		return false
	case <-ts.s.cfg.Draining:
		return false
	}
	return true
}

// deliver writes what readBatch found (its gap, then its entries), settles the credit taken
// and moves next on; false: the stream ended.
func (ts *topicStream) deliver(ctx context.Context, cancel context.CancelFunc, n int, b logBatch) bool {
	if len(b.entries) > 0 {
		// The token is checked before every frame: nothing goes out once its record shows
		// it revoked or expired.
		if ok, end := ts.admitted(ctx, cancel, nil); !ok {
			ts.give(n, 0)
			return !end
		}
	}
	if b.gap != nil {
		if ts.writeGap(ctx, b.gap) != nil {
			ts.give(n, 0)
			cancel()
			return false
		}
	}
	if len(b.entries) == 0 {
		ts.give(n, 0)
		ts.next = b.next
		return true
	}
	frame, bytesOut := ts.frame(b.entries)
	err := ts.write(ctx, frame)
	ts.give(n, len(b.entries))
	ts.touch()
	if err != nil {
		cancel() // the subscriber is gone; it reconnects from its bookmark
		return false
	}
	ts.next = b.next
	ts.s.cfg.Meter.Add(ts.t.ProjectID, meta.Counters{BytesOut: bytesOut})
	return true
}

// logBatch is what one read of the stream found: the entries to deliver (in order), the gap
// before them, and next, the sequence after the last entry examined.
type logBatch struct {
	entries  []engine.LogEntry
	gap      *topicGap
	next     uint64
	caughtUp bool // the log holds nothing after next (when read)
}

// readBatch reads from ts.next up to n entries the filter selects (and topicFrameBytes of
// payload), examining at most topicStreamScan entries. Each log read counts as one request of
// the project, as a receive of the receive stream does. A gap (entries trimmed before they
// were read) ends the batch before it, so the gap frame goes out in its place in the order.
func (ts *topicStream) readBatch(ctx context.Context, n int) (logBatch, error) {
	s := ts.s
	b := logBatch{next: ts.next}
	var size int64
	for examined := 0; examined < topicStreamScan; {
		want := n - len(b.entries)
		if !ts.flt.Empty() {
			want = engine.MaxLogRead
		}
		if err := ts.readAdmitted(ctx); err != nil {
			return b, err
		}
		rctx, cancel := context.WithTimeout(ctx, s.cfg.StorageTimeout)
		entries, err := s.cfg.TopicEngine.ReadLog(rctx, ts.et, b.next, want)
		cancel()
		if err != nil {
			return b, err
		}
		if len(entries) == 0 {
			b.caughtUp = true
			return b, nil
		}
		for _, e := range entries {
			if e.Sequence > b.next {
				if len(b.entries) > 0 || b.gap != nil {
					return b, nil // the gap goes out with the next batch
				}
				from := b.next
				b.gap = &topicGap{From: &from, FirstSequence: e.Sequence}
			}
			b.next = e.Sequence + 1
			examined++
			if !ts.flt.Match(e.Attributes) {
				continue
			}
			b.entries = append(b.entries, e)
			size += engine.PayloadBytes(e.Body, e.Attributes)
			if len(b.entries) == n || size >= topicFrameBytes {
				return b, nil
			}
		}
	}
	return b, nil
}

// readAdmitted counts one log read against the project's request rate.
func (ts *topicStream) readAdmitted(ctx context.Context) error {
	actx, cancel := context.WithTimeout(ctx, ts.s.cfg.StorageTimeout)
	defer cancel()
	return ts.s.admit(actx, ts.t.ProjectID)
}

// guardTopic is the receive stream's guard (a dead token or a minute idle ends the stream)
// plus, every topicCheckTicks ticks, a check that the topic still exists.
func (ts *topicStream) guardTopic(ctx context.Context, cancel context.CancelFunc) {
	c, stop := ts.s.ticks()
	defer stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-c:
		}
		_, err := ts.verify(ctx)
		if err == nil {
			err = ts.idle()
		}
		if err == nil && n%topicCheckTicks == 0 {
			err = ts.topicGone(ctx)
		}
		if err != nil {
			ts.fail(ctx, err)
			cancel()
			return
		}
		ts.checked()
	}
}

// topicGone is not_found once the topic is deleted (other failures pass: the next check
// tries again).
func (ts *topicStream) topicGone(ctx context.Context) error {
	gctx, cancel := context.WithTimeout(ctx, ts.s.cfg.StorageTimeout)
	defer cancel()
	if _, err := ts.s.cfg.Topics.GetTopic(gctx, ts.t.ProjectID, ts.t.ID); apierr.CodeOf(err) == apierr.NotFound {
		return apierr.New(apierr.NotFound, "topic %q was deleted", ts.t.Name)
	}
	return nil
}

// readFrames handles the subscriber's frames (credit only) until the connection ends.
func (ts *topicStream) readFrames(ctx context.Context) {
	for {
		typ, data, err := ts.conn.Read(ctx)
		if err != nil {
			return
		}
		if typ != websocket.MessageText {
			ts.fail(ctx, apierr.Invalid("frame", "frames are JSON text"))
			return
		}
		ts.touch()
		if err := ts.creditFrame(data); err != nil {
			ts.fail(ctx, err)
			return
		}
	}
}

// creditFrame takes {"credit": n}, the one frame a subscriber sends.
func (ts *topicStream) creditFrame(data []byte) error {
	o, aerr := parseObject(data, "", false, "credit")
	if aerr != nil {
		return aerr
	}
	if !o.has("credit") {
		return apierr.Invalid("credit", "a topic stream takes credit frames only: {\"credit\": n}")
	}
	return ts.grant(o)
}
