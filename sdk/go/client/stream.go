package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// ErrStreamClosed is what a Stream's calls return once it ended without a stream error of
// the service's (the connection dropped, the service drained, Close was called).
var ErrStreamClosed = errors.New("queues: the receive stream is closed")

// StreamOptions tune a receive stream; the zero value takes the defaults.
type StreamOptions struct {
	// MaxMessages is the most messages one batch of the stream carries (1–10, default 10).
	MaxMessages int
	// VisibilityTimeoutSeconds is each delivery's visibility timeout (nil: the queue's).
	VisibilityTimeoutSeconds *int
	// Filter, when set, makes every delivery of the stream one the filter selects.
	Filter *Filter
	// ConsumerID names the consumer every receive of the stream makes (required on an
	// exclusive fifo queue).
	ConsumerID string
	// Binary asks for batches as binary frames (?encoding=binary): smaller, and read without
	// JSON's unescaping. A service that does not know the parameter refuses the upgrade.
	Binary bool
}

// Stream is a receive stream (GET /v1/queues/{queue}/stream, a WebSocket): the service
// delivers batches while the consumer holds credit (Credit), and settlements (Ack,
// ChangeVisibility, DeadLetter) travel on the same connection. A delivery's receipt handle
// is the same as a receive's: it may as well be settled over HTTP, also after the stream
// ended. Safe for concurrent use; Next is for one reader at a time.
type Stream struct {
	conn *websocket.Conn
	msgs chan []Message
	done chan struct{}

	mu      sync.Mutex
	pending map[string]chan streamAnswer
	nextID  uint64
	err     error // why the stream ended (nil while it runs)
	// calls counts the settlement calls sent and not yet answered; closing refuses new
	// ones, and drained is closed once closing and calls is 0 (see Close).
	calls   int
	closing bool
	drained chan struct{}
}

type streamAnswer struct {
	ID      string       `json:"id"`
	Results []resultBody `json:"results"`
	Error   *errorBody   `json:"error"`
}

type resultBody struct {
	Index int        `json:"index"`
	Error *errorBody `json:"error"`
}

// maxStreamFrame bounds a frame the client reads: a batch of 10 messages of up to 1 MiB each
// (a queue's highest maxMessageBytes), escaped (at most six bytes a byte: \u003c), and their
// fields.
const maxStreamFrame = 64 << 20

// Stream opens a receive stream on queue. It grants no credit: call Credit for the service
// to start delivering. A service without streams answers the dial with an error
// (ErrNotFound for its route), as does a queue that does not exist.
func (c *Client) Stream(ctx context.Context, queue string, o StreamOptions) (*Stream, error) {
	u := *c.base
	u.Path += "/v1/queues/" + seg(queue) + "/stream"
	u.RawPath = ""
	q := url.Values{}
	if o.MaxMessages > 0 {
		q.Set("maxMessages", strconv.Itoa(o.MaxMessages))
	}
	if o.VisibilityTimeoutSeconds != nil {
		q.Set("visibilityTimeoutSeconds", strconv.Itoa(*o.VisibilityTimeoutSeconds))
	}
	o.Filter.addQuery(q)
	if o.ConsumerID != "" {
		q.Set("consumerId", o.ConsumerID)
	}
	if o.Binary {
		q.Set("encoding", "binary")
	}
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
		return nil, fmt.Errorf("queues: opening the receive stream of %s: %w", queue, err)
	}
	conn.SetReadLimit(maxStreamFrame)
	s := &Stream{conn: conn, msgs: make(chan []Message, 1024), done: make(chan struct{}), pending: map[string]chan streamAnswer{},
		drained: make(chan struct{})}
	go s.read()
	return s, nil
}

// read dispatches the service's frames until the connection ends.
func (s *Stream) read() {
	var err error
	defer func() { s.end(err) }()
	for {
		var data []byte
		var typ websocket.MessageType
		typ, data, err = s.conn.Read(context.Background())
		if err != nil {
			if websocket.CloseStatus(err) != -1 {
				err = nil // a closing handshake: no error of the service's to report
			}
			return
		}
		switch {
		case typ == websocket.MessageBinary:
			var msgs []Message
			if msgs, err = decodeBinaryBatch(data); err != nil {
				return
			}
			s.msgs <- msgs
		case bytes.HasPrefix(data, []byte(`{"messages":`)):
			r := receiveAnswer{Messages: make([]Message, 0, MaxReceiveBatch)}
			if !r.decodeFast(data) {
				if err = json.Unmarshal(data, &r); err != nil {
					err = fmt.Errorf("queues: decoding a stream batch: %w", err)
					return
				}
			}
			s.msgs <- r.Messages // credit bounds the batches in flight: this never waits long
		case bytes.HasPrefix(data, []byte(`{"id":`)):
			var a streamAnswer
			if !a.decodeFast(data) { // settle_decode.go; encoding/json for what it does not read
				if err = json.Unmarshal(data, &a); err != nil {
					err = fmt.Errorf("queues: decoding a stream answer: %w", err)
					return
				}
			}
			s.mu.Lock()
			ch := s.pending[a.ID]
			delete(s.pending, a.ID)
			s.mu.Unlock()
			if ch != nil {
				ch <- a
			}
		default:
			var e struct {
				Error *errorBody `json:"error"`
			}
			if json.Unmarshal(data, &e) == nil && e.Error != nil {
				err = e.Error.toError(0).typed()
			} else {
				err = fmt.Errorf("queues: an unexpected stream frame: %.60q", data)
			}
			return
		}
	}
}

func (s *Stream) end(err error) {
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
// service's error (ErrNotFound for a deleted queue).
func (s *Stream) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Credit lets the service deliver n more messages (the stream holds at most 1,000 of credit).
func (s *Stream) Credit(ctx context.Context, n int) error {
	return s.write(ctx, fmt.Appendf(nil, `{"credit":%d}`, n))
}

func (s *Stream) write(ctx context.Context, b []byte) error {
	if err := s.conn.Write(ctx, websocket.MessageText, b); err != nil {
		if e := s.Err(); e != nil {
			return e
		}
		return fmt.Errorf("queues: writing to the receive stream: %w", err)
	}
	return nil
}

// Next returns the next batch the service delivered, waiting for one. When the stream has
// ended it returns the batches still buffered, then Err().
func (s *Stream) Next(ctx context.Context) ([]Message, error) {
	select {
	case m := <-s.msgs:
		return m, nil
	default:
	}
	select {
	case m := <-s.msgs:
		return m, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.done:
		select {
		case m := <-s.msgs:
			return m, nil
		default:
		}
		return nil, s.Err()
	}
}

// call sends a settlement frame and waits for its answer.
func (s *Stream) call(ctx context.Context, op string, body any, n int) (BatchErrors, error) {
	enc, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	return s.callRaw(ctx, op, enc, n)
}

func (s *Stream) callRaw(ctx context.Context, op string, body []byte, n int) (BatchErrors, error) {
	ch := make(chan streamAnswer, 1)
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return nil, s.err
	}
	if s.closing {
		// Never sent: the caller may as well settle these handles over HTTP.
		s.mu.Unlock()
		return nil, ErrStreamClosed
	}
	s.nextID++
	id := strconv.FormatUint(s.nextID, 10)
	s.pending[id] = ch
	s.calls++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.pending, id)
		s.calls--
		if s.closing && s.calls == 0 {
			close(s.drained)
		}
		s.mu.Unlock()
	}()
	b := make([]byte, 0, len(body)+32)
	b = append(append(append(b, `{"id":"`...), id...), `","`...)
	b = append(append(append(b, op...), `":`...), body...)
	b = append(b, '}')
	if err := s.write(ctx, b); err != nil {
		return nil, err
	}
	select {
	case a := <-ch:
		if a.Error != nil {
			return nil, a.Error.toError(0).typed()
		}
		out := make(BatchErrors, n)
		for _, r := range a.Results {
			if r.Error != nil && r.Index >= 0 && r.Index < n {
				out[r.Index] = r.Error.toError(0).typed()
			}
		}
		return out, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.done:
		return nil, s.Err()
	}
}

// Ack acknowledges 1–100 deliveries over the stream; each gets its own result.
func (s *Stream) Ack(ctx context.Context, receiptHandles []string) (BatchErrors, error) {
	b := make([]byte, 0, 24+len(receiptHandles)*180)
	b = append(b, `{"receiptHandles":[`...)
	for i, h := range receiptHandles {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, h)
	}
	b = append(b, "]}"...)
	return s.callRaw(ctx, "ack", b, len(receiptHandles))
}

// ChangeVisibility changes 1–100 deliveries' visibility over the stream.
func (s *Stream) ChangeVisibility(ctx context.Context, entries []VisibilityEntry) (BatchErrors, error) {
	return s.call(ctx, "visibility", map[string]any{"entries": entries}, len(entries))
}

// DeadLetter moves 1–100 deliveries' messages to the dead-letter queue over the stream.
func (s *Stream) DeadLetter(ctx context.Context, entries []DeadLetterEntry) (BatchErrors, error) {
	return s.call(ctx, "deadLetter", map[string]any{"entries": entries}, len(entries))
}

// closeWait bounds how long Close waits for the answers to the settlements in flight.
const closeWait = 5 * time.Second

// Close ends the stream. It first waits (up to 5 s) for the answers to the settlements it
// has sent: closing under one would fail a call the service may have carried out, and
// settling those handles again over HTTP would answer receipt_handle_stale for messages that
// were in fact acknowledged. Settlements called after Close began fail with ErrStreamClosed,
// unsent. Messages delivered and not settled stay in flight until their visibility ends (or
// are settled by their handles over HTTP).
func (s *Stream) Close() error {
	s.mu.Lock()
	if !s.closing {
		s.closing = true
		if s.calls == 0 {
			close(s.drained)
		}
	}
	s.mu.Unlock()
	t := time.NewTimer(closeWait)
	select {
	case <-s.drained:
	case <-s.done:
	case <-t.C:
	}
	t.Stop()
	err := s.conn.Close(websocket.StatusNormalClosure, "")
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
	}
	s.end(nil)
	return err
}
