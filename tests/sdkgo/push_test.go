package sdkgo

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queueshq/queues/sdk/go/client"
)

var (
	secretOld = "whsec_" + base64.StdEncoding.EncodeToString([]byte("the previous secret, 32 bytes!!!"))
	secretNew = "whsec_" + base64.StdEncoding.EncodeToString([]byte("the current secret, 32 bytes...."))
)

// push builds a signed push request as the pusher sends it.
func push(t *testing.T, body string, at time.Time, secrets ...string) *http.Request {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/push", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(client.HeaderWebhookID, "att_1")
	r.Header.Set(client.HeaderWebhookTimestamp, strconv.FormatInt(at.Unix(), 10))
	var sigs []string
	for _, s := range secrets {
		sig, err := client.Sign(s, "att_1", at, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		sigs = append(sigs, sig)
	}
	r.Header.Set(client.HeaderWebhookSignature, strings.Join(sigs, " "))
	return r
}

func batchJSON(t *testing.T, msgs ...client.Message) string {
	t.Helper()
	b, err := json.Marshal(client.PushBatch{Subscription: "qsb_x", Queue: client.QueueRef{ID: "0193a5b3-1a2b-7c3d-8e4f-5a6b7c8d9e0f", Name: "orders"}, Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The signature check: a good signature under the current or the previous secret passes;
// a wrong secret, a stale or future timestamp, a tampered body or missing headers are 401,
// and the handler does not run.
func TestPushReceiverSignature(t *testing.T) {
	now := time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC)
	body := batchJSON(t, client.Message{MessageID: "m1", Body: "hello", ReceiptHandle: "h1", ReceiveCount: 1})
	ran := 0
	recv := client.NewPushReceiver(func(ctx context.Context, m *client.Message) error { ran++; return nil }, "", secretNew, secretOld)
	recv.Now = func() time.Time { return now }
	wrong := "whsec_" + base64.StdEncoding.EncodeToString([]byte("somebody else's secret.........."))
	tampered := httptest.NewRequest(http.MethodPost, "/push", strings.NewReader(strings.Replace(body, "hello", "HELLO", 1)))
	tampered.Header = push(t, body, now, secretNew).Header
	noSig := push(t, body, now, secretNew)
	noSig.Header.Del(client.HeaderWebhookSignature)
	otherScheme := push(t, body, now, secretNew)
	otherScheme.Header.Set(client.HeaderWebhookSignature, strings.Replace(otherScheme.Header.Get(client.HeaderWebhookSignature), "v1,", "v1a,", 1))
	badTS := push(t, body, now, secretNew)
	badTS.Header.Set(client.HeaderWebhookTimestamp, "yesterday")

	for _, tc := range []struct {
		name   string
		req    *http.Request
		status int
	}{
		{"current secret", push(t, body, now, secretNew), 200},
		{"previous secret, during a rotation", push(t, body, now, secretOld), 200},
		{"signed with both", push(t, body, now, wrong, secretNew), 200},
		{"4 minutes old", push(t, body, now.Add(-4*time.Minute), secretNew), 200},
		{"wrong secret", push(t, body, now, wrong), 401},
		{"6 minutes old", push(t, body, now.Add(-6*time.Minute), secretNew), 401},
		{"6 minutes ahead", push(t, body, now.Add(6*time.Minute), secretNew), 401},
		{"tampered body", tampered, 401},
		{"no signature", noSig, 401},
		{"not v1", otherScheme, 401},
		{"timestamp not a number", badTS, 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ran = 0
			w := httptest.NewRecorder()
			recv.ServeHTTP(w, tc.req)
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.status, w.Body)
			}
			if tc.status == 401 {
				var e struct{ Error struct{ Code string } }
				if ran != 0 || json.Unmarshal(w.Body.Bytes(), &e) != nil || e.Error.Code != "unauthenticated" {
					t.Fatalf("a rejected push ran the handler %d times or answered %s", ran, w.Body)
				}
			} else if ran != 1 {
				t.Fatalf("handler ran %d times", ran)
			}
		})
	}
	// Verify on its own, for other routers.
	r := push(t, body, now, secretOld)
	if err := client.Verify([]string{secretNew}, r.Header, []byte(body), now, 0); !errors.Is(err, client.ErrNoMatchingSecret) {
		t.Fatalf("Verify with only the new secret: %v", err)
	}
	if err := client.Verify([]string{secretNew, secretOld}, r.Header, []byte(body), now.Add(10*time.Minute), 0); !errors.Is(err, client.ErrStaleTimestamp) {
		t.Fatalf("Verify 10 minutes later: %v", err)
	}
	if err := client.Verify([]string{"not-a-secret"}, r.Header, []byte(body), now, 0); !errors.Is(err, client.ErrBadSecret) {
		t.Fatalf("Verify with a malformed secret: %v", err)
	}
}

// Each message's outcome is answered from its handler's result, messages of one group are
// handled in order, and the handler sees the whole push.
func TestPushReceiverOutcomes(t *testing.T) {
	now := time.Now()
	msgs := []client.Message{
		{MessageID: "a", Body: "ack"}, {MessageID: "b", Body: "retry"}, {MessageID: "c", Body: "retry-after"},
		{MessageID: "d", Body: "dead-letter"}, {MessageID: "e", Body: "defer"}, {MessageID: "f", Body: "error"},
		{MessageID: "g", Body: "panic"}, {MessageID: "h", Body: "dead-letter-no-reason"},
	}
	for i := range 5 {
		msgs = append(msgs, client.Message{MessageID: "g" + strconv.Itoa(i), Body: "grouped", GroupID: "G"})
	}
	var mu sync.Mutex
	var order []string
	var running atomic.Int32
	recv := client.NewPushReceiver(func(ctx context.Context, m *client.Message) error {
		if b, ok := client.PushBatchFrom(ctx); !ok || b.Subscription != "qsb_x" || b.Queue.Name != "orders" || !slices.ContainsFunc(b.Messages, func(x client.Message) bool { return x.MessageID == m.MessageID }) {
			t.Errorf("PushBatchFrom: %+v %v", b, ok)
		}
		switch m.Body {
		case "retry":
			return client.Retry()
		case "retry-after":
			return client.RetryAfter(90 * time.Second)
		case "dead-letter":
			return client.DeadLetter("bad input")
		case "dead-letter-no-reason":
			return client.DeadLetter("")
		case "defer":
			return client.Defer()
		case "error":
			return errors.New("boom")
		case "panic":
			panic("kaboom")
		case "grouped":
			if running.Add(1) > 1 {
				t.Errorf("two messages of one group handled at once")
			}
			runtime.Gosched()
			mu.Lock()
			order = append(order, m.MessageID)
			mu.Unlock()
			running.Add(-1)
		}
		return nil
	}, secretNew)
	w := httptest.NewRecorder()
	recv.ServeHTTP(w, push(t, batchJSON(t, msgs...), now, secretNew))
	if w.Code != 200 || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	want := `{"results":[{"messageId":"a","outcome":"ack"},{"messageId":"b","outcome":"retry"},` +
		`{"messageId":"c","outcome":"retry","retryAfterSeconds":90},{"messageId":"d","outcome":"dead-letter","reason":"bad input"},` +
		`{"messageId":"e","outcome":"defer"},{"messageId":"f","outcome":"retry"},{"messageId":"g","outcome":"retry"},` +
		`{"messageId":"h","outcome":"dead-letter"},{"messageId":"g0","outcome":"ack"},{"messageId":"g1","outcome":"ack"},` +
		`{"messageId":"g2","outcome":"ack"},{"messageId":"g3","outcome":"ack"},{"messageId":"g4","outcome":"ack"}]}`
	if got := strings.TrimSpace(w.Body.String()); got != want {
		t.Fatalf("answer\n %s\nwant\n %s", got, want)
	}
	if !slices.Equal(order, []string{"g0", "g1", "g2", "g3", "g4"}) {
		t.Fatalf("group handled out of order: %v", order)
	}
	// ErrorRetryAfter turns a failure into a delayed retry.
	recv.ErrorRetryAfter = func(*client.Message, error) time.Duration { return 1500 * time.Millisecond }
	w = httptest.NewRecorder()
	recv.ServeHTTP(w, push(t, batchJSON(t, client.Message{MessageID: "f", Body: "error"}), now, secretNew))
	if got := strings.TrimSpace(w.Body.String()); got != `{"results":[{"messageId":"f","outcome":"retry","retryAfterSeconds":2}]}` {
		t.Fatalf("answer with ErrorRetryAfter: %s", got)
	}
	// A signed body that is not a batch is 400; a GET is 405.
	w = httptest.NewRecorder()
	recv.ServeHTTP(w, push(t, "[1,2]", now, secretNew))
	if w.Code != 400 {
		t.Fatalf("non-batch body: %d", w.Code)
	}
	w = httptest.NewRecorder()
	recv.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/push", nil))
	if w.Code != 405 {
		t.Fatalf("GET: %d", w.Code)
	}
}

// The push receiver behind a real subscription: the pusher fleet member TestMain runs pushes
// to it, signed with the subscription's secret; the receiver's outcomes settle the messages
// (acknowledged, dead-lettered with the reason). After a rotation a receiver holding only the
// new secret verifies the pushes.
func TestPushReceiverWithPusher(t *testing.T) {
	tn := newTenant(t)
	c := subscriptionClient(t, tn, tn.c)
	ctx := t.Context()
	dlq := tn.queue(t, client.CreateQueueInput{Name: "pushed-dlq"})
	tn.queue(t, client.CreateQueueInput{Name: "pushed", Redrive: &client.Redrive{DeadLetterQueue: dlq.ID, MaxReceiveCount: 5}})

	handled := make(chan string, 10)
	var current atomic.Pointer[client.PushReceiver]
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { current.Load().ServeHTTP(w, r) }))
	defer endpoint.Close()
	receiver := func(secret string) *client.PushReceiver {
		return client.NewPushReceiver(func(ctx context.Context, m *client.Message) error {
			handled <- m.Body
			if m.Body == "bad" {
				return client.DeadLetter("unparseable")
			}
			return nil
		}, secret)
	}

	sub, err := c.CreateSubscription(ctx, "pushed", client.SubscriptionInput{Endpoint: endpoint.URL + "/hook", BatchSize: client.Int(10)})
	if err != nil {
		t.Fatal(err)
	}
	current.Store(receiver(sub.SigningSecret))
	tn.send(t, "pushed", "good", "bad")
	got := []string{await(t, handled, 20*time.Second, "a push"), await(t, handled, 20*time.Second, "a push")}
	slices.Sort(got)
	if !slices.Equal(got, []string{"bad", "good"}) {
		t.Fatalf("pushed %v", got)
	}
	waitFor(t, func() bool { n := tn.counts(t, "pushed"); return n.Visible+n.InFlight == 0 }, "the pushed messages to be settled")
	dl, err := tn.c.Receive(ctx, "pushed-dlq", client.ReceiveInput{WaitSeconds: client.Int(5)})
	if err != nil || len(dl) != 1 || dl[0].Body != "bad" || dl[0].DeadLetter == nil || dl[0].DeadLetter.Reason != "unparseable" {
		t.Fatalf("dead-letter queue: %+v %v", dl, err)
	}

	rotated, err := c.RotateSecret(ctx, "pushed")
	if err != nil {
		t.Fatal(err)
	}
	current.Store(receiver(rotated.SigningSecret)) // only the new secret
	tn.send(t, "pushed", "after rotation")
	if b := await(t, handled, 20*time.Second, "a push after the rotation"); b != "after rotation" {
		t.Fatalf("pushed %q", b)
	}
	waitFor(t, func() bool { n := tn.counts(t, "pushed"); return n.Visible+n.InFlight == 0 }, "the last message to be settled")
	attempts, err := c.ListAttempts(ctx, "pushed", 10)
	if err != nil || len(attempts.Attempts) < 2 || attempts.Attempts[0].StatusCode != 200 {
		t.Fatalf("attempts: %+v %v", attempts, err)
	}
}

// waitFor polls cond (state kept in storage gives no event to wait on) for up to 20 s.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
