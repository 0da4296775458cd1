package console_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestTopicsInBrowser drives the console's topic views in headless Chromium against a running
// serve: it creates a topic from the list, binds two queues from the topic's page (one with a
// filter), publishes from the page and sees each copy in its bound queue (the page's browse and
// the API agree on the published message id), reads the log with a filter and a range, edits a
// filter, keys state with a patch, replays into a queue (a dry run, one to its end, one
// cancelled), unbinds, sees a queue's sources and deletes a topic.
func TestTopicsInBrowser(t *testing.T) {
	exe := browserPath(t)
	shots := artifacts(t)
	n := startServe(t)
	n.do(t, "POST", "/v1/queues", map[string]any{"name": "orders"})
	n.do(t, "POST", "/v1/queues", map[string]any{"name": "audit"})
	b := newBrowser(t, exe, shots)

	b.signIn(n)
	b.createTopics(n)
	ordersID, auditID := b.bindQueues(n)
	published := b.publishAndCopies(n)
	b.queueSources(published)
	b.topicLog(published)
	b.editFilterAndState(n, auditID)
	b.replay(n, auditID)
	b.logPages(n)
	b.settingsAndFifo(n)
	b.unbindAndDelete(n, ordersID)
	b.replayedInQueue()

	for _, e := range b.pageErrors() {
		t.Errorf("page error: %s", e)
	}
}

// createTopics creates events (and scratch, deleted at the end) from the Topics list.
func (b *browser) createTopics(n *node) {
	b.run(chromedp.Click("#nav-topics", chromedp.ByID), chromedp.WaitVisible("#topic-create-name", chromedp.ByID))
	b.waitVisible("#topics-empty")
	for _, name := range []string{"events", "scratch"} {
		b.run(chromedp.SendKeys("#topic-create-name", name, chromedp.ByID), chromedp.Click("#topic-create-submit", chromedp.ByID),
			chromedp.WaitVisible(fmt.Sprintf(`tr[data-topic=%q]`, name)))
	}
	if tp := n.do(b.t, "GET", "/v1/topics/events", nil); tp["type"] != "standard" || tp["retentionSeconds"] != float64(86400) {
		b.t.Fatalf("the page's topic, as the API has it: %v", tp)
	}
	b.waitText(`tr[data-topic="events"] td[data-col="lastSequence"]`, "0")
	b.waitText(`tr[data-topic="events"] td[data-col="bindings"]`, "0")
}

// bindQueues binds orders to events with the filter kind=order and audit with none, from the
// topic's Bindings tab, and answers the two queues' ids.
func (b *browser) bindQueues(n *node) (ordersID, auditID string) {
	t := b.t
	ordersID = n.do(t, "GET", "/v1/queues/orders", nil)["id"].(string)
	auditID = n.do(t, "GET", "/v1/queues/audit", nil)["id"].(string)
	b.run(chromedp.Click(`button[data-topic="events"]`), chromedp.WaitVisible("#bind-form", chromedp.ByID))
	b.waitText("#topic-title", "events")
	for _, c := range []struct{ id, name, filter string }{{ordersID, "orders", "kind=order"}, {auditID, "audit", ""}} {
		b.waitJS("the queue picker lists "+c.name, fmt.Sprintf(`!!document.querySelector('#bind-queue option[value=%q]')`, c.id))
		b.run(setValue("#bind-queue", c.id), setValue("#bind-filter", c.filter),
			chromedp.Click("#bind-submit", chromedp.ByID))
		b.waitVisible(fmt.Sprintf(`#bindings-body tr[data-queue=%q]`, c.name))
	}
	// A filter box that is not name=value pairs is refused on the page, naming the box.
	b.run(setValue("#bind-filter", "oops"), chromedp.Click("#bind-submit", chromedp.ByID))
	b.waitTextContains("#banner", `Filter: "oops" is not name=value`)
	// A queue is bound to a topic once: the refusal is shown with its code.
	b.run(setValue("#bind-queue", ordersID), setValue("#bind-filter", ""), chromedp.Click("#bind-submit", chromedp.ByID))
	b.waitTextContains("#banner", "binding_exists")
	b.waitCount("#bindings-body tr", 2)
	b.waitText(`#bindings-body tr[data-queue="orders"] td[data-col="filter"]`, "kind=order")
	b.waitText(`#bindings-body tr[data-queue="audit"] td[data-col="filter"]`, "everything")
	src := n.do(t, "GET", "/v1/queues/orders/sources", nil)["sources"].([]any)
	if len(src) != 1 || fmt.Sprint(src[0].(map[string]any)["filter"]) != "map[attributes:map[kind:[order]]]" || src[0].(map[string]any)["from"] != "now" {
		t.Fatalf("orders' sources after binding from the page: %v", src)
	}
	return ordersID, auditID
}

// publishOne publishes from the Publish tab and answers the message id the page shows.
func (b *browser) publishOne(body, attrs, key, merge string) string {
	b.run(chromedp.Click("#ttab-publish", chromedp.ByID), chromedp.WaitVisible("#publish-body", chromedp.ByID),
		setValue("#publish-body", body), setValue("#publish-attrs", attrs),
		setValue("#publish-key", key), setValue("#publish-merge", merge),
		chromedp.Click("#publish-submit", chromedp.ByID))
	return b.waitAttr("#publish-result", "data-message-id")
}

// publishAndCopies publishes an order and a ping from the page; the bindings show orders with
// one copy and audit with two, lag 0, and the API finds the order in orders by its id.
func (b *browser) publishAndCopies(n *node) string {
	t := b.t
	order := b.publishOne(`{"order":"A-1"}`, "kind=order", "", "replace")
	b.waitTextContains("#publish-result", "at sequence 1")
	b.shot("14-topic-publish")
	b.publishOne("ping", "kind=ping", "", "replace")
	b.run(chromedp.Click("#ttab-bindings", chromedp.ByID))
	b.waitText(`#bindings-body tr[data-queue="orders"] td[data-col="copied"]`, "1")
	b.waitText(`#bindings-body tr[data-queue="audit"] td[data-col="copied"]`, "2")
	b.waitText(`#bindings-body tr[data-queue="orders"] td[data-col="sequence"]`, "2")
	b.waitText(`#bindings-body tr[data-queue="orders"] td[data-col="lag"]`, "0")
	b.waitText(`#topic-counts [data-count="lastSequence"] dd`, "2")
	b.shot("13-topic-bindings")
	msgs := n.do(t, "GET", "/v1/queues/orders/messages?state=visible", nil)["messages"].([]any)
	if len(msgs) != 1 || msgs[0].(map[string]any)["messageId"] != order || msgs[0].(map[string]any)["body"] != `{"order":"A-1"}` {
		t.Fatalf("orders holds %v, want the order %s alone", msgs, order)
	}
	return order
}

// queueSources opens orders from its binding: its Messages tab shows the copy, its Sources tab
// the binding; then back to the topic through the source's link.
func (b *browser) queueSources(order string) {
	b.run(chromedp.Click(`#bindings-body tr[data-queue="orders"] td button.link`), chromedp.WaitVisible("#pane-messages", chromedp.ByID))
	b.waitText("#queue-title", "orders")
	b.waitTextContains(fmt.Sprintf(`#browse-body tr[data-message-id=%q]`, order), `{"order":"A-1"}`)
	b.run(chromedp.Click("#tab-sources", chromedp.ByID), chromedp.WaitVisible("#sources-table", chromedp.ByID))
	b.waitText(`#sources-body tr[data-topic="events"] td[data-col="copied"]`, "1")
	b.waitTextContains(`#sources-body tr[data-topic="events"]`, "kind=order")
	b.shot("19-queue-sources")
	b.run(chromedp.Click(`#sources-body tr[data-topic="events"] button.link`), chromedp.WaitVisible("#bind-form", chromedp.ByID))
	b.waitText("#topic-title", "events")
}

// topicLog reads the log: both entries, then the order alone by filter, then from 2.
func (b *browser) topicLog(order string) {
	b.run(chromedp.Click("#ttab-log", chromedp.ByID), chromedp.WaitVisible("#log-table", chromedp.ByID))
	b.waitCount("#log-body tr", 2)
	b.waitTextContains(fmt.Sprintf(`#log-body tr[data-message-id=%q]`, order), "kind=order")
	b.shot("15-topic-log")
	read := func(from, to, filter string) {
		b.run(setValue("#log-from", from), setValue("#log-to", to),
			setValue("#log-filter", filter), chromedp.Click("#log-refresh", chromedp.ByID))
	}
	read("", "", "kind=order")
	b.waitCount("#log-body tr", 1)
	b.waitText("#log-body tr td:nth-child(1)", "1")
	read("2", "", "")
	b.waitCount("#log-body tr", 1)
	b.waitText("#log-body tr td:nth-child(3)", "ping")
	read("", "1", "kind=ping")
	b.waitVisible("#log-empty")
}

// editFilterAndState changes audit's filter to kind=ping from the page (the API has it), then
// publishes a keyed state and a patch to it and looks the merged state up.
func (b *browser) editFilterAndState(n *node, auditID string) {
	t := b.t
	b.run(chromedp.Click("#ttab-bindings", chromedp.ByID), chromedp.Click(`button[data-edit-filter="audit"]`))
	b.waitVisible(`#bindings-body tr[data-queue="audit"] td[data-col="filter"] input`)
	b.run(setValue(`#bindings-body tr[data-queue="audit"] td[data-col="filter"] input`, "kind=ping"),
		chromedp.Click(`button[data-save-filter="audit"]`))
	b.waitText(`#bindings-body tr[data-queue="audit"] td[data-col="filter"]`, "kind=ping")
	src := n.do(t, "GET", "/v1/queues/audit/sources", nil)["sources"].([]any)
	if len(src) != 1 || fmt.Sprint(src[0].(map[string]any)["filter"]) != "map[attributes:map[kind:[ping]]]" {
		t.Fatalf("audit's sources after the edit: %v", src)
	}
	b.publishOne(`{"plan":"free","seats":1}`, "", "user-1", "replace")
	b.publishOne(`{"seats":5}`, "", "user-1", "patch")
	// A message the publish fails is shown with its code and field; nothing is appended.
	b.run(chromedp.Click("#ttab-publish", chromedp.ByID), setValue("#publish-body", "not an object"), setValue("#publish-key", "user-1"),
		setValue("#publish-merge", "patch"), chromedp.Click("#publish-submit", chromedp.ByID))
	b.waitTextContains("#banner", "invalid_argument")
	b.waitTextContains("#banner", "(field messages[0].body)")
	b.run(chromedp.Click("#ttab-state", chromedp.ByID), chromedp.WaitVisible("#state-table", chromedp.ByID))
	b.waitText(`#state-body tr[data-key="user-1"] td:nth-child(2)`, `{"plan":"free","seats":5}`)
	b.run(setValue("#state-key", "user-2"), chromedp.Click("#state-refresh", chromedp.ByID))
	b.waitTextContains("#state-empty", "user-2 has no state")
	b.run(setValue("#state-key", "user-1"), chromedp.Click("#state-refresh", chromedp.ByID))
	b.waitText(`#state-body tr[data-key="user-1"] td:nth-child(4)`, "4")
	b.shot("16-topic-state")
}

// replay replays events into audit from the Replay tab: a dry run counts, a replay of 1..2 at
// 500/s completes (audit holds the copies with replayOf), and a slow one over more entries is
// cancelled from its row.
func (b *browser) replay(n *node, auditID string) {
	t := b.t
	b.run(chromedp.Click("#ttab-replay", chromedp.ByID), chromedp.WaitVisible("#replay-form", chromedp.ByID))
	b.waitVisible("#replays-empty")
	start := func(from, to, rate string, dry bool) {
		b.waitJS("the replay picker lists audit", fmt.Sprintf(`!!document.querySelector('#replay-queue option[value=%q]')`, auditID))
		b.run(setValue("#replay-queue", auditID), setValue("#replay-from", from),
			setValue("#replay-to", to), setValue("#replay-rate", rate),
			chromedp.Evaluate(fmt.Sprintf(`document.getElementById("replay-dry").checked = %v`, dry), nil),
			chromedp.Click("#replay-submit", chromedp.ByID))
	}
	start("1", "2", "500", true)
	b.waitTextContains("#banner", "Dry run: 2 entries would be copied")
	before := len(n.do(t, "GET", "/v1/queues/audit/messages?state=visible&limit=100", nil)["messages"].([]any))
	start("1", "2", "500", false)
	b.waitTextContains(`#replays-body tr td[data-col="status"]`, "completed")
	b.waitText(`#replays-body tr td[data-col="moved"]`, "2 of 2")
	msgs := n.do(t, "GET", "/v1/queues/audit/messages?state=visible&limit=100", nil)["messages"].([]any)
	replayed := 0
	for _, m := range msgs {
		if m.(map[string]any)["replayOf"] != nil {
			replayed++
		}
	}
	if len(msgs) != before+2 || replayed != 2 {
		t.Fatalf("audit holds %d (%d replayed), want %d with 2 replayed", len(msgs), replayed, before+2)
	}
	var batch []any
	for i := range 10 {
		batch = append(batch, map[string]any{"body": fmt.Sprintf("more %d", i)})
	}
	n.do(t, "POST", "/v1/topics/events/messages", map[string]any{"messages": batch})
	start("1", "", "1", false)
	b.waitTextContains(`#replays-body tr:first-child td[data-col="status"]`, "running")
	b.shot("17-topic-replay-running")
	b.run(chromedp.Click(`#replays-body tr:first-child button[data-cancel-replay]`))
	b.waitTextContains(`#replays-body tr:first-child td[data-col="status"]`, "cancelled")
	rs := n.do(t, "GET", "/v1/topics/events/replays?limit=1", nil)["replays"].([]any)
	if len(rs) != 1 || rs[0].(map[string]any)["status"] != "cancelled" {
		t.Fatalf("after Cancel the API says %v", rs)
	}
	b.shot("18-topic-replay")
}

// logPages pages the log 20 entries at a time: with 24 entries, page 2 holds 4.
func (b *browser) logPages(n *node) {
	var batch []any
	for i := range 10 {
		batch = append(batch, map[string]any{"body": fmt.Sprintf("even more %d", i)})
	}
	n.do(b.t, "POST", "/v1/topics/events/messages", map[string]any{"messages": batch})
	b.run(chromedp.Click("#ttab-log", chromedp.ByID), setValue("#log-from", ""), setValue("#log-to", ""), setValue("#log-filter", ""),
		chromedp.Click("#log-refresh", chromedp.ByID))
	b.waitCount("#log-body tr", 20)
	b.run(chromedp.Click("#log-next", chromedp.ByID))
	b.waitTextContains("#log-page", "page 2")
	b.waitCount("#log-body tr", 4)
	b.waitText("#log-body tr:last-child td:nth-child(1)", "24")
	b.run(chromedp.Click("#log-first", chromedp.ByID))
	b.waitCount("#log-body tr", 20)
	b.waitText("#log-body tr:first-child td:nth-child(1)", "1")
}

// settingsAndFifo changes events' retention from its Settings tab (the API has it) and sees
// a fifo topic's publish form ask for a group and dedup id.
func (b *browser) settingsAndFifo(n *node) {
	b.run(chromedp.Click("#ttab-settings", chromedp.ByID), chromedp.WaitVisible("#retention-form", chromedp.ByID),
		setValue("#topic-retention", "3600"), chromedp.Click("#retention-submit", chromedp.ByID))
	b.waitText(`#topic-counts [data-count="retention"] dd`, "3600 s")
	if tp := n.do(b.t, "GET", "/v1/topics/events", nil); tp["retentionSeconds"] != float64(3600) {
		b.t.Fatalf("events after saving its retention: %v", tp)
	}
	b.run(chromedp.Click("#ttab-publish", chromedp.ByID))
	b.waitJS("no group id on a standard topic", `document.getElementById("publish-group").offsetParent === null`)
	b.run(chromedp.Click("#nav-topics", chromedp.ByID), chromedp.WaitVisible("#topic-create-name", chromedp.ByID),
		chromedp.SendKeys("#topic-create-name", "ticks.fifo", chromedp.ByID), setValue("#topic-create-type", "fifo"),
		chromedp.Click("#topic-create-submit", chromedp.ByID), chromedp.WaitVisible(`button[data-topic="ticks.fifo"]`),
		chromedp.Click(`button[data-topic="ticks.fifo"]`), chromedp.WaitVisible("#bind-form", chromedp.ByID),
		chromedp.Click("#ttab-publish", chromedp.ByID), chromedp.WaitVisible("#publish-group", chromedp.ByID))
	// The bind picker offers only fifo queues (there are none).
	b.run(chromedp.Click("#ttab-bindings", chromedp.ByID))
	b.waitJS("an empty fifo queue picker", `document.querySelectorAll("#bind-queue option").length === 0`)
	n.do(b.t, "DELETE", "/v1/topics/ticks.fifo", nil)
	b.run(chromedp.Click("#nav-topics", chromedp.ByID), chromedp.Click(`button[data-topic="events"]`), chromedp.WaitVisible("#bind-form", chromedp.ByID))
	b.waitText("#topic-title", "events")
}

// replayedInQueue sees audit's replayed copies marked with their topic and sequence.
func (b *browser) replayedInQueue() {
	b.run(chromedp.Click("#nav-queues", chromedp.ByID), chromedp.Click(`button[data-queue="audit"]`),
		chromedp.WaitVisible("#pane-messages", chromedp.ByID))
	b.waitTextContains("#browse-body", "#1 of events")
	b.waitTextContains("#browse-body", "#2 of events")
}

// unbindAndDelete unbinds orders (two clicks) and deletes scratch from the list (two clicks).
func (b *browser) unbindAndDelete(n *node, ordersID string) {
	t := b.t
	b.run(chromedp.Click("#ttab-bindings", chromedp.ByID), chromedp.Click(`button[data-unbind="orders"]`))
	b.waitText(`button[data-unbind="orders"]`, "Really unbind?")
	b.run(chromedp.Click(`button[data-unbind="orders"]`))
	b.waitCount(`#bindings-body tr[data-queue="orders"]`, 0)
	if src := n.do(t, "GET", "/v1/queues/"+ordersID+"/sources", nil)["sources"].([]any); len(src) != 0 {
		t.Fatalf("orders' sources after Unbind: %v", src)
	}
	b.run(chromedp.Click("#nav-topics", chromedp.ByID), chromedp.WaitVisible(`tr[data-topic="scratch"]`))
	b.waitText(`tr[data-topic="events"] td[data-col="bindings"]`, "1")
	b.shot("12-topics")
	b.run(chromedp.Click(`button[data-delete-topic="scratch"]`), chromedp.Click(`button[data-delete-topic="scratch"]`))
	b.waitCount(`tr[data-topic="scratch"]`, 0)
	list := n.do(t, "GET", "/v1/topics", nil)["topics"].([]any)
	if len(list) != 1 || !strings.EqualFold(list[0].(map[string]any)["name"].(string), "events") {
		t.Fatalf("topics after Delete: %v", list)
	}
}

// setValue sets a form field's value as typed (chromedp.SetValue refuses an empty value).
func setValue(sel, v string) chromedp.Action {
	return chromedp.Evaluate(fmt.Sprintf(`document.querySelector(%q).value = %q`, sel, v), nil)
}
