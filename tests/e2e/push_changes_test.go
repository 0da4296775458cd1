package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// TestSubscriptionChangesApplyAtOnce: every change to a subscription applies in the pusher
// (a separate component on the stack) as soon as it is answered (docs/push.md allows up to 1 s; we
// hold the stricter line, so the test needs no waiting): a push after rotate-secret carries the
// new secret's signature beside the old one's, nothing is pushed while paused or after a
// delete — those messages reach a pull receive instead. Each step runs a few rounds, sending
// right after the answer, because the old fault was a race with the change's announcement.
func TestSubscriptionChangesApplyAtOnce(t *testing.T) {
	srv, srvA, srvB := pushServers(t)
	type push struct {
		raw    []byte
		header http.Header
		bodies []string
	}
	var mu sync.Mutex
	var pushes []push
	got := make(chan push, 100)
	ep := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var b struct {
			Messages []struct {
				Body string `json:"body"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(raw, &b)
		p := push{raw: raw, header: r.Header.Clone()}
		for _, m := range b.Messages {
			p.bodies = append(p.bodies, m.Body)
		}
		mu.Lock()
		pushes = append(pushes, p)
		mu.Unlock()
		got <- p
		rw.WriteHeader(204)
	}))
	defer ep.Close()
	pushedBody := func(body string) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range pushes {
			if slices.Contains(p.bodies, body) {
				return true
			}
		}
		return false
	}
	next := func(body string) push {
		t.Helper()
		for {
			select {
			case p := <-got:
				if slices.Contains(p.bodies, body) {
					return p
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("%q not pushed within 30 s", body)
			}
		}
	}

	tn := newTenantOn(t, srvA, srvB)
	op := newClient(t, srv, tn.token)
	tn.queue(t, "changing", map[string]any{"visibilityTimeoutSeconds": 30})
	path := "/v1/queues/changing/subscription"
	secret := op.do("POST", path, map[string]any{"endpoint": ep.URL + "/hook", "timeoutSeconds": 5}).must(t, 201).str("signingSecret")
	tn.a.send(t, "changing", "warm-up")
	next("warm-up")

	for round := range 3 {
		newSecret := tn.a.do("POST", path+"/rotate-secret", map[string]any{}).must(t, 200).str("signingSecret")
		body := "after-rotate-" + string(rune('a'+round))
		tn.b.send(t, "changing", body)
		p := next(body)
		for _, s := range []string{newSecret, secret} {
			wh, err := standardwebhooks.NewWebhook(s)
			if err != nil {
				t.Fatal(err)
			}
			if err := wh.Verify(p.raw, p.header); err != nil {
				t.Fatalf("round %d: push after the rotation does not verify with secret %s…: %v (signature %q)", round, s[:10], err, p.header.Get("webhook-signature"))
			}
		}
		if n := len(strings.Fields(p.header.Get("webhook-signature"))); n != 2 {
			t.Fatalf("round %d: %d signatures, want the new and the previous", round, n)
		}
		secret = newSecret
	}

	// pulled sends body right after a change and expects a pull receive, not the pusher, to get it.
	pulled := func(step, body string) {
		t.Helper()
		tn.b.send(t, "changing", body)
		ms := tn.a.receive(t, "changing", map[string]any{"waitSeconds": 10})
		if len(ms) != 1 || ms[0]["body"] != body {
			t.Fatalf("%s: pull receive got %v, want %q", step, ms, body)
		}
		ack(t, tn.a, ms[0]["receiptHandle"].(string)).must(t, 204)
		if pushedBody(body) {
			t.Fatalf("%s: %q was pushed after the change was answered", step, body)
		}
	}
	for round := range 3 {
		tn.a.do("PATCH", path, map[string]any{"paused": true}).must(t, 200)
		pulled("paused", "while-paused-"+string(rune('a'+round)))
		tn.b.do("PATCH", path, map[string]any{"paused": false}).must(t, 200)
		body := "resumed-" + string(rune('a'+round))
		tn.b.send(t, "changing", body)
		next(body)
	}
	tn.a.do("DELETE", path, nil).must(t, 204)
	for round := range 3 {
		pulled("deleted", "after-delete-"+string(rune('a'+round)))
	}
}
