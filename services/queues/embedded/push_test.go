package embedded_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pkg/openapicheck"
	"github.com/queueshq/queues/services/queues/embedded"
)

// waitFor bounds every wait on the pusher: generous, since a wait that succeeds returns at
// once.
const waitFor = 20 * time.Second

// pushed is one request the endpoint received.
type pushed struct {
	raw    []byte
	header http.Header
	body   pushBody
}

type pushBody struct {
	Subscription string `json:"subscription"`
	Queue        struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"queue"`
	Messages []struct {
		MessageID          string            `json:"messageId"`
		Body               string            `json:"body"`
		Attributes         map[string]string `json:"attributes"`
		ReceiveCount       int               `json:"receiveCount"`
		SentAt             string            `json:"sentAt"`
		ReceiptHandle      string            `json:"receiptHandle"`
		VisibilityDeadline string            `json:"visibilityDeadline"`
	} `json:"messages"`
}

// endpoint is a push receiver: it records every request and answers with the current script.
type endpoint struct {
	t   *testing.T
	srv *httptest.Server
	got chan pushed

	mu     sync.Mutex
	answer func(b pushBody) (status int, body string)
}

func newEndpoint(t *testing.T) *endpoint {
	e := &endpoint{t: t, got: make(chan pushed, 100), answer: func(pushBody) (int, string) { return http.StatusOK, "" }}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var b pushBody
		if err := json.Unmarshal(raw, &b); err != nil {
			t.Errorf("pushed body: %v: %s", err, raw)
		}
		e.mu.Lock()
		answer := e.answer
		e.mu.Unlock()
		status, body := answer(b)
		e.got <- pushed{raw: raw, header: r.Header.Clone(), body: b}
		if body != "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *endpoint) script(f func(b pushBody) (int, string)) {
	e.mu.Lock()
	e.answer = f
	e.mu.Unlock()
}

func (e *endpoint) next() pushed {
	e.t.Helper()
	select {
	case p := <-e.got:
		return p
	case <-time.After(waitFor):
		e.t.Fatalf("nothing pushed within %v", waitFor)
		return pushed{}
	}
}

// quiet asserts that nothing is pushed for d.
func (e *endpoint) quiet(d time.Duration) {
	e.t.Helper()
	select {
	case p := <-e.got:
		e.t.Fatalf("pushed while it should not: %s", p.raw)
	case <-time.After(d):
	}
}

// pushNode opens a node with its pusher allowed to reach the local endpoint, reporting
// attempts and applied subscription versions on the returned channels.
func pushNode(t *testing.T, dir string) (*embedded.Node, *httptest.Server, chan meta.Attempt, chan meta.Subscription) {
	t.Helper()
	attempts := make(chan meta.Attempt, 100)
	applied := make(chan meta.Subscription, 100)
	n, err := embedded.Open(t.Context(), embedded.Options{
		DataDir: dir, Logger: slog.New(slog.DiscardHandler), SweepEvery: -1,
		Push: embedded.PushOptions{
			AllowPrivate: true, Grace: 5 * time.Second,
			OnAttempt: func(_ ids.ID, a meta.Attempt) { attempts <- a },
			OnApplied: func(s meta.Subscription) { applied <- s },
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(n.Handler())
	t.Cleanup(func() {
		n.Drain()
		srv.Close()
		if err := n.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return n, srv, attempts, applied
}

func nextAttempt(t *testing.T, ch chan meta.Attempt) meta.Attempt {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(waitFor):
		t.Fatalf("no push attempt within %v", waitFor)
		return meta.Attempt{}
	}
}

// waitApplied waits until the pusher applied a subscription version for which ok holds.
func waitApplied(t *testing.T, ch chan meta.Subscription, ok func(meta.Subscription) bool) {
	t.Helper()
	deadline := time.After(waitFor)
	for {
		select {
		case s := <-ch:
			if ok(s) {
				return
			}
		case <-deadline:
			t.Fatalf("the pusher applied no matching subscription within %v", waitFor)
		}
	}
}

type queueCounts struct {
	Counts struct {
		Visible, InFlight, Delayed int64
	} `json:"counts"`
}

func (c *client) counts(queue string) (visible, inFlight int64) {
	c.t.Helper()
	var qc queueCounts
	c.want(http.StatusOK, http.MethodGet, "/v1/queues/"+queue, nil, &qc)
	return qc.Counts.Visible, qc.Counts.InFlight
}

func (c *client) send(queue string, bodies ...string) []string {
	c.t.Helper()
	msgs := make([]map[string]any, len(bodies))
	for i, b := range bodies {
		msgs[i] = map[string]any{"body": b, "attributes": map[string]string{"n": b}}
	}
	var out struct {
		Messages []struct {
			MessageID string `json:"messageId"`
		} `json:"messages"`
	}
	c.want(http.StatusOK, http.MethodPost, "/v1/queues/"+queue+"/messages", map[string]any{"messages": msgs}, &out)
	id := make([]string, len(out.Messages))
	for i, m := range out.Messages {
		id[i] = m.MessageID
	}
	return id
}

// TestPush runs push delivery on serve's wiring, every API response checked against
// openapi.yaml: a subscription to a local plain-http endpoint (allowed in embedded mode),
// signed pushes verified with the Standard Webhooks reference library, settlement by the
// response (ack, per-message results with retry, dead-letter and defer, 202) and by receipt
// handle with no credential, pause and resume, the attempts log, and a restart that keeps the
// subscription, its secret and its attempts log and goes on pushing.
func TestPush(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	n, srv, attempts, applied := pushNode(t, dir)
	chk := openapicheck.NewChecker(t, srv.URL)
	c := &client{t: t, hc: chk.Client(), base: srv.URL, token: n.Token}
	anon := &client{t: t, hc: chk.Client(), base: srv.URL}
	ep := newEndpoint(t)

	var dlq, q struct {
		ID string `json:"id"`
	}
	c.want(http.StatusCreated, http.MethodPost, "/v1/queues", map[string]any{"name": "dead"}, &dlq)
	c.want(http.StatusCreated, http.MethodPost, "/v1/queues", map[string]any{"name": "hooked", "visibilityTimeoutSeconds": 30,
		"redrive": map[string]any{"deadLetterQueue": dlq.ID, "maxReceiveCount": 5}}, &q)
	var sub struct {
		ID            string `json:"id"`
		Slug          string `json:"slug"`
		Endpoint      string `json:"endpoint"`
		SigningSecret string `json:"signingSecret"`
		Paused        bool   `json:"paused"`
	}
	path := "/v1/queues/hooked/subscription"
	c.want(http.StatusCreated, http.MethodPost, path, map[string]any{"endpoint": ep.srv.URL + "/hook", "timeoutSeconds": 5}, &sub)
	wh, err := standardwebhooks.NewWebhook(sub.SigningSecret)
	if err != nil {
		t.Fatal(err)
	}
	verify := func(p pushed) {
		t.Helper()
		if err := wh.Verify(p.raw, p.header); err != nil {
			t.Fatalf("signature of %s: %v", p.raw, err)
		}
		if p.body.Subscription != sub.Slug || p.body.Queue.ID != q.ID || p.body.Queue.Name != "hooked" {
			t.Fatalf("pushed %s", p.raw)
		}
	}

	// 1. A 200 with an empty body acknowledges the batch.
	sent := c.send("hooked", "first")
	p := ep.next()
	verify(p)
	if len(p.body.Messages) != 1 || p.body.Messages[0].MessageID != sent[0] || p.body.Messages[0].Body != "first" ||
		p.body.Messages[0].Attributes["n"] != "first" || p.body.Messages[0].ReceiveCount != 1 || p.body.Messages[0].ReceiptHandle == "" {
		t.Fatalf("pushed %s", p.raw)
	}
	if a := nextAttempt(t, attempts); a.Outcome != meta.AttemptAcknowledged || a.StatusCode != 200 || a.AttemptID != p.header.Get("webhook-id") {
		t.Fatalf("attempt %+v", a)
	}
	if v, f := c.counts("hooked"); v != 0 || f != 0 {
		t.Fatalf("after the ack: visible %d, in flight %d", v, f)
	}

	// 2. Per-message results: retry (pushed again, then acknowledged as unlisted), dead-letter
	// with a reason, defer (settled later by handle), and an unlisted message acknowledged.
	ep.script(func(b pushBody) (int, string) {
		rs := []map[string]any{} // an empty list (not null) when nothing is listed
		for _, m := range b.Messages {
			switch {
			case m.Body == "retry" && m.ReceiveCount == 1:
				rs = append(rs, map[string]any{"messageId": m.MessageID, "outcome": "retry", "retryAfterSeconds": 0})
			case m.Body == "dead":
				rs = append(rs, map[string]any{"messageId": m.MessageID, "outcome": "dead-letter", "reason": "poison"})
			case m.Body == "defer":
				rs = append(rs, map[string]any{"messageId": m.MessageID, "outcome": "defer"})
			}
		}
		out, _ := json.Marshal(map[string]any{"results": rs})
		return http.StatusOK, string(out)
	})
	c.send("hooked", "ack", "retry", "dead", "defer")
	seen := map[string][]int{} // body -> receive counts pushed
	var deferred string
	for len(seen["retry"]) < 2 || len(seen["ack"]) < 1 || len(seen["dead"]) < 1 || len(seen["defer"]) < 1 {
		p := ep.next()
		verify(p)
		for _, m := range p.body.Messages {
			seen[m.Body] = append(seen[m.Body], m.ReceiveCount)
			if m.Body == "defer" {
				deferred = m.ReceiptHandle
			}
		}
		if a := nextAttempt(t, attempts); a.Outcome != meta.AttemptSettled {
			t.Fatalf("attempt %+v", a)
		}
	}
	if !slices.Equal(seen["retry"], []int{1, 2}) || len(seen["ack"]) != 1 || len(seen["dead"]) != 1 || len(seen["defer"]) != 1 {
		t.Fatalf("pushed receive counts %v", seen)
	}
	if v, f := c.counts("hooked"); v != 0 || f != 1 {
		t.Fatalf("after the results: visible %d, in flight %d (want the deferred one in flight)", v, f)
	}
	var dl struct {
		Messages []struct {
			Body       string `json:"body"`
			DeadLetter struct {
				SourceQueue string `json:"sourceQueue"`
				Reason      string `json:"reason"`
			} `json:"deadLetter"`
		} `json:"messages"`
	}
	c.want(http.StatusOK, http.MethodPost, "/v1/queues/dead/receive", map[string]any{"maxMessages": 10, "waitSeconds": 0}, &dl)
	if len(dl.Messages) != 1 || dl.Messages[0].Body != "dead" || dl.Messages[0].DeadLetter.Reason != "poison" || dl.Messages[0].DeadLetter.SourceQueue != q.ID {
		t.Fatalf("dead-letter queue holds %+v", dl)
	}
	// The receiver settles the deferred message by its handle, with no credential.
	anon.want(http.StatusNoContent, http.MethodPost, "/v1/receipts/ack", map[string]any{"receiptHandle": deferred}, nil)
	if v, f := c.counts("hooked"); v != 0 || f != 0 {
		t.Fatalf("after the ack by handle: visible %d, in flight %d", v, f)
	}

	// 3. A 202 defers the whole batch; the receiver releases it by handle (visibility 0), it
	// is pushed again, and a 204 acknowledges it.
	ep.script(func(b pushBody) (int, string) {
		if b.Messages[0].ReceiveCount == 1 {
			return http.StatusAccepted, ""
		}
		return http.StatusNoContent, ""
	})
	c.send("hooked", "later")
	p = ep.next()
	verify(p)
	firstHandle := p.body.Messages[0].ReceiptHandle
	if a := nextAttempt(t, attempts); a.Outcome != meta.AttemptDeferred || a.StatusCode != 202 {
		t.Fatalf("attempt %+v", a)
	}
	if v, f := c.counts("hooked"); v != 0 || f != 1 {
		t.Fatalf("after the 202: visible %d, in flight %d", v, f)
	}
	anon.want(http.StatusNoContent, http.MethodPost, "/v1/receipts/visibility",
		map[string]any{"receiptHandle": firstHandle, "visibilityTimeoutSeconds": 0}, nil)
	p = ep.next()
	verify(p)
	if p.body.Messages[0].Body != "later" || p.body.Messages[0].ReceiveCount != 2 {
		t.Fatalf("pushed again: %s", p.raw)
	}
	if a := nextAttempt(t, attempts); a.Outcome != meta.AttemptAcknowledged || a.StatusCode != 204 {
		t.Fatalf("attempt %+v", a)
	}
	// Handles of settled deliveries are spent.
	anon.want(http.StatusGone, http.MethodPost, "/v1/receipts/ack", map[string]any{"receiptHandle": firstHandle}, nil)
	anon.want(http.StatusGone, http.MethodPost, "/v1/receipts/ack", map[string]any{"receiptHandle": deferred}, nil)

	// 4. Pause: nothing is pushed, the message waits visible; resume pushes it.
	ep.script(func(pushBody) (int, string) { return http.StatusOK, "" })
	c.want(http.StatusOK, http.MethodPatch, path, map[string]any{"paused": true}, &sub)
	if !sub.Paused {
		t.Fatal("PATCH paused answered paused=false")
	}
	waitApplied(t, applied, func(s meta.Subscription) bool { return s.Paused })
	c.send("hooked", "while paused")
	ep.quiet(time.Second)
	if v, f := c.counts("hooked"); v != 1 || f != 0 {
		t.Fatalf("while paused: visible %d, in flight %d", v, f)
	}
	c.want(http.StatusOK, http.MethodPatch, path, map[string]any{"paused": false}, &sub)
	p = ep.next()
	verify(p)
	if p.body.Messages[0].Body != "while paused" {
		t.Fatalf("pushed after resume: %s", p.raw)
	}
	nextAttempt(t, attempts)
	if v, f := c.counts("hooked"); v != 0 || f != 0 {
		t.Fatalf("after resume: visible %d, in flight %d", v, f)
	}

	// 5. The attempts log, newest first.
	type attemptsPage struct {
		Attempts []struct {
			AttemptID  string `json:"attemptId"`
			Outcome    string `json:"outcome"`
			StatusCode *int   `json:"statusCode"`
		} `json:"attempts"`
	}
	var log attemptsPage
	c.want(http.StatusOK, http.MethodGet, path+"/attempts?limit=100", nil, &log)
	var outcomes []string
	for _, a := range log.Attempts {
		outcomes = append(outcomes, a.Outcome)
	}
	// first, then the results batches (at least two), the 202, the 204, after resume.
	if len(outcomes) < 6 || outcomes[0] != "acknowledged" || outcomes[1] != "acknowledged" || outcomes[2] != "deferred" ||
		outcomes[len(outcomes)-1] != "acknowledged" || outcomes[len(outcomes)-2] != "settled" {
		t.Fatalf("attempts log: %v", outcomes)
	}

	// 6. Restart on the same directory: the subscription, its secret and the attempts log are
	// kept, and the pusher goes on.
	n.Drain()
	srv.Close()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n2, srv2, attempts2, _ := pushNode(t, dir)
	chk2 := openapicheck.NewChecker(t, srv2.URL)
	c2 := &client{t: t, hc: chk2.Client(), base: srv2.URL, token: n2.Token}
	var again struct {
		ID       string `json:"id"`
		Endpoint string `json:"endpoint"`
		Paused   bool   `json:"paused"`
	}
	c2.want(http.StatusOK, http.MethodGet, path, nil, &again)
	if again.ID != sub.ID || again.Endpoint != ep.srv.URL+"/hook" || again.Paused {
		t.Fatalf("subscription after restart: %+v", again)
	}
	var log2 attemptsPage
	c2.want(http.StatusOK, http.MethodGet, path+"/attempts?limit=100", nil, &log2)
	if len(log2.Attempts) != len(log.Attempts) || log2.Attempts[0].AttemptID != log.Attempts[0].AttemptID {
		t.Fatalf("attempts log after restart: %d attempts, want %d", len(log2.Attempts), len(log.Attempts))
	}
	c2.send("hooked", "after restart")
	p = ep.next()
	verify(p) // the same secret
	if p.body.Messages[0].Body != "after restart" {
		t.Fatalf("pushed after restart: %s", p.raw)
	}
	nextAttempt(t, attempts2)
	c2.want(http.StatusOK, http.MethodGet, path+"/attempts?limit=1", nil, &log2)
	if len(log2.Attempts) != 1 || log2.Attempts[0].AttemptID != p.header.Get("webhook-id") {
		t.Fatalf("newest attempt after restart: %+v", log2.Attempts)
	}

	// 7. Deleting the queue deletes the subscription; the pusher stops.
	c2.want(http.StatusNoContent, http.MethodDelete, "/v1/queues/hooked", nil, nil)
	c2.want(http.StatusNotFound, http.MethodGet, path, nil, nil)
	deadline := time.Now().Add(waitFor)
	for len(n2.Pusher.Held()) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the pusher still holds %v after the queue was deleted", n2.Pusher.Held())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPushPrivateRefused: with AllowPrivate off (QUEUES_PUSH_ALLOW_PRIVATE=false), the API
// refuses plain http and loopback endpoints, as a deployment does.
func TestPushPrivateRefused(t *testing.T) {
	t.Parallel()
	n, srv := openNode(t, filepath.Join(t.TempDir(), "data"))
	chk := openapicheck.NewChecker(t, srv.URL)
	c := &client{t: t, hc: chk.Client(), base: srv.URL, token: n.Token}
	c.want(http.StatusCreated, http.MethodPost, "/v1/queues", map[string]any{"name": "q"}, nil)
	for _, ep := range []string{"http://example.com/hook", "https://127.0.0.1/hook", "https://10.0.0.1/hook", "https://169.254.169.254/latest"} {
		var e struct {
			Error struct {
				Code    string `json:"code"`
				Details struct {
					Field string `json:"field"`
				} `json:"details"`
			} `json:"error"`
		}
		c.want(http.StatusBadRequest, http.MethodPost, "/v1/queues/q/subscription", map[string]any{"endpoint": ep}, &e)
		if e.Error.Code != "invalid_argument" || e.Error.Details.Field != "endpoint" {
			t.Fatalf("%s refused with %+v", ep, e)
		}
	}
	c.want(http.StatusCreated, http.MethodPost, "/v1/queues/q/subscription", map[string]any{"endpoint": "https://example.com/hook"}, nil)
}
