package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// topicReceiver is a push endpoint this test runs: it verifies each request's signature with
// the reference library, acknowledges every batch (204) and records what it was pushed, by
// message id and by body number, with the replayed copies apart. Problems are recorded, not
// failed from the handler's goroutine.
type topicReceiver struct {
	srv *httptest.Server

	mu       sync.Mutex
	wh       *standardwebhooks.Webhook
	byID     map[string]int // published messageId → times pushed
	byNumber map[int]int    // body number → times pushed
	idOf     map[int]string // body number → the messageId pushed with it
	replayed []topicPushed  // the copies pushed with replayOf
	problems []string
	changed  chan struct{} // a signal per request recorded
}

// topicPushed is one message of a push payload, as the receiver reads it.
type topicPushed struct {
	MessageID string `json:"messageId"`
	Body      string `json:"body"`
	ReplayOf  *struct {
		Topic    string `json:"topic"`
		Sequence uint64 `json:"sequence"`
	} `json:"replayOf"`
}

func newTopicReceiver(t *testing.T) *topicReceiver {
	r := &topicReceiver{byID: map[string]int{}, byNumber: map[int]int{}, idOf: map[int]string{}, changed: make(chan struct{}, 1)}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *topicReceiver) serve(rw http.ResponseWriter, req *http.Request) {
	raw, _ := io.ReadAll(req.Body)
	var body struct {
		Messages []topicPushed `json:"messages"`
	}
	r.mu.Lock()
	defer func() {
		r.mu.Unlock()
		select {
		case r.changed <- struct{}{}:
		default:
		}
	}()
	if r.wh == nil || r.wh.Verify(raw, req.Header) != nil {
		r.problems = append(r.problems, fmt.Sprintf("a push whose signature does not verify: %s", raw))
		rw.WriteHeader(http.StatusUnauthorized)
		return
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		r.problems = append(r.problems, fmt.Sprintf("a push that is not JSON: %s", raw))
	}
	for _, m := range body.Messages {
		if m.ReplayOf != nil {
			r.replayed = append(r.replayed, m)
			continue
		}
		n, err := strconv.Atoi(m.Body)
		if err != nil {
			r.problems = append(r.problems, fmt.Sprintf("a pushed body that is not a number: %q", m.Body))
			continue
		}
		r.byID[m.MessageID]++
		r.byNumber[n]++
		r.idOf[n] = m.MessageID
	}
	rw.WriteHeader(http.StatusNoContent)
}

// await waits, each recorded request being the event, until done holds under the lock.
func (r *topicReceiver) await(t *testing.T, what string, done func() bool) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		r.mu.Lock()
		ok := done()
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-r.changed:
		case <-deadline:
			r.mu.Lock()
			defer r.mu.Unlock()
			t.Fatalf("%s: not within 60 s (%d distinct ids pushed, problems %v)", what, len(r.byID), r.problems)
		}
	}
}

// check: the receiver was pushed exactly the numbers want selects, each once, with the
// messageId it was published with, and nothing it could not verify.
func (r *topicReceiver) check(t *testing.T, name string, published map[int]string, want func(int) bool) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.problems) > 0 {
		t.Fatalf("%s: %v", name, r.problems)
	}
	for n, id := range published {
		c := 0
		if want(n) {
			c = 1
		}
		if r.byNumber[n] != c || r.byID[id] != c || (c == 1 && r.idOf[n] != id) {
			t.Fatalf("%s: message %d (%s) pushed %d times by number, %d by id (as %s), want %d", name, n, id, r.byNumber[n], r.byID[id], r.idOf[n], c)
		}
	}
	if len(r.byID) != len(r.byNumber) {
		t.Fatalf("%s: %d ids for %d numbers", name, len(r.byID), len(r.byNumber))
	}
}

// red is what the filtered binding selects: every third message.
func red(n int) bool { return n%3 == 0 }

// TestPushFromTopic (docs/topics.md: "a queue's push subscription then pushes it"): one publish
// reaches every bound endpoint. A topic feeds three queues: two pushed to receivers this test
// runs (one through a filtered binding), one pulled. 200 numbered messages are published;
// each receiver is pushed each message it selects exactly once, with the published messageId
// and a verified signature, and the pulled queue receives all 200. A copy replayed into a
// pushed queue is pushed with replayOf.
func TestPushFromTopic(t *testing.T) {
	srv, srvA, srvB := pushServers(t)
	all, reds := newTopicReceiver(t), newTopicReceiver(t)
	tn := newTenantOn(t, srvA, srvB)
	op := newClient(t, srv, tn.token)
	topicID := tn.a.do("POST", "/v1/topics", map[string]any{"name": "pt-events"}).must(t, 201).str("id")
	tn.queue(t, "pt-all", nil)
	tn.queue(t, "pt-reds", nil)
	tn.queue(t, "pt-pulled", map[string]any{"visibilityTimeoutSeconds": 600})
	tn.a.do("POST", "/v1/queues/pt-all/sources", map[string]any{"topic": "pt-events"}).must(t, 201)
	tn.b.do("POST", "/v1/queues/pt-reds/sources", map[string]any{"topic": "pt-events",
		"filter": map[string]any{"attributes": map[string]any{"color": "red"}}}).must(t, 201)
	tn.a.do("POST", "/v1/queues/pt-pulled/sources", map[string]any{"topic": topicID}).must(t, 201)
	for _, s := range []struct {
		queue string
		r     *topicReceiver
	}{{"pt-all", all}, {"pt-reds", reds}} {
		sub := op.do("POST", "/v1/queues/"+s.queue+"/subscription", map[string]any{"endpoint": s.r.srv.URL + "/hook", "timeoutSeconds": 10}).must(t, 201)
		wh, err := standardwebhooks.NewWebhook(sub.str("signingSecret"))
		if err != nil {
			t.Fatal(err)
		}
		s.r.mu.Lock()
		s.r.wh = wh
		s.r.mu.Unlock()
	}

	published := publishNumbered(t, tn, "pt-events", 200)
	all.await(t, "pt-all pushed all 200", func() bool { return len(all.byNumber) == 200 })
	reds.await(t, "pt-reds pushed the 66 red ones", func() bool { return len(reds.byNumber) == 66 })
	pullAll(t, tn.b, "pt-pulled", published)
	// Both pushed queues settle empty: every push was acknowledged, none is still to come.
	for _, q := range []string{"pt-all", "pt-reds"} {
		awaitEmpty(t, tn.a, q)
	}
	all.check(t, "pt-all", published, func(int) bool { return true })
	reds.check(t, "pt-reds", published, red)

	// A replayed copy of message 7 (not red: the replay's own filter, none, selects it) is
	// pushed to the filtered queue's receiver with its origin.
	rp := tn.a.do("POST", "/v1/topics/pt-events/replays", map[string]any{"queue": "pt-reds", "from": 7, "to": 7}).must(t, 201)
	// A copy pushed without replayOf would count as a 67th message.
	reds.await(t, "the replayed copy pushed", func() bool { return len(reds.replayed) == 1 || len(reds.byID) > 66 })
	if r := awaitReplay(t, tn.b, "pt-events", rp.str("id")); r.str("status") != "completed" || r.body["moved"] != 1.0 {
		t.Fatalf("replay: %s", r.raw)
	}
	reds.mu.Lock()
	defer reds.mu.Unlock()
	if len(reds.replayed) != 1 || len(reds.byID) != 66 {
		t.Fatalf("pt-reds: the replayed copy pushed without replayOf (%d replayed, %d ids)", len(reds.replayed), len(reds.byID))
	}
	m := reds.replayed[0]
	if m.ReplayOf.Topic != topicID || m.ReplayOf.Sequence != 7 || m.Body != "7" || m.MessageID == published[7] || m.MessageID == "" {
		t.Fatalf("replayed copy pushed as %+v (%+v), want message 7 (published as %s) of topic %s", m, *m.ReplayOf, published[7], topicID)
	}
	if len(reds.problems) > 0 {
		t.Fatalf("pt-reds: %v", reds.problems)
	}
}

// publishNumbered publishes bodies 1..n to topic, ten at a time through alternate replicas,
// every third one red, and answers each number's messageId. The sequences are the numbers.
func publishNumbered(t *testing.T, tn *tenant, topic string, n int) map[int]string {
	t.Helper()
	ids := map[int]string{}
	for i := 1; i <= n; i += 10 {
		var msgs []map[string]any
		for j := i; j < i+10 && j <= n; j++ {
			color := "blue"
			if red(j) {
				color = "red"
			}
			msgs = append(msgs, map[string]any{"body": strconv.Itoa(j), "attributes": map[string]string{"color": color}})
		}
		c := []*client{tn.a, tn.b}[(i/10)%2]
		r := c.do("POST", "/v1/topics/"+topic+"/messages", map[string]any{"messages": msgs}).must(t, 200)
		if len(r.list("failed")) > 0 {
			t.Fatalf("publish: %s", r.raw)
		}
		for k, m := range r.list("messages") {
			if m["sequence"] != float64(i+k) {
				t.Fatalf("publish of %d: %s", i+k, r.raw)
			}
			ids[i+k] = m["messageId"].(string)
		}
	}
	return ids
}

// pullAll receives queue until it has had every published message, each once (the queue's
// visibility timeout outlasts the test), with the published messageId.
func pullAll(t *testing.T, c *client, queue string, published map[int]string) {
	t.Helper()
	got := map[int]bool{}
	for len(got) < len(published) {
		ms := c.receive(t, queue, map[string]any{"maxMessages": 10, "waitSeconds": 10})
		if len(ms) == 0 {
			t.Fatalf("%s: received %d of %d, then nothing for 10 s", queue, len(got), len(published))
		}
		for _, m := range ms {
			n, err := strconv.Atoi(m["body"].(string))
			if err != nil || got[n] || published[n] != m["messageId"] {
				t.Fatalf("%s: received %v again or unpublished (want id %s)", queue, m, published[n])
			}
			got[n] = true
		}
	}
}

// awaitEmpty polls queue's counts until nothing is visible or in flight (the pusher's
// acknowledgements land just after the endpoint answers; no event reaches this process).
func awaitEmpty(t *testing.T, c *client, queue string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		cn := c.counts(t, queue)
		if cn["visible"] == 0.0 && cn["inFlight"] == 0.0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: counts %v after 30 s", queue, cn)
		}
	}
}
