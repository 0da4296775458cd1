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
	"time"

	"github.com/queueshq/queues/pkg/testservers"
	"github.com/queueshq/queues/sdk/go/client"
	"github.com/queueshq/queues/services/queues/stack"
	"github.com/queueshq/queues/tests/stacktest"
)

// cliEnv is a project on the shared test server (an API replica on Redis and DynamoDB Local,
// with a pusher), and the environment the client commands see.
type cliEnv struct {
	env map[string]string
	c   *client.Client
}

func newCLIEnv(t *testing.T) *cliEnv {
	t.Helper()
	srv, err := stacktest.Shared()
	if err != nil {
		t.Fatal(err)
	}
	op, err := client.New(srv.URL, client.WithToken(stacktest.Operator))
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
	// --dlq takes a name too, as the help's examples write it.
	e.run(t, "", "queue", "update", "orders", "--dlq", "orders-dlq", "--max-receive-count", "4").ok(t).has(t, "after 4 receives")
	e.run(t, "", "queue", "create", "jobs", "--dlq", "orders-dlq").ok(t)
	e.run(t, "", "queue", "update", "orders", "--dlq", "no-such-queue").fails(t, exitNotFound, "not_found", "no-such-queue")
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
	e.run(t, "", "send", "work", "ok", "--delay", "345601").fails(t, exitError, "invalid_argument", "field messages[0].delaySeconds", "1 of 1 messages not sent")

	// Conflation, deliverAt and delete by id (docs/lifecycle.md).
	e.run(t, "", "send", "work", `{"a":1}`, "--key", "k", "--deliver-at", "2099-01-01T00:00:00Z").fails(t, exitError, "field messages[0].deliverAt")
	k1 := jsonOf[client.SentMessage](t, e.run(t, "", "send", "work", `{"a":1}`, "--key", "k", "--merge", "patch", "--deliver-at", time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "--json").ok(t))
	e.run(t, "", "send", "work", `{"b":2}`, "--key", "k", "--merge", "patch").ok(t).has(t, "sent "+k1.MessageID, "merged")
	e.run(t, "", "send", "work", "x", "--deliver-at", "tomorrow").fails(t, exitUsage, "--deliver-at")
	e.run(t, "", "message", "delete", "work", k1.MessageID).ok(t).has(t, "deleted message "+k1.MessageID)
	e.run(t, "", "message", "delete", "work", k1.MessageID).fails(t, exitNotFound, "not_found")
	e.run(t, "", "message", "delete", "work", m.MessageID).fails(t, exitConflict, "message_in_flight")
	e.run(t, "", "send", "work").fails(t, exitUsage, "nothing to send")
	e.run(t, "", "send", "nowhere", "x").fails(t, exitNotFound, "not_found")

	// fifo: groups and dedup ids.
	e.run(t, "", "queue", "create", "pay", "--type", "fifo").ok(t)
	e.run(t, "", "send", "pay", "charge", "--group", "customer-7", "--dedup-id", "c-1").ok(t)
	e.run(t, "", "send", "pay", "charge", "--group", "customer-7", "--dedup-id", "c-1").ok(t).has(t, "duplicate")
	e.run(t, "", "send", "pay", "x").fails(t, exitError, "field messages[0].groupId")
	e.run(t, "", "send", "pay", "x", "--group", "g", "--barrier").fails(t, exitError, "field messages[0].barrier")

	// --barrier: the barrier and what follows it wait behind the message before it.
	e.run(t, "", "queue", "create", "eod").ok(t)
	e.run(t, "", "send", "eod", "before").ok(t)
	e.run(t, "", "send", "eod", "end of day", "--barrier").ok(t)
	e.run(t, "", "send", "eod", "after").ok(t)
	if c := e.counts(t, "eod"); c.Visible != 1 || c.Delayed != 2 {
		t.Fatalf("counts behind a barrier: %+v", c)
	}

	// --priority: the higher one first, whatever the send order; out of range is a usage error.
	e.run(t, "", "queue", "create", "alerts").ok(t)
	e.run(t, "", "send", "alerts", "low").ok(t)
	e.run(t, "", "send", "alerts", "high", "--priority", "9").ok(t)
	e.run(t, "", "send", "alerts", "mid", "--priority", "4").ok(t)
	if out := e.run(t, "", "receive", "alerts", "-n", "3").ok(t).out; out != "high\nmid\nlow\n" {
		t.Fatalf("receive after --priority sends printed:\n%s", out)
	}
	e.run(t, "", "send", "alerts", "x", "--priority", "10").fails(t, exitUsage, "--priority")
	e.run(t, "", "send", "pay", "x", "--group", "g", "--priority", "3").fails(t, exitError, "field messages[0].priority")
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
	if !s.Paused || s.BatchSize != 5 || s.TimeoutSeconds != 10 || s.SigningSecret != "" || s.DisableAfterSeconds != 432000 || s.State != "active" || s.Health == nil {
		t.Fatalf("sub get: %+v", s)
	}
	e.run(t, "", "sub", "get", "hooked").ok(t).has(t, "disable after:", "120h0m0s of failures", "success (5 min):", "no attempts", "consecutive failures:", "flow-control limit:")
	e.run(t, "", "sub", "resume", "hooked").ok(t).has(t, "active")
	e.run(t, "", "sub", "pause", "hooked").ok(t).has(t, "paused")
	e.run(t, "", "sub", "update", "hooked", "--max-messages-per-second", "50", "--flow-key", "customer", "--flow-parallelism", "2", "--flow-messages-per-second", "10").ok(t).
		has(t, "max messages/s:", "50", "flow control:", "per customer: 2 in flight, 10 messages/s")
	e.run(t, "", "sub", "update", "hooked", "--flow-parallelism", "101", "--flow-key", "c").fails(t, exitError, "flowControl.parallelism")
	e.run(t, "", "sub", "update", "hooked", "--flow-parallelism", "3").fails(t, exitUsage, "--flow-key")
	if s := jsonOf[client.Subscription](t, e.run(t, "", "sub", "update", "hooked", "--no-flow-control", "--json").ok(t)); s.FlowControl != nil || s.MaxMessagesPerSecond != 50 {
		t.Fatalf("sub update --no-flow-control: %+v", s)
	}
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
	e.run(t, "", "queue").fails(t, exitUsage, "usage: queues queue <create|list|get|update|delete|purge|consumers|groups|release-group>", "missing a subcommand")
	e.run(t, "", "queue", "explode").fails(t, exitUsage, `unknown subcommand "explode"`)
	e.run(t, "", "queue", "get").fails(t, exitUsage, "usage: queues queue get QUEUE")
	e.run(t, "", "queue", "get", "a", "b").fails(t, exitUsage, "usage: queues queue get QUEUE")
	e.run(t, "", "queue", "list", "--bogus").fails(t, exitUsage, "unknown flag: --bogus", "Exit codes:")
	e.run(t, "", "queue", "list", "-bogus").fails(t, exitUsage, "unknown flag: --bogus")
	e.run(t, "", "queue", "create", "x", "--visibility-timeout", "soon").fails(t, exitUsage, "want seconds")
	if r := e.run(t, "", "receive", "-h"); r.code != exitOK || !strings.Contains(r.out, "queues receive QUEUE") || !strings.Contains(r.out, "Examples:") {
		t.Fatalf("receive -h: %d %s", r.code, r.out)
	}
	e.run(t, "", "queue", "list", "--token", "not-a-token").fails(t, exitAuth, "unauthenticated", "QUEUES_TOKEN")
	delete(e.env, client.EnvToken)
	e.run(t, "", "queue", "list").fails(t, exitAuth, "unauthenticated")
	port, err := testservers.FreePort()
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

// TestCLIConventions: did-you-mean for commands and subcommands, help with examples, the
// one-dash spelling of long flags (as Go's flag package took them), flag values that look
// like flags, shell completion scripts and the completion of queue names.
func TestCLIConventions(t *testing.T) {
	e := newCLIEnv(t)
	e.run(t, "", "sned", "q").fails(t, exitUsage, `unknown command "sned"`, "Did you mean this?", "send")
	e.run(t, "", "queue", "crate", "q").fails(t, exitUsage, `unknown subcommand "crate"`, "Did you mean this?", "create")
	e.run(t, "", "sub", "pasue", "q").fails(t, exitUsage, "pause")
	r := execute(t.Context(), nil, cliIO{strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}, func(string) string { return "" }})
	if r != exitUsage {
		t.Fatalf("queues with no command: exit %d", r)
	}
	e.run(t, "", "help", "queue", "create").ok(t).has(t, "queues queue create NAME", "Examples:", "--type fifo", "--dlq string")

	// One dash, as before: -visibility-timeout, -json, -n; a value that starts with a dash is
	// the flag's value.
	e.run(t, "", "queue", "create", "dash", "-visibility-timeout", "45", "-type=fifo").ok(t)
	if q := jsonOf[client.Queue](t, e.run(t, "", "queue", "get", "dash", "-json").ok(t)); q.VisibilityTimeoutSeconds != 45 || q.Type != "fifo" {
		t.Fatalf("one-dash flags: %+v", q)
	}
	e.run(t, "", "send", "dash", "a", "-group", "-json", "-dedup-id", "-d").ok(t)
	m := jsonOf[client.Message](t, e.run(t, "", "receive", "dash", "-n", "1", "--json").ok(t))
	if m.GroupID != "-json" || m.Body != "a" {
		t.Fatalf("a flag's value that starts with a dash: %+v", m)
	}

	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		if r := e.run(t, "", "completion", shell).ok(t); !strings.Contains(r.out, "queues") || len(r.out) < 1000 {
			t.Fatalf("completion %s printed %q", shell, r.out)
		}
	}
	e.run(t, "", "completion", "tcsh").fails(t, exitUsage)
	e.run(t, "", "queue", "create", "dash-two").ok(t)
	got := e.run(t, "", "__complete", "receive", "das").ok(t)
	if !strings.Contains(got.out, "dash\n") || !strings.Contains(got.out, "dash-two\n") {
		t.Fatalf("queue names not completed:\n%s", got.out)
	}
	if got := e.run(t, "", "__complete", "queue", "create", "x", "--type", "").ok(t); !strings.Contains(got.out, "fifo") {
		t.Fatalf("--type not completed:\n%s", got.out)
	}
}

// TestCLIGroupPolicy: queue create --group-policy exclusive (with its affinity and cap) shows
// in queue get; receive needs --consumer-id there; send --end-group ends the binding once the
// message is acknowledged, so another consumer takes the group's next message.
func TestCLIGroupPolicy(t *testing.T) {
	e := newCLIEnv(t)
	e.run(t, "", "queue", "create", "carts", "--type", "fifo", "--group-policy", "exclusive", "--group-affinity", "2m",
		"--max-groups-per-consumer", "3").ok(t)
	e.run(t, "", "queue", "get", "carts").ok(t).has(t, "group policy:", "exclusive (affinity 120s, at most 3 groups per consumer)")
	e.run(t, "", "send", "carts", "checkout", "--group", "cart-1", "--end-group").ok(t)
	e.run(t, "", "send", "carts", "next", "--group", "cart-1").ok(t)
	e.run(t, "", "receive", "carts", "--wait", "0").fails(t, exitError, "invalid_argument", "field consumerId")
	e.run(t, "", "receive", "carts", "--wait", "0", "--consumer-id", "w1").ok(t).has(t, "checkout")
	e.run(t, "", "receive", "carts", "--wait", "0", "--consumer-id", "w2").ok(t).has(t, "next")
	e.run(t, "", "queue", "create", "plain", "--group-policy", "exclusive").fails(t, exitError, "invalid_argument", "field groupPolicy")
}

// TestCLIConsumers: receive --consumer --max-backlog holds at most the bound, queue
// consumers lists the consumer, and --fairness sets the queue's setting.
func TestCLIConsumers(t *testing.T) {
	e := newCLIEnv(t)
	e.run(t, "", "queue", "create", "jobs", "--fairness", "proportional").ok(t)
	e.run(t, "", "queue", "get", "jobs").ok(t).has(t, "fairness:", "proportional")
	e.run(t, "", "queue", "update", "jobs", "--fairness", "lottery").fails(t, exitError, "invalid_argument", "field fairness")
	e.run(t, "", "send", "jobs", "a", "b", "c").ok(t)
	got := e.run(t, "", "receive", "jobs", "-n", "3", "--wait", "0", "--no-ack", "--consumer", "w-1", "--max-backlog", "2").ok(t)
	if strings.Count(got.out, "\n") != 2 {
		t.Fatalf("receive --max-backlog 2 printed:\n%s", got.out)
	}
	e.run(t, "", "queue", "consumers", "jobs").ok(t).has(t, "CONSUMER", "w-1", "2")
	cs := jsonOf[[]client.Consumer](t, e.run(t, "", "queue", "consumers", "jobs", "--json").ok(t))
	if len(cs) != 1 || cs[0].ConsumerID != "w-1" || cs[0].InFlight != 2 || cs[0].MaxBacklog == nil || *cs[0].MaxBacklog != 2 {
		t.Fatalf("queue consumers --json: %+v", cs)
	}
	e.run(t, "", "receive", "jobs", "--max-backlog", "2").fails(t, exitUsage, "needs --consumer")
}

// TestCLIMaxCancels: --max-cancels sets the queue's maxCancels on create and update.
func TestCLIMaxCancels(t *testing.T) {
	e := newCLIEnv(t)
	e.run(t, "", "queue", "create", "jobs", "--max-cancels", "3").ok(t)
	e.run(t, "", "queue", "get", "jobs").ok(t).has(t, "max cancels:", "3")
	e.run(t, "", "queue", "update", "jobs", "--max-cancels", "0").ok(t)
	e.run(t, "", "queue", "get", "jobs").ok(t).has(t, "max cancels:", "0")
	e.run(t, "", "queue", "update", "jobs", "--max-cancels", "1001").fails(t, exitError, "invalid_argument", "field maxCancels")
}

// TestCLIMaxMessageBytes: --max-message-bytes sets the queue's maxMessageBytes on create and
// update; queue get shows it (262144 by default); a value out of range names the field.
func TestCLIMaxMessageBytes(t *testing.T) {
	e := newCLIEnv(t)
	e.run(t, "", "queue", "create", "plain").ok(t)
	e.run(t, "", "queue", "get", "plain").ok(t).has(t, "max message bytes:", "262144")
	e.run(t, "", "queue", "create", "images", "--max-message-bytes", "1048576").ok(t)
	e.run(t, "", "queue", "get", "images").ok(t).has(t, "max message bytes:", "1048576")
	e.run(t, "", "queue", "update", "images", "--max-message-bytes", "2048").ok(t)
	e.run(t, "", "queue", "get", "images").ok(t).has(t, "max message bytes:", "2048")
	e.run(t, "", "queue", "update", "images", "--max-message-bytes", "1048577").fails(t, exitError, "invalid_argument", "field maxMessageBytes")
}

// TestCLIAtMostOnce: queue create --delivery atMostOnce; receive prints what it is handed
// and has nothing to acknowledge; a fifo or unknown delivery is refused.
func TestCLIAtMostOnce(t *testing.T) {
	e := newCLIEnv(t)
	e.run(t, "", "queue", "create", "once", "--delivery", "atMostOnce").ok(t)
	e.run(t, "", "queue", "get", "once").ok(t).has(t, "delivery:", "atMostOnce")
	e.run(t, "", "queue", "create", "x", "--delivery", "sometimes").fails(t, exitUsage, "--delivery")
	e.run(t, "", "queue", "create", "x.fifo", "--type", "fifo", "--delivery", "atMostOnce").fails(t, exitError, "invalid_argument", "field delivery")
	e.run(t, "", "send", "once", "a", "b").ok(t)
	if got := e.run(t, "", "receive", "once", "-n", "2", "--wait", "0").ok(t); got.out != "a\nb\n" {
		t.Fatalf("receive printed %q, want a and b", got.out)
	}
	if c := e.counts(t, "once"); c.Visible+c.InFlight+c.Delayed != 0 {
		t.Fatalf("counts after an at-most-once receive: %+v", c)
	}
}

// TestCLISettle: message ack, release, visibility, cancel and dead-letter settle received
// messages by receipt handle, from arguments or from receive --no-ack --json on stdin; a
// stale handle is reported and fails the command, the others are settled.
func TestCLISettle(t *testing.T) {
	e := newCLIEnv(t)
	dlq := jsonOf[client.Queue](t, e.run(t, "", "queue", "create", "dead", "--json").ok(t))
	e.run(t, "", "queue", "create", "jobs", "--dlq", dlq.ID).ok(t)
	e.run(t, "", "send", "jobs", "a", "b", "c", "d", "e").ok(t)
	recv := func(n int) (string, []client.Message) {
		t.Helper()
		out := e.run(t, "", "receive", "jobs", "-n", strconv.Itoa(n), "--wait", "1", "--no-ack", "--json", "--visibility-timeout", "600").ok(t).out
		var ms []client.Message
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			var m client.Message
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("receive --json line %q: %v", l, err)
			}
			ms = append(ms, m)
		}
		return out, ms
	}
	out, ms := recv(5)
	if len(ms) != 5 {
		t.Fatalf("received %d, want 5", len(ms))
	}
	// ack by argument; release by a bare handle on stdin; cancel by a line of receive --json.
	e.run(t, "", "message", "ack", ms[0].ReceiptHandle, ms[1].ReceiptHandle).ok(t).has(t, "acknowledged 2 of 2")
	e.run(t, ms[2].ReceiptHandle+"\n", "message", "release").ok(t).has(t, "released 1 of 1")
	line3 := strings.Split(out, "\n")[3] // receive --json's line for ms[3]
	e.run(t, line3+"\n", "message", "cancel", "--json").ok(t).has(t, `"settled": 1`)
	e.run(t, "", "message", "visibility", "--timeout", "0", ms[4].ReceiptHandle).ok(t).has(t, "changed the visibility of 1 of 1")
	if c := e.counts(t, "jobs"); c.Visible != 3 || c.InFlight != 0 {
		t.Fatalf("counts after ack 2, release, cancel, visibility 0: %+v", c)
	}
	// A stale handle (acknowledged already) fails the command; the good one is settled.
	_, again := recv(3)
	e.run(t, "", "message", "dead-letter", "--reason", "bad input", again[0].ReceiptHandle, ms[0].ReceiptHandle).
		fails(t, exitError, "handle 2: receipt_handle_stale", "1 of 2 receipt handles not settled")
	if c := e.counts(t, "dead"); c.Visible != 1 {
		t.Fatalf("dead-letter queue counts: %+v", c)
	}
	e.run(t, "", "message", "visibility", again[1].ReceiptHandle).fails(t, exitUsage, "--timeout")
	e.run(t, "", "message", "visibility", "--timeout", "60", again[1].ReceiptHandle, again[2].ReceiptHandle).ok(t).has(t, "2 of 2")
	e.run(t, "", "message", "ack").fails(t, exitUsage, "no receipt handles")
	e.run(t, `{"messageId":"x"}`+"\n", "message", "ack").fails(t, exitUsage, "line 1", "receiptHandle")
}

// TestCLISubSigningAndAuth: --signing and --oidc/--oidc-audience set on create and update,
// --no-auth removes token auth, and sub get prints signing, the public key and auth (on a
// replica with a public URL, which token auth needs).
func TestCLISubSigningAndAuth(t *testing.T) {
	e := newCLIEnv(t)
	srv, err := stacktest.Shared()
	if err != nil {
		t.Fatal(err)
	}
	url, closeReplica, err := srv.Replica(t.Context(), stack.Options{PublicURL: "https://queues.test", PushAllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeReplica()
	e.env[client.EnvURL] = url
	e.run(t, "", "queue", "create", "signed").ok(t)
	e.run(t, "", "sub", "create", "signed", "--endpoint", "http://127.0.0.1:9/hook", "--signing", "rsa").fails(t, exitUsage, "--signing")
	created := e.run(t, "", "sub", "create", "signed", "--endpoint", "http://127.0.0.1:9/hook", "--paused", "--signing", "ed25519", "--oidc").ok(t)
	created.has(t, "signing: ed25519", "signing public key: whpk_", "auth: oidc (audience http://127.0.0.1:9/hook)")
	s := jsonOf[client.Subscription](t, e.run(t, "", "sub", "get", "signed", "--json").ok(t))
	if s.Signing != "ed25519" || !strings.HasPrefix(s.SigningPublicKey, "whpk_") || s.Auth == nil || s.Auth.Audience != "http://127.0.0.1:9/hook" {
		t.Fatalf("sub get --json: %+v", s)
	}
	e.run(t, "", "sub", "get", "signed").ok(t).has(t, "signing: ed25519", "signing public key: "+s.SigningPublicKey, "auth: oidc")
	rotated := jsonOf[client.Subscription](t, e.run(t, "", "sub", "rotate-secret", "signed", "--json").ok(t))
	if !strings.HasPrefix(rotated.SigningPublicKey, "whpk_") || rotated.SigningPublicKey == s.SigningPublicKey {
		t.Fatalf("rotate-secret of an ed25519 subscription: %+v", rotated)
	}
	e.run(t, "", "sub", "update", "signed", "--oidc-audience", "my-service").ok(t).has(t, "auth: oidc (audience my-service)", "signing: ed25519")
	e.run(t, "", "sub", "update", "signed", "--no-auth", "--oidc").fails(t, exitUsage, "--no-auth")
	e.run(t, "", "sub", "update", "signed", "--oidc-audience", strings.Repeat("a", 1025)).fails(t, exitError, "auth.audience")
	back := e.run(t, "", "sub", "update", "signed", "--signing", "hmac", "--no-auth").ok(t).has(t, "signing: hmac", "auth: none")
	if strings.Contains(back.out, "whpk_") {
		t.Fatalf("hmac subscription shows a public key:\n%s", back.out)
	}
	if s := jsonOf[client.Subscription](t, e.run(t, "", "sub", "get", "signed", "--json").ok(t)); s.Signing != "hmac" || s.Auth != nil || s.SigningPublicKey != "" {
		t.Fatalf("after --signing hmac --no-auth: %+v", s)
	}
}
