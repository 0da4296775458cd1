package console_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
)

// TestConsoleGroupsInBrowser: a fifo queue's Groups tab shows each group's state, the head's
// receives and the reason that parked it, filters by state, and its Release button releases
// a parked group (the API then lists it active).
func TestConsoleGroupsInBrowser(t *testing.T) {
	exe := browserPath(t)
	shots := artifacts(t)
	n := startServe(t)
	dlq := n.do(t, "POST", "/v1/queues", map[string]any{"name": "ledger-dlq", "type": "fifo"})
	n.do(t, "POST", "/v1/queues", map[string]any{"name": "ledger", "type": "fifo", "onDeadLetter": "park",
		"redrive": map[string]any{"deadLetterQueue": dlq["id"], "maxReceiveCount": 5}})
	n.do(t, "POST", "/v1/queues/ledger/messages", map[string]any{"messages": []any{
		map[string]any{"body": "debit 10", "groupId": "acct-1"}, map[string]any{"body": "credit 5", "groupId": "acct-1"},
		map[string]any{"body": "debit 3", "groupId": "acct-2"}}})
	got := n.do(t, "POST", "/v1/queues/ledger/receive", map[string]any{"maxMessages": 1})
	handle := got["messages"].([]any)[0].(map[string]any)["receiptHandle"]
	req, _ := http.NewRequest("POST", n.url+"/v1/receipts/dead-letter", strings.NewReader(fmt.Sprintf(`{"receiptHandle":%q,"reason":"poison"}`, handle)))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusNoContent {
		t.Fatalf("dead-letter: %v %v", err, res)
	}
	res.Body.Close()

	b := newBrowser(t, exe, shots)
	b.run(chromedp.Navigate(n.url+"/console"), chromedp.WaitVisible("#signin-token", chromedp.ByID),
		chromedp.SendKeys("#signin-token", n.token, chromedp.ByID), chromedp.Click("#signin-submit", chromedp.ByID),
		chromedp.WaitVisible(`tr[data-queue="ledger"]`))
	b.run(chromedp.Click(`button[data-queue="ledger"]`), chromedp.WaitVisible("#tab-groups", chromedp.ByID),
		chromedp.Click("#tab-groups", chromedp.ByID), chromedp.WaitVisible("#pane-groups", chromedp.ByID))
	b.waitCount("#groups-body tr", 2)
	b.waitText(`#groups-body tr[data-group="acct-1"] .group-state`, "parked")
	b.waitText(`#groups-body tr[data-group="acct-1"] td.last-error`, "poison")
	b.waitText(`#groups-body tr[data-group="acct-2"] .group-state`, "active")
	b.waitText("#groups-policy", "park")
	b.shot("groups-parked")
	var nodes []*cdp.Node
	b.run(chromedp.Nodes(`#groups-body tr[data-group="acct-2"] button.release`, &nodes, chromedp.AtLeast(0)))
	if len(nodes) != 0 {
		t.Error("an active group has a Release button")
	}
	b.run(chromedp.SetValue("#groups-state", "parked", chromedp.ByID),
		chromedp.Evaluate(`document.getElementById('groups-state').dispatchEvent(new Event('change'))`, nil))
	b.waitCount("#groups-body tr", 1)
	b.run(chromedp.Click(`#groups-body tr[data-group="acct-1"] button.release`))
	b.waitVisible("#groups-empty")
	if list := n.do(t, "GET", "/v1/queues/ledger/groups?state=parked", nil)["groups"].([]any); len(list) != 0 {
		t.Fatalf("parked groups after Release: %v", list)
	}
	b.run(chromedp.SetValue("#groups-state", "", chromedp.ByID),
		chromedp.Evaluate(`document.getElementById('groups-state').dispatchEvent(new Event('change'))`, nil))
	b.waitText(`#groups-body tr[data-group="acct-1"] .group-state`, "active")
	b.shot("groups-released")
	for _, e := range b.pageErrors() {
		t.Errorf("page error: %s", e)
	}
}
