package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queueshq/queues/sdk/go/client"
	"github.com/queueshq/queues/sdk/go/webhook"
)

// localEndpoint is a push endpoint on localhost that verifies every request with package
// webhook's verifier and answers as answer says; each verified batch is sent on got.
type localEndpoint struct {
	*httptest.Server
	got chan webhook.Body
}

func newLocalEndpoint(t *testing.T, secret string, answer func(w http.ResponseWriter, b webhook.Body)) *localEndpoint {
	t.Helper()
	e := &localEndpoint{got: make(chan webhook.Body, 100)}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := webhook.Verify([]string{secret}, r.Header.Get(webhook.HeaderID), r.Header.Get(webhook.HeaderTimestamp),
			r.Header.Get(webhook.HeaderSignature), raw, time.Now(), 0); err != nil || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("a forward that does not verify (%v) or is not JSON (%q)", err, r.Header.Get("Content-Type"))
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var b webhook.Body
		if err := json.Unmarshal(raw, &b); err != nil {
			t.Errorf("forwarded body: %v", err)
		}
		e.got <- b
		answer(w, b)
	}))
	t.Cleanup(e.Close)
	return e
}

// startListen runs queues listen until the returned stop is called; lines yields what it
// prints on stdout, one line per settled batch.
func startListen(t *testing.T, e *cliEnv, args ...string) (lines *bufio.Scanner, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var errb strings.Builder
	code := make(chan int, 1)
	go func() {
		code <- runCLI(ctx, "listen", args, cliIO{stdin: strings.NewReader(""), stdout: pw, stderr: &errb, getenv: func(k string) string { return e.env[k] }})
		_ = pw.Close()
	}()
	go func() { <-t.Context().Done(); cancel() }()
	return bufio.NewScanner(pr), func() int {
		cancel()
		go func() { _, _ = io.Copy(io.Discard, pr) }()
		c := <-code
		if c != exitOK {
			t.Logf("listen stderr: %s", errb.String())
		}
		return c
	}
}

func browse(t *testing.T, e *cliEnv, queue string, state client.MessageState) []string {
	t.Helper()
	p, err := e.c.Browse(t.Context(), queue, client.BrowseInput{State: state})
	if err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, m := range p.Messages {
		bodies = append(bodies, m.Body)
	}
	slices.Sort(bodies)
	return bodies
}

// TestCLIListen: queues listen forwards each message as a signed push (verified with package
// webhook's verifier, the pusher's body shape) and settles it from the answer: ack, retry
// after d, defer and dead-letter per message, and a 500 retried after a backoff.
func TestCLIListen(t *testing.T) {
	e := newCLIEnv(t)
	ctx := t.Context()
	dlq, err := e.c.CreateQueue(ctx, client.CreateQueueInput{Name: "listen-dlq"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.CreateQueue(ctx, client.CreateQueueInput{Name: "listen", Redrive: &client.Redrive{DeadLetterQueue: dlq.ID, MaxReceiveCount: 5}}); err != nil {
		t.Fatal(err)
	}
	secret := webhook.NewSecret()
	ep := newLocalEndpoint(t, secret, func(w http.ResponseWriter, b webhook.Body) {
		m := b.Messages[0]
		outcome := map[string]string{"ack": `"outcome":"ack"`, "later": `"outcome":"retry","retryAfterSeconds":3600`,
			"defer": `"outcome":"defer"`, "poison": `"outcome":"dead-letter","reason":"poison"`}[m.Body]
		if outcome == "" {
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"results":[{"messageId":"`+m.MessageID+`",`+outcome+`}]}`)
	})
	bodies := []string{"ack", "later", "defer", "poison", "boom"}
	for _, b := range bodies {
		if _, err := e.c.Send(ctx, "listen", client.SendMessage{Body: b, Attributes: map[string]string{"k": "v"}}); err != nil {
			t.Fatal(err)
		}
	}
	lines, stop := startListen(t, e, "listen", "--forward", ep.URL+"/hook", "--secret", secret, "--batch", "1")
	for range bodies {
		if !lines.Scan() {
			t.Fatal("listen ended early")
		}
		t.Log(lines.Text())
	}
	if code := stop(); code != exitOK {
		t.Fatalf("listen exited %d", code)
	}
	close(ep.got)
	for b := range ep.got {
		m := b.Messages[0]
		if b.Queue.Name != "listen" || b.Queue.ID == "" || b.Subscription == "" || m.ReceiptHandle == "" ||
			m.VisibilityDeadline == "" || m.SentAt == "" || m.ReceiveCount != 1 || m.Attributes["k"] != "v" {
			t.Fatalf("forwarded body lacks the push's fields: %+v", b)
		}
	}
	if got, want := browse(t, e, "listen", client.StateInFlight), []string{"boom", "defer", "later"}; !slices.Equal(got, want) {
		t.Fatalf("in flight %q, want %q (retry after, defer, backoff after 500)", got, want)
	}
	if got := browse(t, e, "listen", client.StateVisible); len(got) != 0 {
		t.Fatalf("visible %q, want none (ack deleted, poison dead-lettered)", got)
	}
	if got := browse(t, e, "listen-dlq", client.StateVisible); !slices.Equal(got, []string{"poison"}) {
		t.Fatalf("dead-letter queue %q, want [poison]", got)
	}
}

// TestCLIListenInterruptReleases: Ctrl-C while a batch is being forwarded (the endpoint never
// answers) releases its messages at once: visible again, not in flight until the deadline.
func TestCLIListenInterruptReleases(t *testing.T) {
	e := newCLIEnv(t)
	ctx := t.Context()
	if _, err := e.c.CreateQueue(ctx, client.CreateQueueInput{Name: "hang"}); err != nil {
		t.Fatal(err)
	}
	secret := webhook.NewSecret()
	hold := make(chan struct{})
	ep := newLocalEndpoint(t, secret, func(w http.ResponseWriter, _ webhook.Body) { <-hold })
	defer close(hold)
	for _, b := range []string{"one", "two"} {
		if _, err := e.c.Send(ctx, "hang", client.SendMessage{Body: b}); err != nil {
			t.Fatal(err)
		}
	}
	_, stop := startListen(t, e, "hang", "--forward", ep.URL, "--secret", secret, "--batch", "1", "--concurrency", "2", "--shutdown-timeout", "0s")
	<-ep.got
	<-ep.got // both messages are being forwarded
	if got := browse(t, e, "hang", client.StateInFlight); len(got) != 2 {
		t.Fatalf("in flight before the interrupt: %q", got)
	}
	if code := stop(); code != exitOK {
		t.Fatalf("listen exited %d", code)
	}
	if got := browse(t, e, "hang", client.StateVisible); !slices.Equal(got, []string{"one", "two"}) {
		t.Fatalf("visible after the interrupt %q, want both released", got)
	}
}

// TestCLIListenUsage: bad flags are usage errors naming the flag.
func TestCLIListenUsage(t *testing.T) {
	e := newCLIEnv(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"q"}, "--forward is required"},
		{[]string{"q", "--forward", "localhost:3000"}, "--forward must be an http(s) URL"},
		{[]string{"q", "--forward", "http://localhost:3000", "--batch", "11"}, "--batch must be 1-10"},
		{[]string{"q", "--forward", "http://localhost:3000", "--concurrency", "0"}, "--concurrency must be 1-100"},
		{[]string{"q", "--forward", "http://localhost:3000", "--secret", "whsec_"}, "--secret must be whsec_"},
		{[]string{"q", "--forward", "http://localhost:3000", "--secret", "nope"}, "--secret must be whsec_"},
	} {
		e.run(t, "", "listen", tc.args...).fails(t, exitUsage, tc.want)
	}
}
