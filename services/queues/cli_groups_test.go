package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/queueshq/queues/sdk/go/client"
)

// TestCLIPoisonGroups: --on-dead-letter, queue groups (--state) and queue release-group.
func TestCLIPoisonGroups(t *testing.T) {
	e := newCLIEnv(t)
	dlq := jsonOf[client.Queue](t, e.run(t, "", "queue", "create", "ledger-dlq", "--type", "fifo", "--json").ok(t))
	e.run(t, "", "queue", "create", "ledger", "--type", "fifo", "--on-dead-letter", "park").
		fails(t, exitError, "invalid_argument", "field onDeadLetter")
	e.run(t, "", "queue", "create", "ledger", "--type", "fifo", "--dlq", dlq.ID, "--on-dead-letter", "park").ok(t)
	e.run(t, "", "queue", "get", "ledger").ok(t).has(t, "on dead letter:", "park")
	e.run(t, "", "send", "ledger", "--group", "acct-1", "a1", "a2").ok(t)
	out := e.run(t, "", "receive", "ledger", "-n", "1", "--wait", "1", "--no-ack", "--json").ok(t).out
	var m client.Message
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &m); err != nil {
		t.Fatalf("receive --json %q: %v", out, err)
	}
	e.run(t, "", "message", "dead-letter", "--reason", "poison", m.ReceiptHandle).ok(t)
	e.run(t, "", "queue", "groups", "ledger", "--state", "parked").ok(t).has(t, "GROUP", "acct-1", "parked", "poison")
	gs := jsonOf[[]client.Group](t, e.run(t, "", "queue", "groups", "ledger", "--state", "active", "--json").ok(t))
	if len(gs) != 0 {
		t.Fatalf("active groups %+v", gs)
	}
	e.run(t, "", "queue", "groups", "ledger", "--state", "asleep").fails(t, exitUsage, "--state must be active or parked")
	e.run(t, "", "queue", "release-group", "ledger", "acct-1").ok(t).has(t, "released group acct-1")
	e.run(t, "", "queue", "release-group", "ledger", "acct-1").fails(t, exitConflict, "group_not_parked")
	e.run(t, "", "queue", "groups", "ledger").ok(t).has(t, "acct-1", "active")
}
