package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/queueshq/queues/pkg/signingkeys"
	"github.com/queueshq/queues/pkg/testservers"
	"github.com/queueshq/queues/sdk/go/client"
	"github.com/queueshq/queues/tests/stacktest"
)

// TestCLIProject: `queues project` shows the token's project with its limits and usage;
// `queues project usage` its hours; a create over a limit exits 1 with the quota hint.
func TestCLIProject(t *testing.T) {
	e := newCLIEnv(t)
	e.run(t, "", "queue", "create", "a").ok(t)
	e.run(t, "", "project").ok(t).has(t, "queues 1 of 1000", "subscriptions 0 of 100", "requests per second 10000")
	p := jsonOf[client.Project](t, e.run(t, "", "project", "--json").ok(t))
	if p.Limits == nil || p.Usage == nil || p.Usage.Queues != 1 || p.Limits.MaxWaitingReceives != 1000 {
		t.Fatalf("project --json: %+v", p)
	}
	e.run(t, "", "project", "usage").ok(t).has(t, "HOUR REQUESTS SENT")
	e.run(t, "", "project", "usage", "--from", "yesterday").fails(t, exitUsage, "RFC 3339")
	e.run(t, "", "project", "usage", "--from", "2026-01-01T00:00:00Z", "--to", "2026-03-01T00:00:00Z").fails(t, exitError, "invalid_argument", "field to")
	e.run(t, "", "project", "extra").fails(t, exitUsage)

	op, err := client.New(e.env[client.EnvURL], client.WithToken(stacktest.Operator))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := op.UpdateProjectLimits(t.Context(), p.ID, client.LimitsUpdate{MaxQueues: client.Int64(1)}); err != nil {
		t.Fatal(err)
	}
	e.run(t, "", "queue", "create", "b").fails(t, exitError, "quota_exceeded", "queues project")
}

// TestAdminProjectLimits: `queues admin project limits get|set` on DynamoDB directly.
func TestAdminProjectLimits(t *testing.T) {
	ctx := context.Background()
	t.Setenv("QUEUES_DYNAMODB_ENDPOINT", testservers.DynamoDB(t))
	t.Setenv("QUEUES_DYNAMODB_TABLE", testservers.TableName("cmdlim"))
	ring, err := signingkeys.Generate("k1")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("QUEUES_SIGNING_KEYS", ring.String())
	stdout(t, func() error { return runMigrate(ctx, nil) })
	var p struct{ ID string }
	if err := json.Unmarshal([]byte(stdout(t, func() error { return runAdmin(ctx, []string{"project", "create", "-name", "lim"}) })), &p); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		Limits map[string]int64
		Own    map[string]int64
	}
	read := func(args ...string) answer {
		t.Helper()
		var a answer
		out := stdout(t, func() error { return runAdmin(ctx, append([]string{"project", "limits"}, args...)) })
		if err := json.Unmarshal([]byte(out), &a); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		return a
	}
	if a := read("get", "-project", p.ID); a.Limits["maxQueues"] != 1000 || len(a.Own) != 0 {
		t.Fatalf("get: %+v", a)
	}
	if a := read("set", "-project", p.ID, "maxQueues=7", "requestsPerSecond=50"); a.Limits["maxQueues"] != 7 || a.Own["requestsPerSecond"] != 50 {
		t.Fatalf("set: %+v", a)
	}
	t.Setenv("QUEUES_DEFAULT_LIMITS", `{"maxSubscriptions": 3}`)
	if a := read("set", "-project", p.ID, "maxQueues=default"); a.Limits["maxQueues"] != 1000 || a.Limits["maxSubscriptions"] != 3 || len(a.Own) != 1 {
		t.Fatalf("set default: %+v", a)
	}
	for _, bad := range [][]string{
		{"set", "-project", p.ID, "maxQueues=-1"},
		{"set", "-project", p.ID, "maxQueue=5"},
		{"set", "-project", p.ID, "maxQueues"},
		{"set", "-project", p.ID},
		{"get", "-project", "nope"},
		{"get", "-project", "00000000-0000-7000-8000-000000000000"},
	} {
		if err := runAdmin(ctx, append([]string{"project", "limits"}, bad...)); err == nil {
			t.Errorf("admin project limits %s: no error", strings.Join(bad, " "))
		}
	}
}
