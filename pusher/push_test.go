package pusher_test

import (
	"crypto/x509"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pusher"
	"github.com/queueshq/queues/sdk/go/webhook"
)

// TestPushShapeAndSignature: a TLS (HTTP/2) endpoint trusted through RootCAs gets the push
// body (docs/push.md), Standard Webhooks headers that the reference verifier accepts, and after a
// rotation two signatures, one per secret.
func TestPushShapeAndSignature(t *testing.T) {
	e := newEnv(t)
	ep := newEndpoint(t, true, status(204))
	pool := x509.NewCertPool()
	pool.AddCert(ep.Certificate())
	q := e.queue("standard", nil)
	sub := e.subscribe(q, ep.URL+"/hook", nil)
	p := e.pusher(func(c *pusher.Config) { c.RootCAs = pool })
	e.applied(q, func(meta.Subscription) bool { return true })

	msgs := []engine.Message{{Body: "hello", Attributes: map[string]string{"k": "v"}}, {Body: "world"}}
	sent := e.sendMsgs(q, msgs)
	got := ep.next(t)
	if got.body.Subscription != sub.ID.Slug(ids.SubscriptionPrefix) || got.body.Queue.ID != q.ID.String() || got.body.Queue.Name != q.Name {
		t.Fatalf("body names %s %+v", got.body.Subscription, got.body.Queue)
	}
	if len(got.body.Messages) != 2 || got.body.Messages[0].MessageID != sent[0].String() || got.body.Messages[0].Attributes["k"] != "v" ||
		got.body.Messages[1].Attributes == nil || got.body.Messages[0].ReceiveCount != 1 || got.body.Messages[0].ReceiptHandle == "" {
		t.Fatalf("messages: %s", got.raw)
	}
	deadline, err := time.Parse(time.RFC3339, got.body.Messages[0].VisibilityDeadline)
	if err != nil || !deadline.Equal(e.clk.Now().Add(30*time.Second)) {
		t.Fatalf("visibilityDeadline %q, want the queue's 30 s visibility: %v", got.body.Messages[0].VisibilityDeadline, err)
	}
	if ct := got.header.Get("Content-Type"); ct != "application/json" || got.proto != "HTTP/2.0" {
		t.Fatalf("content type %q over %s, want application/json over HTTP/2", ct, got.proto)
	}
	wh, _ := standardwebhooks.NewWebhook(sub.Secret)
	if err := wh.Verify(got.raw, got.header); err != nil {
		t.Fatalf("reference verifier: %v", err)
	}
	if a := e.attempt(q); a.Outcome != meta.AttemptAcknowledged || a.StatusCode != 204 || a.AttemptID != got.header.Get("webhook-id") {
		t.Fatalf("attempt %+v", a)
	}
	if st := e.stats(q); st.Visible+st.InFlight != 0 {
		t.Fatalf("after 204: %+v", st)
	}

	// Rotation: the new and the previous secret both sign, for 24 h.
	old := sub.Secret
	rotated := e.update(p, sub, func(s *meta.Subscription) {
		s.PreviousSecret, s.Secret, s.PreviousExpiresAt = s.Secret, webhook.NewSecret(), e.clk.Now().Add(24*time.Hour)
	})
	e.applied(q, func(s meta.Subscription) bool { return s.Version == rotated.Version })
	e.send(q, "after rotation")
	got = ep.next(t)
	if n := len(strings.Fields(got.header.Get("webhook-signature"))); n != 2 {
		t.Fatalf("after rotation: %d signatures, want 2", n)
	}
	for _, s := range []string{rotated.Secret, old} {
		wh, _ := standardwebhooks.NewWebhook(s)
		if err := wh.Verify(got.raw, got.header); err != nil {
			t.Fatalf("after rotation, secret verifies not: %v", err)
		}
	}
	first := got.header.Get("webhook-id")
	e.attempt(q)
	// Past the overlap only the new secret signs; every attempt has a new webhook-id.
	e.clk.Advance(24*time.Hour + time.Second)
	e.send(q, "after the overlap")
	got = ep.next(t)
	if n := len(strings.Fields(got.header.Get("webhook-signature"))); n != 1 || got.header.Get("webhook-id") == first {
		t.Fatalf("after the overlap: %q id %q", got.header.Get("webhook-signature"), got.header.Get("webhook-id"))
	}
	if got.body.Messages[0].Body != "after the overlap" {
		t.Fatalf("got %s", got.raw)
	}
	// Three pushes, one connection.
	if n := ep.conns.Load(); n != 1 {
		t.Fatalf("%d connections for three pushes, want 1 (reused)", n)
	}
}

// TestAckAll: 200 and 201 with an empty body or a non-JSON type, and 204, acknowledge all.
func TestAckAll(t *testing.T) {
	e := newEnv(t)
	for i, respond := range []func(http.ResponseWriter, pushed){
		status(200),
		status(201),
		status(204),
		func(w http.ResponseWriter, _ pushed) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(200)
			_, _ = w.Write([]byte("<html>" + strings.Repeat("x", 100<<10) + "</html>"))
		},
		func(w http.ResponseWriter, _ pushed) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(201)
		},
	} {
		ep := newEndpoint(t, false, respond)
		q := e.queue("standard", nil)
		e.subscribe(q, ep.URL, nil)
		if i == 0 {
			e.pusher(nil)
		}
		e.send(q, "a", "b", "c")
		if a := e.attempt(q); a.Outcome != meta.AttemptAcknowledged || len(a.MessageIDs) != 3 {
			t.Fatalf("case %d: attempt %+v", i, a)
		}
		if st := e.stats(q); st.Visible+st.InFlight+st.Delayed != 0 {
			t.Fatalf("case %d: left %+v", i, st)
		}
	}
}

// TestDeferAll: 202 leaves every message in flight, each settled later by its handle: one
// acknowledged, one left to time out and pushed again.
func TestDeferAll(t *testing.T) {
	e := newEnv(t)
	ep := newEndpoint(t, false, status(202))
	q := e.queue("standard", func(q *meta.Queue) { q.VisibilityTimeoutSeconds = 2 })
	e.subscribe(q, ep.URL, func(s *meta.Subscription) { s.TimeoutSeconds = 5 })
	e.pusher(nil)
	ids2 := e.send(q, "settled later", "left to time out")
	got := ep.next(t)
	if a := e.attempt(q); a.Outcome != meta.AttemptDeferred {
		t.Fatalf("attempt %+v", a)
	}
	// The deadline is the push timeout plus 5 s (longer than the queue's 2 s).
	if d, _ := time.Parse(time.RFC3339, got.body.Messages[0].VisibilityDeadline); !d.Equal(e.clk.Now().Add(10 * time.Second)) {
		t.Fatalf("deadline %s, want now+10s", got.body.Messages[0].VisibilityDeadline)
	}
	if st := e.stats(q); st.InFlight != 2 {
		t.Fatalf("after 202: %+v", st)
	}
	// Answer now, settle later: the receiver acknowledges the first by its handle.
	d, err := e.signer.Verify(got.body.Messages[0].ReceiptHandle, "receiptHandle")
	if err != nil {
		t.Fatal(err)
	}
	if errs, err := e.eng.Ack(t.Context(), e.engineQueue(q), []engine.Delivery{d}); err != nil || errs[0] != nil {
		t.Fatalf("ack by handle: %v %v", err, errs)
	}
	ep.setRespond(status(200))
	e.clk.Advance(11 * time.Second) // the second one's deadline passes: it is pushed again
	again := ep.next(t)
	if len(again.body.Messages) != 1 || again.body.Messages[0].MessageID != ids2[1].String() || again.body.Messages[0].ReceiveCount != 2 {
		t.Fatalf("pushed again: %s", again.raw)
	}
	e.attempt(q)
	if st := e.stats(q); st.Visible+st.InFlight != 0 {
		t.Fatalf("at the end: %+v", st)
	}
}

// TestPerMessageResults: each listed message is settled as it says; unlisted ones are acked.
func TestPerMessageResults(t *testing.T) {
	e := newEnv(t)
	dlq := e.queue("standard", nil)
	q := e.queue("standard", func(q *meta.Queue) { q.Redrive = &meta.Redrive{DeadLetterQueue: dlq.ID, MaxReceiveCount: 5} })
	ep := newEndpoint(t, false, nil)
	ep.setRespond(func(w http.ResponseWriter, p pushed) {
		m := p.body.Messages
		if len(m) != 7 {
			w.WriteHeader(200) // the released message, pushed again alone
			return
		}
		jsonAnswer(200, map[string]any{"results": []map[string]any{
			{"messageId": m[0].MessageID, "outcome": "ack"},
			{"messageId": m[1].MessageID, "outcome": "retry"},
			{"messageId": m[2].MessageID, "outcome": "retry", "retryAfterSeconds": 120},
			{"messageId": m[3].MessageID, "outcome": "dead-letter"},
			{"messageId": m[4].MessageID, "outcome": "dead-letter", "reason": "poison"},
			{"messageId": m[5].MessageID, "outcome": "defer"},
		}})(w, p)
	})
	sub := e.subscribe(q, ep.URL, func(s *meta.Subscription) { s.Paused = true })
	p := e.pusher(nil)
	e.applied(q, func(meta.Subscription) bool { return true })
	sent := e.send(q, "ack", "retry", "retry-120", "dl", "dl-reason", "defer", "unlisted")
	e.update(p, sub, func(s *meta.Subscription) { s.Paused = false }) // all seven in one batch
	// Two attempts: the batch, and the released message pushed again (their events may come
	// in either order).
	a1, a2 := e.attempt(q), e.attempt(q)
	if a1.Outcome != meta.AttemptSettled {
		a1, a2 = a2, a1
	}
	if a1.Outcome != meta.AttemptSettled || a1.StatusCode != 200 || len(a1.MessageIDs) != 7 || a2.Outcome != meta.AttemptAcknowledged {
		t.Fatalf("attempts %+v %+v", a1, a2)
	}
	// The plain retry is visible again at once, so it is pushed again (and acknowledged).
	ep.next(t)
	again := ep.next(t)
	if len(again.body.Messages) != 1 || again.body.Messages[0].MessageID != sent[1].String() || again.body.Messages[0].ReceiveCount != 2 {
		t.Fatalf("released message pushed again: %s", again.raw)
	}
	inFlight := e.browse(q, engine.StateInFlight)
	if len(inFlight) != 2 {
		t.Fatalf("in flight: %v", inFlight)
	}
	if m, ok := inFlight[sent[2]]; !ok || !m.VisibleAt.Equal(e.clk.Now().Add(120*time.Second)) {
		t.Fatalf("retry after 120 s: %+v", m)
	}
	if _, ok := inFlight[sent[5]]; !ok {
		t.Fatal("the deferred message is not in flight")
	}
	dl := e.browse(dlq, engine.StateVisible)
	if len(dl) != 2 || dl[sent[3]].DeadLetter == nil || dl[sent[3]].DeadLetter.Reason != engine.DefaultDLQReason ||
		dl[sent[4]].DeadLetter == nil || dl[sent[4]].DeadLetter.Reason != "poison" {
		t.Fatalf("dead-letter queue: %+v", dl)
	}
	if st := e.stats(q); st.Visible != 0 || st.InFlight != 2 {
		t.Fatalf("source queue: %+v", st)
	}
}

// TestFailuresBackOffThenDeadLetter: a 2xx JSON of another shape is a failure
// (invalid_response), never an ack; failures retry after the backoff, which doubles with the
// receive count; after maxReceiveCount the message goes to the dead-letter queue.
func TestFailuresBackOffThenDeadLetter(t *testing.T) {
	e := newEnv(t)
	dlq := e.queue("standard", nil)
	q := e.queue("standard", func(q *meta.Queue) { q.Redrive = &meta.Redrive{DeadLetterQueue: dlq.ID, MaxReceiveCount: 4} })
	answers := []func(http.ResponseWriter, pushed){
		jsonAnswer(200, map[string]any{"ok": true}),
		func(w http.ResponseWriter, _ pushed) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"results":[` + strings.Repeat(" ", 70<<10) + `]}`))
		},
		status(500),
		status(429), // without Retry-After: a failure like any other
	}
	classes := []string{pusher.ErrInvalidResponse, pusher.ErrInvalidResponse, pusher.ErrHTTPStatus, pusher.ErrHTTPStatus}
	ep := newEndpoint(t, false, nil)
	e.subscribe(q, ep.URL, nil)
	e.pusher(func(c *pusher.Config) { c.RandN = func(n int64) int64 { return n } }) // full jitter: wait = base
	// Each answer is in place before the push it answers can start: the first before the
	// send, the next before the clock passes the backoff.
	ep.setRespond(answers[0])
	msg := e.send(q, "failing")[0]
	for i := range answers {
		got := ep.next(t)
		if got.body.Messages[0].ReceiveCount != i+1 {
			t.Fatalf("attempt %d: receiveCount %d", i+1, got.body.Messages[0].ReceiveCount)
		}
		a := e.attempt(q)
		if a.Outcome != meta.AttemptFailed || a.Error != classes[i] {
			t.Fatalf("attempt %d: %+v, want error %s", i+1, a, classes[i])
		}
		base := time.Second << i
		m, ok := e.browse(q, engine.StateInFlight)[msg]
		if !ok || !m.VisibleAt.Equal(e.clk.Now().Add(base)) {
			t.Fatalf("attempt %d: visible again at %v, want now+%s", i+1, m.VisibleAt, base)
		}
		if i+1 < len(answers) {
			ep.setRespond(answers[i+1])
		}
		e.clk.Advance(base)
	}
	// The fifth receive finds it received 4 times: it moves to the dead-letter queue.
	if st := e.stats(dlq); st.Visible != 1 {
		e.clk.Advance(time.Millisecond)
		wakeUntil(t, func() bool { return e.stats(dlq).Visible == 1 })
	}
	if m := e.browse(dlq, engine.StateVisible)[msg]; m.DeadLetter == nil || m.DeadLetter.Reason != engine.RedriveReason {
		t.Fatalf("dead-lettered: %+v", m)
	}
	recent, err := e.attempts.Recent(t.Context(), e.mustSub(q).ID, 10)
	if err != nil || len(recent) != 4 || recent[0].Error != pusher.ErrHTTPStatus || recent[3].Error != pusher.ErrInvalidResponse {
		t.Fatalf("attempts log: %+v %v", recent, err)
	}
}

func (e *env) mustSub(q meta.Queue) meta.Subscription {
	s, err := e.store.GetSubscription(e.t.Context(), q.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// wakeUntil polls a condition whose change no event announces (a move that the pusher's next
// receive makes once the clock passed a deadline); each poll is a storage read.
func wakeUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 20 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestThrottleAndFlowControl: 429/503 with Retry-After retry every message after it and halve
// the subscription's batches in flight; successes grow it back by one each.
func TestThrottleAndFlowControl(t *testing.T) {
	e := newEnv(t)
	ep := newEndpoint(t, false, func(w http.ResponseWriter, _ pushed) {
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(503)
	})
	q := e.queue("standard", nil)
	e.subscribe(q, ep.URL, func(s *meta.Subscription) { s.MaxInFlight = 8; s.BatchSize = 1 })
	p := e.pusher(nil)
	msg := e.send(q, "throttled")[0]
	a := e.attempt(q)
	if a.Outcome != meta.AttemptThrottled || a.StatusCode != 503 {
		t.Fatalf("attempt %+v", a)
	}
	if m := e.browse(q, engine.StateInFlight)[msg]; !m.VisibleAt.Equal(e.clk.Now().Add(7 * time.Second)) {
		t.Fatalf("visible again at %v, want now+7s", m.VisibleAt)
	}
	if limit, _, _ := p.InFlightLimit(q.ID); limit != 4 {
		t.Fatalf("limit after one 503: %d, want 4", limit)
	}
	ep.setRespond(func(w http.ResponseWriter, _ pushed) { w.Header().Set("Retry-After", "1"); w.WriteHeader(429) })
	e.clk.Advance(7 * time.Second)
	e.attempt(q)
	if limit, _, _ := p.InFlightLimit(q.ID); limit != 2 {
		t.Fatalf("limit after a 429: %d, want 2", limit)
	}
	ep.setRespond(status(200))
	e.clk.Advance(time.Second)
	e.attempt(q)
	if limit, _, _ := p.InFlightLimit(q.ID); limit != 3 {
		t.Fatalf("limit after a success: %d, want 3", limit)
	}
	e.send(q, "1", "2", "3", "4", "5", "6", "7", "8")
	for range 8 {
		e.attempt(q)
	}
	if limit, _, _ := p.InFlightLimit(q.ID); limit != 8 {
		t.Fatalf("limit after 9 successes: %d, want maxInFlight 8", limit)
	}
}

// TestTransportFailures: timeouts, refused connections and untrusted certificates are
// failures with their class; a timeout also halves the batches in flight.
func TestTransportFailures(t *testing.T) {
	e := newEnv(t)
	block := make(chan struct{})
	slow := newEndpoint(t, false, func(w http.ResponseWriter, _ pushed) { <-block })
	t.Cleanup(func() { close(block) })
	untrusted := newEndpoint(t, true, status(200))
	gone := newEndpoint(t, false, status(200))
	gone.Close()
	p := e.pusher(nil)
	for _, c := range []struct {
		url, class string
		limit      int
		timeout    int
	}{
		{slow.URL, pusher.ErrTimeout, 5, 1},
		// Generous timeouts where the failure comes first: a TLS handshake under -race on a
		// loaded machine can take longer than a second.
		{untrusted.URL, pusher.ErrTLS, 10, 30},
		{gone.URL, pusher.ErrConnection, 10, 30},
	} {
		q := e.queue("standard", nil)
		e.subscribe(q, c.url, func(s *meta.Subscription) { s.TimeoutSeconds = c.timeout })
		e.send(q, "x")
		a := e.attempt(q)
		if a.Outcome != meta.AttemptFailed || a.Error != c.class || a.StatusCode != 0 {
			t.Fatalf("%s: attempt %+v, want %s", c.url, a, c.class)
		}
		if limit, _, _ := p.InFlightLimit(q.ID); limit != c.limit {
			t.Fatalf("%s: limit %d, want %d", c.class, limit, c.limit)
		}
		if st := e.stats(q); st.InFlight != 1 {
			t.Fatalf("%s: %+v", c.class, st)
		}
	}
}

// TestSSRFGuard: without allow-private, loopback, private, link-local and metadata addresses
// are refused at connect time (after DNS: "localhost" too), and the endpoint gets nothing.
func TestSSRFGuard(t *testing.T) {
	e := newEnv(t)
	ep := newEndpoint(t, false, status(200))
	port := ep.URL[strings.LastIndex(ep.URL, ":")+1:]
	e.pusher(func(c *pusher.Config) { c.AllowPrivate = false })
	for _, u := range []string{
		ep.URL, "http://localhost:" + port, "http://[::1]:" + port, "https://10.0.0.1/", "https://169.254.169.254/latest/meta-data",
		"https://[::ffff:127.0.0.1]:" + port, "https://100.64.0.1/",
	} {
		q := e.queue("standard", nil)
		e.subscribe(q, u, func(s *meta.Subscription) { s.TimeoutSeconds = 2 })
		e.send(q, "x")
		if a := e.attempt(q); a.Error != pusher.ErrBlocked {
			t.Fatalf("%s: attempt %+v, want %s", u, a, pusher.ErrBlocked)
		}
	}
	select {
	case p := <-ep.got:
		t.Fatalf("a loopback endpoint was reached: %s", p.raw)
	default:
	}
}

// TestPauseResume: a pause applies before the next batch; messages wait; resume pushes them.
func TestPauseResume(t *testing.T) {
	e := newEnv(t)
	ep := newEndpoint(t, false, status(200))
	q := e.queue("standard", nil)
	sub := e.subscribe(q, ep.URL, nil)
	p := e.pusher(nil)
	e.send(q, "before")
	ep.next(t)
	e.attempt(q)
	paused := e.update(p, sub, func(s *meta.Subscription) { s.Paused = true })
	e.applied(q, func(s meta.Subscription) bool { return s.Version == paused.Version })
	sent := e.send(q, "during 1", "during 2")
	// A pull consumer gets them: the paused pusher does not compete.
	res, err := e.eng.Receive(t.Context(), e.engineQueue(q), engine.ReceiveRequest{Max: 10, Visibility: time.Second})
	if err != nil || len(res.Messages) != 2 {
		t.Fatalf("pull while paused: %d messages, %v", len(res.Messages), err)
	}
	cs := []engine.VisibilityChange{{Delivery: res.Messages[0].Delivery}, {Delivery: res.Messages[1].Delivery}}
	if _, err := e.eng.ChangeVisibility(t.Context(), e.engineQueue(q), cs); err != nil {
		t.Fatal(err)
	}
	resumed := e.update(p, sub, func(s *meta.Subscription) { s.Paused = false })
	e.applied(q, func(s meta.Subscription) bool { return s.Version == resumed.Version })
	var got []string
	for len(got) < 2 {
		for _, m := range ep.next(t).body.Messages {
			got = append(got, m.MessageID)
		}
	}
	slices.Sort(got)
	want := []string{sent[0].String(), sent[1].String()}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("after resume: %v, want %v", got, want)
	}
}

// TestGiveBackWhenTooLittleTimeLeft: a batch whose deadline leaves less than the push timeout
// (plus the margin) is given back, not pushed.
func TestGiveBackWhenTooLittleTimeLeft(t *testing.T) {
	e := newEnv(t)
	ep := newEndpoint(t, false, status(200))
	q := e.queue("standard", nil)
	e.subscribe(q, ep.URL, nil)
	e.pusher(func(c *pusher.Config) { c.SendMargin = time.Hour })
	e.send(q, "x")
	ev := e.next(func(ev event) bool { return ev.gaveBack > 0 && ev.queue == q.ID })
	if ev.gaveBack != 1 {
		t.Fatalf("gave back %d", ev.gaveBack)
	}
	// Given back, not lost (the pusher receives it again, and gives it back again, at once).
	if st := e.stats(q); st.Visible+st.InFlight != 1 {
		t.Fatalf("after give-back: %+v", st)
	}
	select {
	case p := <-ep.got:
		t.Fatalf("pushed with too little time left: %s", p.raw)
	default:
	}
}

// TestBatching: batchSize caps a batch (several receives fill one of 25); batchWindowMs holds
// a partial batch for more messages.
func TestBatching(t *testing.T) {
	e := newEnv(t)
	ep := newEndpoint(t, false, status(200))
	q := e.queue("standard", nil)
	sub := e.subscribe(q, ep.URL, func(s *meta.Subscription) { s.BatchSize = 25; s.Paused = true })
	p := e.pusher(nil)
	e.applied(q, func(meta.Subscription) bool { return true })
	bodies := make([]string, 60)
	for i := range bodies {
		bodies[i] = strconv.Itoa(i)
	}
	e.send(q, bodies...)
	e.update(p, sub, func(s *meta.Subscription) { s.Paused = false })
	sizes := []int{}
	for n := 0; n < 60; {
		b := ep.next(t)
		sizes = append(sizes, len(b.body.Messages))
		n += len(b.body.Messages)
	}
	slices.Sort(sizes)
	if !slices.Equal(sizes, []int{10, 25, 25}) {
		t.Fatalf("batch sizes %v, want 25, 25, 10", sizes)
	}
}

// TestFIFOThroughPush: a group's next batch waits until its previous batch is settled, while
// other groups keep flowing; each group arrives in order.
func TestFIFOThroughPush(t *testing.T) {
	e := newEnv(t)
	ep := newEndpoint(t, false, status(202)) // defer everything: the receiver settles by handle
	q := e.queue("fifo", nil)
	e.subscribe(q, ep.URL, func(s *meta.Subscription) { s.BatchSize = 2 })
	e.pusher(nil)
	var msgs []engine.Message
	for i := range 4 {
		for _, g := range []string{"A", "B", "C"} {
			msgs = append(msgs, engine.Message{Body: fmt.Sprintf("%s%d", g, i), GroupID: g})
		}
	}
	e.sendMsgs(q, msgs)
	seen := map[string][]string{}
	inFlight := map[string][]pushMsg{}
	for total := 0; total < 12; {
		b := ep.next(t)
		groups := map[string]bool{}
		for _, m := range b.body.Messages {
			if len(inFlight[m.GroupID]) > 0 && !groups[m.GroupID] {
				t.Fatalf("group %s pushed again while a batch of it is unsettled: %s", m.GroupID, b.raw)
			}
			groups[m.GroupID] = true
			seen[m.GroupID] = append(seen[m.GroupID], m.Body)
			inFlight[m.GroupID] = append(inFlight[m.GroupID], m)
			total++
		}
		// Settle the oldest unsettled group's batch by handle, which lets that group move on.
		for _, g := range []string{"A", "B", "C"} {
			if len(inFlight[g]) == 0 {
				continue
			}
			var ds []engine.Delivery
			for _, m := range inFlight[g] {
				d, err := e.signer.Verify(m.ReceiptHandle, "h")
				if err != nil {
					t.Fatal(err)
				}
				ds = append(ds, d)
			}
			inFlight[g] = nil
			if _, err := e.eng.Ack(t.Context(), e.engineQueue(q), ds); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	for _, g := range []string{"A", "B", "C"} {
		want := []string{g + "0", g + "1", g + "2", g + "3"}
		if !slices.Equal(seen[g], want) {
			t.Fatalf("group %s arrived as %v, want %v", g, seen[g], want)
		}
	}
}

// TestPriorityThroughPush: push takes the highest priority first, the oldest first within
// one, as a receive does (docs/delivery-options.md#priority).
func TestPriorityThroughPush(t *testing.T) {
	e := newEnv(t)
	ep := newEndpoint(t, false, status(200))
	q := e.queue("standard", nil)
	sub := e.subscribe(q, ep.URL, func(s *meta.Subscription) { s.BatchSize = 10; s.Paused = true })
	p := e.pusher(nil)
	e.applied(q, func(meta.Subscription) bool { return true })
	e.sendMsgs(q, []engine.Message{{Body: "low1"}, {Body: "high1", Priority: 9}, {Body: "mid", Priority: 5},
		{Body: "low2"}, {Body: "high2", Priority: 9}})
	e.update(p, sub, func(s *meta.Subscription) { s.Paused = false })
	var got []string
	for len(got) < 5 {
		for _, m := range ep.next(t).body.Messages {
			got = append(got, m.Body)
		}
	}
	if want := []string{"high1", "high2", "mid", "low1", "low2"}; !slices.Equal(got, want) {
		t.Fatalf("pushed in the order %v, want %v", got, want)
	}
}

// TestAtMostOncePush: a push from an at-most-once queue carries no receipt handle or deadline,
// and the batch is gone once sent, whatever the answer: a failure, a deferral or a retry
// result pushes nothing again, and nothing is ever in flight.
func TestAtMostOncePush(t *testing.T) {
	e := newEnv(t)
	q := e.queue("standard", func(q *meta.Queue) { q.Delivery = meta.DeliveryAtMostOnce })
	ep := newEndpoint(t, false, status(500))
	e.subscribe(q, ep.URL, nil)
	e.pusher(func(c *pusher.Config) { c.RandN = func(n int64) int64 { return n } })
	answers := []func(http.ResponseWriter, pushed){
		status(500),
		status(202),
		func(w http.ResponseWriter, p pushed) {
			jsonAnswer(200, map[string]any{"results": []map[string]any{{"messageId": p.body.Messages[0].MessageID, "outcome": "retry"}}})(w, p)
		},
	}
	for i, respond := range answers {
		ep.setRespond(respond)
		body := fmt.Sprint("m", i)
		e.send(q, body)
		got := ep.next(t)
		m := got.body.Messages
		if len(m) != 1 || m[0].Body != body || m[0].ReceiveCount != 1 {
			t.Fatalf("answer %d: pushed %s, want only %s (an earlier batch is never pushed again)", i, got.raw, body)
		}
		if strings.Contains(string(got.raw), "receiptHandle") || strings.Contains(string(got.raw), "visibilityDeadline") {
			t.Fatalf("answer %d: an at-most-once push carries a handle or deadline: %s", i, got.raw)
		}
		e.attempt(q)
		if st := e.stats(q); st.Visible+st.InFlight+st.Delayed != 0 {
			t.Fatalf("answer %d: left %+v, want the batch gone once sent", i, st)
		}
		e.clk.Advance(time.Hour) // past any backoff or deadline: nothing returns
	}
}

// TestCancelOutcome: the outcome "cancel" returns the message at once without counting the
// delivery (docs/delivery-options.md#cancel): it is pushed again with the same receiveCount.
func TestCancelOutcome(t *testing.T) {
	e := newEnv(t)
	q := e.queue("standard", nil)
	ep := newEndpoint(t, false, nil)
	var pushes atomic.Int32
	ep.setRespond(func(w http.ResponseWriter, p pushed) {
		if pushes.Add(1) > 1 {
			w.WriteHeader(200)
			return
		}
		jsonAnswer(200, map[string]any{"results": []map[string]any{
			{"messageId": p.body.Messages[0].MessageID, "outcome": "cancel"},
		}})(w, p)
	})
	e.subscribe(q, ep.URL, nil)
	e.pusher(nil)
	sent := e.send(q, "m")
	first := ep.next(t)
	again := ep.next(t)
	for _, got := range []pushed{first, again} {
		if len(got.body.Messages) != 1 || got.body.Messages[0].MessageID != sent[0].String() || got.body.Messages[0].ReceiveCount != 1 {
			t.Fatalf("pushed %s, want %s with receiveCount 1 both times", got.raw, sent[0])
		}
	}
	e.attempt(q)
	e.attempt(q)
	if st := e.stats(q); st.Visible+st.InFlight != 0 {
		t.Fatalf("at the end: %+v", st)
	}
}

// TestExclusiveFIFOThroughPush: on a fifo queue whose groupPolicy is exclusive, the pusher
// receives as one consumer per lease ("push-lease-<token>"), so it pushes at all (an
// exclusive queue's receive must name a consumer) and the group it pushed is bound to it.
func TestExclusiveFIFOThroughPush(t *testing.T) {
	e := newEnv(t)
	ep := newEndpoint(t, false, status(202)) // deferred: the group stays in flight, listed
	q := e.queue("fifo", func(q *meta.Queue) { q.GroupPolicy = string(engine.GroupExclusive) })
	e.subscribe(q, ep.URL, nil)
	e.pusher(nil)
	e.sendMsgs(q, []engine.Message{{Body: "a", GroupID: "A"}})
	if b := ep.next(t); len(b.body.Messages) != 1 || b.body.Messages[0].Body != "a" {
		t.Fatalf("pushed %s", b.raw)
	}
	page, err := e.eng.Groups(t.Context(), e.engineQueue(q), 10, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Groups) != 1 || !strings.HasPrefix(page.Groups[0].ConsumerID, "push-lease-") {
		t.Fatalf("groups %+v, want A bound to the pusher's lease", page.Groups)
	}
}
