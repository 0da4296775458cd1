package e2e

import (
	"fmt"
	"testing"
	"time"
)

// deadLettered fills a dead-letter queue: n messages sent to src (attribute kind a or b by
// parity), each received and dead-lettered by its consumer with reason "bad" (a) or the
// default (b). It answers the ids by kind.
func deadLettered(t *testing.T, c *client, src string, n int) map[string][]string {
	t.Helper()
	byKind := map[string][]string{}
	for i := 0; i < n; i += 10 {
		var msgs []map[string]any
		for j := i; j < min(n, i+10); j++ {
			kind := []string{"a", "b"}[j%2]
			msgs = append(msgs, map[string]any{"body": fmt.Sprint(j), "attributes": map[string]string{"kind": kind}})
		}
		r := c.do("POST", "/v1/queues/"+src+"/messages", map[string]any{"messages": msgs}).must(t, 200)
		for k, m := range r.list("messages") {
			byKind[msgs[k]["attributes"].(map[string]string)["kind"]] = append(byKind[msgs[k]["attributes"].(map[string]string)["kind"]], m["messageId"].(string))
		}
	}
	for got := 0; got < n; {
		ms := c.receive(t, src, map[string]any{"maxMessages": 10, "waitSeconds": 0})
		if len(ms) == 0 {
			t.Fatalf("received %d of %d to dead-letter", got, n)
		}
		for _, m := range ms {
			body := map[string]any{"receiptHandle": m["receiptHandle"]}
			if m["attributes"].(map[string]any)["kind"] == "a" {
				body["reason"] = "bad"
			}
			c.do("POST", "/v1/receipts/dead-letter", body).must(t, 204)
		}
		got += len(ms)
	}
	return byKind
}

// awaitTask polls a task until it leaves running (the runner's progress is the event).
func awaitTask(t *testing.T, c *client, queue, id string) resp {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		r := c.do("GET", "/v1/queues/"+queue+"/move-tasks/"+id, nil).must(t, 200)
		if r.str("status") != "running" {
			return r
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("move task %s still running after a minute", id)
	return resp{}
}

func TestMoveTaskRedrive(t *testing.T) {
	tn := newTenant(t)
	c := tn.a
	tn.queue(t, "mv-dlq", nil)
	dlqID := c.do("GET", "/v1/queues/mv-dlq", nil).must(t, 200).str("id")
	srcID := tn.queue(t, "mv-src", map[string]any{"redrive": map[string]any{"deadLetterQueue": dlqID, "maxReceiveCount": 1}}).str("id")
	tn.queue(t, "mv-fifo.fifo", map[string]any{"type": "fifo"})
	byKind := deadLettered(t, c, "mv-src", 20)
	path := "/v1/queues/mv-dlq/move-tasks"

	// Bad requests name their field.
	for _, bad := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"maxMessagesPerSecond": 0}, "maxMessagesPerSecond"},
		{map[string]any{"maxMessagesPerSecond": 10001}, "maxMessagesPerSecond"},
		{map[string]any{"dryRun": "yes"}, "dryRun"},
		{map[string]any{"speed": 1}, "speed"},
		{map[string]any{"filter": 5}, "filter"},
		{map[string]any{"filter": map[string]any{"colour": "red"}}, "filter.colour"},
		{map[string]any{"filter": map[string]any{"sentAfter": "yesterday"}}, "filter.sentAfter"},
		{map[string]any{"filter": map[string]any{"reason": ""}}, "filter.reason"},
		{map[string]any{"filter": map[string]any{"attributes": map[string]any{"kind": 3}}}, "filter.attributes.kind"},
		{map[string]any{"destination": "mv-fifo.fifo"}, "destination"},
		{map[string]any{"destination": "mv-dlq"}, "destination"},
	} {
		c.do("POST", path, bad.body).fails(t, 400, "invalid_argument", bad.field)
	}
	c.do("POST", path, map[string]any{"destination": "nowhere"}).fails(t, 404, "not_found", "destination")
	c.do("POST", "/v1/queues/nowhere/move-tasks", nil).fails(t, 404, "not_found", "")
	c.as(tn.tokenWith(t, "queues:read")).do("POST", path, nil).fails(t, 403, "permission_denied", "")
	c.do("GET", path+"/00000000-0000-7000-8000-000000000000", nil).fails(t, 404, "not_found", "")

	// A dry run of a source within one batch counts in the request and stores nothing.
	dry := c.do("POST", path, map[string]any{"dryRun": true, "filter": map[string]any{"reason": "bad"}}).must(t, 200)
	if dry.str("status") != "completed" || dry.body["toMove"] != 10.0 || dry.body["moved"] != 0.0 || dry.body["dryRun"] != true {
		t.Fatalf("dry run: %s", dry.raw)
	}
	if l := c.do("GET", path, nil).must(t, 200); len(l.list("moveTasks")) != 0 || l.body["nextCursor"] != nil {
		t.Fatalf("a dry run was listed: %s", l.raw)
	}
	if n := c.counts(t, "mv-dlq")["visible"]; n != 20.0 {
		t.Fatalf("a dry run moved something: the dead-letter queue holds %v", n)
	}

	// Kind a goes back to its source; a second task meanwhile is refused.
	start := c.do("POST", path, map[string]any{"filter": map[string]any{"attributes": map[string]any{"kind": "a"}}, "maxMessagesPerSecond": 4}).must(t, 201)
	if start.str("status") != "running" || start.body["source"] != dlqID || start.body["destination"] != nil {
		t.Fatalf("started: %s", start.raw)
	}
	c.do("POST", path, nil).fails(t, 409, "move_task_running", "")
	done := awaitTask(t, tn.b, "mv-dlq", start.str("id"))
	if done.str("status") != "completed" || done.body["moved"] != 10.0 || done.body["toMove"] != 10.0 || done.body["failed"] != 0.0 || done.body["finishedAt"] == nil {
		t.Fatalf("finished: %s", done.raw)
	}
	got := map[string]bool{}
	for len(got) < 10 {
		ms := c.receive(t, "mv-src", map[string]any{"maxMessages": 10, "waitSeconds": 1})
		if len(ms) == 0 {
			t.Fatalf("the source holds %d moved messages, want 10", len(got))
		}
		for _, m := range ms {
			if m["receiveCount"] != 1.0 || m["deadLetter"] != nil || m["attributes"].(map[string]any)["kind"] != "a" {
				t.Fatalf("moved back: %v", m)
			}
			got[m["messageId"].(string)] = true
			ack(t, c, m["receiptHandle"].(string))
		}
	}
	for _, id := range byKind["a"] {
		if !got[id] {
			t.Fatalf("message %s did not come back with its id", id)
		}
	}
	if n := c.counts(t, "mv-dlq")["visible"]; n != 10.0 {
		t.Fatalf("the dead-letter queue holds %v, want the 10 of kind b", n)
	}

	// To an explicit destination, slowly, then cancelled.
	tn.queue(t, "mv-replay", nil)
	slow := c.do("POST", path, map[string]any{"destination": "mv-replay", "maxMessagesPerSecond": 1}).must(t, 201)
	cancelled := c.do("POST", path+"/"+slow.str("id")+"/cancel", nil).must(t, 200)
	if cancelled.str("status") != "cancelled" || cancelled.body["finishedAt"] == nil {
		t.Fatalf("cancel: %s", cancelled.raw)
	}
	again := c.do("POST", path+"/"+slow.str("id")+"/cancel", nil).must(t, 200)
	if again.str("status") != "cancelled" {
		t.Fatalf("cancelling twice: %s", again.raw)
	}
	// The queue is free again; everything left goes.
	last := c.do("POST", path, map[string]any{"destination": srcID, "maxMessagesPerSecond": 10000}).must(t, 201)
	lastDone := awaitTask(t, c, "mv-dlq", last.str("id"))
	if lastDone.str("status") != "completed" {
		t.Fatalf("last task: %s", lastDone.raw)
	}
	// Newest first, paged, nextCursor null on the last page.
	page1 := c.do("GET", path+"?limit=2", nil).must(t, 200)
	ts := page1.list("moveTasks")
	if len(ts) != 2 || ts[0]["id"] != last.str("id") || ts[1]["id"] != slow.str("id") || page1.body["nextCursor"] == nil {
		t.Fatalf("first page: %s", page1.raw)
	}
	page2 := c.do("GET", path+"?limit=2&cursor="+page1.str("nextCursor"), nil).must(t, 200)
	if ts := page2.list("moveTasks"); len(ts) != 1 || ts[0]["id"] != start.str("id") || page2.body["nextCursor"] != nil {
		t.Fatalf("second page: %s", page2.raw)
	}
	c.do("GET", path+"?cursor=garbage", nil).fails(t, 400, "invalid_argument", "cursor")
	// A batch in transit when the cancel lands still completes (the runner sees the cancel
	// at its next batch), so the last task may have counted a message (toMove) that the
	// cancelled one then moved: what the two moved adds up, not the estimate.
	moved := int(lastDone.body["moved"].(float64))
	if m := awaitTask(t, c, "mv-dlq", slow.str("id")).body["moved"].(float64); int(m)+moved != 10 {
		t.Fatalf("cancelled task moved %v and the last %d; want 10 together", m, moved)
	}
}

// TestMoveTaskDelete: "action": "delete" (docs/redrive.md) deletes the matching visible messages
// with the lifecycle of a move; the rest stay.
func TestMoveTaskDelete(t *testing.T) {
	tn := newTenant(t)
	c := tn.a
	tn.queue(t, "del-dlq", nil)
	dlqID := c.do("GET", "/v1/queues/del-dlq", nil).must(t, 200).str("id")
	tn.queue(t, "del-src", map[string]any{"redrive": map[string]any{"deadLetterQueue": dlqID, "maxReceiveCount": 1}})
	byKind := deadLettered(t, c, "del-src", 20)
	path := "/v1/queues/del-dlq/move-tasks"

	c.do("POST", path, map[string]any{"action": "purge"}).fails(t, 400, "invalid_argument", "action")
	c.do("POST", path, map[string]any{"action": 1}).fails(t, 400, "invalid_argument", "action")
	c.do("POST", path, map[string]any{"action": "delete", "destination": "del-src"}).fails(t, 400, "invalid_argument", "destination")

	// A dry run of a delete counts and deletes nothing.
	dry := c.do("POST", path, map[string]any{"action": "delete", "dryRun": true, "filter": map[string]any{"reason": "bad"}}).must(t, 200)
	if dry.body["toMove"] != 10.0 || dry.body["moved"] != 0.0 || c.counts(t, "del-dlq")["visible"] != 20.0 {
		t.Fatalf("dry run of a delete: %s", dry.raw)
	}
	start := c.do("POST", path, map[string]any{"action": "delete", "filter": map[string]any{"reason": "bad"}, "maxMessagesPerSecond": 10000}).must(t, 201)
	if start.str("action") != "delete" || start.body["destination"] != nil {
		t.Fatalf("started: %s", start.raw)
	}
	done := awaitTask(t, c, "del-dlq", start.str("id"))
	if done.str("status") != "completed" || done.body["moved"] != 10.0 || done.body["failed"] != 0.0 || done.str("action") != "delete" {
		t.Fatalf("finished: %s", done.raw)
	}
	if n := c.counts(t, "del-dlq")["visible"]; n != 10.0 {
		t.Fatalf("the dead-letter queue holds %v, want the 10 of kind b", n)
	}
	if n := c.counts(t, "del-src")["visible"]; n != 0.0 {
		t.Fatalf("the source queue holds %v, want nothing (deleted, not moved)", n)
	}
	left := map[string]bool{}
	for _, m := range c.receive(t, "del-dlq", map[string]any{"maxMessages": 10, "waitSeconds": 0}) {
		left[m["messageId"].(string)] = true
	}
	for _, id := range byKind["a"] {
		if left[id] {
			t.Fatalf("message %s (reason bad) was not deleted", id)
		}
	}
	// A move task is listed with its action too.
	if ts := c.do("GET", path, nil).must(t, 200).list("moveTasks"); len(ts) != 1 || ts[0]["action"] != "delete" {
		t.Fatalf("listed: %v", ts)
	}
}

// TestMoveTaskRunningCap: a project runs at most 10 move tasks at once (dry runs included):
// the 11th is refused 403 quota_exceeded, details.limit runningMoveTasks, and a cancel frees
// a place.
func TestMoveTaskRunningCap(t *testing.T) {
	tn := newTenant(t)
	c := tn.a
	msgs := []map[string]any{{"body": "1"}, {"body": "2"}, {"body": "3"}, {"body": "4"}, {"body": "5"}}
	var ids []string
	for i := range 11 {
		q := fmt.Sprint("cap-", i)
		tn.queue(t, q, nil)
		c.do("POST", "/v1/queues/"+q+"/messages", map[string]any{"messages": msgs}).must(t, 200)
		if i == 10 {
			break
		}
		// One a second over five messages: running for seconds.
		body := map[string]any{"action": "delete", "maxMessagesPerSecond": 1}
		ids = append(ids, c.do("POST", "/v1/queues/"+q+"/move-tasks", body).must(t, 201).str("id"))
	}
	r := c.do("POST", "/v1/queues/cap-10/move-tasks", map[string]any{"action": "delete"})
	r.fails(t, 403, "quota_exceeded", "")
	if d, _ := r.body["error"].(map[string]any)["details"].(map[string]any); d["limit"] != "runningMoveTasks" {
		t.Fatalf("details: %s", r.raw)
	}
	c.do("POST", "/v1/queues/cap-0/move-tasks/"+ids[0]+"/cancel", nil).must(t, 200)
	last := c.do("POST", "/v1/queues/cap-10/move-tasks", map[string]any{"action": "delete", "maxMessagesPerSecond": 1}).must(t, 201)
	c.do("POST", "/v1/queues/cap-10/move-tasks/"+last.str("id")+"/cancel", nil).must(t, 200)
	for i, id := range ids[1:] {
		c.do("POST", fmt.Sprintf("/v1/queues/cap-%d/move-tasks/%s/cancel", i+1, id), nil).must(t, 200)
	}
}
