package pusher_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/pusher"
)

// keyedEndpoint is a receiver that counts the requests in progress per key (the value of
// attribute "customer"), holds every request of the key "slow" until release is closed, and
// reports each message it acknowledged on delivered.
type keyedEndpoint struct {
	t         *testing.T
	srv       *httptest.Server
	release   chan struct{}
	delivered chan pushMsg
	blocked   chan string // a request of a blocked key arrived

	mu      sync.Mutex
	current map[string]int
	most    map[string]int
}

func newKeyedEndpoint(t *testing.T) *keyedEndpoint {
	ep := &keyedEndpoint{t: t, release: make(chan struct{}), delivered: make(chan pushMsg, 10000),
		blocked: make(chan string, 100), current: map[string]int{}, most: map[string]int{}}
	ep.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var b struct{ Messages []pushMsg }
		if err := json.Unmarshal(raw, &b); err != nil || len(b.Messages) == 0 {
			t.Errorf("push body: %v: %s", err, raw)
			w.WriteHeader(400)
			return
		}
		key := b.Messages[0].Attributes["customer"]
		for _, m := range b.Messages {
			if m.Attributes["customer"] != key {
				t.Errorf("one push carried keys %q and %q", key, m.Attributes["customer"])
			}
		}
		ep.mu.Lock()
		ep.current[key]++
		ep.most[key] = max(ep.most[key], ep.current[key])
		ep.mu.Unlock()
		defer func() {
			ep.mu.Lock()
			ep.current[key]--
			ep.mu.Unlock()
		}()
		if key == "slow" {
			ep.blocked <- key
			<-ep.release
		}
		for _, m := range b.Messages {
			ep.delivered <- m
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(ep.srv.Close)
	t.Cleanup(ep.unblock) // before the server closes: its handlers must return
	return ep
}

func (ep *keyedEndpoint) unblock() {
	select {
	case <-ep.release:
	default:
		close(ep.release)
	}
}

// deliveredN waits for n acknowledged messages and returns them.
func (ep *keyedEndpoint) deliveredN(n int) []pushMsg {
	ep.t.Helper()
	out := make([]pushMsg, 0, n)
	timeout := time.NewTimer(20 * time.Second)
	defer timeout.Stop()
	for len(out) < n {
		select {
		case m := <-ep.delivered:
			out = append(out, m)
		case <-timeout.C:
			byKey := map[string]int{}
			for _, m := range out {
				byKey[m.Attributes["customer"]]++
			}
			ep.t.Fatalf("%d of %d messages delivered within 20 s (%v)", len(out), n, byKey)
		}
	}
	return out
}

func (ep *keyedEndpoint) mostInFlight() map[string]int {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	out := map[string]int{}
	for k, v := range ep.most {
		out[k] = v
	}
	return out
}

func keyed(customer string, n int) []engine.Message {
	out := make([]engine.Message, n)
	for i := range out {
		out[i] = engine.Message{Body: fmt.Sprintf("%s-%d", customer, i), Attributes: map[string]string{"customer": customer}}
	}
	return out
}

// One key's endpoint does not answer; the other keys' messages are all pushed meanwhile,
// no key ever has more than its parallelism in flight, and the slow key's messages — held
// while they wait, not returned — are each delivered once (receiveCount 1) after it answers.
func TestKeyedFlowSlowKeyHoldsNobodyUp(t *testing.T) {
	e := newEnv(t)
	q := e.queue("standard", nil)
	ep := newKeyedEndpoint(t)
	const parallelism = 2
	e.subscribe(q, ep.srv.URL, func(s *meta.Subscription) {
		s.BatchSize, s.MaxInFlight = 5, 10
		s.FlowControl = meta.FlowControl{KeyAttribute: "customer", Parallelism: parallelism}
	})
	// The slow key's messages first: they are at the head of the queue.
	// Each key sends no more than it may hold (two rounds of its parallelism in flight, 20
	// messages) plus its pushes in flight: nothing goes back to the queue beyond the hold.
	const slow, fast = 30, 20
	e.sendMsgs(q, keyed("slow", slow))
	var rest []engine.Message
	for _, c := range []string{"a", "b", "c"} {
		rest = append(rest, keyed(c, fast)...)
	}
	e.sendMsgs(q, rest)
	e.pusher(nil)

	// Every message of a, b and c arrives while the slow key's pushes are held open.
	for _, m := range ep.deliveredN(3 * fast) {
		if m.Attributes["customer"] == "slow" {
			t.Fatalf("a slow-key message was acknowledged before its endpoint answered: %+v", m)
		}
	}
	for range parallelism {
		<-ep.blocked
	}
	most := ep.mostInFlight()
	for k, n := range most {
		if n > parallelism {
			t.Fatalf("key %q had %d pushes in flight at once, parallelism %d (all: %v)", k, n, parallelism, most)
		}
	}
	if most["slow"] != parallelism {
		t.Fatalf("the slow key reached %d pushes in flight, want its parallelism %d", most["slow"], parallelism)
	}

	ep.unblock()
	for _, m := range ep.deliveredN(slow) {
		if m.Attributes["customer"] != "slow" {
			t.Fatalf("unexpected message after the release: %+v", m)
		}
		if m.ReceiveCount != 1 {
			t.Fatalf("message %s pushed with receiveCount %d: holding it burned an attempt", m.MessageID, m.ReceiveCount)
		}
	}
	if most := ep.mostInFlight(); most["slow"] > parallelism {
		t.Fatalf("the slow key had %d pushes in flight, parallelism %d", most["slow"], parallelism)
	}
}

// rateEndpoint counts the pushed messages per key.
type rateEndpoint struct {
	srv *httptest.Server
	got chan string // one key per pushed message
}

func newRateEndpoint(t *testing.T) *rateEndpoint {
	ep := &rateEndpoint{got: make(chan string, 1000)}
	ep.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b struct{ Messages []pushMsg }
		raw, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(raw, &b); err != nil {
			t.Errorf("push body: %v", err)
		}
		for _, m := range b.Messages {
			ep.got <- m.Attributes["customer"]
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(ep.srv.Close)
	return ep
}

// limitedEvents collects OnRateLimited reports.
type limitedEvents struct {
	ch chan string
}

func (l *limitedEvents) hook(cfg *pusher.Config) {
	cfg.OnRateLimited = func(_ ids.ID, key string, sub bool) {
		if sub {
			key = "(subscription)"
		}
		select {
		case l.ch <- key:
		default:
		}
	}
}

// until takes pushed messages until counts reaches want and every key of want was reported
// waiting for tokens, then checks no more came: the clock is frozen, so no token can appear.
func until(t *testing.T, ep *rateEndpoint, l *limitedEvents, counts, want map[string]int, waiting ...string) {
	t.Helper()
	limited := map[string]bool{}
	timeout := time.NewTimer(20 * time.Second)
	defer timeout.Stop()
	done := func() bool {
		for k, n := range want {
			if counts[k] < n {
				return false
			}
		}
		for _, k := range waiting {
			if !limited[k] {
				return false
			}
		}
		return true
	}
	for !done() {
		select {
		case k := <-ep.got:
			counts[k]++
		case k := <-l.ch:
			limited[k] = true
		case <-timeout.C:
			t.Fatalf("pushed %v (limited %v), want %v", counts, limited, want)
		}
	}
	// The pushes in progress when the limit was reported have arrived; nothing else may.
	for {
		select {
		case k := <-ep.got:
			counts[k]++
			continue
		default:
		}
		break
	}
	for k, n := range want {
		if counts[k] != n {
			t.Fatalf("key %q: %d messages pushed, want %d under the rate (all %v)", k, counts[k], n, counts)
		}
	}
}

// Each key gets messagesPerSecond on the injected clock: with the clock frozen, each key
// pushes its bucket (one second's worth) and waits; one second later, one second's more.
func TestKeyedFlowRateOnInjectedClock(t *testing.T) {
	e := newEnv(t)
	q := e.queue("standard", nil)
	ep := newRateEndpoint(t)
	e.subscribe(q, ep.srv.URL, func(s *meta.Subscription) {
		s.BatchSize = 1
		s.FlowControl = meta.FlowControl{KeyAttribute: "customer", Parallelism: 10, MessagesPerSecond: 5}
	})
	e.sendMsgs(q, append(keyed("a", 20), keyed("b", 20)...))
	l := &limitedEvents{ch: make(chan string, 1000)}
	e.pusher(l.hook)
	counts := map[string]int{}
	until(t, ep, l, counts, map[string]int{"a": 5, "b": 5}, "a", "b")
	e.clk.Advance(time.Second)
	drain(l.ch)
	until(t, ep, l, counts, map[string]int{"a": 10, "b": 10}, "a", "b")
}

// maxMessagesPerSecond bounds the whole subscription the same way.
func TestSubscriptionRateOnInjectedClock(t *testing.T) {
	e := newEnv(t)
	q := e.queue("standard", nil)
	ep := newRateEndpoint(t)
	e.subscribe(q, ep.srv.URL, func(s *meta.Subscription) {
		s.BatchSize, s.MaxMessagesPerSecond = 1, 5
	})
	e.sendMsgs(q, keyed("", 20))
	l := &limitedEvents{ch: make(chan string, 1000)}
	e.pusher(l.hook)
	counts := map[string]int{}
	until(t, ep, l, counts, map[string]int{"": 5}, "(subscription)")
	e.clk.Advance(time.Second)
	drain(l.ch)
	until(t, ep, l, counts, map[string]int{"": 10}, "(subscription)")
}

func drain(ch chan string) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// On a fifo queue a group whose messages carry different keys still arrives in order, and
// never has two pushes out at once, while keys split the pushes.
func TestKeyedFlowFIFOGroupsKeepOrder(t *testing.T) {
	e := newEnv(t)
	q := e.queue("fifo", nil)
	var mu sync.Mutex
	seen := map[string][]string{}
	active := map[string]int{}
	got := make(chan int, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b struct{ Messages []pushMsg }
		raw, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(raw, &b); err != nil {
			t.Errorf("push body: %v", err)
		}
		mu.Lock()
		groups := map[string]bool{}
		for _, m := range b.Messages {
			if !groups[m.GroupID] && active[m.GroupID] > 0 {
				t.Errorf("group %s pushed while another push of it is out", m.GroupID)
			}
			groups[m.GroupID] = true
			seen[m.GroupID] = append(seen[m.GroupID], m.Body)
		}
		for g := range groups {
			active[g]++
		}
		mu.Unlock()
		defer func() {
			mu.Lock()
			for g := range groups {
				active[g]--
			}
			mu.Unlock()
			got <- len(b.Messages)
		}()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	e.subscribe(q, srv.URL, func(s *meta.Subscription) {
		s.BatchSize = 2
		s.FlowControl = meta.FlowControl{KeyAttribute: "customer", Parallelism: 2}
	})
	var msgs []engine.Message
	const per = 6
	for i := range per {
		for _, g := range []string{"A", "B", "C"} {
			msgs = append(msgs, engine.Message{Body: fmt.Sprintf("%s%d", g, i), GroupID: g,
				Attributes: map[string]string{"customer": []string{"x", "y", "z"}[(i+len(g))%3]}})
		}
	}
	e.sendMsgs(q, msgs)
	e.pusher(nil)
	timeout := time.After(20 * time.Second)
	for total := 0; total < len(msgs); {
		select {
		case n := <-got:
			total += n
		case <-timeout:
			t.Fatalf("%d of %d messages pushed", total, len(msgs))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, g := range []string{"A", "B", "C"} {
		var want []string
		for i := range per {
			want = append(want, fmt.Sprintf("%s%d", g, i))
		}
		if fmt.Sprint(seen[g]) != fmt.Sprint(want) {
			t.Fatalf("group %s arrived as %v, want %v", g, seen[g], want)
		}
	}
}
