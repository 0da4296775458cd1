package crashtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Call makes one JSON request. It returns the status, and decodes a 2xx body into out.
func Call(ctx context.Context, hc *http.Client, method, url, token string, in, out any) (int, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return 0, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		// The answer was cut off: its outcome is unknown.
		return 0, err
	}
	if resp.StatusCode/100 == 2 && out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("decode %s %s answer: %w: %s", method, url, err, data)
		}
	}
	if resp.StatusCode/100 != 2 && out != nil {
		return resp.StatusCode, fmt.Errorf("%s %s answered %d: %s", method, url, resp.StatusCode, data)
	}
	return resp.StatusCode, nil
}

type sendAnswer struct {
	Messages []struct {
		Index     int    `json:"index"`
		MessageID string `json:"messageId"`
		Duplicate bool   `json:"duplicate"`
	} `json:"messages"`
	Failed []json.RawMessage `json:"failed"`
}

type receivedMsg struct {
	MessageID          string `json:"messageId"`
	Body               string `json:"body"`
	ReceiptHandle      string `json:"receiptHandle"`
	ReceiveCount       int    `json:"receiveCount"`
	VisibilityDeadline string `json:"visibilityDeadline"`
}

type queueAnswer struct {
	ID     string `json:"id"`
	Counts struct {
		Visible  int64 `json:"visible"`
		InFlight int64 `json:"inFlight"`
		Delayed  int64 `json:"delayed"`
	} `json:"counts"`
}

// delivery is one received message, as the client saw it.
type delivery struct {
	body, id   string
	rc         int
	deadline   time.Time // the server's visibilityDeadline
	start, end time.Time // the receive request's start and the answer's arrival
	afterKill  bool      // received from the restarted process
	held       bool      // deliberately left un-acked
}

// history is everything the clients observed. Only answered operations count as done.
type history struct {
	mu           sync.Mutex
	attempted    map[string]bool      // bodies whose send was made, answered or not
	acked        map[string]string    // body → messageId, for sends answered 200 listing it
	ackOrder     []string             // acknowledged bodies in acknowledgement order
	deliveries   []delivery           // every received message, both phases
	settled      map[string]time.Time // body → arrival of the 204 to its ack
	held         int                  // deliveries left un-acked on purpose
	unknownSends int                  // sends with no 200 (error, cut off, non-200)
	failedSends  int                  // messages listed in a 200's failed
	acks204      int
	ackUnknown   int
	ackStale     int
}

func newHistory() *history {
	return &history{attempted: map[string]bool{}, acked: map[string]string{}, settled: map[string]time.Time{}}
}

func (h *history) lockedDo(f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f()
}

// client holds what the workers share.
type client struct {
	hc       *http.Client
	token    string
	queueURL string // base URL + /v1/queues/{id}
	base     string
	h        *history
	inFlight atomic.Int64 // requests started and not yet answered
}

func (c *client) do(ctx context.Context, method, url, token string, in, out any) (int, error) {
	c.inFlight.Add(1)
	defer c.inFlight.Add(-1)
	return Call(ctx, c.hc, method, url, token, in, out)
}

// send sends one batch and records the outcome; it returns the number of acknowledged sends
// and whether the request was answered 200.
func (c *client) send(ctx context.Context, bodies []string) (int, bool) {
	msgs := make([]map[string]string, len(bodies))
	c.h.lockedDo(func() {
		for i, b := range bodies {
			c.h.attempted[b] = true
			msgs[i] = map[string]string{"body": b}
		}
	})
	var ans sendAnswer
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	status, err := c.do(rctx, http.MethodPost, c.queueURL+"/messages", c.token, map[string]any{"messages": msgs}, &ans)
	if err != nil || status != http.StatusOK {
		c.h.lockedDo(func() { c.h.unknownSends++ })
		return 0, false
	}
	n := 0
	c.h.lockedDo(func() {
		c.h.failedSends += len(ans.Failed)
		for _, m := range ans.Messages {
			if m.Index < 0 || m.Index >= len(bodies) {
				continue
			}
			b := bodies[m.Index]
			if _, dup := c.h.acked[b]; !dup {
				c.h.ackOrder = append(c.h.ackOrder, b)
				n++
			}
			c.h.acked[b] = m.MessageID
		}
	})
	return n, true
}

// receive makes one receive and records every message it returns. hold decides which
// deliveries are left un-acked; the others are returned for acknowledging.
func (c *client) receive(ctx context.Context, wait int, afterKill bool, hold func(receivedMsg) bool) (toAck []receivedMsg, answered bool) {
	var ans struct {
		Messages []receivedMsg `json:"messages"`
	}
	rctx, cancel := context.WithTimeout(ctx, requestTimeout+time.Duration(wait)*time.Second)
	defer cancel()
	start := time.Now()
	status, err := c.do(rctx, http.MethodPost, c.queueURL+"/receive", c.token,
		map[string]any{"maxMessages": batch, "waitSeconds": wait}, &ans)
	end := time.Now()
	if err != nil || status != http.StatusOK {
		return nil, false
	}
	c.h.lockedDo(func() {
		for _, m := range ans.Messages {
			dl, _ := time.Parse(timeFormat, m.VisibilityDeadline)
			d := delivery{body: m.Body, id: m.MessageID, rc: m.ReceiveCount, deadline: dl, start: start, end: end, afterKill: afterKill}
			d.held = hold != nil && hold(m)
			if d.held {
				c.h.held++
			} else {
				toAck = append(toAck, m)
			}
			c.h.deliveries = append(c.h.deliveries, d)
		}
	})
	return toAck, true
}

// ack acknowledges one delivery with the single form and records a 204.
func (c *client) ack(ctx context.Context, m receivedMsg) {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	status, err := c.do(rctx, http.MethodPost, c.base+"/v1/receipts/ack", "", map[string]string{"receiptHandle": m.ReceiptHandle}, nil)
	end := time.Now()
	c.h.lockedDo(func() {
		switch {
		case err == nil && status == http.StatusNoContent:
			c.h.acks204++
			c.h.settled[m.Body] = end
		case err == nil && status == http.StatusGone:
			c.h.ackStale++
		default:
			c.h.ackUnknown++
		}
	})
}

// ackAll acknowledges each delivery with its own request, all at once.
func (c *client) ackAll(ctx context.Context, ms []receivedMsg) {
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Go(func() { c.ack(ctx, m) })
	}
	wg.Wait()
}

func (c *client) counts(ctx context.Context) (queueAnswer, error) {
	var q queueAnswer
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	_, err := c.do(rctx, http.MethodGet, c.queueURL, c.token, nil, &q)
	return q, err
}
