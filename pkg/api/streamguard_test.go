package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/auth"
	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/embeddedengine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/meta/memmeta"
	"github.com/queueshq/queues/pkg/metacache"
	"github.com/queueshq/queues/pkg/receipt"
	"github.com/queueshq/queues/pkg/signingkeys"
)

// streamRig is a Server on the embedded engine and a fake clock whose streams check
// themselves only when the test ticks (ticks), and report each passed check on checked.
type streamRig struct {
	s       *Server
	srv     *httptest.Server
	clk     *clock.Fake
	cache   *metacache.Cache
	store   *memmeta.Store
	auth    *auth.Authority
	ticks   chan time.Time
	checked chan struct{}
	// down makes every token lookup fail as an unreachable store does.
	down *downMeta
	// received, when set, runs after the engine's receive took messages; receiving runs
	// at every receive.
	received, receiving atomic.Pointer[func()]
	// drain, closed, drains the server.
	drain chan struct{}
	// sending, when set, runs before every engine send.
	sending atomic.Pointer[func()]
}

// downMeta is the rig's metadata, whose token lookups fail while down is set.
type downMeta struct {
	*metacache.Cache
	down atomic.Bool
}

func (m *downMeta) GetToken(ctx context.Context, projectID, tokenID ids.ID) (meta.Token, error) {
	if m.down.Load() {
		return meta.Token{}, apierr.ErrUnavailable
	}
	return m.Cache.GetToken(ctx, projectID, tokenID)
}

// hookEngine runs the rig's received hook after a receive that took messages.
type hookEngine struct {
	engine.Engine
	r *streamRig
}

func (h hookEngine) Receive(ctx context.Context, q engine.Queue, req engine.ReceiveRequest) (engine.ReceiveResult, error) {
	if f := h.r.receiving.Load(); f != nil {
		(*f)()
	}
	res, err := h.Engine.Receive(ctx, q, req)
	if f := h.r.received.Load(); f != nil && len(res.Messages) > 0 {
		(*f)()
	}
	return res, err
}

func (h hookEngine) Send(ctx context.Context, q engine.Queue, msgs []engine.Message) ([]engine.SendResult, error) {
	if f := h.r.sending.Load(); f != nil {
		(*f)()
	}
	return h.Engine.Send(ctx, q, msgs)
}

func newStreamRig(t *testing.T, limits StreamLimits) *streamRig {
	t.Helper()
	clk := clock.NewFake(time.Now())
	eng, err := embeddedengine.Open(filepath.Join(t.TempDir(), "s.db"), clk, embeddedengine.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	ring, err := signingkeys.Generate("k")
	if err != nil {
		t.Fatal(err)
	}
	store := memmeta.New()
	cache := metacache.New(store, &metacache.LocalBus{}, clk, 0)
	t.Cleanup(cache.Close)
	r := &streamRig{clk: clk, cache: cache, store: store, auth: auth.New(ring, "op", clk.Now),
		ticks: make(chan time.Time), checked: make(chan struct{}, 16), drain: make(chan struct{})}
	r.down = &downMeta{Cache: cache}
	r.s = New(Config{Engine: hookEngine{eng, r}, Meta: r.down, Auth: r.auth, Receipts: receipt.NewSigner(ring), Tenancy: store,
		Clock: clk, Streams: limits, Draining: r.drain})
	r.s.streamTicks = func() <-chan time.Time { return r.ticks }
	r.s.streamChecked = func() { r.checked <- struct{}{} }
	r.srv = httptest.NewServer(r.s.Handler())
	t.Cleanup(r.srv.Close)
	return r
}

// project creates a project with a queue "q" and a token (expiring at exp when not nil).
func (r *streamRig) project(t *testing.T, exp *time.Time) (meta.Queue, meta.Token, string) {
	t.Helper()
	now := r.clk.Now()
	p := meta.Project{ID: ids.New(), Name: "p" + ids.New().String()[:8], CreatedAt: now}
	tok := meta.Token{ID: ids.New(), ProjectID: p.ID, Scopes: []string{"*"}, CreatedAt: now, ExpiresAt: exp}
	if err := errors.Join(r.store.CreateProject(t.Context(), p), r.store.CreateToken(t.Context(), tok)); err != nil {
		t.Fatal(err)
	}
	q := r.s.NewQueue(p.ID, "q", "standard")
	q.VisibilityTimeoutSeconds = 3600
	if err := r.s.CreateQueue(t.Context(), q); err != nil {
		t.Fatal(err)
	}
	jwt, err := r.auth.Issue(p.ID, tok.ID, tok.Scopes, now, exp)
	if err != nil {
		t.Fatal(err)
	}
	return q, tok, jwt
}

// dial opens the receive stream of queue q.
func (r *streamRig) dial(t *testing.T, jwt string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(r.srv.URL, "http")+"/v1/queues/q/stream",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + jwt}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	return c
}

// tick makes every open stream check itself once, and returns once the test may look at the
// outcome of a stream that passes (its checked signal) — a failing stream is awaited by
// reading its error frame.
func (r *streamRig) tick(t *testing.T) {
	t.Helper()
	select {
	case r.ticks <- r.clk.Now():
	case <-time.After(10 * time.Second):
		t.Fatal("no stream took the tick")
	}
}

func (r *streamRig) awaitChecked(t *testing.T) {
	t.Helper()
	select {
	case <-r.checked:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not pass its check")
	}
}

// TestStreamTokenUncheckable: while the token record cannot be read the stream lives on for
// the grace (10 s by the fake clock), then ends with unavailable and close 1011; a check
// that succeeds within the grace restarts it.
func TestStreamTokenUncheckable(t *testing.T) {
	r := newStreamRig(t, StreamLimits{})
	_, _, jwt := r.project(t, nil)
	c := r.dial(t, jwt)
	credit(t, c, 1) // not idle
	r.down.down.Store(true)
	r.clk.Advance(9 * time.Second)
	r.tick(t)
	r.awaitChecked(t) // within the grace
	r.down.down.Store(false)
	r.tick(t)
	r.awaitChecked(t) // checked again: the grace restarts
	r.down.down.Store(true)
	r.clk.Advance(9 * time.Second)
	r.tick(t)
	r.awaitChecked(t)
	r.clk.Advance(2 * time.Second)
	r.tick(t)
	if code, _, status := streamEnd(t, c); code != "unavailable" || status != websocket.StatusInternalError {
		t.Fatalf("stream ended with %q, close %d; want unavailable, 1011", code, status)
	}
}

// awaitClosed waits until the server has let go of every stream (their guards no longer take
// ticks).
func (r *streamRig) awaitClosed(t *testing.T) {
	t.Helper()
	await(t, "the streams closed", func() bool { return r.s.openStreams() == 0 })
}

// streamEnd reads frames until the stream ends: the error frame's code, any messages written
// before it, and the close status.
func streamEnd(t *testing.T, c *websocket.Conn) (code string, delivered int, status websocket.StatusCode) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				t.Fatalf("the stream did not end (error frame %q, %d delivered)", code, delivered)
			}
			return code, delivered, websocket.CloseStatus(err)
		}
		var f struct {
			Messages []json.RawMessage `json:"messages"`
			Error    *struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(data, &f); err != nil {
			t.Fatalf("frame %s: %v", data, err)
		}
		delivered += len(f.Messages)
		if f.Error != nil {
			code = f.Error.Code
		}
	}
}

func credit(t *testing.T, c *websocket.Conn, n int) {
	t.Helper()
	b, _ := json.Marshal(map[string]int{"credit": n})
	if err := c.Write(t.Context(), websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
}

// TestStreamTokenRechecked: an open stream re-checks its token. (1) Revoked, then a message
// sent with credit granted: the batch is not written, the stream ends with unauthenticated
// (close 1008), and the message is visible again at once, its receive not counted. (2) A
// stream without credit ends at its next check after revocation. (3) Likewise once the token
// expires by the (fake) clock. Before the fix each stream stayed open and (1) delivered.
func TestStreamTokenRechecked(t *testing.T) {
	r := newStreamRig(t, StreamLimits{})

	t.Run("before a batch", func(t *testing.T) {
		q, tok, jwt := r.project(t, nil)
		if _, err := r.s.Send(t.Context(), q, []engine.Message{{Body: "taken as the token is revoked"}}); err != nil {
			t.Fatal(err)
		}
		// The token is revoked between the stream's receive and its write of the batch.
		revoke := func() {
			if err := r.cache.RevokeToken(context.Background(), q.ProjectID, tok.ID, r.clk.Now()); err != nil {
				t.Error(err)
			}
		}
		r.received.Store(&revoke)
		defer r.received.Store(nil)
		c := r.dial(t, jwt)
		credit(t, c, 10)
		code, delivered, status := streamEnd(t, c)
		if code != "unauthenticated" || delivered != 0 || status != websocket.StatusPolicyViolation {
			t.Fatalf("stream ended with %q after delivering %d, close %d; want unauthenticated, 0, 1008", code, delivered, status)
		}
		got, err := r.s.Receive(t.Context(), q, engine.ReceiveRequest{Max: 10, Visibility: time.Minute}, 0)
		if err != nil || len(got) != 1 || got[0].ReceiveCount != 1 {
			t.Fatalf("after the stream: %d messages (%v), want the message back at once, received once", len(got), err)
		}
	})

	t.Run("revoked while idle", func(t *testing.T) {
		r.awaitClosed(t)
		q, tok, jwt := r.project(t, nil)
		c := r.dial(t, jwt)
		r.tick(t)
		r.awaitChecked(t) // live: the check passes
		if err := r.cache.RevokeToken(t.Context(), q.ProjectID, tok.ID, r.clk.Now()); err != nil {
			t.Fatal(err)
		}
		r.tick(t)
		if code, _, status := streamEnd(t, c); code != "unauthenticated" || status != websocket.StatusPolicyViolation {
			t.Fatalf("stream ended with %q, close %d; want unauthenticated, 1008", code, status)
		}
	})

	t.Run("expired", func(t *testing.T) {
		r.awaitClosed(t)
		exp := r.clk.Now().Add(time.Hour)
		_, _, jwt := r.project(t, &exp)
		c := r.dial(t, jwt)
		credit(t, c, 1) // not idle when the clock moves
		r.clk.Advance(time.Hour)
		r.tick(t)
		if code, _, status := streamEnd(t, c); code != "unauthenticated" || status != websocket.StatusPolicyViolation {
			t.Fatalf("stream ended with %q, close %d; want unauthenticated, 1008", code, status)
		}
	})
}

// upgrade asks for the stream of queue q with a plain request (the refusals come before the
// upgrade): the status, Retry-After and details.limit.
func (r *streamRig) upgrade(t *testing.T, jwt string) (status int, retryAfter, limit string) {
	t.Helper()
	req, _ := http.NewRequest("GET", r.srv.URL+"/v1/queues/q/stream", nil)
	req.Header.Set("Authorization", "Bearer "+jwt)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Error struct {
			Code    string         `json:"code"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&body)
	limit, _ = body.Error.Details["limit"].(string)
	if resp.StatusCode == http.StatusTooManyRequests && body.Error.Code != "rate_limited" {
		t.Fatalf("429 with code %q, want rate_limited", body.Error.Code)
	}
	return resp.StatusCode, resp.Header.Get("Retry-After"), limit
}

// TestStreamCaps: a project holds at most PerProject streams on a replica and the replica
// at most PerReplica in all; past either the upgrade is 429 rate_limited, Retry-After 5,
// details.limit naming the cap; a closed stream frees its slot. Before the fix every
// upgrade was taken.
func TestStreamCaps(t *testing.T) {
	r := newStreamRig(t, StreamLimits{PerProject: 2, PerReplica: 3})
	_, _, a := r.project(t, nil)
	_, _, b := r.project(t, nil)
	a1 := r.dial(t, a)
	r.dial(t, a)
	if st, ra, lim := r.upgrade(t, a); st != 429 || ra != "5" || lim != "streamsPerProject" {
		t.Fatalf("project's third stream: %d, Retry-After %q, limit %q; want 429, 5, streamsPerProject", st, ra, lim)
	}
	r.dial(t, b) // another project still gets one: the replica holds 3
	if st, ra, lim := r.upgrade(t, b); st != 429 || ra != "5" || lim != "streamsPerReplica" {
		t.Fatalf("replica's fourth stream: %d, Retry-After %q, limit %q; want 429, 5, streamsPerReplica", st, ra, lim)
	}
	_ = a1.Close(websocket.StatusNormalClosure, "")
	await(t, "the closed stream's slot freed", func() bool { return r.s.openStreams() == 2 })
	r.dial(t, a)
}

// TestStreamIdleClosed: a stream that holds no credit and sends no frame for the idle limit
// (60 s by the fake clock) ends with an idle error frame and close 1008; a frame from the
// consumer restarts the count, and a stream holding credit (waiting on an empty queue) is not
// idle however long it waits. Before the fix a zero-credit stream stayed open for good.
func TestStreamIdleClosed(t *testing.T) {
	r := newStreamRig(t, StreamLimits{})
	_, _, jwt := r.project(t, nil)

	c := r.dial(t, jwt)
	r.clk.Advance(59 * time.Second)
	r.tick(t)
	r.awaitChecked(t) // 59 s: still open
	// A settlement frame is activity; its answer shows it was read.
	if err := c.Write(t.Context(), websocket.MessageText, []byte(`{"id":"1","ack":{"receiptHandle":"forged"}}`)); err != nil {
		t.Fatal(err)
	}
	if _, data, err := c.Read(t.Context()); err != nil || !strings.Contains(string(data), `"id":"1"`) {
		t.Fatalf("settlement answer %s, %v", data, err)
	}
	r.clk.Advance(59 * time.Second)
	r.tick(t)
	r.awaitChecked(t) // 118 s open, 59 s since the frame: still open
	r.clk.Advance(2 * time.Second)
	r.tick(t)
	if code, delivered, status := streamEnd(t, c); code != "idle" || delivered != 0 || status != websocket.StatusPolicyViolation {
		t.Fatalf("stream ended with %q after %d messages, close %d; want idle, 0, 1008", code, delivered, status)
	}

	r.awaitClosed(t)
	held := r.dial(t, jwt)
	// The stream's first receive shows the credit frame was read (and the credit taken).
	receiving := make(chan struct{}, 1)
	signal := func() {
		select {
		case receiving <- struct{}{}:
		default:
		}
	}
	r.receiving.Store(&signal)
	defer r.receiving.Store(nil)
	credit(t, held, 5)
	select {
	case <-receiving:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not receive with its credit")
	}
	r.clk.Advance(10 * time.Minute)
	r.tick(t)
	r.awaitChecked(t)
}
