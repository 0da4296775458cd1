package e2e

import (
	"fmt"
	"testing"
	"time"
)

// awaitReplay polls a replay until it leaves running (the runner's progress is the event).
func awaitReplay(t *testing.T, c *client, topic, id string) resp {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		r := c.do("GET", "/v1/topics/"+topic+"/replays/"+id, nil).must(t, 200)
		if r.str("status") != "running" {
			return r
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("replay %s still running after a minute", id)
	return resp{}
}

// publishKinds publishes n messages to topic (attribute kind a or b by parity, body the
// index) and answers their message ids.
func publishKinds(t *testing.T, c *client, topic string, n int) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	for i := 0; i < n; i += 10 {
		var msgs []map[string]any
		for j := i; j < min(n, i+10); j++ {
			msgs = append(msgs, map[string]any{"body": fmt.Sprint(j + 1), "attributes": map[string]string{"kind": []string{"b", "a"}[(j+1)%2]}})
		}
		r := c.do("POST", "/v1/topics/"+topic+"/messages", map[string]any{"messages": msgs}).must(t, 200)
		for _, m := range r.list("messages") {
			ids[m["messageId"].(string)] = true
		}
	}
	return ids
}

func TestReplay(t *testing.T) {
	tn := newTenant(t)
	c := tn.a
	topicID := c.do("POST", "/v1/topics", map[string]any{"name": "rp-topic"}).must(t, 201).str("id")
	dstID := tn.queue(t, "rp-dst", nil).str("id")
	tn.queue(t, "rp-other", nil)
	tn.queue(t, "rp-fifo.fifo", map[string]any{"type": "fifo"})
	published := publishKinds(t, c, "rp-topic", 20) // sequences 1..20, odd ones kind a
	path := "/v1/topics/rp-topic/replays"

	// Bad requests name their field.
	for _, bad := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"from": 1}, "queue"},
		{map[string]any{"queue": "rp-dst"}, "from"},
		{map[string]any{"queue": "rp-dst", "from": 0}, "from"},
		{map[string]any{"queue": "rp-dst", "from": "yesterday"}, "from"},
		{map[string]any{"queue": "rp-dst", "from": 1, "to": "x"}, "to"},
		{map[string]any{"queue": "rp-dst", "from": 5, "to": 4}, "to"},
		{map[string]any{"queue": "rp-dst", "from": 21}, "from"},
		{map[string]any{"queue": "rp-dst", "from": 1, "maxMessagesPerSecond": 0}, "maxMessagesPerSecond"},
		{map[string]any{"queue": "rp-dst", "from": 1, "maxMessagesPerSecond": 10001}, "maxMessagesPerSecond"},
		{map[string]any{"queue": "rp-dst", "from": 1, "dryRun": "yes"}, "dryRun"},
		{map[string]any{"queue": "rp-dst", "from": 1, "speed": 1}, "speed"},
		{map[string]any{"queue": "rp-dst", "from": 1, "filter": map[string]any{"colour": "red"}}, "filter.colour"},
		{map[string]any{"queue": "rp-fifo.fifo", "from": 1}, "queue"},
	} {
		c.do("POST", path, bad.body).fails(t, 400, "invalid_argument", bad.field)
	}
	c.do("POST", path, map[string]any{"queue": "nowhere", "from": 1}).fails(t, 404, "not_found", "queue")
	c.do("POST", "/v1/topics/nowhere/replays", map[string]any{"queue": "rp-dst", "from": 1}).fails(t, 404, "not_found", "")
	c.as(tn.tokenWith(t, "queues:read")).do("POST", path, map[string]any{"queue": "rp-dst", "from": 1}).fails(t, 403, "permission_denied", "")
	c.do("GET", path+"/00000000-0000-7000-8000-000000000000", nil).fails(t, 404, "not_found", "")

	// A dry run within one log read counts in the request and stores nothing.
	dry := c.do("POST", path, map[string]any{"queue": "rp-dst", "from": 1, "dryRun": true, "filter": map[string]any{"attributes": map[string]any{"kind": "a"}}}).must(t, 200)
	if dry.str("status") != "completed" || dry.body["toMove"] != 10.0 || dry.body["moved"] != 0.0 || dry.body["to"] != 20.0 || dry.body["queue"] != "rp-dst" || dry.body["topicId"] != topicID {
		t.Fatalf("dry run: %s", dry.raw)
	}
	if l := c.do("GET", path, nil).must(t, 200); len(l.list("replays")) != 0 || l.body["nextCursor"] != nil {
		t.Fatalf("a dry run was listed: %s", l.raw)
	}
	// A time bound: the entries published at or after the second publish's time.
	second := c.do("GET", "/v1/topics/rp-topic/messages?from=11&limit=1", nil).must(t, 200).list("messages")[0]["publishedAt"].(string)
	if r := c.do("POST", path, map[string]any{"queue": "rp-dst", "from": second, "dryRun": true}).must(t, 200); r.body["from"].(float64) > 11 || r.body["toMove"].(float64) < 10 {
		t.Fatalf("a dry run from %s: %s", second, r.raw)
	}

	// Kind a of 3..12 into rp-dst; meanwhile the queue takes no other task.
	start := c.do("POST", path, map[string]any{"queue": dstID, "from": "3", "to": 12, "filter": map[string]any{"attributes": map[string]any{"kind": "a"}}, "maxMessagesPerSecond": 5}).must(t, 201)
	if start.str("status") != "running" || start.body["from"] != 3.0 || start.body["to"] != 12.0 || start.body["queueId"] != dstID {
		t.Fatalf("started: %s", start.raw)
	}
	c.do("POST", path, map[string]any{"queue": "rp-dst", "from": 1}).fails(t, 409, "move_task_running", "")
	c.do("POST", "/v1/queues/rp-dst/move-tasks", map[string]any{"destination": "rp-other"}).fails(t, 409, "move_task_running", "")

	// Another replay, into rp-other, cancelled at once.
	slow := c.do("POST", path, map[string]any{"queue": "rp-other", "from": 1, "maxMessagesPerSecond": 1}).must(t, 201)
	cancelled := c.do("POST", path+"/"+slow.str("id")+"/cancel", nil).must(t, 200)
	if cancelled.str("status") != "cancelled" || cancelled.body["finishedAt"] == nil {
		t.Fatalf("cancelled: %s", cancelled.raw)
	}
	if again := tn.b.do("POST", path+"/"+slow.str("id")+"/cancel", nil).must(t, 200); again.str("status") != "cancelled" {
		t.Fatalf("cancelled again: %s", again.raw)
	}

	done := awaitReplay(t, tn.b, "rp-topic", start.str("id"))
	if done.str("status") != "completed" || done.body["moved"] != 5.0 || done.body["toMove"] != 5.0 || done.body["failed"] != 0.0 || done.body["finishedAt"] == nil {
		t.Fatalf("finished: %s", done.raw)
	}
	if l := c.do("GET", path+"?limit=1", nil).must(t, 200); len(l.list("replays")) != 1 || l.list("replays")[0]["id"] != slow.str("id") || l.body["nextCursor"] == nil {
		t.Fatalf("first page: %s", l.raw)
	}

	// Browse and receive show the copies' origin (never the reserved attribute).
	for _, m := range c.do("GET", "/v1/queues/rp-dst/messages", nil).must(t, 200).list("messages") {
		if ro, _ := m["replayOf"].(map[string]any); ro == nil || ro["topic"] != topicID || len(m["attributes"].(map[string]any)) != 1 {
			t.Fatalf("browsed: %v", m)
		}
	}
	// The copies: new ids, their origin, the attributes as published.
	seqs := map[float64]bool{}
	for len(seqs) < 5 {
		ms := c.receive(t, "rp-dst", map[string]any{"maxMessages": 10, "waitSeconds": 1})
		if len(ms) == 0 {
			t.Fatalf("rp-dst holds %d replayed messages, want 5", len(seqs))
		}
		for _, m := range ms {
			ro, _ := m["replayOf"].(map[string]any)
			attrs := m["attributes"].(map[string]any)
			if ro == nil || ro["topic"] != topicID || published[m["messageId"].(string)] || attrs["kind"] != "a" || len(attrs) != 1 || m["body"] != fmt.Sprint(ro["sequence"]) {
				t.Fatalf("replayed message: %v", m)
			}
			seqs[ro["sequence"].(float64)] = true
		}
	}
	for _, s := range []float64{3, 5, 7, 9, 11} {
		if !seqs[s] {
			t.Fatalf("replayed sequences %v, want 3, 5, 7, 9, 11", seqs)
		}
	}
}
