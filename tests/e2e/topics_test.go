package e2e

import (
	"slices"
	"strings"
	"testing"
)

// TestTopics: every topic and source route over /v1 on both replicas (a topic made through
// one is published to through the other, through its metadata cache), each exchange checked
// against openapi.yaml; a publish reaches a bound queue through the fan-out, filtered, with
// the published messageId.
func TestTopics(t *testing.T) {
	tn := newTenant(t)
	a, b := tn.a, tn.b
	tp := a.do("POST", "/v1/topics", map[string]any{"name": "events"}).must(t, 201)
	if !strings.HasPrefix(tp.str("slug"), "top_") || tp.body["lastSequence"] != 0.0 {
		t.Fatalf("created %s", tp.raw)
	}
	b.do("POST", "/v1/topics", map[string]any{"name": "events"}).fails(t, 409, "topic_exists", "name")
	b.do("GET", "/v1/topics/"+tp.str("slug"), nil).must(t, 200)
	if l := b.do("GET", "/v1/topics?prefix=ev", nil).must(t, 200).list("topics"); len(l) != 1 {
		t.Fatalf("list: %v", l)
	}
	a.do("PATCH", "/v1/topics/events", map[string]any{"retentionSeconds": 3600}).must(t, 200)
	if r := a.do("GET", "/v1/topics/events", nil).must(t, 200); r.body["retentionSeconds"] != 3600.0 {
		t.Fatalf("after the change: %s", r.raw)
	}

	tn.queue(t, "reds", nil)
	tn.queue(t, "all", nil)
	src := a.do("POST", "/v1/queues/reds/sources", map[string]any{"topic": "events",
		"filter": map[string]any{"attributes": map[string]any{"color": "red"}}}).must(t, 201)
	b.do("POST", "/v1/queues/all/sources", map[string]any{"topic": tp.str("id"), "from": "earliest"}).must(t, 201)
	a.do("POST", "/v1/queues/reds/sources", map[string]any{"topic": "events"}).fails(t, 409, "binding_exists", "topic")
	a.do("POST", "/v1/queues/reds/sources", map[string]any{"topic": "nope"}).fails(t, 404, "not_found", "topic")

	pub := b.do("POST", "/v1/topics/events/messages", map[string]any{"messages": []any{
		map[string]any{"body": "r", "attributes": map[string]string{"color": "red"}},
		map[string]any{"body": "g", "attributes": map[string]string{"color": "green"}},
		map[string]any{"body": "x", "delaySeconds": 1},
	}}).must(t, 200)
	if f := pub.list("failed"); len(f) != 1 || f[0]["index"] != 2.0 {
		t.Fatalf("publish: %s", pub.raw)
	}
	ms := pub.list("messages")
	if len(ms) != 2 || ms[0]["sequence"] != 1.0 || ms[1]["sequence"] != 2.0 {
		t.Fatalf("publish: %s", pub.raw)
	}

	// The fan-out copies within its latency target; a long poll awaits the copy.
	got := a.receive(t, "reds", map[string]any{"waitSeconds": 10})
	if len(got) != 1 || got[0]["body"] != "r" || got[0]["messageId"] != ms[0]["messageId"] {
		t.Fatalf("reds received %v", got)
	}
	var bodies []string
	for len(bodies) < 2 {
		got := b.receive(t, "all", map[string]any{"waitSeconds": 10, "maxMessages": 10})
		if len(got) == 0 {
			t.Fatalf("all received nothing more after %v", bodies)
		}
		for _, m := range got {
			bodies = append(bodies, m["body"].(string))
		}
	}
	slices.Sort(bodies)
	if !slices.Equal(bodies, []string{"g", "r"}) {
		t.Fatalf("all received %v", bodies)
	}

	one := a.do("GET", "/v1/queues/reds/sources/"+src.str("slug"), nil).must(t, 200)
	if one.body["topic"] != "events" || one.body["queue"] != "reds" {
		t.Fatalf("source %s", one.raw)
	}
	if l := b.do("GET", "/v1/queues/reds/sources", nil).must(t, 200).list("sources"); len(l) != 1 {
		t.Fatalf("sources %v", l)
	}
	if l := a.do("GET", "/v1/topics/events/bindings", nil).must(t, 200).list("bindings"); len(l) != 2 {
		t.Fatalf("bindings %v", l)
	}
	a.do("PATCH", "/v1/queues/reds/sources/"+src.str("id"), map[string]any{"filter": nil}).must(t, 200)

	log := b.do("GET", "/v1/topics/events/messages?from=1&limit=1", nil).must(t, 200)
	if l := log.list("messages"); len(l) != 1 || l[0]["body"] != "r" || log.str("nextCursor") == "" {
		t.Fatalf("log page %s", log.raw)
	}
	next := b.do("GET", "/v1/topics/events/messages?limit=1&cursor="+log.str("nextCursor"), nil).must(t, 200)
	if l := next.list("messages"); len(l) != 1 || l[0]["body"] != "g" {
		t.Fatalf("log page 2 %s", next.raw)
	}
	a.do("GET", "/v1/topics/events/messages?to=soon", nil).fails(t, 400, "invalid_argument", "to")

	a.do("POST", "/v1/topics/events/messages", map[string]any{"messages": []any{
		map[string]any{"body": `{"qty":1}`, "key": "sku-1"}}}).must(t, 200)
	if st := b.do("GET", "/v1/topics/events/state?key=sku-1", nil).must(t, 200); st.str("body") != `{"qty":1}` {
		t.Fatalf("state %s", st.raw)
	}
	if l := b.do("GET", "/v1/topics/events/state", nil).must(t, 200).list("state"); len(l) != 1 {
		t.Fatalf("state page %v", l)
	}

	a.do("DELETE", "/v1/queues/reds/sources/"+src.str("id"), nil).must(t, 204)
	b.do("DELETE", "/v1/topics/events", nil).must(t, 204)
	b.do("GET", "/v1/topics/events", nil).fails(t, 404, "not_found", "")
	if l := a.do("GET", "/v1/queues/all/sources", nil).must(t, 200).list("sources"); len(l) != 0 {
		t.Fatalf("sources of a deleted topic %v", l)
	}
}
