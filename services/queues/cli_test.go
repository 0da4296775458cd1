package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/queueshq/queues/pkg/client"
	"github.com/queueshq/queues/pkg/client/clienttest"
	"github.com/queueshq/queues/pkg/testenv"
)

// cliEnv is a project on the shared test server (an API replica on Redis and DynamoDB Local,
// with a pusher), and the environment the client commands see.
type cliEnv struct {
	env map[string]string
	c   *client.Client
}

func newCLIEnv(t *testing.T) *cliEnv {
	t.Helper()
	srv, err := clienttest.Shared()
	if err != nil {
		t.Fatal(err)
	}
	op, err := client.New(srv.URL, client.WithToken(clienttest.Operator))
	if err != nil {
		t.Fatal(err)
	}
	p, err := op.CreateProject(t.Context(), t.Name())
	if err != nil {
		t.Fatal(err)
	}
	tok, err := op.CreateToken(t.Context(), p.ID, client.CreateTokenInput{Name: "cli", Scopes: []string{client.ScopeAll}})
	if err != nil {
		t.Fatal(err)
	}
	return &cliEnv{env: map[string]string{client.EnvURL: srv.URL, client.EnvToken: tok.Token}, c: op.WithToken(tok.Token)}
}

var spaces = regexp.MustCompile(` +`)

type cliResult struct {
	out, err string
	code     int
}

// run runs a client command with stdin and returns what it printed and its exit code.
func (e *cliEnv) run(t *testing.T, stdin string, name string, args ...string) cliResult {
	t.Helper()
	var out, errb bytes.Buffer
	code := runCLI(t.Context(), name, args, cliIO{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, getenv: func(k string) string { return e.env[k] }})
	return cliResult{out.String(), errb.String(), code}
}

// ok fails unless the command exited 0.
func (r cliResult) ok(t *testing.T) cliResult {
	t.Helper()
	if r.code != exitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.out, r.err)
	}
	return r
}

// fails fails unless the command exited with code and its stderr holds every want.
func (r cliResult) fails(t *testing.T, code int, want ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.out, r.err)
	}
	for _, w := range want {
		if !strings.Contains(r.err, w) {
			t.Fatalf("stderr lacks %q:\n%s", w, r.err)
		}
	}
}

// has fails unless stdout holds every want (runs of spaces, as in aligned columns, count as one).
func (r cliResult) has(t *testing.T, want ...string) cliResult {
	t.Helper()
	squeeze := func(s string) string { return spaces.ReplaceAllString(s, " ") }
	for _, w := range want {
		if !strings.Contains(squeeze(r.out), squeeze(w)) {
			t.Fatalf("stdout lacks %q:\n%s", w, r.out)
		}
	}
	return r
}

func jsonOf[T any](t *testing.T, r cliResult) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(r.out), &v); err != nil {
		t.Fatalf("not JSON (%v): %s", err, r.out)
	}
	return v
}

func TestCLIQueue(t *testing.T) {
	e := newCLIEnv(t)
	e.run(t, "", "queue", "create", "orders-dlq").ok(t).has(t, "created standard queue orders-dlq (que_")
	dlq := jsonOf[client.Queue](t, e.run(t, "", "queue", "get", "orders-dlq", "--json").ok(t))
	// Flags after the positional argument, durations or seconds.
	e.run(t, "", "queue", "create", "orders", "--visibility-timeout", "1m", "--retention", "3600", "--dlq", dlq.ID, "--max-receive-count", "3").ok(t)
	e.run(t, "", "queue", "create", "--type", "fifo", "--content-based-dedup", "pay").ok(t).has(t, "created fifo queue pay")
	e.run(t, "", "queue", "create", "orders").fails(t, exitConflict, "queue_exists", "field name")

	q := jsonOf[client.Queue](t, e.run(t, "", "queue", "get", "orders", "--json").ok(t))
	if q.VisibilityTimeoutSeconds != 60 || q.RetentionSeconds != 3600 || q.Redrive == nil || q.Redrive.MaxReceiveCount != 3 {
		t.Fatalf("created queue: %+v", q)
	}
	e.run(t, "", "queue", "get", q.Slug).ok(t).has(t, "name:", "orders", "visibility timeout: 60s", "redrive:", "after 3 receives", "0 visible, 0 in flight, 0 delayed")
	list := e.run(t, "", "queue", "list").ok(t).has(t, "NAME", "orders-dlq", "pay", "fifo")
	if lines := strings.Count(list.out, "\n"); lines != 4 {
		t.Fatalf("list printed %d lines:\n%s", lines, list.out)
	}
	if qs := jsonOf[[]client.Queue](t, e.run(t, "", "queue", "list", "--prefix", "orders", "--json").ok(t)); len(qs) != 2 {
		t.Fatalf("list --prefix orders: %+v", qs)
	}
	if qs := jsonOf[[]client.Queue](t, e.run(t, "", "queue", "list", "--limit", "1", "--json").ok(t)); len(qs) != 1 {
		t.Fatalf("list --limit 1: %+v", qs)
	}
	e.run(t, "", "queue", "update", "orders", "--visibility-timeout", "90", "--no-redrive").ok(t).has(t, "visibility timeout: 90s", "redrive: none")
	e.run(t, "", "queue", "update", "orders", "--visibility-timeout", "50000").fails(t, exitError, "invalid_argument", "field visibilityTimeoutSeconds")
	e.run(t, "", "queue", "update", "orders", "--dlq", dlq.ID, "--no-redrive").fails(t, exitUsage, "contradict")

	e.run(t, "", "send", "orders", "x").ok(t)
	e.run(t, "", "queue", "purge", "orders").ok(t).has(t, "purged queue orders")
	e.run(t, "", "queue", "purge", "orders").fails(t, exitUnavailable, "purge_too_soon", "retry after")
	e.run(t, "", "queue", "update", "orders", "--dlq", dlq.Slug).ok(t)
	e.run(t, "", "queue", "delete", "orders-dlq").fails(t, exitConflict, "queue_in_use")
	e.run(t, "", "queue", "delete", "orders").ok(t).has(t, "deleted queue orders")
	e.run(t, "", "queue", "get", "orders").fails(t, exitNotFound, "not_found", "case-sensitive")
}

func TestCLIMessages(t *testing.T) {
	e := newCLIEnv(t)
	e.run(t, "", "queue", "create", "work").ok(t)
	sent := e.run(t, "", "send", "work", "first", "second", "--attr", "source=cli").ok(t)
	if strings.Count(sent.out, "sent ") != 2 {
		t.Fatalf("send printed %q", sent.out)
	}
	var lines []string
	for i := range 12 {
		lines = append(lines, "line "+strconv.Itoa(i))
	}
	stdin := strings.Join(lines[:6], "\n") + "\n\n" + strings.Join(lines[6:], "\r\n") + "\n" // empty lines skipped, CRLF too
	e.run(t, stdin, "send", "work", "--json").ok(t)
	if n := e.counts(t, "work").Visible; n != 14 {
		t.Fatalf("%d visible after sending 14", n)
	}

	// receive prints bodies and acknowledges; --no-ack leaves them in flight.
	got := e.run(t, "", "receive", "work", "-n", "12", "--wait", "1").ok(t)
	if strings.Count(got.out, "\n") != 12 || !strings.HasPrefix(got.out, "first\nsecond\nline 0\n") {
		t.Fatalf("receive -n 12 printed:\n%s", got.out)
	}
	held := e.run(t, "", "receive", "work", "--no-ack", "--json", "--visibility-timeout", "600").ok(t)
	m := jsonOf[client.Message](t, held)
	if m.Body != "line 10" || m.ReceiptHandle == "" || m.ReceiveCount != 1 {
		t.Fatalf("receive --no-ack --json: %+v", m)
	}
	if c := e.counts(t, "work"); c.Visible != 1 || c.InFlight != 1 {
		t.Fatalf("counts after receiving 13 and acknowledging 12: %+v", c)
	}

	// tail follows: it prints what arrives and stops after -n.
	e.run(t, "", "send", "work", "third", "fourth").ok(t)
	tail := e.run(t, "", "tail", "work", "-n", "3").ok(t)
	if strings.Count(tail.out, "\n") != 3 || !strings.Contains(tail.out, "line 11\n") || !strings.Contains(tail.out, "fourth\n") {
		t.Fatalf("tail -n 3 printed:\n%s", tail.out)
	}
	if c := e.counts(t, "work"); c.Visible != 0 || c.InFlight != 1 {
		t.Fatalf("counts after tail: %+v", c)
	}

	// A message the service refuses fails the command with its code and field.
	e.run(t, "", "send", "work", "ok", "--delay", "901").fails(t, exitError, "invalid_argument", "field messages[0].delaySeconds", "1 of 1 messages not sent")
	e.run(t, "", "send", "work").fails(t, exitUsage, "nothing to send")
	e.run(t, "", "send", "nowhere", "x").fails(t, exitNotFound, "not_found")

	// fifo: groups and dedup ids.
	e.run(t, "", "queue", "create", "pay", "--type", "fifo").ok(t)
	e.run(t, "", "send", "pay", "charge", "--group", "customer-7", "--dedup-id", "c-1").ok(t)
	e.run(t, "", "send", "pay", "charge", "--group", "customer-7", "--dedup-id", "c-1").ok(t).has(t, "duplicate")
	e.run(t, "", "send", "pay", "x").fails(t, exitError, "field messages[0].groupId")
}

func (e *cliEnv) counts(t *testing.T, queue string) client.QueueCounts {
	t.Helper()
	q, err := e.c.GetQueue(t.Context(), queue)
	if err != nil {
		t.Fatal(err)
	}
	return q.Counts
}

func TestCLISub(t *testing.T) {
	e := newCLIEnv(t)
	e.run(t, "", "queue", "create", "hooked").ok(t)
	created := e.run(t, "", "sub", "create", "hooked", "--endpoint", "http://127.0.0.1:9/hook", "--paused", "--batch-size", "5", "--timeout", "10s").ok(t)
	created.has(t, "endpoint:", "http://127.0.0.1:9/hook", "state:", "paused", "batch size:", "5", "signing secret:", "whsec_", "shown only now")
	e.run(t, "", "sub", "create", "hooked", "--endpoint", "http://127.0.0.1:9/hook").fails(t, exitConflict, "subscription_exists")
	s := jsonOf[client.Subscription](t, e.run(t, "", "sub", "get", "hooked", "--json").ok(t))
	if !s.Paused || s.BatchSize != 5 || s.TimeoutSeconds != 10 || s.SigningSecret != "" {
		t.Fatalf("sub get: %+v", s)
	}
	e.run(t, "", "sub", "resume", "hooked").ok(t).has(t, "active")
	e.run(t, "", "sub", "pause", "hooked").ok(t).has(t, "paused")
	rotated := jsonOf[client.Subscription](t, e.run(t, "", "sub", "rotate-secret", "hooked", "--json").ok(t))
	if !strings.HasPrefix(rotated.SigningSecret, "whsec_") {
		t.Fatalf("rotate-secret: %+v", rotated)
	}
	e.run(t, "", "sub", "attempts", "hooked").ok(t).has(t, "AT", "OUTCOME")
	if p := jsonOf[client.AttemptPage](t, e.run(t, "", "sub", "attempts", "hooked", "--json", "--limit", "5").ok(t)); p.Attempts == nil {
		t.Fatalf("attempts --json: %+v", p)
	}
	e.run(t, "", "sub", "create", "hooked2", "--endpoint", "http://x").fails(t, exitNotFound, "not_found")
	e.run(t, "", "sub", "create", "hooked").fails(t, exitUsage, "--endpoint is required")
	e.run(t, "", "sub", "delete", "hooked").ok(t)
	e.run(t, "", "sub", "get", "hooked").fails(t, exitNotFound, "not_found")
}

func TestCLIUsageAndErrors(t *testing.T) {
	e := newCLIEnv(t)
	e.run(t, "", "queue").fails(t, exitUsage, "usage: queues queue <create|list|get|update|delete|purge>", "missing a subcommand")
	e.run(t, "", "queue", "explode").fails(t, exitUsage, `unknown subcommand "explode"`)
	e.run(t, "", "queue", "get").fails(t, exitUsage, "usage: queues queue get QUEUE")
	e.run(t, "", "queue", "get", "a", "b").fails(t, exitUsage, "usage: queues queue get QUEUE")
	e.run(t, "", "queue", "list", "--bogus").fails(t, exitUsage, "flag provided but not defined: -bogus", "Exit codes:")
	e.run(t, "", "queue", "create", "x", "--visibility-timeout", "soon").fails(t, exitUsage, "want seconds")
	if r := e.run(t, "", "receive", "-h"); r.code != exitOK || !strings.Contains(r.err, "usage: queues receive QUEUE") {
		t.Fatalf("receive -h: %d %s", r.code, r.err)
	}
	e.run(t, "", "queue", "list", "--token", "not-a-token").fails(t, exitAuth, "unauthenticated", "QUEUES_TOKEN")
	delete(e.env, client.EnvToken)
	e.run(t, "", "queue", "list").fails(t, exitAuth, "unauthenticated")
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	e.run(t, "", "queue", "list", "--url", "http://127.0.0.1:"+strconv.Itoa(port)).fails(t, exitUnavailable, "connection refused", "is the service running")
	e.run(t, "", "queue", "list", "--url", "ftp://x").fails(t, exitUsage, "bad URL")
}

// The built binary exits with the documented codes.
func TestCLIBinaryExitCodes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	e := newCLIEnv(t)
	bin := filepath.Join(t.TempDir(), "queues")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	run := func(stdin string, args ...string) (string, int) {
		cmd := exec.CommandContext(context.Background(), bin, args...)
		cmd.Env = append(os.Environ(), client.EnvURL+"="+e.env[client.EnvURL], client.EnvToken+"="+e.env[client.EnvToken])
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.Output()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return string(out), ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	if _, code := run("", "queue", "create", "b"); code != exitOK {
		t.Fatalf("create: exit %d", code)
	}
	if _, code := run("one\ntwo\n", "send", "b"); code != exitOK {
		t.Fatalf("send: exit %d", code)
	}
	if out, code := run("", "receive", "b", "-n", "2"); code != exitOK || out != "one\ntwo\n" {
		t.Fatalf("receive: exit %d, %q", code, out)
	}
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"queue", "get", "missing"}, exitNotFound},
		{[]string{"queue", "create", "b"}, exitConflict},
		{[]string{"receive"}, exitUsage},
		{[]string{"queue", "list", "--token", "bad"}, exitAuth},
		{[]string{"queue", "create", "bad name"}, exitError},
	} {
		if _, code := run("", tc.args...); code != tc.code {
			t.Fatalf("queues %s: exit %d, want %d", strings.Join(tc.args, " "), code, tc.code)
		}
	}
}
