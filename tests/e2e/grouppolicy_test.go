package e2e

import (
	"net/http"
	"testing"
)

// TestGroupPolicyExclusive: over /v1 and across the two replicas, an exclusive fifo queue binds
// a group to the consumer that received it (the other consumer gets none of it, the groups
// listing names the binding), a receive or stream without a consumerId is refused naming it,
// an endGroup message ends the binding once acknowledged; the settings are validated, shown
// and patched, and refused on standard queues naming the field.
func TestGroupPolicyExclusive(t *testing.T) {
	tn := newTenant(t)
	a, b := tn.a, tn.b
	q := tn.queue(t, "ledger", map[string]any{"type": "fifo", "groupPolicy": "exclusive", "groupAffinitySeconds": 120})
	if q.str("groupPolicy") != "exclusive" || q.body["groupAffinitySeconds"] != 120.0 || q.body["maxGroupsPerConsumer"] != 100.0 {
		t.Fatalf("created queue %s", q.raw)
	}
	a.sendFIFO(t, "ledger", msg("a1", "acct-1", "endGroup", true), msg("a2", "acct-1"), msg("b1", "acct-2"))

	a.do("POST", "/v1/queues/ledger/receive", map[string]any{"waitSeconds": 0}).fails(t, 400, "invalid_argument", "consumerId")
	recv := func(c *client, id string) []map[string]any {
		t.Helper()
		return c.receive(t, "ledger", map[string]any{"maxMessages": 1, "waitSeconds": 0, "consumerId": id})
	}
	got := recv(a, "w1")
	if len(got) != 1 || got[0]["body"] != "a1" {
		t.Fatalf("w1 received %v", got)
	}
	bound := func(want map[string]any) {
		t.Helper()
		gs := b.do("GET", "/v1/queues/ledger/groups", nil).must(t, 200)
		for _, g := range gs.list("groups") {
			if w, ok := want[g["groupId"].(string)]; ok && g["consumerId"] != w {
				t.Fatalf("group %v bound to %v, want %v: %s", g["groupId"], g["consumerId"], w, gs.raw)
			}
		}
	}
	bound(map[string]any{"acct-1": "w1", "acct-2": nil})
	if got := recv(b, "w2"); len(got) != 1 || got[0]["body"] != "b1" {
		t.Fatalf("w2 received %v, want acct-2's b1 (acct-1 is w1's)", got)
	}
	ack(t, b, got[0]["receiptHandle"].(string)).must(t, 204)
	// a1 ended acct-1's binding: w2 takes the group's next message.
	if got := recv(b, "w2"); len(got) != 1 || got[0]["body"] != "a2" {
		t.Fatalf("w2 received %v after a1 ended the binding", got)
	}
	bound(map[string]any{"acct-1": "w2"})

	// The stream needs a consumerId too (refused before the upgrade).
	req, _ := http.NewRequest("GET", a.base+"/v1/queues/ledger/stream", nil)
	req.Header.Set("Authorization", "Bearer "+tn.token)
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Connection", "Upgrade")
	hr, err := a.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	hr.Body.Close()
	if hr.StatusCode != 400 {
		t.Fatalf("stream without consumerId: status %d", hr.StatusCode)
	}

	for body, field := range map[string]string{
		`{"groupPolicy":"sticky"}`:       "groupPolicy",
		`{"groupAffinitySeconds":0}`:     "groupAffinitySeconds",
		`{"maxGroupsPerConsumer":0}`:     "maxGroupsPerConsumer",
		`{"maxGroupsPerConsumer":10001}`: "maxGroupsPerConsumer",
		`{"groupAffinitySeconds":"60"}`:  "groupAffinitySeconds",
	} {
		a.doCT("PATCH", "/v1/queues/ledger", body, "application/json").fails(t, 400, "invalid_argument", field)
	}
	p := a.do("PATCH", "/v1/queues/ledger", map[string]any{"groupPolicy": "sequenced", "maxGroupsPerConsumer": 5}).must(t, 200)
	if p.str("groupPolicy") != "sequenced" || p.body["maxGroupsPerConsumer"] != 5.0 || p.body["groupAffinitySeconds"] != 120.0 {
		t.Fatalf("patched queue %s", p.raw)
	}
	a.receive(t, "ledger", map[string]any{"waitSeconds": 0}) // sequenced: no consumer needed

	tn.queue(t, "plain", nil)
	for _, f := range []string{"groupPolicy", "groupAffinitySeconds", "maxGroupsPerConsumer"} {
		v := any(60)
		if f == "groupPolicy" {
			v = "exclusive"
		}
		a.do("PATCH", "/v1/queues/plain", map[string]any{f: v}).fails(t, 400, "invalid_argument", f)
		a.do("POST", "/v1/queues", map[string]any{"name": "plain2", f: v}).fails(t, 400, "invalid_argument", f)
	}
	if pq := a.do("GET", "/v1/queues/plain", nil).must(t, 200); pq.body["groupPolicy"] != nil {
		t.Fatalf("a standard queue shows a group policy: %s", pq.raw)
	}
	r := a.do("POST", "/v1/queues/plain/messages", map[string]any{"messages": []any{map[string]any{"body": "x", "endGroup": true}}})
	if r.status == 200 {
		if f := r.list("failed"); len(f) != 1 {
			t.Fatalf("endGroup on a standard queue accepted: %s", r.raw)
		}
	} else {
		r.fails(t, 400, "invalid_argument", "messages[0].endGroup")
	}
}
