package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestPushFlowControlAPI: maxMessagesPerSecond and flowControl are validated with 400s naming
// the field, shown on the subscription, replaced by a PATCH and turned off with null.
func TestPushFlowControlAPI(t *testing.T) {
	tn := newTenant(t)
	tn.queue(t, "flowed", nil)
	path := "/v1/queues/flowed/subscription"
	ep := "https://example.com/h"
	for _, c := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"endpoint": ep, "maxMessagesPerSecond": -1}, "maxMessagesPerSecond"},
		{map[string]any{"endpoint": ep, "maxMessagesPerSecond": 100001}, "maxMessagesPerSecond"},
		{map[string]any{"endpoint": ep, "flowControl": "customer"}, "flowControl"},
		{map[string]any{"endpoint": ep, "flowControl": map[string]any{}}, "flowControl.keyAttribute"},
		{map[string]any{"endpoint": ep, "flowControl": map[string]any{"keyAttribute": "no spaces"}}, "flowControl.keyAttribute"},
		{map[string]any{"endpoint": ep, "flowControl": map[string]any{"keyAttribute": "c", "parallelism": 0}}, "flowControl.parallelism"},
		{map[string]any{"endpoint": ep, "flowControl": map[string]any{"keyAttribute": "c", "parallelism": 101}}, "flowControl.parallelism"},
		{map[string]any{"endpoint": ep, "flowControl": map[string]any{"keyAttribute": "c", "messagesPerSecond": 1.5}}, "flowControl.messagesPerSecond"},
		{map[string]any{"endpoint": ep, "flowControl": map[string]any{"keyAttribute": "c", "burst": 3}}, "flowControl.burst"},
	} {
		tn.a.do("POST", path, c.body).fails(t, 400, "invalid_argument", c.field)
	}
	created := tn.a.do("POST", path, map[string]any{"endpoint": ep, "maxMessagesPerSecond": 50,
		"flowControl": map[string]any{"keyAttribute": "customer", "parallelism": 2, "messagesPerSecond": 10}}).must(t, 201)
	fc, _ := created.body["flowControl"].(map[string]any)
	if created.body["maxMessagesPerSecond"] != 50.0 || fc["keyAttribute"] != "customer" || fc["parallelism"] != 2.0 || fc["messagesPerSecond"] != 10.0 {
		t.Fatalf("created: %s", created.raw)
	}
	// A flowControl object replaces the whole setting: parallelism defaults to 1.
	patched := tn.a.do("PATCH", path, map[string]any{"flowControl": map[string]any{"keyAttribute": "tenant"}}).must(t, 200)
	fc, _ = patched.body["flowControl"].(map[string]any)
	if fc["keyAttribute"] != "tenant" || fc["parallelism"] != 1.0 || fc["messagesPerSecond"] != 0.0 || patched.body["maxMessagesPerSecond"] != 50.0 {
		t.Fatalf("patched: %s", patched.raw)
	}
	off := tn.a.do("PATCH", path, map[string]any{"flowControl": nil, "maxMessagesPerSecond": 0}).must(t, 200)
	if _, on := off.body["flowControl"]; on || off.body["maxMessagesPerSecond"] != 0.0 {
		t.Fatalf("turned off: %s", off.raw)
	}
}

// TestPushKeyedFlowSlowKey: on the stack (the API and a separate pusher) and on the embedded
// node (serve), one key's endpoint does not answer while the other keys' messages are all
// pushed; no key has more than its parallelism in flight; the slow key's messages arrive
// once it answers, each pushed once.
func TestPushKeyedFlowSlowKey(t *testing.T) {
	srv, srvA, srvB := pushServers(t)
	const parallelism = 2
	var mu sync.Mutex
	current, most := map[string]int{}, map[string]int{}
	release := make(chan struct{})
	blocked := make(chan struct{}, 100)
	delivered := make(chan map[string]any, 1000)
	ep := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var b struct{ Messages []map[string]any }
		if err := json.Unmarshal(raw, &b); err != nil || len(b.Messages) == 0 {
			t.Errorf("push: %v: %s", err, raw)
			rw.WriteHeader(400)
			return
		}
		key := b.Messages[0]["attributes"].(map[string]any)["customer"].(string)
		mu.Lock()
		current[key]++
		most[key] = max(most[key], current[key])
		mu.Unlock()
		defer func() { mu.Lock(); current[key]--; mu.Unlock() }()
		if key == "slow" {
			blocked <- struct{}{}
			<-release
		}
		for _, m := range b.Messages {
			delivered <- m
		}
		rw.WriteHeader(204)
	}))
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer ep.Close()
	defer unblock()

	tn := newTenantOn(t, srvA, srvB)
	op := newClient(t, srv, tn.token)
	tn.queue(t, "keyed", nil)
	send := func(customer string, n int) {
		var msgs []any
		for i := range n {
			msgs = append(msgs, map[string]any{"body": fmt.Sprintf("%s-%d", customer, i), "attributes": map[string]string{"customer": customer}})
		}
		op.do("POST", "/v1/queues/keyed/messages", map[string]any{"messages": msgs}).must(t, 200)
	}
	// Each key sends no more than its pushes in flight and its hold (docs/push.md).
	send("slow", 10)
	send("slow", 10)
	send("a", 10)
	send("b", 10)
	op.do("POST", "/v1/queues/keyed/subscription", map[string]any{"endpoint": ep.URL, "batchSize": 5, "timeoutSeconds": 30,
		"flowControl": map[string]any{"keyAttribute": "customer", "parallelism": parallelism}}).must(t, 201)

	take := func(n int) []map[string]any {
		t.Helper()
		var out []map[string]any
		timeout := time.After(30 * time.Second)
		for len(out) < n {
			select {
			case m := <-delivered:
				out = append(out, m)
			case <-timeout:
				t.Fatalf("%d of %d messages pushed within 30 s", len(out), n)
			}
		}
		return out
	}
	for _, m := range take(20) {
		if c := m["attributes"].(map[string]any)["customer"]; c == "slow" {
			t.Fatalf("a slow-key message acknowledged before its endpoint answered: %v", m)
		}
	}
	for range parallelism {
		<-blocked
	}
	unblock()
	for _, m := range take(20) {
		if m["receiveCount"] != 1.0 {
			t.Fatalf("pushed with receiveCount %v: holding burned an attempt: %v", m["receiveCount"], m)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for k, n := range most {
		if n > parallelism {
			t.Fatalf("key %q had %d pushes in flight at once, parallelism %d (%v)", k, n, parallelism, most)
		}
	}
}
