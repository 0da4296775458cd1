package console_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/queueshq/queues/pkg/meta"
)

// TestConsoleSubscriptionHealthInBrowser: the Subscription tab shows a disabled subscription's
// state with its reason and the endpoint's health (failing, its success rates, consecutive
// failures, the last error, the flow-control limit), and its Resume button makes it active
// again (PATCH state, seen through the API); the waiting message is then pushed and the
// health badge turns healthy.
func TestConsoleSubscriptionHealthInBrowser(t *testing.T) {
	exe := browserPath(t)
	shots := artifacts(t)
	n := startServe(t)
	var answer atomic.Int32
	answer.Store(http.StatusInternalServerError)
	pushed := make(chan struct{}, 100)
	ep := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		code := int(answer.Load())
		w.WriteHeader(code)
		if code < 300 {
			pushed <- struct{}{}
		}
	}))
	t.Cleanup(ep.Close)
	n.do(t, "POST", "/v1/queues", map[string]any{"name": "hooks"})
	n.do(t, "POST", "/v1/queues/hooks/subscription", map[string]any{"endpoint": ep.URL + "/hook", "timeoutSeconds": 5})
	n.do(t, "POST", "/v1/queues/hooks/messages", map[string]any{"messages": []any{map[string]any{"body": "waits"}}})
	for range 2 { // two failed attempts, then disabled by hand
		if a := <-n.attempts; a.Outcome != meta.AttemptFailed {
			t.Fatalf("attempt %+v, want failed", a)
		}
	}
	n.do(t, "PATCH", "/v1/queues/hooks/subscription", map[string]any{"state": "disabled"})

	b := newBrowser(t, exe, shots)
	b.run(chromedp.Navigate(n.url+"/console"), chromedp.WaitVisible("#signin-token", chromedp.ByID),
		chromedp.SendKeys("#signin-token", n.token, chromedp.ByID), chromedp.Click("#signin-submit", chromedp.ByID),
		chromedp.WaitVisible(`tr[data-queue="hooks"]`))
	b.run(chromedp.Click(`button[data-queue="hooks"]`), chromedp.WaitVisible("#tab-subscription", chromedp.ByID),
		chromedp.Click("#tab-subscription", chromedp.ByID), chromedp.WaitVisible("#sub-status", chromedp.ByID))
	b.waitText("#sub-status", "disabled")
	b.waitTextContains("#sub-disabled-reason", "disabled through the API")
	b.waitTextContains("#sub-health", "failing · 0% (5 min)")
	b.waitTextContains("#sub-health-detail", "last error 500 http_status")
	b.waitTextContains("#sub-health-detail", "flow-control limit")
	b.waitVisible("#sub-resume")
	b.shot("subscription-disabled")

	answer.Store(http.StatusNoContent)
	b.run(chromedp.Click("#sub-resume", chromedp.ByID))
	b.waitText("#sub-status", "active")
	if sub := n.do(t, "GET", "/v1/queues/hooks/subscription", nil); sub["state"] != "active" {
		t.Fatalf("after Resume the API says %v", sub)
	}
	select {
	case <-pushed:
	case <-b.ctx.Done():
		t.Fatal("the waiting message was not pushed after Resume")
	}
	b.waitTextContains("#sub-health", "healthy")
	b.waitTextContains("#sub-health-detail", "0 consecutive failures")
	b.shot("subscription-resumed")
	for _, e := range b.pageErrors() {
		t.Errorf("page error: %s", e)
	}
}
