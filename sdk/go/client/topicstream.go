package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// The topic stream (GET /v1/topics/{topic}/stream, docs/streaming.md "The topic stream"):
// a topic's log from a bookmark on, over a WebSocket, under credit. OpenTopicStream is one
// connection; TopicStream iterates over the entries across reconnects, keeping the bookmark.

// TopicStreamOptions select what a topic stream delivers; the zero value streams every
// entry published from now on.
type TopicStreamOptions struct {
	// From is where to start: FromNow ("" too), FromEarliest, AtSequence (at most the log's
	// last sequence + 1) or AtTime.
	From Position
	// Filter, when set, selects the entries delivered (by attributes).
	Filter *Filter
	// Delta asks for keyed entries as merge patches against the key's last version this
	// stream delivered (StreamEntry.Delta).
	Delta bool
	// MaxMessages is the most entries one frame carries (1–1,000; 0: the service's 100).
	MaxMessages int
	// Window is the credit TopicStream keeps granted: how many entries may be on their way
	// (1–1,000; 0: 256). OpenTopicStream grants nothing by itself.
	Window int
}

// StreamEntry is one entry a topic stream delivered: the log entry, and with Delta, whether
// Body is an RFC 7396 merge patch to apply to the body last delivered for Key.
type StreamEntry struct {
	LogEntry
	Delta bool `json:"delta,omitempty"`
}

// TopicGap says entries were trimmed from the log (its retention) before the stream could
// deliver them: sequences From…FirstSequence−1 are gone and the stream goes on at
// FirstSequence. From is nil when the stream was asked for a time older than the log holds.
type TopicGap struct {
	From          *uint64 `json:"from"`
	FirstSequence uint64  `json:"firstSequence"`
}

// TopicEvent is one thing a topic stream delivered: an entry, or a gap before the entries
// that follow it.
type TopicEvent struct {
	Entry *StreamEntry
	Gap   *TopicGap
}

// TopicStreamConn is one open topic stream. Safe for concurrent use; Next is for one reader.
type TopicStreamConn struct {
	conn   *websocket.Conn
	frames chan []TopicEvent
	done   chan struct{}
	mu     sync.Mutex
	err    error
}

// maxTopicFrame bounds a topic stream frame the client reads: the service's 1 MiB of payload
// per frame (plus the entry that crosses it, up to 1 MiB), escaped, and the entries' fields.
const maxTopicFrame = 32 << 20

// OpenTopicStream opens one topic stream (scope messages:receive). It grants no credit: call
// Credit for the service to start delivering.
func (c *Client) OpenTopicStream(ctx context.Context, topic string, o TopicStreamOptions) (*TopicStreamConn, error) {
	u := *c.base
	u.Path += "/v1/topics/" + seg(topic) + "/stream"
	u.RawPath = ""
	q := url.Values{}
	if o.From != "" {
		q.Set("from", string(o.From))
	}
	if o.Delta {
		q.Set("delta", "true")
	}
	if o.MaxMessages > 0 {
		q.Set("maxMessages", strconv.Itoa(o.MaxMessages))
	}
	o.Filter.addQuery(q)
	u.RawQuery = q.Encode()
	h := http.Header{}
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
	if c.userAgent != "" {
		h.Set("User-Agent", c.userAgent)
	}
	injectTraceparent(ctx, h)
	conn, resp, err := websocket.Dial(ctx, u.String(), &websocket.DialOptions{HTTPClient: c.hc, HTTPHeader: h, CompressionMode: websocket.CompressionDisabled}) //nolint:bodyclose // the websocket library owns the upgraded connection
	if err != nil {
		if resp != nil && resp.StatusCode >= 300 {
			raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
			return nil, decodeError(resp, raw, parseRetryAfter(resp.Header.Get("Retry-After")))
		}
		return nil, fmt.Errorf("queues: opening the stream of topic %s: %w", topic, err)
	}
	conn.SetReadLimit(maxTopicFrame)
	s := &TopicStreamConn{conn: conn, frames: make(chan []TopicEvent, 1024), done: make(chan struct{})}
	go s.read()
	return s, nil
}

// read decodes the service's frames until the connection ends.
func (s *TopicStreamConn) read() {
	var err error
	defer func() { s.end(err) }()
	for {
		var data []byte
		_, data, err = s.conn.Read(context.Background())
		if err != nil {
			if websocket.CloseStatus(err) != -1 {
				err = nil
			}
			return
		}
		var f struct {
			Messages []StreamEntry `json:"messages"`
			Gap      *TopicGap     `json:"gap"`
			Error    *errorBody    `json:"error"`
		}
		if err = json.Unmarshal(data, &f); err != nil {
			err = fmt.Errorf("queues: decoding a topic stream frame: %w", err)
			return
		}
		switch {
		case f.Error != nil:
			err = f.Error.toError(0).typed()
			return
		case f.Gap != nil:
			s.frames <- []TopicEvent{{Gap: f.Gap}}
		case bytes.HasPrefix(data, []byte(`{"messages":`)):
			evs := make([]TopicEvent, len(f.Messages))
			for i := range f.Messages {
				evs[i].Entry = &f.Messages[i]
			}
			s.frames <- evs // credit bounds the frames in flight: this never waits long
		default:
			err = fmt.Errorf("queues: an unexpected topic stream frame: %.60q", data)
			return
		}
	}
}

func (s *TopicStreamConn) end(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = ErrStreamClosed
		if err != nil {
			s.err = err
		}
		close(s.done)
	}
	s.mu.Unlock()
	_ = s.conn.CloseNow()
}

// Err is why the stream ended: nil while it runs, ErrStreamClosed after a close, or the
// service's error (ErrNotFound for a deleted topic).
func (s *TopicStreamConn) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Credit lets the service deliver n more entries (at most 1,000 held).
func (s *TopicStreamConn) Credit(ctx context.Context, n int) error {
	if err := s.conn.Write(ctx, websocket.MessageText, fmt.Appendf(nil, `{"credit":%d}`, n)); err != nil {
		if e := s.Err(); e != nil {
			return e
		}
		return fmt.Errorf("queues: writing to the topic stream: %w", err)
	}
	return nil
}

// Next returns the next frame's events, waiting for one. When the stream has ended it
// returns the frames still buffered, then Err().
func (s *TopicStreamConn) Next(ctx context.Context) ([]TopicEvent, error) {
	select {
	case f := <-s.frames:
		return f, nil
	default:
	}
	select {
	case f := <-s.frames:
		return f, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.done:
		select {
		case f := <-s.frames:
			return f, nil
		default:
		}
		return nil, s.Err()
	}
}

// Close ends the stream.
func (s *TopicStreamConn) Close() error {
	err := s.conn.Close(websocket.StatusNormalClosure, "")
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
	}
	s.end(nil)
	return err
}

// TopicStream iterates over a topic's entries from o.From on (scope messages:receive),
// yielding each entry, and each gap the service announces, in order. It keeps the bookmark —
// the sequence after the last entry yielded — and when the stream ends for a reason that
// passes (the connection dropped, a draining server, an idle close, the service unavailable
// or over a rate) it reconnects from it, with backoff, so nothing is skipped or yielded twice
// across the reconnect. It keeps o.Window of credit granted, granting again as entries are
// taken. It stops at the first error it cannot get past, which it yields: the topic deleted
// (ErrNotFound), the token refused, a bad option (ErrInvalidArgument), or ctx's end.
//
// Starting "now" (the default), it first reads the topic's last sequence (GetTopic, scope
// queues:read) so that a reconnect before the first entry misses nothing; without that scope
// it starts at "now" and such a reconnect starts at the new "now".
func (c *Client) TopicStream(ctx context.Context, topic string, o TopicStreamOptions) iter.Seq2[TopicEvent, error] {
	return func(yield func(TopicEvent, error) bool) {
		if o.Window <= 0 || o.Window > 1000 {
			o.Window = 256
		}
		if o.From == "" || o.From == FromNow {
			if t, err := c.GetTopic(ctx, topic); err == nil {
				o.From = AtSequence(t.LastSequence + 1)
			}
		}
		failures := 0
		for {
			s, err := c.OpenTopicStream(ctx, topic, o)
			if err == nil {
				var delivered, more bool
				delivered, more, err = topicSession(ctx, s, &o, yield)
				if !more {
					return
				}
				if delivered {
					failures = 0
				}
			}
			if ctx.Err() != nil {
				yield(TopicEvent{}, ctx.Err())
				return
			}
			switch CodeOf(err) {
			case CodeNotFound, CodeUnauthenticated, CodePermissionDenied, CodeInvalidArgument:
				yield(TopicEvent{}, err)
				return
			}
			failures++
			wait := min(100*time.Millisecond<<min(failures, 6), 5*time.Second)
			if e := (*Error)(nil); errors.As(err, &e) && e.RetryAfter > wait {
				wait = e.RetryAfter
			}
			if !sleepCtx(ctx, wait) {
				yield(TopicEvent{}, ctx.Err())
				return
			}
		}
	}
}

// topicSession runs one stream of TopicStream until it ends, moving o.From on with every
// entry and gap yielded. more is false once the caller stopped the iteration.
func topicSession(ctx context.Context, s *TopicStreamConn, o *TopicStreamOptions, yield func(TopicEvent, error) bool) (delivered, more bool, err error) {
	defer s.Close()
	if err := s.Credit(ctx, o.Window); err != nil {
		return false, true, err
	}
	used := 0
	for {
		evs, err := s.Next(ctx)
		if err != nil {
			return delivered, true, err
		}
		for _, ev := range evs {
			switch {
			case ev.Entry != nil:
				o.From = AtSequence(ev.Entry.Sequence + 1)
				delivered = true
				used++
			case ev.Gap != nil:
				o.From = AtSequence(ev.Gap.FirstSequence)
			}
			if !yield(ev, nil) {
				return delivered, false, nil
			}
		}
		if used > 0 && used >= max(o.Window/2, 1) {
			if err := s.Credit(ctx, used); err != nil {
				return delivered, true, err
			}
			used = 0
		}
	}
}
