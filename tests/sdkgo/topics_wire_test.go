package sdkgo

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/queueshq/queues/sdk/go/client"
)

// exchange is one request the fake topic server expects and the answer it gives.
type exchange struct {
	method, path, query string // query: url.Values.Encode() form ("" for none)
	body                string // the JSON body expected ("" for none)
	status              int
	answer              string
}

// wireServer answers the exchanges in order and fails the test on any other request, so a
// test proves both what the SDK sends and that it reads the documented answers.
func wireServer(t *testing.T, xs []exchange) *client.Client {
	t.Helper()
	next := 0
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if next >= len(xs) {
			t.Errorf("unexpected request %s %s", r.Method, r.URL)
			w.WriteHeader(500)
			return
		}
		x := xs[next]
		next++
		if r.Method != x.method || r.URL.EscapedPath() != x.path || r.URL.RawQuery != x.query {
			t.Errorf("request %d: got %s %s?%s, want %s %s?%s", next, r.Method, r.URL.EscapedPath(), r.URL.RawQuery, x.method, x.path, x.query)
		}
		got, _ := io.ReadAll(r.Body)
		if !sameJSON(t, string(got), x.body) {
			t.Errorf("request %d (%s %s): body %s, want %s", next, x.method, x.path, got, x.body)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(x.status)
		io.WriteString(w, x.answer)
	}))
	t.Cleanup(func() {
		fake.Close()
		if next != len(xs) {
			t.Errorf("%d of %d requests made", next, len(xs))
		}
	})
	c, err := client.New(fake.URL, client.WithToken("t"), client.WithRetry(client.RetryPolicy{MaxAttempts: 1}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func sameJSON(t *testing.T, a, b string) bool {
	if a == "" || b == "" {
		return a == b
	}
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Errorf("not JSON: %s", a)
		return false
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("bad expected JSON: %s", b)
	}
	return reflect.DeepEqual(x, y)
}

const wireTopic = `{"id":"0193a5b4-3c4d-7e5f-8061-7c8d9e0f1a2b","slug":"top_abc","name":"prices","type":"standard",
"retentionSeconds":3600,"createdAt":"2026-12-04T10:00:00Z","updatedAt":"2026-12-04T10:00:00Z",
"firstSequence":1,"lastSequence":0,"storedBytes":0,"bindings":0}`

const wireBinding = `{"id":"0193a5b4-3c4d-7e5f-8061-000000000001","slug":"qbd_x","queueId":"q1","queue":"eu","topicId":"t1",
"topic":"prices","filter":{"attributes":{"region":"eu","kind":["a","b"]}},"from":7,"startSequence":7,"sequence":9,
"lag":3,"copied":2,"failed":1,"lastFailure":{"reason":"queue full","at":"2026-12-04T10:00:01Z"},
"createdAt":"2026-12-04T10:00:00Z","updatedAt":"2026-12-04T10:00:02Z"}`

// The topic calls send the documented requests and read the documented answers.
func TestTopicsWire(t *testing.T) {
	ctx := t.Context()
	c := wireServer(t, []exchange{
		{"POST", "/v1/topics", "", `{"name":"prices","retentionSeconds":3600}`, 201, wireTopic},
		{"POST", "/v1/topics", "", `{"name":"prices"}`, 409, `{"error":{"code":"topic_exists","message":"taken","details":{"field":"name"}}}`},
		{"GET", "/v1/topics/prices", "", "", 200, wireTopic},
		{"PATCH", "/v1/topics/top_abc", "", `{"retentionSeconds":0}`, 200, wireTopic},
		{"GET", "/v1/topics", "limit=1&prefix=pr", "", 200, `{"topics":[` + wireTopic + `],"nextCursor":"c1"}`},
		{"GET", "/v1/topics", "prefix=pr", "", 200, `{"topics":[` + wireTopic + `],"nextCursor":"c1"}`},
		{"GET", "/v1/topics", "cursor=c1&prefix=pr", "", 200, `{"topics":[` + wireTopic + `],"nextCursor":null}`},
		{"DELETE", "/v1/topics/prices", "", "", 204, ""},
	})
	tp, err := c.CreateTopic(ctx, client.CreateTopicInput{Name: "prices", RetentionSeconds: client.Int(3600)})
	if err != nil || tp.Slug != "top_abc" || tp.Type != client.Standard || tp.RetentionSeconds != 3600 || tp.FirstSequence != 1 || tp.CreatedAt.IsZero() {
		t.Fatalf("create: %+v %v", tp, err)
	}
	_, err = c.CreateTopic(ctx, client.CreateTopicInput{Name: "prices"})
	if !errors.Is(err, client.ErrTopicExists) || !client.IsConflict(err) {
		t.Fatalf("create a taken name: %v", err)
	}
	if g, err := c.GetTopic(ctx, "prices"); err != nil || g.Name != "prices" {
		t.Fatalf("get: %+v %v", g, err)
	}
	if _, err := c.UpdateTopic(ctx, "top_abc", client.UpdateTopicInput{RetentionSeconds: client.Int(0)}); err != nil {
		t.Fatal(err)
	}
	if p, err := c.ListTopics(ctx, client.ListTopicsInput{Prefix: "pr", Page: client.Page{Limit: 1}}); err != nil || len(p.Topics) != 1 || *p.NextCursor != "c1" {
		t.Fatalf("list: %+v %v", p, err)
	}
	n := 0
	for tp, err := range c.AllTopics(ctx, "pr") {
		if err != nil || tp.Name != "prices" {
			t.Fatalf("all topics: %+v %v", tp, err)
		}
		n++
	}
	if n != 2 {
		t.Fatalf("all topics: %d, want 2 (two pages)", n)
	}
	if err := c.DeleteTopic(ctx, "prices"); err != nil {
		t.Fatal(err)
	}
}

func TestPublishWire(t *testing.T) {
	ctx := t.Context()
	c := wireServer(t, []exchange{
		{"POST", "/v1/topics/prices/messages", "", `{"messages":[{"body":"a","attributes":{"k":"v"},"key":"x","merge":"patch"},
			{"body":null,"key":"x"},{"body":"b","groupId":"g","dedupId":"d"}]}`, 200,
			`{"messages":[{"index":0,"messageId":"m0","sequence":4,"duplicate":false},{"index":2,"messageId":"m2","sequence":5,"duplicate":true}],
			"failed":[{"index":1,"error":{"code":"invalid_argument","message":"no","details":{"field":"messages[1].body"}}}]}`},
		{"POST", "/v1/topics/a%2Fb/messages", "", `{"messages":[{"body":"one"}]}`, 200,
			`{"messages":[{"index":0,"messageId":"m9","sequence":9,"duplicate":false}],"failed":[]}`},
	})
	r, err := c.PublishBatch(ctx, "prices", []client.PublishMessage{
		{Body: "a", Attributes: map[string]string{"k": "v"}, Key: "x", Merge: client.MergePatch},
		{Key: "x", Delete: true},
		{Body: "b", GroupID: "g", DedupID: "d"},
	})
	if err != nil || len(r.Messages) != 2 || r.Messages[0].Sequence != 4 || !r.Messages[1].Duplicate || r.Messages[1].Index != 2 {
		t.Fatalf("publish: %+v %v", r, err)
	}
	if len(r.Failed) != 1 || r.Failed[0].Index != 1 || r.Failed[0].Err.Field != "messages[1].body" || r.Failed[0].Err.StatusCode != 400 || r.Err() == nil {
		t.Fatalf("publish failures: %+v", r.Failed)
	}
	if m, err := c.Publish(ctx, "a/b", client.PublishMessage{Body: "one"}); err != nil || m.MessageID != "m9" || m.Sequence != 9 {
		t.Fatalf("publish one: %+v %v", m, err)
	}
}

func TestBindingsWire(t *testing.T) {
	ctx := t.Context()
	at := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	c := wireServer(t, []exchange{
		{"POST", "/v1/queues/eu/sources", "", `{"topic":"prices","filter":{"attributes":{"region":["eu"]}},"from":"7"}`, 201, wireBinding},
		{"POST", "/v1/queues/eu/sources", "", `{"topic":"prices","from":"2026-12-04T10:00:00Z"}`, 409, `{"error":{"code":"binding_exists","message":"bound"}}`},
		{"POST", "/v1/queues/us/sources", "", `{"topic":"prices"}`, 201, wireBinding},
		{"GET", "/v1/queues/eu/sources", "", "", 200, `{"sources":[` + wireBinding + `],"nextCursor":null}`},
		{"GET", "/v1/topics/prices/bindings", "", "", 200, `{"bindings":[],"nextCursor":null}`},
		{"GET", "/v1/queues/eu/sources/qbd_x", "", "", 200, wireBinding},
		{"PATCH", "/v1/queues/eu/sources/qbd_x", "", `{"filter":null}`, 200, wireBinding},
		{"PATCH", "/v1/queues/eu/sources/qbd_x", "", `{"filter":{"attributes":{"kind":["a","b"]}}}`, 200, wireBinding},
		{"DELETE", "/v1/queues/eu/sources/qbd_x", "", "", 204, ""},
	})
	b, err := c.Bind(ctx, "eu", client.BindInput{Topic: "prices", Filter: client.Attr("region", "eu"), From: client.AtSequence(7)})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"region": {"eu"}, "kind": {"a", "b"}}
	if b.Slug != "qbd_x" || b.From != "7" || b.StartSequence != 7 || b.Sequence != 9 || b.Lag != 3 || b.Copied != 2 || b.Failed != 1 ||
		b.LastFailure == nil || b.LastFailure.Reason != "queue full" || !reflect.DeepEqual(b.Filter.Attributes, want) {
		t.Fatalf("bind: %+v", b)
	}
	_, err = c.Bind(ctx, "eu", client.BindInput{Topic: "prices", From: client.AtTime(at)})
	if client.CodeOf(err) != client.CodeBindingExists || !client.IsConflict(err) {
		t.Fatalf("bind twice: %v", err)
	}
	if _, err := c.Bind(ctx, "us", client.BindInput{Topic: "prices"}); err != nil {
		t.Fatal(err)
	}
	if l, err := c.ListSources(ctx, "eu"); err != nil || len(l) != 1 || l[0].ID != b.ID {
		t.Fatalf("sources: %+v %v", l, err)
	}
	if l, err := c.TopicBindings(ctx, "prices"); err != nil || l == nil || len(l) != 0 {
		t.Fatalf("bindings: %+v %v", l, err)
	}
	if g, err := c.GetSource(ctx, "eu", "qbd_x"); err != nil || g.Queue != "eu" || g.Topic != "prices" {
		t.Fatalf("get source: %+v %v", g, err)
	}
	if _, err := c.UpdateSourceFilter(ctx, "eu", "qbd_x", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpdateSourceFilter(ctx, "eu", "qbd_x", client.Attr("kind", "a", "b")); err != nil {
		t.Fatal(err)
	}
	if err := c.Unbind(ctx, "eu", "qbd_x"); err != nil {
		t.Fatal(err)
	}
}

const wireEntry = `{"sequence":%d,"messageId":"m","body":"b","attributes":{"k":"v"},"publishedAt":"2026-12-04T10:00:00Z","key":"x"}`

func TestLogAndStateWire(t *testing.T) {
	ctx := t.Context()
	entry := func(seq int) string { return fmt.Sprintf(wireEntry, seq) }
	c := wireServer(t, []exchange{
		{"GET", "/v1/topics/prices/messages", "attribute.k=v&from=3&limit=2&to=2026-12-04T10%3A00%3A00Z", "", 200,
			`{"messages":[` + entry(3) + `,` + entry(4) + `],"nextCursor":"n"}`},
		{"GET", "/v1/topics/prices/messages", "from=3", "", 200, `{"messages":[` + entry(3) + `],"nextCursor":"n"}`},
		{"GET", "/v1/topics/prices/messages", "cursor=n&from=3", "", 200,
			`{"messages":[{"sequence":5,"messageId":"m5","body":"","attributes":{},"publishedAt":"2026-12-04T10:00:00Z","key":"x","deleted":true}],"nextCursor":null}`},
		{"GET", "/v1/topics/prices/state", "key=a+b%2F", "", 200, `{"key":"a b/","body":"{}","attributes":{},"sequence":3,"publishedAt":"2026-12-04T10:00:00Z"}`},
		{"GET", "/v1/topics/prices/state", "key=gone", "", 404, `{"error":{"code":"not_found","message":"no state"}}`},
		{"GET", "/v1/topics/prices/state", "limit=1", "", 200, `{"state":[{"key":"a","body":"1","attributes":{},"sequence":1,"publishedAt":"2026-12-04T10:00:00Z"}],"nextCursor":"s"}`},
		{"GET", "/v1/topics/prices/state", "", "", 200, `{"state":[{"key":"a","body":"1","attributes":{},"sequence":1,"publishedAt":"2026-12-04T10:00:00Z"}],"nextCursor":"s"}`},
		{"GET", "/v1/topics/prices/state", "cursor=s", "", 200, `{"state":[{"key":"b","body":"2","attributes":{},"sequence":2,"publishedAt":"2026-12-04T10:00:00Z"}],"nextCursor":null}`},
	})
	at := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	p, err := c.ReadLog(ctx, "prices", client.ReadLogInput{From: client.AtSequence(3), To: client.AtTime(at), Filter: client.Attr("k", "v"), Page: client.Page{Limit: 2}})
	if err != nil || len(p.Messages) != 2 || p.Messages[1].Sequence != 4 || p.Messages[0].Key != "x" || p.Messages[0].Attributes["k"] != "v" || *p.NextCursor != "n" {
		t.Fatalf("read log: %+v %v", p, err)
	}
	var seqs []uint64
	for e, err := range c.LogEntries(ctx, "prices", client.ReadLogInput{From: client.AtSequence(3)}) {
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, e.Sequence)
		if e.Sequence == 5 && !e.Deleted {
			t.Fatalf("a deleting entry: %+v", e)
		}
	}
	if !slices.Equal(seqs, []uint64{3, 5}) {
		t.Fatalf("log entries: %v", seqs)
	}
	if s, err := c.State(ctx, "prices", "a b/"); err != nil || s.Key != "a b/" || s.Sequence != 3 {
		t.Fatalf("state: %+v %v", s, err)
	}
	if _, err := c.State(ctx, "prices", "gone"); !client.IsNotFound(err) {
		t.Fatalf("state of a key without any: %v", err)
	}
	if sp, err := c.ListState(ctx, "prices", client.Page{Limit: 1}); err != nil || len(sp.State) != 1 || *sp.NextCursor != "s" {
		t.Fatalf("list state: %+v %v", sp, err)
	}
	var keys []string
	for s, err := range c.AllState(ctx, "prices") {
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, s.Key)
	}
	if !slices.Equal(keys, []string{"a", "b"}) {
		t.Fatalf("all state: %v", keys)
	}
}
