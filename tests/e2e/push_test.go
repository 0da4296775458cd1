package e2e

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/queueshq/queues/services/queues/embedded"
	"github.com/queueshq/queues/services/queues/stack"
)

// TestSubscriptionAPI: the subscription routes' shapes, validation, scopes and life.
func TestSubscriptionAPI(t *testing.T) {
	tn := newTenant(t)
	q := tn.queue(t, "pushed", nil)
	path := "/v1/queues/pushed/subscription"

	tn.a.do("GET", path, nil).fails(t, 404, "not_found", "")
	tn.a.do("POST", "/v1/queues/nope/subscription", map[string]any{"endpoint": "https://example.com/h"}).fails(t, 404, "not_found", "")
	for _, c := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{}, "endpoint"},
		{map[string]any{"endpoint": "http://example.com/h"}, "endpoint"}, // this server allows https only
		{map[string]any{"endpoint": "https://127.0.0.1/h"}, "endpoint"},
		{map[string]any{"endpoint": "https://169.254.169.254/latest"}, "endpoint"},
		{map[string]any{"endpoint": "https://localhost/h"}, "endpoint"},
		{map[string]any{"endpoint": "not a url"}, "endpoint"},
		{map[string]any{"endpoint": 42}, "endpoint"},
		{map[string]any{"endpoint": "https://example.com/h", "batchSize": 0}, "batchSize"},
		{map[string]any{"endpoint": "https://example.com/h", "batchSize": 101}, "batchSize"},
		{map[string]any{"endpoint": "https://example.com/h", "batchWindowMs": 10001}, "batchWindowMs"},
		{map[string]any{"endpoint": "https://example.com/h", "batchWindowMs": -1}, "batchWindowMs"},
		{map[string]any{"endpoint": "https://example.com/h", "maxInFlight": 0}, "maxInFlight"},
		{map[string]any{"endpoint": "https://example.com/h", "maxInFlight": 101}, "maxInFlight"},
		{map[string]any{"endpoint": "https://example.com/h", "timeoutSeconds": 0}, "timeoutSeconds"},
		{map[string]any{"endpoint": "https://example.com/h", "timeoutSeconds": 61}, "timeoutSeconds"},
		{map[string]any{"endpoint": "https://example.com/h", "timeoutSeconds": 1.5}, "timeoutSeconds"},
		{map[string]any{"endpoint": "https://example.com/h", "paused": "yes"}, "paused"},
		{map[string]any{"endpoint": "https://example.com/h", "secret": "x"}, "secret"},
	} {
		tn.a.do("POST", path, c.body).fails(t, 400, "invalid_argument", c.field)
	}

	created := tn.a.do("POST", path, map[string]any{"endpoint": "https://example.com/hook"}).must(t, 201)
	secret := created.str("signingSecret")
	if !strings.HasPrefix(secret, "whsec_") || created.str("queue") != q.str("id") || !strings.HasPrefix(created.str("slug"), "qsb_") {
		t.Fatalf("created: %s", created.raw)
	}
	if created.body["batchSize"] != 10.0 || created.body["batchWindowMs"] != 0.0 || created.body["maxInFlight"] != 10.0 ||
		created.body["timeoutSeconds"] != 30.0 || created.body["paused"] != false {
		t.Fatalf("defaults: %s", created.raw)
	}
	tn.b.do("POST", path, map[string]any{"endpoint": "https://example.com/other"}).fails(t, 409, "subscription_exists", "")

	got := tn.b.do("GET", "/v1/queues/"+q.str("slug")+"/subscription", nil).must(t, 200)
	if got.str("id") != created.str("id") || got.body["signingSecret"] != nil {
		t.Fatalf("get: %s", got.raw)
	}
	patched := tn.a.do("PATCH", path, map[string]any{"batchSize": 100, "batchWindowMs": 250, "paused": true}).must(t, 200)
	if patched.body["batchSize"] != 100.0 || patched.body["batchWindowMs"] != 250.0 || patched.body["paused"] != true ||
		patched.str("endpoint") != "https://example.com/hook" || patched.body["signingSecret"] != nil {
		t.Fatalf("patched: %s", patched.raw)
	}
	tn.a.do("PATCH", path, map[string]any{"maxInFlight": 1000}).fails(t, 400, "invalid_argument", "maxInFlight")
	tn.a.do("PATCH", path, map[string]any{"queue": "x"}).fails(t, 400, "invalid_argument", "queue")

	rotated := tn.a.do("POST", path+"/rotate-secret", nil).must(t, 200)
	if s := rotated.str("signingSecret"); !strings.HasPrefix(s, "whsec_") || s == secret {
		t.Fatalf("rotated: %s", rotated.raw)
	}
	tn.a.do("POST", path+"/rotate-secret", map[string]any{"x": 1}).fails(t, 400, "invalid_argument", "x")

	at := tn.b.do("GET", path+"/attempts?limit=5", nil).must(t, 200)
	if len(at.list("attempts")) != 0 || at.body["nextCursor"] != nil {
		t.Fatalf("attempts: %s", at.raw)
	}
	tn.a.do("GET", path+"/attempts?limit=0", nil).fails(t, 400, "invalid_argument", "limit")
	tn.a.do("GET", path+"/attempts?limit=101", nil).fails(t, 400, "invalid_argument", "limit")

	// Scopes: queues:read reads; it cannot change.
	reader := tn.a.as(tn.tokenWith(t, "queues:read"))
	reader.do("GET", path, nil).must(t, 200)
	reader.do("GET", path+"/attempts", nil).must(t, 200)
	reader.do("PATCH", path, map[string]any{"paused": false}).fails(t, 403, "permission_denied", "")
	reader.do("POST", path+"/rotate-secret", nil).fails(t, 403, "permission_denied", "")
	reader.do("DELETE", path, nil).fails(t, 403, "permission_denied", "")
	sender := tn.a.as(tn.tokenWith(t, "messages:send"))
	sender.do("GET", path, nil).fails(t, 403, "permission_denied", "")
	// Another project sees nothing.
	other := newTenant(t)
	other.a.do("GET", "/v1/queues/"+q.str("id")+"/subscription", nil).fails(t, 404, "not_found", "")

	tn.a.do("DELETE", path, nil).must(t, 204)
	tn.a.do("DELETE", path, nil).fails(t, 404, "not_found", "")
	tn.a.do("GET", path, nil).fails(t, 404, "not_found", "")

	// Deleting the queue deletes its subscription: a new queue of the same name has none.
	tn.a.do("POST", path, map[string]any{"endpoint": "https://example.com/hook"}).must(t, 201)
	tn.a.do("DELETE", "/v1/queues/pushed", nil).must(t, 204)
	tn.queue(t, "pushed", nil)
	tn.a.do("GET", path, nil).fails(t, 404, "not_found", "")
	tn.a.do("POST", path, map[string]any{"endpoint": "https://example.com/hook"}).must(t, 201)
}

// pushServers starts what pushing to a local endpoint needs and returns srv, an API server
// that allows private endpoints, and a and b, the servers the tenant is made on. On the stack:
// one more API replica that allows them and a pusher replica built as production builds them
// (services/queues/stack), beside replicas A and B. Embedded: one more node that allows them (its pusher
// runs in the node, as in `queues serve`), which is all three.
func pushServers(t *testing.T) (srv, a, b *httptest.Server) {
	t.Helper()
	return pushServersAt(t, "")
}

// pushServersAt is pushServers whose API and pusher have publicURL as the service's public
// URL (QUEUES_PUBLIC_URL: the iss of push tokens).
func pushServersAt(t *testing.T, publicURL string) (srv, a, b *httptest.Server) {
	t.Helper()
	if w.backend == backendEmbedded {
		srv, closeNode, err := openNode(embedded.Options{Push: embedded.PushOptions{AllowPrivate: true, Refresh: time.Second, PublicURL: publicURL}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(closeNode)
		return srv, srv, srv
	}
	ctx := context.Background()
	srv, closeSrv, err := w.replica(ctx, stack.Options{PushAllowPrivate: true, PublicURL: publicURL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeSrv)
	p, err := stack.NewPusher(stack.PusherOptions{Redis: w.rdb, Dynamo: w.ddb, Table: w.table, Keys: w.ring,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), AllowPrivate: true, PublicURL: publicURL, LeaseTTL: 3 * time.Second, Refresh: time.Second, MeterEvery: meterEvery})
	if err != nil {
		t.Fatal(err)
	}
	pctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(pctx) }()
	t.Cleanup(func() { stop(); <-done; _ = p.Close() })
	return srv, w.a, w.b
}

// TestPushEndToEnd: an API that allows private endpoints and a pusher (see pushServers) push
// messages sent over HTTP to a local endpoint, which verifies the signature with the
// reference library, defers one batch and settles it by handle on /v1/receipts/ack with no
// credential; the attempts log shows the attempts.
func TestPushEndToEnd(t *testing.T) {
	srv, srvA, srvB := pushServers(t)

	type push struct {
		raw    []byte
		header http.Header
	}
	got := make(chan push, 100)
	answer := make(chan int, 100)
	ep := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		got <- push{raw, r.Header.Clone()}
		rw.WriteHeader(<-answer)
	}))
	defer ep.Close()

	tn := newTenantOn(t, srvA, srvB)
	op := newClient(t, srv, tn.token)
	tn.queue(t, "hooked", nil)
	sub := op.do("POST", "/v1/queues/hooked/subscription", map[string]any{"endpoint": ep.URL + "/hook", "timeoutSeconds": 5}).must(t, 201)
	wh, err := standardwebhooks.NewWebhook(sub.str("signingSecret"))
	if err != nil {
		t.Fatal(err)
	}
	next := func() push {
		t.Helper()
		select {
		case p := <-got:
			return p
		case <-time.After(30 * time.Second):
			t.Fatal("nothing pushed within 30 s")
			return push{}
		}
	}

	sent := tn.a.send(t, "hooked", "first")
	answer <- 202
	first := next()
	if err := wh.Verify(first.raw, first.header); err != nil {
		t.Fatalf("signature: %v", err)
	}
	var body struct {
		Subscription string `json:"subscription"`
		Messages     []struct {
			MessageID     string `json:"messageId"`
			Body          string `json:"body"`
			ReceiptHandle string `json:"receiptHandle"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(first.raw, &body); err != nil || body.Subscription != sub.str("slug") || len(body.Messages) != 1 ||
		body.Messages[0].MessageID != sent[0] || body.Messages[0].Body != "first" {
		t.Fatalf("pushed %s (%v)", first.raw, err)
	}
	// Deferred: in flight until the receiver settles it by its handle.
	if c := tn.a.counts(t, "hooked"); c["inFlight"] != 1.0 {
		t.Fatalf("counts after 202: %v", c)
	}
	ack(t, tn.a, body.Messages[0].ReceiptHandle).must(t, 204)

	tn.b.send(t, "hooked", "second")
	answer <- 204
	next()
	// The attempts log shows both, newest first.
	var attempts []map[string]any
	for deadline := time.Now().Add(20 * time.Second); len(attempts) < 2 && time.Now().Before(deadline); {
		// The log is written just after the endpoint answers; no event reaches this process.
		time.Sleep(20 * time.Millisecond)
		attempts = op.do("GET", "/v1/queues/hooked/subscription/attempts", nil).must(t, 200).list("attempts")
	}
	if len(attempts) != 2 || attempts[0]["outcome"] != "acknowledged" || attempts[1]["outcome"] != "deferred" ||
		attempts[1]["statusCode"] != 202.0 || attempts[1]["attemptId"] != first.header.Get("webhook-id") {
		t.Fatalf("attempts: %v", attempts)
	}
	if c := tn.a.counts(t, "hooked"); c["visible"] != 0.0 || c["inFlight"] != 0.0 {
		t.Fatalf("counts at the end: %v", c)
	}
	// Paged one at a time: two full pages, the last without a cursor.
	first1 := op.do("GET", "/v1/queues/hooked/subscription/attempts?limit=1", nil).must(t, 200)
	cur, _ := first1.body["nextCursor"].(string)
	if len(first1.list("attempts")) != 1 || cur == "" {
		t.Fatalf("attempts limit 1: %s", first1.raw)
	}
	last := op.do("GET", "/v1/queues/hooked/subscription/attempts?limit=1&cursor="+cur, nil).must(t, 200)
	if as := last.list("attempts"); len(as) != 1 || as[0]["attemptId"] != attempts[1]["attemptId"] || last.body["nextCursor"] != nil {
		t.Fatalf("attempts second page: %s", last.raw)
	}
	op.do("GET", "/v1/queues/hooked/subscription/attempts?cursor=bogus!", nil).fails(t, 400, "invalid_argument", "cursor")
	// The pusher meters its attempts to the project.
	hour := waitUsage(t, tn.a, func(h map[string]any) bool { return num(t, h, "pushAttempts") == 2 })
	if num(t, hour, "messagesDelivered") != 2 || num(t, hour, "bytesOut") != int64(len("first")+len("second")) {
		t.Fatalf("usage after two pushes: %v", hour)
	}
}
