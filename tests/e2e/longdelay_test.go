package e2e

import (
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/services/queues/embedded"
)

// The long polls of long and scheduled delays (docs/lifecycle.md#long-delays-and-deliverat): a
// receive parked on a queue answers a delayed message once it becomes visible, whether the delay
// was a delaySeconds past the old 900 s bound or a deliverAt.

// pollWait is the parked polls' wait (the most a receive may wait).
const pollWait = 20 * time.Second

// parkedPoll is a long poll running in the background.
type parkedPoll struct {
	start time.Time
	done  chan resp
}

// park starts a pollWait long poll on queue and returns once it waits in the engine (waiters()
// above before), so that what follows happens while it is parked.
func park(t *testing.T, c *client, queue string, waiters func() int) *parkedPoll {
	t.Helper()
	before := waiters()
	p := &parkedPoll{start: time.Now(), done: make(chan resp, 1)}
	go func() {
		p.done <- c.do("POST", "/v1/queues/"+queue+"/receive", map[string]any{"waitSeconds": int(pollWait / time.Second)})
	}()
	deadline := time.Now().Add(15 * time.Second)
	for waiters() <= before {
		if time.Now().After(deadline) {
			t.Fatal("the receive never started waiting")
		}
		time.Sleep(5 * time.Millisecond) // no event marks "request is parked"; poll the counter
	}
	return p
}

// answer is the poll's answer: its messages' bodies, each acknowledged (so that a clock moved
// past its visibility timeout does not hand it out again). A poll must have been woken: one
// that answers only when its wait runs out (its last look finds the message too) missed the
// wake-up. The wake comes within the poll's 2 s re-look at the latest, so the wait's end is a
// bound of ten times that.
func (p *parkedPoll) answer(t *testing.T, c *client) []string {
	t.Helper()
	select {
	case r := <-p.done:
		if took := time.Since(p.start); took >= pollWait-time.Second {
			t.Fatalf("the poll answered after %v, at the end of its %v wait: it was not woken", took.Round(time.Millisecond), pollWait)
		}
		var bodies []string
		for _, m := range r.must(t, 200).list("messages") {
			bodies = append(bodies, m["body"].(string))
			ack(t, c, m["receiptHandle"].(string)).must(t, 204)
		}
		return bodies
	case <-time.After(40 * time.Second):
		t.Fatal("the long poll never answered")
		return nil
	}
}

// TestDeliverAtWakesLongPoll (both backends, the real clock): a receive parked on replica B
// answers a message that replica A was sent with a deliverAt a moment ahead, once it is due —
// not before, and within the poll's wait rather than at its end. The same with a delayed
// message that was waiting before the receive parked.
func TestDeliverAtWakesLongPoll(t *testing.T) {
	tn := newTenant(t)
	tn.queue(t, "scheduled", nil)
	// Parked first, then the send: the send wakes the poll, which then waits for the due time.
	p := park(t, tn.b, "scheduled", w.waiters)
	at := time.Now().Add(2 * time.Second).UTC()
	sendAt(t, tn.a, "scheduled", map[string]any{"body": "at", "deliverAt": at.Format(time.RFC3339Nano)})
	if got := p.answer(t, tn.a); len(got) != 1 || got[0] != "at" {
		t.Fatalf("parked before a deliverAt send, the poll answered %v", got)
	}
	if now := time.Now(); now.Before(at) {
		t.Fatalf("delivered %v before its deliverAt", at.Sub(now))
	}
	// The send first, then the poll: its first look finds the message delayed, and it waits
	// for the due time.
	at = time.Now().Add(2 * time.Second).UTC()
	sendAt(t, tn.a, "scheduled", map[string]any{"body": "later", "deliverAt": at.Format(time.RFC3339Nano)})
	p = park(t, tn.b, "scheduled", w.waiters)
	if got := p.answer(t, tn.a); len(got) != 1 || got[0] != "later" {
		t.Fatalf("parked after a deliverAt send, the poll answered %v", got)
	}
	if now := time.Now(); now.Before(at) {
		t.Fatalf("delivered %v before its deliverAt", at.Sub(now))
	}
}

// TestLongDelayWakesLongPoll (the embedded node, with a clock the test moves): messages sent
// with delaySeconds 3600 and with a deliverAt two days ahead stay delayed, and a receive
// parked on the queue answers each once the clock passes its due time. The Redis engine
// refuses to run on a clock more than a second off Redis's (redisengine.DefaultMaxClockSkew),
// so the production stack has no clock to move; TestDeliverAtWakesLongPoll covers its wake-up
// (the delay index is one, whatever the delay).
func TestLongDelayWakesLongPoll(t *testing.T) {
	if w.backend != backendEmbedded {
		t.Skipf("moves the node's clock, which only the embedded node lets a test do; backend is %s", w.backend)
	}
	clk := clock.NewSkewed(clock.Real{}, 0)
	srv, closeNode, err := openNode(embedded.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer closeNode()
	waiters := lastNode.Engine.Watchers
	tn := newTenantOn(t, srv, srv)
	tn.queue(t, "far", nil) // retention 96 h
	sendAt(t, tn.a, "far", map[string]any{"body": "hour", "delaySeconds": 3600})
	sendAt(t, tn.a, "far", map[string]any{"body": "days", "deliverAt": clk.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339Nano)})
	if c := tn.a.counts(t, "far"); c["delayed"] != float64(2) || c["visible"] != float64(0) {
		t.Fatalf("counts after two long-delayed sends: %v", c)
	}

	p := park(t, tn.a, "far", waiters)
	clk.Set(3601 * time.Second)
	if got := p.answer(t, tn.a); len(got) != 1 || got[0] != "hour" {
		t.Fatalf("an hour on, the parked poll answered %v", got)
	}
	p = park(t, tn.a, "far", waiters)
	clk.Set(48*time.Hour + time.Second)
	if got := p.answer(t, tn.a); len(got) != 1 || got[0] != "days" {
		t.Fatalf("two days on, the parked poll answered %v", got)
	}
}

// sendAt sends one message (its fields as given) and fails the test unless it is stored.
func sendAt(t *testing.T, c *client, queue string, m map[string]any) {
	t.Helper()
	r := c.do("POST", "/v1/queues/"+queue+"/messages", map[string]any{"messages": []any{m}}).must(t, 200)
	if f := r.list("failed"); len(f) > 0 {
		t.Fatalf("send failed: %s", r.raw)
	}
}
