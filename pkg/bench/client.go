package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// client is a lean HTTP client for the few routes the load generator calls: request bodies
// are built into reused buffers and responses decoded into small structs, so the generator
// spends as little of a shared machine's CPU as it can.
type client struct {
	base  string
	token string
	hc    *http.Client
	raw   *rawPool // plain-http URLs: see raw.go
	// throttled counts 429 answers that were retried after their Retry-After.
	throttled counter
	// noRetry answers 429 and 503 as errors instead of waiting them out (the neighbour
	// phase counts every refusal).
	noRetry bool
}

type counter struct {
	mu sync.Mutex
	n  int64
}

func (c *counter) add(n int64) { c.mu.Lock(); c.n += n; c.mu.Unlock() }
func (c *counter) get() int64  { c.mu.Lock(); defer c.mu.Unlock(); return c.n }

func newClient(base, token string, conns int) *client {
	tr := &http.Transport{
		Proxy:               nil, // load goes to the URL given, never through a proxy
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns * 2,
		MaxIdleConnsPerHost: conns * 2,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	base = strings.TrimRight(base, "/")
	return &client{base: base, token: token, hc: &http.Client{Transport: tr}, raw: newRawPool(base)}
}

func (c *client) close() {
	c.hc.CloseIdleConnections()
	if c.raw != nil {
		c.raw.close()
	}
}

// apiError is a non-2xx answer.
type apiError struct {
	Status int
	Code   string
	Limit  string // details.limit of a quota_exceeded answer
	Body   string
}

func quotaLimit(b []byte) string {
	var e struct {
		Error struct {
			Details struct {
				Limit string `json:"limit"`
			} `json:"details"`
		} `json:"error"`
	}
	_ = json.Unmarshal(b, &e)
	return e.Error.Details.Limit
}

func (e *apiError) Error() string {
	return fmt.Sprintf("HTTP %d %s: %s", e.Status, e.Code, strings.TrimSpace(e.Body))
}

// do sends one request and decodes a 2xx JSON answer into out (nil: discard). 429 and 503
// answers are retried after their Retry-After (at most 1 s at a time) until ctx ends.
func (c *client) do(ctx context.Context, method, path string, body []byte, auth bool, out any) error {
	for {
		if c.raw != nil {
			tok := ""
			if auth {
				tok = c.token
			}
			a, err := c.raw.do(ctx, method, path, body, tok)
			if err != nil {
				return err
			}
			if !c.noRetry && (a.status == http.StatusTooManyRequests || a.status == http.StatusServiceUnavailable) {
				c.raw.release(a)
				if err := c.backoff(ctx, a.status, a.retryAfter); err != nil {
					return err
				}
				continue
			}
			err = decodeAnswer(a.status, a.body, out)
			c.raw.release(a)
			return err
		}
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
		if err != nil {
			return err
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if auth && c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := c.hc.Do(req)
		if err != nil {
			return err
		}
		if !c.noRetry && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err := c.backoff(ctx, resp.StatusCode, resp.Header.Get("Retry-After")); err != nil {
				return err
			}
			continue
		}
		buf := bodyPool.Get().(*bytes.Buffer)
		buf.Reset()
		_, err = buf.ReadFrom(resp.Body)
		resp.Body.Close()
		if err == nil {
			err = decodeAnswer(resp.StatusCode, buf.Bytes(), out)
		}
		bodyPool.Put(buf)
		return err
	}
}

// backoff waits out a 429 or 503 answer: its Retry-After, at most 1 s (100 ms without one).
func (c *client) backoff(ctx context.Context, status int, retryAfter string) error {
	if status == http.StatusTooManyRequests {
		c.throttled.add(1)
	}
	wait := 100 * time.Millisecond
	if s, err := strconv.Atoi(retryAfter); err == nil && s > 0 {
		wait = min(time.Duration(s)*time.Second, time.Second)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// decodeAnswer turns an answer into out (nil: ignore a 2xx body) or an *apiError.
func decodeAnswer(status int, body []byte, out any) error {
	if status >= 300 {
		b := body[:min(len(body), 4096)]
		var e struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		_ = json.Unmarshal(b, &e)
		return &apiError{Status: status, Code: e.Error.Code, Limit: quotaLimit(b), Body: string(b)}
	}
	if out == nil {
		return nil
	}
	if fd, ok := out.(fastDecoder); ok && fd.decodeFast(body) {
		return nil
	}
	return json.Unmarshal(body, out)
}

// bodyPool holds the buffers answers are read into (decoders copy what they keep).
var bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func isNotFound(err error) bool {
	var e *apiError
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}

func queuePath(name string) string { return "/v1/queues/" + url.PathEscape(name) }

// maxSize is the largest message body the generator sends: a queue's highest
// maxMessageBytes (its queues are created with maxMessageBytes when the size passes the
// default, 262,144). A send request holds at most maxRequestBytes, each message its body and
// about messageOverhead bytes of JSON.
const (
	maxSize         = 1 << 20
	maxRequestBytes = 3 << 20
	messageOverhead = 64
)

// createQueue creates a queue that takes messages of size bytes (the default maxMessageBytes
// when they fit it).
func (c *client) createQueue(ctx context.Context, name, typ string, size int) error {
	q := map[string]any{"name": name, "type": typ, "visibilityTimeoutSeconds": 60}
	if size > 256<<10 {
		q["maxMessageBytes"] = size
	}
	body, _ := json.Marshal(q)
	return c.do(ctx, http.MethodPost, "/v1/queues", body, true, nil)
}

func (c *client) deleteQueue(ctx context.Context, name string) error {
	err := c.do(ctx, http.MethodDelete, queuePath(name), nil, true, nil)
	if isNotFound(err) {
		return nil
	}
	return err
}

// sendResp is the part of a send's answer the generator reads.
type sendResp struct {
	Messages []sendResult      `json:"messages"`
	Failed   []json.RawMessage `json:"failed"`
}

type sendResult struct {
	Duplicate bool `json:"duplicate"`
}

type receivedMsg struct {
	Body          string `json:"body"`
	ReceiptHandle string `json:"receiptHandle"`
}

type receiveResp struct {
	Messages []receivedMsg `json:"messages"`
}

type ackResp struct {
	Results []ackResult `json:"results"`
}

type ackResult struct {
	Error *ackError `json:"error"`
}

type ackError struct {
	Code string `json:"code"`
}

// appendJSONString appends s as a JSON string. Bodies the generator makes are plain ASCII,
// but anything is escaped correctly.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == '"' || ch == '\\':
			b = append(b, '\\', ch)
		case ch < 0x20:
			b = append(b, fmt.Sprintf(`\u%04x`, ch)...)
		default:
			b = append(b, ch)
		}
	}
	return append(b, '"')
}
