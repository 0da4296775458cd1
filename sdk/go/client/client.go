package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Environment variables read by FromEnv (and the queues CLI).
const (
	EnvURL   = "QUEUES_URL"
	EnvToken = "QUEUES_TOKEN"
	// DefaultURL is where `queues serve` listens by default.
	DefaultURL = "http://127.0.0.1:8080"
)

// Client calls the Queues HTTP API. It is safe for concurrent use; create one and share it.
type Client struct {
	base      *url.URL
	token     string
	hc        *http.Client
	retry     RetryPolicy
	userAgent string
}

// RetryPolicy decides how calls answered 429 rate_limited or 503 unavailable are retried.
// Other errors (including 429 purge_too_soon) are returned at once. A GET that fails to
// connect is retried too; other requests are not, because the server may have acted on them.
type RetryPolicy struct {
	// MaxAttempts counts every attempt, the first included (default 4; 1 disables retries).
	MaxAttempts int
	// MinBackoff is the first backoff (default 100 ms); it doubles per attempt, with jitter.
	MinBackoff time.Duration
	// MaxBackoff caps one backoff (default 5 s).
	MaxBackoff time.Duration
	// MaxRetryAfter is the longest Retry-After the client waits for (default 30 s); an answer
	// asking for longer is returned as the error instead.
	MaxRetryAfter time.Duration
}

// DefaultRetryPolicy is the policy of a client made without WithRetry.
var DefaultRetryPolicy = RetryPolicy{MaxAttempts: 4, MinBackoff: 100 * time.Millisecond, MaxBackoff: 5 * time.Second, MaxRetryAfter: 30 * time.Second}

// Option configures a Client.
type Option func(*Client)

// WithToken sets the bearer token (a project token or, for project and token routes, the
// operator credential).
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithHTTPClient sets the HTTP client (default: one with no overall timeout, since receives
// long-poll for up to 20 s; bound calls with their context).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithRetry sets the retry policy; zero fields take DefaultRetryPolicy's values.
func WithRetry(p RetryPolicy) Option { return func(c *Client) { c.retry = p } }

// WithUserAgent sets the User-Agent header, in place of UserAgent() ("queues-go/<version>"). An
// application that names itself keeps the SDK's token after its own, as the CLI does:
// WithUserAgent("my-app/1.2 " + client.UserAgent()).
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// defaultHTTPClient is shared by the clients made without WithHTTPClient. Its transport keeps
// up to 64 idle connections per host where http.DefaultTransport keeps 2: a consumer has
// several receives and acknowledgements in flight at once, and with 2 idle connections most
// of its calls would open a new one.
var defaultHTTPClient = func() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	return &http.Client{Transport: t}
}()

// New returns a client for the service at baseURL (such as "http://127.0.0.1:8080").
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimSuffix(baseURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("queues: bad URL %q: %w", baseURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("queues: bad URL %q: want http(s)://host[:port]", baseURL)
	}
	c := &Client{base: u, hc: defaultHTTPClient, retry: DefaultRetryPolicy, userAgent: UserAgent()}
	for _, o := range opts {
		o(c)
	}
	d := DefaultRetryPolicy
	if c.retry.MaxAttempts <= 0 {
		c.retry.MaxAttempts = d.MaxAttempts
	}
	if c.retry.MinBackoff <= 0 {
		c.retry.MinBackoff = d.MinBackoff
	}
	if c.retry.MaxBackoff <= 0 {
		c.retry.MaxBackoff = d.MaxBackoff
	}
	if c.retry.MaxRetryAfter <= 0 {
		c.retry.MaxRetryAfter = d.MaxRetryAfter
	}
	return c, nil
}

// FromEnv returns a client for $QUEUES_URL (default DefaultURL) with the token $QUEUES_TOKEN.
// Options given override both.
func FromEnv(opts ...Option) (*Client, error) {
	base := os.Getenv(EnvURL)
	if base == "" {
		base = DefaultURL
	}
	return New(base, append([]Option{WithToken(os.Getenv(EnvToken))}, opts...)...)
}

// WithToken returns a copy of c that presents another token (sharing the HTTP client).
func (c *Client) WithToken(token string) *Client {
	cp := *c
	cp.token = token
	return &cp
}

// URL is the service's base URL.
func (c *Client) URL() string { return c.base.String() }

// RawBody is a request body sent as is, for Do.
type RawBody struct {
	ContentType string
	Data        []byte
}

// Do calls any route: method and path (such as "/v1/queues"), query parameters, a body (nil
// for none, a RawBody as is, anything else as JSON) and out, into which a JSON answer is
// decoded (nil to ignore it). It retries like the typed methods and returns an *Error for an
// error answer. The typed methods are built on it; use it for what they do not cover.
func (c *Client) Do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	_, err := c.do(ctx, method, path, query, body, out)
	return err
}

// marshal is json.Marshal without HTML escaping: a body's '<', '>' and '&' go as themselves,
// not as six-byte \u003c escapes, so a 1 MiB message of markup still fits a send's 3 MiB.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// do is Do returning the status of the answer.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body, out any) (int, error) {
	var data []byte
	contentType := ""
	switch b := body.(type) {
	case nil:
	case RawBody:
		data, contentType = b.Data, b.ContentType
	default:
		var err error
		if data, err = marshal(b); err != nil {
			return 0, fmt.Errorf("queues: encoding the request: %w", err)
		}
		contentType = "application/json"
	}
	// path is already escaped (segments go through url.PathEscape).
	u := c.base.String() + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	for attempt := 1; ; attempt++ {
		status, retryAfter, err := c.once(ctx, method, u, contentType, data, out)
		if err == nil {
			return status, nil
		}
		wait, ok := c.retryable(method, attempt, err, retryAfter)
		if !ok {
			return status, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return status, err
		case <-t.C:
		}
	}
}

// retryable decides whether to try again after err, and how long to wait first.
func (c *Client) retryable(method string, attempt int, err error, retryAfter time.Duration) (time.Duration, bool) {
	if attempt >= c.retry.MaxAttempts {
		return 0, false
	}
	var e *Error
	switch {
	case errors.As(err, &e):
		if e.Code != CodeRateLimited && e.Code != CodeUnavailable {
			return 0, false
		}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return 0, false
	default: // transport error: only a GET is safe to repeat
		if method != http.MethodGet {
			return 0, false
		}
	}
	if retryAfter > c.retry.MaxRetryAfter {
		return 0, false
	}
	backoff := c.retry.MinBackoff << (attempt - 1)
	if backoff > c.retry.MaxBackoff || backoff <= 0 {
		backoff = c.retry.MaxBackoff
	}
	// Jitter in [backoff/2, backoff], so clients told to wait do not come back together.
	wait := backoff/2 + rand.N(backoff/2+1)
	return max(wait, retryAfter), true
}

// once makes one attempt. It returns the answer's status and its Retry-After.
func (c *Client) once(ctx context.Context, method, u, contentType string, data []byte, out any) (int, time.Duration, error) {
	var rd io.Reader
	if data != nil {
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, 0, fmt.Errorf("queues: %w", err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	if c.userAgent != "" {
		req.Header.Set("User-Agent", c.userAgent)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	injectTraceparent(ctx, req.Header)
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("queues: %s %s: %w", method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	buf := bodyBuffers.Get().(*bytes.Buffer)
	defer putBodyBuffer(buf)
	buf.Reset()
	if resp.ContentLength > 0 && resp.ContentLength <= maxPooledBody {
		buf.Grow(int(resp.ContentLength))
	}
	_, err = buf.ReadFrom(resp.Body)
	raw := buf.Bytes() // only until return: decoded values copy what they keep
	if err != nil {
		return resp.StatusCode, 0, fmt.Errorf("queues: %s %s: reading the answer: %w", method, req.URL.Path, err)
	}
	retryAfter := parseRetryAfter(resp.Header.Get("Retry-After"))
	if resp.StatusCode >= 300 {
		return resp.StatusCode, retryAfter, decodeError(resp, raw, retryAfter)
	}
	if out != nil && len(raw) > 0 {
		if s, ok := out.(*string); ok {
			*s = string(raw)
		} else if fd, ok := out.(fastDecoder); ok && fd.decodeFast(raw) {
			// read without reflection
		} else if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, 0, fmt.Errorf("queues: %s %s: decoding the answer: %w", method, req.URL.Path, err)
		}
	}
	return resp.StatusCode, 0, nil
}

// Answers are read into pooled buffers: a consumer reads thousands a second, and growing a
// fresh buffer for each was most of its allocation.
var bodyBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBody is the largest buffer kept for reuse.
const maxPooledBody = 1 << 20

func putBodyBuffer(b *bytes.Buffer) {
	if b.Cap() <= maxPooledBody {
		bodyBuffers.Put(b)
	}
}

func parseRetryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// seg escapes one path segment.
func seg(s string) string { return url.PathEscape(s) }

// Int returns a pointer to v, for optional integer fields.
func Int(v int) *int { return &v }

// Bool returns a pointer to v, for optional boolean fields.
func Bool(v bool) *bool { return &v }
