package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
	"github.com/queueshq/queues/services/queues/embedded"
)

// browserPath finds a Chromium to drive. scripts/test.sh installs Debian's chromium and sets
// QUEUES_REQUIRE_BROWSER=1, so there a missing browser fails the test instead of skipping it.
func browserPath(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("QUEUES_REQUIRE_BROWSER") != "" {
		t.Fatal("no chromium on PATH (scripts/test.sh installs Debian's chromium)")
	}
	t.Skip("no chromium on PATH; install Debian's chromium to run the console's browser test")
	return ""
}

// artifacts is where screenshots go: $QUEUES_TEST_ARTIFACTS/console, or a temporary folder.
func artifacts(t *testing.T) string {
	dir := t.TempDir()
	if base := os.Getenv("QUEUES_TEST_ARTIFACTS"); base != "" {
		dir = filepath.Join(base, "console")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("console screenshots in %s", dir)
	return dir
}

// node is a running serve: the embedded composition on a real listener, as `queues serve`
// runs it, with an attempts hook to wait on.
type node struct {
	url, token string
	deadID     string // the message seed dead-letters
	attempts   chan meta.Attempt
}

func startServe(t *testing.T) *node {
	attempts := make(chan meta.Attempt, 100)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	n, err := embedded.Open(context.Background(), embedded.Options{DataDir: t.TempDir(), SweepEvery: -1, Logger: quiet,
		Push: embedded.PushOptions{AllowPrivate: true, Grace: time.Second,
			OnAttempt: func(_ ids.ID, a meta.Attempt) { attempts <- a }}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- embedded.Serve(ctx, ln, n, time.Second, quiet) }()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = n.Close()
	})
	return &node{url: "http://" + ln.Addr().String(), token: n.Token, attempts: attempts}
}

// do calls the API directly (the test's own setup and checks, not the page's).
func (n *node) do(t *testing.T, method, path string, body any) map[string]any {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, n.url+path, r)
	req.Header.Set("Authorization", "Bearer "+n.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, raw)
	}
	out := map[string]any{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	return out
}

// seed makes what the views show: a queue with a dead-letter queue holding one message the
// consumer dead-lettered with a reason, and a queue of 25 messages (two browse pages).
func (n *node) seed(t *testing.T) {
	dlq := n.do(t, "POST", "/v1/queues", map[string]any{"name": "orders-dlq"})
	n.do(t, "POST", "/v1/queues", map[string]any{"name": "orders", "redrive": map[string]any{"deadLetterQueue": dlq["id"], "maxReceiveCount": 3}})
	n.do(t, "POST", "/v1/queues/orders/messages", map[string]any{"messages": []any{map[string]any{"body": `{"order":"A-17"}`}}})
	got := n.do(t, "POST", "/v1/queues/orders/receive", map[string]any{"maxMessages": 1})
	msgs := got["messages"].([]any)
	if len(msgs) != 1 {
		t.Fatalf("receive: %v", got)
	}
	handle := msgs[0].(map[string]any)["receiptHandle"]
	n.deadID = msgs[0].(map[string]any)["messageId"].(string)
	req, _ := http.NewRequest("POST", n.url+"/v1/receipts/dead-letter", strings.NewReader(fmt.Sprintf(`{"receiptHandle":%q,"reason":"schema-mismatch"}`, handle)))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusNoContent {
		t.Fatalf("dead-letter: %v %v", err, res)
	}
	res.Body.Close()
	n.do(t, "POST", "/v1/queues", map[string]any{"name": "bulk"})
	for i := 0; i < 25; i += 5 {
		var batch []any
		for j := i; j < i+5; j++ {
			batch = append(batch, map[string]any{"body": fmt.Sprintf("bulk message %02d", j)})
		}
		n.do(t, "POST", "/v1/queues/bulk/messages", map[string]any{"messages": batch})
	}
}

// TestConsoleInBrowser signs in to the console of a running serve in headless Chromium and
// goes through every view, checking what each shows against the API and saving a screenshot
// of each.
func TestConsoleInBrowser(t *testing.T) {
	exe := browserPath(t)
	shots := artifacts(t)
	n := startServe(t)
	n.seed(t)
	hook := newEndpoint(t)
	b := newBrowser(t, exe, shots)

	b.signIn(n)
	sent := b.queuesAndSend(n)
	b.browse(n, sent)
	b.deadLetters()
	b.redrive(n)
	b.subscription(n, hook)
	b.pushAttempts(n, hook)
	b.settingsAndSignOut(n)

	for _, e := range b.pageErrors() {
		t.Errorf("page error: %s", e)
	}
}

// newBrowser starts headless Chromium; any script exception, console error, CSP violation or
// failed asset load on the page is recorded for pageErrors.
func newBrowser(t *testing.T, exe, shots string) *browser {
	// Chromium's helper processes may still write to the profile just after the browser has
	// exited, so the profile is not a t.TempDir (whose removal fails the test on a late write):
	// it is removed once the browser is gone, retried briefly, at worst left in $TMPDIR.
	profile, err := os.MkdirTemp("", "console-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for range 50 {
			if os.RemoveAll(profile) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.WindowSize(1280, 860), chromedp.UserDataDir(profile))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(cancelCtx)
	// A bound on the whole walk, with room for a loaded 2-core machine (a run takes ~10 s).
	ctx, cancel := context.WithTimeout(ctx, 120*time.Second)
	t.Cleanup(cancel)
	b := &browser{t: t, ctx: ctx, dir: shots}
	chromedp.ListenTarget(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			b.pageError(ev.ExceptionDetails.Error())
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.APITypeError {
				b.pageError(fmt.Sprintf("console.error: %v", ev.Args))
			}
		case *cdplog.EventEntryAdded:
			// CSP violations and failed loads are reported here. An API answer of 4xx is the
			// page's to handle (a queue with no subscription is a 404), not a page error.
			apiAnswer := ev.Entry.Source == cdplog.SourceNetwork && strings.Contains(ev.Entry.URL, "/v1/")
			if ev.Entry.Level == cdplog.LevelError && !apiAnswer {
				b.pageError(fmt.Sprintf("%s: %s (%s)", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
			}
		}
	})
	return b
}

// signIn signs in with the project token, which lands in sessionStorage and never in the URL.
func (b *browser) signIn(n *node) {
	t := b.t
	b.run(cdplog.Enable(), chromedp.Navigate(n.url+"/console"), chromedp.WaitVisible("#signin-token", chromedp.ByID))
	b.shot("01-signin")
	b.run(chromedp.SendKeys("#signin-token", n.token, chromedp.ByID), chromedp.Click("#signin-submit", chromedp.ByID),
		chromedp.WaitVisible(`tr[data-queue="orders"]`))
	var loc, stored string
	b.run(chromedp.Location(&loc), chromedp.Evaluate(`sessionStorage.getItem("queues.console.token")`, &stored))
	if strings.Contains(loc, n.token) || strings.Contains(loc, "token") {
		t.Errorf("the token is in the URL: %s", loc)
	}
	if stored != n.token {
		t.Errorf("sessionStorage holds %q", stored)
	}
}

// queuesAndSend creates a queue from the list, then sends a test message to orders from its
// Send tab and sees the list's count go from 0 to 1. It returns the sent message's id.
func (b *browser) queuesAndSend(n *node) string {
	b.run(chromedp.SendKeys("#create-name", "webhooks", chromedp.ByID), chromedp.Click("#create-submit", chromedp.ByID),
		chromedp.WaitVisible(`tr[data-queue="webhooks"]`))
	n.do(b.t, "GET", "/v1/queues/webhooks", nil)
	b.waitText(`tr[data-queue="orders"] td[data-count="visible"]`, "0")
	b.waitText(`tr[data-queue="bulk"] td[data-count="visible"]`, "25")
	b.shot("02-queues")
	b.run(chromedp.Click(`button[data-queue="orders"]`), chromedp.WaitVisible("#tab-send", chromedp.ByID),
		chromedp.Click("#tab-send", chromedp.ByID), chromedp.WaitVisible("#send-body", chromedp.ByID),
		chromedp.SendKeys("#send-body", "hello from the console", chromedp.ByID),
		chromedp.SendKeys("#send-attrs", "kind=test", chromedp.ByID),
		chromedp.Click("#send-submit", chromedp.ByID))
	sent := b.waitAttr("#send-result", "data-message-id")
	b.shot("03-send")
	b.run(chromedp.Click("#nav-queues", chromedp.ByID))
	b.waitText(`tr[data-queue="orders"] td[data-count="visible"]`, "1")
	b.waitTextContains(`tr[data-queue="orders"] td:nth-child(8)`, "orders-dlq after 3")
	b.shot("04-queues-after-send")
	return sent
}

// browse finds the sent message on orders' visible page, pages through bulk's 25 messages
// (20 a page), and sees the in-flight and delayed states.
func (b *browser) browse(n *node, sent string) {
	b.run(chromedp.Click(`button[data-queue="orders"]`), chromedp.WaitVisible("#pane-messages", chromedp.ByID))
	row := fmt.Sprintf(`#browse-body tr[data-message-id="%s"]`, sent)
	b.waitTextContains(row, "hello from the console")
	b.waitTextContains(row, "kind=test")
	b.shot("05-browse")
	// The filter box: attribute name=value pairs, sent as attribute.<name>=<value>.
	filter := func(v string) {
		b.run(chromedp.SetValue("#browse-filter", v, chromedp.ByID),
			chromedp.Evaluate(`document.getElementById("browse-filter").dispatchEvent(new Event("change"))`, nil))
	}
	filter("kind=nope")
	b.waitVisible("#browse-empty")
	b.waitTextContains("#browse-empty", "No matching messages")
	filter("kind=nope kind=test")
	b.waitTextContains(row, "hello from the console")
	b.shot("05b-browse-filtered")
	b.run(chromedp.Click("#nav-queues", chromedp.ByID), chromedp.Click(`button[data-queue="bulk"]`),
		chromedp.WaitVisible("#pane-messages", chromedp.ByID))
	b.waitCount("#browse-body tr", 20)
	b.run(chromedp.Click("#browse-next", chromedp.ByID))
	b.waitCount("#browse-body tr", 5)
	b.waitTextContains("#browse-page", "page 2")
	// One message taken by a consumer is in flight; none is delayed.
	n.do(b.t, "POST", "/v1/queues/bulk/receive", map[string]any{"maxMessages": 1})
	pick := func(state string) {
		b.run(chromedp.SetValue("#browse-state", state, chromedp.ByID),
			chromedp.Evaluate(`document.getElementById("browse-state").dispatchEvent(new Event("change"))`, nil))
	}
	pick("inFlight")
	b.waitCount("#browse-body tr", 1)
	b.waitText(`#browse-body tr td:nth-child(4)`, "1")
	pick("delayed")
	b.waitVisible("#browse-empty")
}

// deadLetters opens orders-dlq, which opens on its dead-letter view with the reason and source.
func (b *browser) deadLetters() {
	b.run(chromedp.Click("#nav-queues", chromedp.ByID), chromedp.Click(`button[data-queue="orders-dlq"]`),
		chromedp.WaitVisible("#pane-deadletters", chromedp.ByID))
	b.waitText("#dlq-body tr td.reason", "schema-mismatch")
	b.waitText("#dlq-body tr td.source", "orders")
	b.waitTextContains("#dlq-body tr td.body", `{"order":"A-17"}`)
	b.shot("06-deadletters")
}

// deadLetterAll dead-letters every message orders holds, after sending it n more, and
// answers how many orders-dlq holds then.
func (n *node) deadLetterAll(t *testing.T, more int) int {
	var batch []any
	for i := range more {
		batch = append(batch, map[string]any{"body": fmt.Sprintf("retry me %d", i)})
	}
	n.do(t, "POST", "/v1/queues/orders/messages", map[string]any{"messages": batch})
	got := n.do(t, "POST", "/v1/queues/orders/receive", map[string]any{"maxMessages": 10, "waitSeconds": 1})
	var entries []any
	for _, m := range got["messages"].([]any) {
		entries = append(entries, map[string]any{"receiptHandle": m.(map[string]any)["receiptHandle"], "reason": "timeout"})
	}
	n.do(t, "POST", "/v1/receipts/dead-letter", map[string]any{"entries": entries})
	return int(n.do(t, "GET", "/v1/queues/orders-dlq", nil)["counts"].(map[string]any)["visible"].(float64))
}

// latestTask is orders-dlq's newest move task, as the API answers it.
func (n *node) latestTask(t *testing.T) map[string]any {
	tasks := n.do(t, "GET", "/v1/queues/orders-dlq/move-tasks?limit=1", nil)["moveTasks"].([]any)
	if len(tasks) == 0 {
		t.Fatal("orders-dlq has no move task")
	}
	return tasks[0].(map[string]any)
}

// redrive starts a redrive of orders-dlq from its dead-letter view at one message a second,
// watches its progress, cancels it, then redrives the rest at 500/s to the end: the dead
// letters leave the view and orders holds them all again, with their ids.
func (b *browser) redrive(n *node) {
	t := b.t
	want := n.deadLetterAll(t, 9)
	if want < 5 {
		t.Fatalf("orders-dlq holds %d; the slow redrive needs a few seconds of work", want)
	}
	b.run(chromedp.Click("#dlq-refresh", chromedp.ByID))
	b.waitCount("#dlq-body tr", want)
	b.run(chromedp.SetValue("#redrive-rate", "1", chromedp.ByID), chromedp.Click("#redrive-start", chromedp.ByID))
	b.waitText("#redrive-status", "running")
	b.waitJS("the first message moved", `/^[1-9][0-9]* of `+fmt.Sprint(want)+` moved at 1\/s/.test(document.getElementById("redrive-progress").textContent)`)
	b.waitVisible("#redrive-cancel")
	if task := n.latestTask(t); task["status"] != "running" || task["toMove"] != float64(want) || task["destination"] != nil {
		t.Fatalf("the page's redrive, as the API has it: %v", task)
	}
	b.shot("10-redrive-running")
	b.run(chromedp.Click("#redrive-cancel", chromedp.ByID))
	b.waitText("#redrive-status", "cancelled")
	cancelled := n.latestTask(t)
	if cancelled["status"] != "cancelled" || cancelled["moved"].(float64) >= float64(want) {
		t.Fatalf("after Cancel the API says %v", cancelled)
	}
	b.waitJS("Cancel gone", `document.getElementById("redrive-cancel").hidden`)

	rest := want - int(cancelled["moved"].(float64))
	b.run(chromedp.SetValue("#redrive-rate", "500", chromedp.ByID), chromedp.Click("#redrive-start", chromedp.ByID))
	b.waitText("#redrive-status", "completed")
	b.waitTextContains("#redrive-progress", fmt.Sprintf("%d of %d moved at 500/s", rest, rest))
	b.waitVisible("#dlq-empty")
	orders := n.do(t, "GET", "/v1/queues/orders/messages?state=visible&limit=50", nil)["messages"].([]any)
	back := map[string]bool{}
	for _, m := range orders {
		back[m.(map[string]any)["messageId"].(string)] = true
	}
	if len(orders) != want || !back[n.deadID] {
		t.Fatalf("orders holds %d visible after the redrive, want %d, with %s among them", len(orders), want, n.deadID)
	}
	b.shot("11-redrive-completed")
}

// subscription creates one on webhooks (its secret shown once), pauses and resumes it
// (checked against the API) and rotates its secret.
func (b *browser) subscription(n *node, hook *endpoint) {
	t := b.t
	b.run(chromedp.Click("#nav-queues", chromedp.ByID), chromedp.Click(`button[data-queue="webhooks"]`),
		chromedp.WaitVisible("#tab-subscription", chromedp.ByID), chromedp.Click("#tab-subscription", chromedp.ByID),
		chromedp.WaitVisible("#sub-create-endpoint", chromedp.ByID),
		chromedp.SendKeys("#sub-create-endpoint", hook.URL, chromedp.ByID),
		chromedp.Click("#sub-create-submit", chromedp.ByID), chromedp.WaitVisible("#secret-box", chromedp.ByID))
	first := b.text("#secret-value")
	if !strings.HasPrefix(first, "whsec_") {
		t.Fatalf("secret shown: %q", first)
	}
	b.waitText("#sub-status", "active")
	b.run(chromedp.Click("#sub-toggle", chromedp.ByID))
	b.waitText("#sub-status", "paused")
	if sub := n.do(t, "GET", "/v1/queues/webhooks/subscription", nil); sub["paused"] != true {
		t.Fatalf("after Pause the API says %v", sub)
	}
	b.run(chromedp.Click("#sub-toggle", chromedp.ByID))
	b.waitText("#sub-status", "active")
	if sub := n.do(t, "GET", "/v1/queues/webhooks/subscription", nil); sub["paused"] != false {
		t.Fatalf("after Resume the API says %v", sub)
	}
	// A new secret replaces the shown one; dismissing it removes it from the page.
	b.run(chromedp.Click("#secret-dismiss", chromedp.ByID), chromedp.WaitNotVisible("#secret-box", chromedp.ByID),
		chromedp.Click("#sub-rotate", chromedp.ByID), chromedp.WaitVisible("#secret-box", chromedp.ByID))
	if second := b.text("#secret-value"); !strings.HasPrefix(second, "whsec_") || second == first {
		t.Fatalf("rotated secret %q (first %q)", second, first)
	}
	b.shot("07-subscription-rotated")
	b.run(chromedp.Click("#secret-dismiss", chromedp.ByID))
	b.waitText("#sub-signing", "Signed hmac (v1)")
	// An ed25519 subscription's rotation shows its new public key, the one GET answers.
	n.do(t, "PATCH", "/v1/queues/webhooks/subscription", map[string]any{"signing": "ed25519"})
	b.run(chromedp.Click("#sub-rotate", chromedp.ByID), chromedp.WaitVisible("#secret-box", chromedp.ByID))
	key, _ := n.do(t, "GET", "/v1/queues/webhooks/subscription", nil)["signingPublicKey"].(string)
	if !strings.HasPrefix(key, "whpk_") {
		t.Fatalf("signingPublicKey %q", key)
	}
	b.waitText("#sub-signing", "Signed ed25519 (v1a) · public key "+key)
	b.run(chromedp.Click("#secret-dismiss", chromedp.ByID))
	n.do(t, "PATCH", "/v1/queues/webhooks/subscription", map[string]any{"signing": "hmac"})
}

// pushAttempts sends a message from the page to webhooks; it is pushed to the local endpoint
// and its attempt appears in the subscription's log.
func (b *browser) pushAttempts(n *node, hook *endpoint) {
	t := b.t
	b.run(chromedp.Click("#tab-send", chromedp.ByID), chromedp.SendKeys("#send-body", "push me", chromedp.ByID),
		chromedp.Click("#send-submit", chromedp.ByID))
	pushedID := b.waitAttr("#send-result", "data-message-id")
	select {
	case a := <-n.attempts:
		if a.Outcome != meta.AttemptAcknowledged {
			t.Fatalf("attempt %+v", a)
		}
	case <-b.ctx.Done():
		t.Fatal("no push attempt")
	}
	if got := <-hook.bodies; !strings.Contains(got, pushedID) {
		t.Fatalf("pushed %s, want %s", got, pushedID)
	}
	b.run(chromedp.Click("#tab-subscription", chromedp.ByID), chromedp.WaitVisible("#attempts-table", chromedp.ByID))
	b.waitText("#attempts-body tr td:nth-child(6)", "acknowledged")
	b.waitText("#attempts-body tr td:nth-child(4)", "204")
	b.shot("08-subscription-attempts")
}

// settingsAndSignOut shows the settings and changes the queue's maxMessageBytes from its form
// (seen through the API); signing out removes the token.
func (b *browser) settingsAndSignOut(n *node) {
	b.run(chromedp.Click("#tab-settings", chromedp.ByID), chromedp.WaitVisible("#settings-list", chromedp.ByID))
	b.waitTextContains("#settings-list", "30 s")
	b.waitTextContains("#settings-list", "262144 bytes")
	b.shot("09-settings")
	b.run(chromedp.SetValue("#settings-maxbytes", "1048576", chromedp.ByID), chromedp.Click("#settings-save", chromedp.ByID))
	b.waitTextContains("#settings-list", "1048576 bytes")
	if q := n.do(b.t, "GET", "/v1/queues/webhooks", nil); q["maxMessageBytes"] != 1048576.0 {
		b.t.Fatalf("after saving the settings form: maxMessageBytes %v", q["maxMessageBytes"])
	}
	b.run(chromedp.Click("#signout", chromedp.ByID), chromedp.WaitVisible("#signin-token", chromedp.ByID))
	b.waitJS("the token gone from sessionStorage", `sessionStorage.getItem("queues.console.token") === null`)
}

// endpoint is a push receiver on 127.0.0.1 that acknowledges every batch.
type endpoint struct {
	URL    string
	bodies chan string
}

func newEndpoint(t *testing.T) *endpoint {
	e := &endpoint{bodies: make(chan string, 100)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		e.bodies <- string(b)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	e.URL = srv.URL + "/hook"
	return e
}

// browser runs chromedp actions, failing the test on the first error.
type browser struct {
	t   *testing.T
	ctx context.Context
	dir string

	mu     sync.Mutex
	errors []string
}

func (b *browser) pageError(e string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.errors = append(b.errors, e)
}

func (b *browser) pageErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errors...)
}

func (b *browser) run(actions ...chromedp.Action) {
	b.t.Helper()
	if err := chromedp.Run(b.ctx, actions...); err != nil {
		b.t.Fatalf("browser: %v", err)
	}
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	var s string
	b.run(chromedp.Text(sel, &s, chromedp.ByQuery))
	return strings.TrimSpace(s)
}

// waitJS waits until a JavaScript predicate on the page holds (the page polls the API; the
// wait ends as soon as it shows the value).
func (b *browser) waitJS(what, expr string) {
	b.t.Helper()
	if err := chromedp.Run(b.ctx, chromedp.Poll(expr, nil, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		b.t.Fatalf("waiting for %s: %v", what, err)
	}
}

func (b *browser) waitText(sel, want string) {
	b.t.Helper()
	b.waitJS(fmt.Sprintf("%s = %q", sel, want), fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && e.textContent.trim() === %q; })()`, sel, want))
}

func (b *browser) waitTextContains(sel, want string) {
	b.t.Helper()
	b.waitJS(fmt.Sprintf("%s ∋ %q", sel, want), fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && e.textContent.includes(%q); })()`, sel, want))
}

func (b *browser) waitCount(sel string, n int) {
	b.t.Helper()
	b.waitJS(fmt.Sprintf("%d × %s", n, sel), fmt.Sprintf(`document.querySelectorAll(%q).length === %d`, sel, n))
}

func (b *browser) waitVisible(sel string) {
	b.t.Helper()
	b.run(chromedp.WaitVisible(sel, chromedp.ByQuery))
}

func (b *browser) waitAttr(sel, attr string) string {
	b.t.Helper()
	b.waitJS(sel+"["+attr+"]", fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && !!e.getAttribute(%q); })()`, sel, attr))
	var v string
	var ok bool
	b.run(chromedp.AttributeValue(sel, attr, &v, &ok, chromedp.ByQuery))
	// Clear it so the next send's wait sees the next value.
	b.run(chromedp.RemoveAttribute(sel, attr, chromedp.ByQuery))
	return v
}

// shot saves a screenshot of the page as it is.
func (b *browser) shot(name string) {
	b.t.Helper()
	var png []byte
	b.run(chromedp.FullScreenshot(&png, 100))
	if err := os.WriteFile(filepath.Join(b.dir, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}
