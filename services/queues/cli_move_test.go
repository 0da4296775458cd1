package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/queueshq/queues/sdk/go/client"
)

// deadLetter fills dlq through src: n messages dead-lettered by the consumer, the first bad
// with reason "bad", the rest with "worse".
func (e *cliEnv) deadLetter(t *testing.T, src string, n, bad int) {
	t.Helper()
	ctx := t.Context()
	msgs := make([]client.SendMessage, n)
	for i := range msgs {
		msgs[i] = client.SendMessage{Body: fmt.Sprint("m", i)}
	}
	if _, err := e.c.SendBatch(ctx, src, msgs); err != nil {
		t.Fatal(err)
	}
	got, err := e.c.Receive(ctx, src, client.ReceiveInput{MaxMessages: n, WaitSeconds: client.Int(5)})
	if err != nil || len(got) != n {
		t.Fatalf("received %d of %d: %v", len(got), n, err)
	}
	entries := make([]client.DeadLetterEntry, n)
	for i, m := range got {
		entries[i] = client.DeadLetterEntry{ReceiptHandle: m.ReceiptHandle, Reason: "worse"}
		if i < bad {
			entries[i].Reason = "bad"
		}
	}
	if be, err := e.c.DeadLetterBatch(ctx, entries); err != nil || be.Err() != nil {
		t.Fatalf("dead-letter: %v %v", be, err)
	}
}

// TestCLIMove: queues move start|list|get|cancel — dry run, filters, the one running task
// per queue, cancel, --wait, and the errors' exit codes.
func TestCLIMove(t *testing.T) {
	e := newCLIEnv(t)
	dlq := jsonOf[client.Queue](t, e.run(t, "", "queue", "create", "jobs-dlq", "--json").ok(t))
	e.run(t, "", "queue", "create", "jobs", "--dlq", dlq.ID).ok(t)
	e.deadLetter(t, "jobs", 10, 8)

	e.run(t, "", "move", "start", "jobs-dlq", "--dry-run", "--reason", "bad").ok(t).has(t, "dry run: 8 would move, 0 could not")
	dry := jsonOf[client.MoveTask](t, e.run(t, "", "move", "start", "jobs-dlq", "--dry-run", "--attr", "nope=x", "--json").ok(t))
	if !dry.DryRun || dry.ToMove != 0 {
		t.Fatalf("dry run with an attribute nothing has: %+v", dry)
	}

	// One a second: the task is still running when the next start and the cancel come.
	slow := jsonOf[client.MoveTask](t, e.run(t, "", "move", "start", "jobs-dlq", "--reason", "bad", "--rate", "1", "--json").ok(t))
	if slow.Status != "running" || slow.Destination != nil || slow.Filter == nil || slow.Filter.Reason != "bad" {
		t.Fatalf("started: %+v", slow)
	}
	e.run(t, "", "move", "start", "jobs-dlq").fails(t, exitConflict, "move_task_running")
	e.run(t, "", "move", "list", "jobs-dlq").ok(t).has(t, "ID STATUS MOVED TO MOVE", slow.ID+" running", "each message's source queue")
	e.run(t, "", "move", "cancel", "jobs-dlq", slow.ID).ok(t).has(t, "move task: "+slow.ID, "status: cancelled")
	got := jsonOf[client.MoveTask](t, e.run(t, "", "move", "get", "jobs-dlq", slow.ID, "--json").ok(t))
	if got.Status != "cancelled" || got.FinishedAt == nil || got.Moved >= 8 {
		t.Fatalf("after cancel: %+v", got)
	}

	// --wait follows a task to its end; what is left of "bad" stays.
	waited := e.run(t, "", "move", "start", "jobs-dlq", "--reason", "worse", "--wait").ok(t)
	waited.has(t, "status: completed", "moved: 2 of 2", "failed: 0")
	// The cancelled task's count includes the batch that was under way when it was cancelled
	// (brought up to date after the cancel's answer).
	got = jsonOf[client.MoveTask](t, e.run(t, "", "move", "get", "jobs-dlq", slow.ID, "--json").ok(t))
	if c := e.counts(t, "jobs"); c.Visible != 2+got.Moved {
		t.Fatalf("source after moving 2 and %d back: %+v", got.Moved, c)
	}
	if c := e.counts(t, "jobs-dlq"); c.Visible != 8-got.Moved {
		t.Fatalf("dead-letter queue after the moves: %+v", c)
	}
	list := jsonOf[[]client.MoveTask](t, e.run(t, "", "move", "list", "jobs-dlq", "--json").ok(t))
	if len(list) != 2 || list[0].Status != "completed" || list[1].ID != slow.ID { // small dry runs are not stored
		t.Fatalf("list --json, newest first: %+v", list)
	}

	// Replay into another queue.
	e.run(t, "", "queue", "create", "jobs-replay").ok(t)
	replay := jsonOf[client.MoveTask](t, e.run(t, "", "move", "start", "jobs-dlq", "--to", "jobs-replay", "--wait", "--json").ok(t))
	if c := e.counts(t, "jobs-replay"); c.Visible != 8-got.Moved || replay.Status != "completed" || replay.Moved != c.Visible {
		t.Fatalf("replayed: %+v, task %+v, cancelled task %+v, dlq %+v", c, replay, got, e.counts(t, "jobs-dlq"))
	}

	e.run(t, "", "move", "start", "jobs-dlq", "--rate", "0").fails(t, exitError, "invalid_argument", "field maxMessagesPerSecond")
	e.run(t, "", "move", "start", "jobs-dlq", "--to", "jobs-dlq").fails(t, exitError, "invalid_argument", "field destination")
	e.run(t, "", "move", "start", "jobs-dlq", "--to", "nowhere").fails(t, exitNotFound, "not_found", "field destination")
	e.run(t, "", "move", "start", "nowhere").fails(t, exitNotFound, "not_found")
	e.run(t, "", "move", "start", "jobs-dlq", "--sent-after", "yesterday").fails(t, exitUsage, "--sent-after wants an RFC 3339 time")
	e.run(t, "", "move", "start", "jobs-dlq", "--attr", "novalue").fails(t, exitUsage, "--attr wants NAME=VALUE")
	e.run(t, "", "move", "cancel", "jobs-dlq", "0193a5b4-3c4d-7e5f-8061-7c8d9e0f1a2b").fails(t, exitNotFound, "not_found")
	e.run(t, "", "move", "cancel", "jobs-dlq").fails(t, exitUsage, "usage: queues move cancel QUEUE TASK_ID")
	e.run(t, "", "move").fails(t, exitUsage, "usage: queues move <start|list|get|cancel>")
	if r := e.run(t, "", "move", "start", "-h"); r.code != exitOK || !strings.Contains(r.out, "Examples:") || !strings.Contains(r.out, "--dry-run") {
		t.Fatalf("move start -h: %d %s", r.code, r.out)
	}
}

// TestCLIMoveDelete: queues move start --action delete deletes the matching messages.
func TestCLIMoveDelete(t *testing.T) {
	e := newCLIEnv(t)
	dlq := jsonOf[client.Queue](t, e.run(t, "", "queue", "create", "del-dlq", "--json").ok(t))
	e.run(t, "", "queue", "create", "del", "--dlq", dlq.ID).ok(t)
	e.deadLetter(t, "del", 10, 3)

	e.run(t, "", "move", "start", "del-dlq", "--action", "purge").fails(t, exitUsage, "--action wants move or delete")
	e.run(t, "", "move", "start", "del-dlq", "--action", "delete", "--to", "del").fails(t, exitUsage, "contradict")
	done := e.run(t, "", "move", "start", "del-dlq", "--action", "delete", "--reason", "bad", "--wait").ok(t)
	done.has(t, "status: completed", "destination: deleted", "moved: 3 of 3")
	e.run(t, "", "move", "start", "del-dlq", "--action", "delete", "--dry-run").ok(t).has(t, "dry run: 7 would delete, 0 could not (nothing deleted)")
	if c := e.counts(t, "del-dlq"); c.Visible != 7 {
		t.Fatalf("dead-letter queue after deleting 3 of 10: %+v", c)
	}
	if c := e.counts(t, "del"); c.Visible != 0 {
		t.Fatalf("source after a delete task: %+v", c)
	}
}
