package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/queueshq/queues/sdk/go/client"
)

// topicFake answers the topic routes with the documented shapes (docs/topics.md), one canned
// answer per "METHOD path", and records each request as "METHOD path?query body".
type topicFake struct {
	mu       sync.Mutex
	answers  map[string]string // "METHOD path" → "status answer"
	requests []string
}

func newTopicFake(t *testing.T, answers map[string]string) (*cliEnv, *topicFake) {
	f := &topicFake{answers: answers}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("requests:\n%s", strings.Join(f.requests, "\n"))
		}
	})
	return &cliEnv{env: map[string]string{client.EnvURL: srv.URL, client.EnvToken: "t"}}, f
}

func (f *topicFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	req := r.Method + " " + r.URL.EscapedPath()
	if r.URL.RawQuery != "" {
		req += "?" + r.URL.RawQuery
	}
	if len(body) > 0 {
		req += " " + string(body)
	}
	f.requests = append(f.requests, req)
	a, ok := f.answers[r.Method+" "+r.URL.EscapedPath()]
	if !ok {
		w.WriteHeader(404)
		io.WriteString(w, `{"error":{"code":"not_found","message":"no such route in the fake"}}`)
		return
	}
	status, answer, _ := strings.Cut(a, " ")
	code, _ := strconv.Atoi(status)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	io.WriteString(w, answer)
}

// sent fails unless a request starting with want was made (and returns it).
func (f *topicFake) sent(t *testing.T, want string) string {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.requests {
		if strings.HasPrefix(r, want) {
			return r
		}
	}
	t.Fatalf("no request %q among:\n%s", want, strings.Join(f.requests, "\n"))
	return ""
}

const (
	fakeTopic = `{"id":"0193a5b4-3c4d-7e5f-8061-7c8d9e0f1a2b","slug":"top_abc","name":"prices","type":"standard","retentionSeconds":3600,
"createdAt":"2026-12-04T10:00:00Z","updatedAt":"2026-12-04T10:00:00Z","firstSequence":3,"lastSequence":9,"storedBytes":120,"bindings":1}`
	fakeBinding = `{"id":"b1","slug":"qbd_x","queueId":"q1","queue":"eu","topicId":"t1","topic":"prices",
"filter":{"attributes":{"region":["eu","uk"]}},"from":"earliest","startSequence":3,"sequence":8,"lag":1,"copied":5,"failed":1,
"lastFailure":{"reason":"queue over its byte quota","at":"2026-12-04T10:00:01Z"},"createdAt":"2026-12-04T10:00:00Z","updatedAt":"2026-12-04T10:00:00Z"}`
)

// The topic commands against a fake speaking the documented shapes: what each sends, what
// it prints, and its exit codes.
func TestCLITopicWire(t *testing.T) {
	e, f := newTopicFake(t, map[string]string{
		"POST /v1/topics":                      "201 " + fakeTopic,
		"GET /v1/topics":                       `200 {"topics":[` + fakeTopic + `],"nextCursor":null}`,
		"GET /v1/topics/prices":                "200 " + fakeTopic,
		"PATCH /v1/topics/prices":              "200 " + fakeTopic,
		"DELETE /v1/topics/prices":             "204 ",
		"POST /v1/queues/eu/sources":           "201 " + fakeBinding,
		"POST /v1/queues/twice/sources":        `409 {"error":{"code":"binding_exists","message":"the queue is bound to the topic","details":{"field":"topic"}}}`,
		"GET /v1/queues/eu/sources":            `200 {"sources":[` + fakeBinding + `],"nextCursor":null}`,
		"GET /v1/topics/prices/bindings":       `200 {"bindings":[` + fakeBinding + `],"nextCursor":null}`,
		"PATCH /v1/queues/eu/sources/qbd_x":    "200 " + fakeBinding,
		"DELETE /v1/queues/eu/sources/qbd_x":   "204 ",
		"GET /v1/topics/prices/state":          `200 {"key":"AAPL","body":"{\"bid\":1}","attributes":{},"sequence":7,"publishedAt":"2026-12-04T10:00:00Z"}`,
		"GET /v1/topics/quotes/state":          `200 {"state":[{"key":"AAPL","body":"{\"bid\":1}","attributes":{"x":"y"},"sequence":7,"publishedAt":"2026-12-04T10:00:00Z"}],"nextCursor":null}`,
		"GET /v1/topics/prices/messages":       `200 {"messages":[{"sequence":3,"messageId":"m3","body":"hello","attributes":{"region":"eu"},"publishedAt":"2026-12-04T10:00:00Z"},{"sequence":4,"messageId":"m4","body":"","attributes":{},"publishedAt":"2026-12-04T10:00:00Z","key":"AAPL","deleted":true}],"nextCursor":null}`,
		"POST /v1/topics/prices/messages":      `200 {"messages":[{"index":0,"messageId":"m10","sequence":10,"duplicate":false},{"index":2,"messageId":"m11","sequence":11,"duplicate":false}],"failed":[{"index":1,"error":{"code":"invalid_argument","message":"too big","details":{"field":"messages[1].body"}}}]}`,
		"POST /v1/topics/ledger.fifo/messages": `200 {"messages":[{"index":0,"messageId":"m1","sequence":1,"duplicate":true}],"failed":[]}`,
	})
	e.run(t, "", "topic", "create", "prices", "--retention", "1h").ok(t).has(t, "created standard topic prices (top_abc)")
	f.sent(t, `POST /v1/topics {"name":"prices","type":"standard","retentionSeconds":3600}`)
	e.run(t, "", "topic", "create", "x", "--type", "lifo").fails(t, exitUsage, "--type must be standard or fifo")
	e.run(t, "", "topic", "list").ok(t).has(t, "NAME TYPE LAST SEQUENCE BINDINGS RETENTION STORED BYTES SLUG", "prices standard 9 1 3600s 120 top_abc")
	e.run(t, "", "topic", "get", "prices").ok(t).has(t, "retention: 3600s", "log: sequences 3 to 9 held")
	if got := jsonOf[client.Topic](t, e.run(t, "", "topic", "get", "prices", "--json").ok(t)); got.LastSequence != 9 {
		t.Fatalf("topic get --json: %+v", got)
	}
	e.run(t, "", "topic", "update", "prices", "--retention", "0").ok(t)
	f.sent(t, `PATCH /v1/topics/prices {"retentionSeconds":0}`)
	e.run(t, "", "topic", "update", "prices").fails(t, exitUsage, "give --retention")
	e.run(t, "", "topic", "delete", "prices").ok(t).has(t, "deleted topic prices")

	// Publish: arguments or lines of stdin; a refused message is reported and exits 1.
	r := e.run(t, "", "topic", "publish", "prices", "a", "b", "c", "--attr", "region=eu", "--key", "k", "--merge", "patch")
	r.fails(t, exitError, "message 2 not published: invalid_argument: too big (field messages[1].body)")
	r.has(t, "published m10 at sequence 10", "published m11 at sequence 11")
	f.sent(t, `POST /v1/topics/prices/messages {"messages":[{"body":"a","attributes":{"region":"eu"},"key":"k","merge":"patch"},`)
	e.run(t, "debit\n\n", "topic", "publish", "ledger.fifo", "--group", "acct-7", "--dedup-id", "tx-1").ok(t).has(t, "(duplicate of an earlier publish)")
	f.sent(t, `POST /v1/topics/ledger.fifo/messages {"messages":[{"body":"debit","groupId":"acct-7","dedupId":"tx-1-1"}]}`)
	e.run(t, "", "topic", "publish", "ledger.fifo", "--key", "AAPL", "--delete", "--group", "g").ok(t)
	f.sent(t, `POST /v1/topics/ledger.fifo/messages {"messages":[{"body":null,"groupId":"g","key":"AAPL"}]}`)
	e.run(t, "", "topic", "publish", "prices", "x", "--delete").fails(t, exitUsage, "--delete needs --key and no BODY")

	// Bindings.
	e.run(t, "", "topic", "bind", "eu", "prices", "--filter", "region=eu", "--filter", "region=uk", "--from", "earliest").ok(t).
		has(t, "bound queue eu to topic prices (qbd_x) from sequence 3")
	f.sent(t, `POST /v1/queues/eu/sources {"topic":"prices","filter":{"attributes":{"region":["eu","uk"]}},"from":"earliest"}`)
	e.run(t, "", "topic", "bind", "twice", "prices").fails(t, exitConflict, "binding_exists", "field topic")
	e.run(t, "", "topic", "bindings", "prices").ok(t).has(t, "BINDING QUEUE TOPIC FILTER SEQUENCE LAG COPIED FAILED LAST FAILURE",
		"qbd_x eu prices region=eu,region=uk 8 1 5 1 2026-12-04T10:00:01Z queue over its byte quota")
	if bs := jsonOf[[]client.Binding](t, e.run(t, "", "topic", "bindings", "eu", "--queue", "--json").ok(t)); len(bs) != 1 || bs[0].Copied != 5 {
		t.Fatalf("bindings --queue --json: %+v", bs)
	}
	e.run(t, "", "topic", "filter", "eu", "qbd_x").ok(t).has(t, "binding qbd_x of queue eu: filter region=eu,region=uk")
	f.sent(t, `PATCH /v1/queues/eu/sources/qbd_x {"filter":null}`)
	e.run(t, "", "topic", "filter", "eu", "qbd_x", "--filter", "kind").fails(t, exitUsage, "--filter wants NAME=VALUE")
	e.run(t, "", "topic", "unbind", "eu", "qbd_x").ok(t).has(t, "unbound binding qbd_x of queue eu")

	// The log and the keyed state.
	e.run(t, "", "topic", "log", "prices", "--from", "3", "--to", "2026-12-04T10:00:00Z", "--filter", "region=eu", "--limit", "5").ok(t).
		has(t, "SEQUENCE MESSAGE ID PUBLISHED KEY ATTRIBUTES BODY", "3 m3 2026-12-04T10:00:00Z - region=eu hello", "4 m4 2026-12-04T10:00:00Z AAPL (deleted the key's state)")
	f.sent(t, "GET /v1/topics/prices/messages?attribute.region=eu&from=3&limit=5&to=2026-12-04T10%3A00%3A00Z")
	e.run(t, "", "topic", "state", "prices", "AAPL").ok(t).has(t, `{"bid":1}`)
	f.sent(t, "GET /v1/topics/prices/state?key=AAPL")
	e.run(t, "", "topic", "state", "quotes").ok(t).has(t, "KEY SEQUENCE PUBLISHED ATTRIBUTES BODY", `AAPL 7 2026-12-04T10:00:00Z x=y {"bid":1}`)
	if st := jsonOf[[]client.StateEntry](t, e.run(t, "", "topic", "state", "quotes", "--json").ok(t)); len(st) != 1 || st[0].Key != "AAPL" {
		t.Fatalf("state --json: %+v", st)
	}
	e.run(t, "", "topic", "get", "missing").fails(t, exitNotFound, "not_found")
	e.run(t, "", "topic").fails(t, exitUsage, "missing a subcommand")
}

// The topic commands against the real stack: create, bind, publish (every bound queue
// receives its copy, by the fan-out), read the log and the state, unbind, delete.
func TestCLITopic(t *testing.T) {
	e := newCLIEnv(t)
	e.run(t, "", "topic", "create", "prices", "--retention", "1h").ok(t).has(t, "created standard topic prices (top_")
	e.run(t, "", "topic", "create", "prices").fails(t, exitConflict, "topic_exists", "field name")
	e.run(t, "", "queue", "create", "eu").ok(t)
	e.run(t, "", "queue", "create", "every").ok(t)
	e.run(t, "", "topic", "bind", "eu", "prices", "--filter", "region=eu").ok(t).has(t, "bound queue eu to topic prices (qbd_", "from sequence 1")
	e.run(t, "", "topic", "bind", "every", "prices", "--from", "earliest").ok(t)
	e.run(t, "", "topic", "bind", "eu", "prices").fails(t, exitConflict, "binding_exists")
	if got := e.run(t, "", "__complete", "topic", "bind", "eu", "pr").ok(t); !strings.Contains(got.out, "prices\n") {
		t.Fatalf("bind's topic not completed:\n%s", got.out)
	}
	if got := e.run(t, "", "__complete", "topic", "bind", "ev").ok(t); !strings.Contains(got.out, "every\n") {
		t.Fatalf("bind's queue not completed:\n%s", got.out)
	}
	if got := e.run(t, "", "__complete", "topic", "log", "").ok(t); !strings.Contains(got.out, "prices\n") {
		t.Fatalf("topic names not completed:\n%s", got.out)
	}
	e.run(t, "eu-1\n", "topic", "publish", "prices", "--attr", "region=eu").ok(t).has(t, "at sequence 1")
	e.run(t, "", "topic", "publish", "prices", "us-1", "--attr", "region=us").ok(t).has(t, "at sequence 2")
	e.run(t, "", "topic", "publish", "prices", `{"bid":1}`, "--key", "AAPL").ok(t).has(t, "at sequence 3")
	e.run(t, "", "topic", "publish", "prices", "x", "--group", "g").fails(t, exitError, "message 1 not published", "field messages[0].groupId")

	if got := receiveBodies(t, e, "eu", 1); !slices.Equal(got, []string{"eu-1"}) {
		t.Fatalf("eu received %v", got)
	}
	if got := receiveBodies(t, e, "every", 3); !slices.Equal(sorted(got), sorted([]string{"eu-1", "us-1", `{"bid":1}`})) {
		t.Fatalf("every received %v", got)
	}
	e.run(t, "", "topic", "log", "prices", "--from", "2", "--filter", "region=us").ok(t).has(t, "2 ", "us-1").
		has(t, "SEQUENCE MESSAGE ID PUBLISHED KEY ATTRIBUTES BODY")
	entries := jsonOf[[]client.LogEntry](t, e.run(t, "", "topic", "log", "prices", "--json", "--limit", "0").ok(t))
	if len(entries) != 3 || entries[2].Key != "AAPL" {
		t.Fatalf("log --json: %+v", entries)
	}
	e.run(t, "", "topic", "state", "prices", "AAPL").ok(t).has(t, `{"bid":1}`)
	e.run(t, "", "topic", "state", "prices", "NONE").fails(t, exitNotFound, "not_found")
	e.run(t, "", "topic", "state", "prices").ok(t).has(t, `AAPL 3`)
	e.run(t, "", "topic", "get", "prices").ok(t).has(t, "log: sequences 1 to 3 held", "bindings: 2")
	e.run(t, "", "topic", "list").ok(t).has(t, "prices standard 3 2 3600s")
	bs := jsonOf[[]client.Binding](t, e.run(t, "", "topic", "bindings", "eu", "--queue", "--json").ok(t))
	if len(bs) != 1 || bs[0].Topic != "prices" {
		t.Fatalf("bindings --queue: %+v", bs)
	}
	e.run(t, "", "topic", "filter", "eu", bs[0].Slug, "--filter", "region=us").ok(t).has(t, "filter region=us")
	e.run(t, "", "topic", "bindings", "prices").ok(t).has(t, bs[0].Slug+" eu prices region=us")
	e.run(t, "", "topic", "unbind", "eu", bs[0].Slug).ok(t)
	e.run(t, "", "topic", "update", "prices", "--retention", "2h").ok(t).has(t, "retention: 7200s")
	e.run(t, "", "topic", "delete", "prices").ok(t)
	e.run(t, "", "topic", "get", "prices").fails(t, exitNotFound, "not_found")
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

// receiveBodies receives (and acknowledges) from queue until it has n bodies, long-polling
// for the fan-out's copies; it fails after a minute.
func receiveBodies(t *testing.T, e *cliEnv, queue string, n int) []string {
	t.Helper()
	var got []string
	for tries := 0; len(got) < n && tries < 12; tries++ {
		r := e.run(t, "", "receive", queue, "-n", "10", "--wait", "5").ok(t)
		got = append(got, strings.Fields(r.out)...)
	}
	return got
}
