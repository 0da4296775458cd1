package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/queueshq/queues/pkg/signingkeys"
	"github.com/queueshq/queues/pkg/testservers"
	"github.com/queueshq/queues/tests/stacktest"
)

// TestMain fails the package when a test leaves a goroutine running (a command's server,
// pusher or stream that should have stopped with its context), once the shared API
// (stacktest) and the servers are stopped.
func TestMain(m *testing.M) {
	testservers.GuardDefaultRedis()
	goleak.VerifyTestMain(stopAfterRun{m})
}

// stopAfterRun stops the shared API and the test servers when the tests are done, before
// goleak looks.
type stopAfterRun struct{ m *testing.M }

func (s stopAfterRun) Run() int {
	defer testservers.StopAll()
	defer stacktest.CloseShared()
	return s.m.Run()
}

// stdout runs f and returns what it printed.
func stdout(t *testing.T, f func() error) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	errc := make(chan error, 1)
	go func() { errc <- f(); w.Close() }()
	out, _ := io.ReadAll(r)
	os.Stdout = old
	if err := <-errc; err != nil {
		t.Fatalf("command failed: %v (printed %s)", err, out)
	}
	return string(out)
}

func TestMigrateAndAdmin(t *testing.T) {
	ctx := context.Background()
	t.Setenv("QUEUES_DYNAMODB_ENDPOINT", testservers.DynamoDB(t))
	t.Setenv("QUEUES_DYNAMODB_TABLE", testservers.TableName("cmd"))
	ring, err := signingkeys.Generate("k1")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("QUEUES_SIGNING_KEYS", ring.String())
	for range 2 { // idempotent
		if out := stdout(t, func() error { return runMigrate(ctx, nil) }); !strings.Contains(out, "up to date") {
			t.Fatalf("migrate printed %q", out)
		}
	}
	var p struct{ ID, Slug, Name string }
	if err := json.Unmarshal([]byte(stdout(t, func() error { return runAdmin(ctx, []string{"project", "create", "-name", "acme"}) })), &p); err != nil || p.Name != "acme" {
		t.Fatalf("project create: %+v %v", p, err)
	}
	if out := stdout(t, func() error { return runAdmin(ctx, []string{"project", "list"}) }); !strings.Contains(out, p.ID) {
		t.Fatalf("project list lacks %s: %s", p.ID, out)
	}
	var tok struct {
		ID, Token string
		Scopes    []string
	}
	out := stdout(t, func() error {
		return runAdmin(ctx, []string{"token", "create", "-project", p.Slug, "-name", "ci", "-scopes", "queues:read,messages:send", "-ttl", "1h"})
	})
	if err := json.Unmarshal([]byte(out), &tok); err != nil || tok.Token == "" || len(tok.Scopes) != 2 {
		t.Fatalf("token create: %s %v", out, err)
	}
	stdout(t, func() error { return runAdmin(ctx, []string{"token", "revoke", "-project", p.ID, "-token", tok.ID}) })
	if err := runAdmin(ctx, []string{"token", "create", "-project", p.ID, "-scopes", "queues:write"}); err == nil {
		t.Fatal("an unknown scope was accepted")
	}
	if err := runAdmin(ctx, []string{"nothing", "here"}); err == nil {
		t.Fatal("an unknown admin command was accepted")
	}
}
