package sdkgo

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/openapicheck"
	"github.com/queueshq/queues/sdk/go/client"
)

// topicRoutes exercises every topic and source route through the SDK against the real
// service (TestEveryRoute validates each exchange against openapi.yaml).
func topicRoutes(t *testing.T, c *client.Client) {
	ctx := t.Context()
	tp, err := c.CreateTopic(ctx, client.CreateTopicInput{Name: "prices", RetentionSeconds: client.Int(3600)})
	if err != nil || !strings.HasPrefix(tp.Slug, "top_") || tp.Type != client.Standard || tp.RetentionSeconds != 3600 ||
		tp.LastSequence != 0 || tp.FirstSequence != 1 || tp.Bindings != 0 || tp.CreatedAt.IsZero() {
		t.Fatalf("create topic: %+v %v", tp, err)
	}
	_, err = c.CreateTopic(ctx, client.CreateTopicInput{Name: "prices"})
	mustCode(t, err, client.CodeTopicExists, 409, "name")
	if !errors.Is(err, client.ErrTopicExists) || !client.IsConflict(err) {
		t.Fatal("topic_exists: errors.Is / IsConflict")
	}
	if _, err := c.CreateTopic(ctx, client.CreateTopicInput{Name: "ledger.fifo", Type: client.FIFO}); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{tp.ID, tp.Slug, tp.Name} {
		if got, err := c.GetTopic(ctx, ref); err != nil || got.ID != tp.ID {
			t.Fatalf("get topic %s: %+v %v", ref, got, err)
		}
	}
	if p, err := c.ListTopics(ctx, client.ListTopicsInput{Page: client.Page{Limit: 1}}); err != nil || len(p.Topics) != 1 || p.Topics[0].Name != "ledger.fifo" || p.NextCursor == nil {
		t.Fatalf("list topics: %+v %v", p, err)
	}
	if names := allTopicNames(t, c, ""); !slices.Equal(names, []string{"ledger.fifo", "prices"}) {
		t.Fatalf("all topics: %v", names)
	}
	if names := allTopicNames(t, c, "pr"); !slices.Equal(names, []string{"prices"}) {
		t.Fatalf("all topics with prefix pr: %v", names)
	}
	if tp, err = c.UpdateTopic(ctx, "prices", client.UpdateTopicInput{RetentionSeconds: client.Int(7200)}); err != nil || tp.RetentionSeconds != 7200 {
		t.Fatalf("update topic: %+v %v", tp, err)
	}
	bindingRoutes(t, c)
	replayRoutes(t, c)
	logRoutes(t, c)
	if err := c.DeleteTopic(ctx, "ledger.fifo"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetTopic(ctx, "ledger.fifo"); !client.IsNotFound(err) {
		t.Fatalf("get a deleted topic: %v", err)
	}
}

func allTopicNames(t *testing.T, c *client.Client, prefix string) []string {
	var names []string
	for tp, err := range c.AllTopics(t.Context(), prefix) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tp.Name)
	}
	return names
}

// bindingRoutes binds queues to the topics of topicRoutes, lists, reads, refilters and
// unbinds them, and meets the binding refusals.
func bindingRoutes(t *testing.T, c *client.Client) {
	ctx := t.Context()
	for _, in := range []client.CreateQueueInput{{Name: "eu"}, {Name: "every"}, {Name: "ledger-copy.fifo", Type: client.FIFO}} {
		if _, err := c.CreateQueue(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	eu, err := c.Bind(ctx, "eu", client.BindInput{Topic: "prices", Filter: client.Attr("region", "eu")})
	if err != nil || !strings.HasPrefix(eu.Slug, "qbd_") || eu.Queue != "eu" || eu.Topic != "prices" || eu.From != client.FromNow ||
		eu.StartSequence != 1 || eu.Filter == nil || !slices.Equal(eu.Filter.Attributes["region"], []string{"eu"}) || eu.LastFailure != nil {
		t.Fatalf("bind: %+v %v", eu, err)
	}
	if _, err := c.Bind(ctx, "every", client.BindInput{Topic: "prices", From: client.FromEarliest}); err != nil {
		t.Fatal(err)
	}
	if b, err := c.Bind(ctx, "ledger-copy.fifo", client.BindInput{Topic: "ledger.fifo", From: client.AtSequence(1)}); err != nil || b.From != "1" {
		t.Fatalf("bind from a sequence: %+v %v", b, err)
	}
	_, err = c.Bind(ctx, "eu", client.BindInput{Topic: "prices"})
	mustCode(t, err, client.CodeBindingExists, 409, "")
	if !errors.Is(err, client.ErrBindingExists) || !client.IsConflict(err) {
		t.Fatal("binding_exists: errors.Is / IsConflict")
	}
	_, err = c.Bind(ctx, "eu", client.BindInput{Topic: "ledger.fifo"})
	mustCode(t, err, client.CodeInvalidArgument, 400, "topic")
	_, err = c.Bind(ctx, "every", client.BindInput{Topic: "prices", From: "yesterday"})
	mustCode(t, err, client.CodeInvalidArgument, 400, "from")

	if l, err := c.ListSources(ctx, "eu"); err != nil || len(l) != 1 || l[0].ID != eu.ID {
		t.Fatalf("sources: %+v %v", l, err)
	}
	if l, err := c.TopicBindings(ctx, "prices"); err != nil || len(l) != 2 {
		t.Fatalf("topic bindings: %+v %v", l, err)
	}
	for _, ref := range []string{eu.ID, eu.Slug} {
		if g, err := c.GetSource(ctx, "eu", ref); err != nil || g.ID != eu.ID {
			t.Fatalf("get source %s: %+v %v", ref, g, err)
		}
	}
	if b, err := c.UpdateSourceFilter(ctx, "eu", eu.Slug, client.Attr("region", "eu", "uk")); err != nil ||
		!slices.Equal(b.Filter.Attributes["region"], []string{"eu", "uk"}) {
		t.Fatalf("update filter: %+v %v", b, err)
	}
	if tp, err := c.GetTopic(ctx, "prices"); err != nil || tp.Bindings != 2 {
		t.Fatalf("topic bindings count: %+v %v", tp, err)
	}
	if b, err := c.UpdateSourceFilter(ctx, "every", firstSource(t, c, "every"), nil); err != nil || b.Filter != nil {
		t.Fatalf("remove a filter: %+v %v", b, err)
	}
	if err := c.Unbind(ctx, "ledger-copy.fifo", firstSource(t, c, "ledger-copy.fifo")); err != nil {
		t.Fatal(err)
	}
	if l, err := c.ListSources(ctx, "ledger-copy.fifo"); err != nil || len(l) != 0 {
		t.Fatalf("sources after unbind: %+v %v", l, err)
	}
}

func firstSource(t *testing.T, c *client.Client, queue string) string {
	l, err := c.ListSources(t.Context(), queue)
	if err != nil || len(l) == 0 {
		t.Fatalf("sources of %s: %+v %v", queue, l, err)
	}
	return l[0].ID
}

// logRoutes publishes to the topics of topicRoutes and reads the log and the keyed state.
func logRoutes(t *testing.T, c *client.Client) {
	ctx := t.Context()
	r, err := c.PublishBatch(ctx, "prices", []client.PublishMessage{
		{Body: "eu-1", Attributes: map[string]string{"region": "eu"}},
		{Body: "bad", GroupID: "g"}, // a group on a standard topic fails this message alone
		{Body: `{"bid":1}`, Attributes: map[string]string{"region": "us"}, Key: "AAPL"},
		{Body: `{"ask":2}`, Key: "AAPL", Merge: client.MergePatch},
		{Key: "GONE", Delete: true},
	})
	if err != nil || len(r.Messages) != 4 || len(r.Failed) != 1 || r.Failed[0].Index != 1 {
		t.Fatalf("publish: %+v %v", r, err)
	}
	mustCode(t, r.Failed[0].Err, client.CodeInvalidArgument, 400, "messages[1].groupId")
	for i, m := range r.Messages {
		if m.Sequence != uint64(i+1) || m.MessageID == "" || m.Duplicate {
			t.Fatalf("published %d: %+v", i, m)
		}
	}
	first, err := c.Publish(ctx, "ledger.fifo", client.PublishMessage{Body: "debit", GroupID: "acct-7", DedupID: "tx-1"})
	if err != nil || first.Sequence != 1 {
		t.Fatalf("fifo publish: %+v %v", first, err)
	}
	if again, err := c.Publish(ctx, "ledger.fifo", client.PublishMessage{Body: "debit", GroupID: "acct-7", DedupID: "tx-1"}); err != nil ||
		!again.Duplicate || again.MessageID != first.MessageID || again.Sequence != 1 {
		t.Fatalf("fifo duplicate: %+v %v", again, err)
	}
	_, err = c.Publish(ctx, "ledger.fifo", client.PublishMessage{Body: "no group"})
	mustCode(t, err, client.CodeInvalidArgument, 400, "messages[0].groupId")

	p, err := c.ReadLog(ctx, "prices", client.ReadLogInput{From: client.AtSequence(2), Page: client.Page{Limit: 2}})
	if err != nil || len(p.Messages) != 2 || p.Messages[0].Sequence != 2 || p.Messages[0].Key != "AAPL" || p.NextCursor == nil {
		t.Fatalf("read log: %+v %v", p, err)
	}
	if !sameJSON(t, p.Messages[1].Body, `{"ask":2,"bid":1}`) {
		t.Fatalf("a patch publish's log entry is the merged message: %q", p.Messages[1].Body)
	}
	var seqs []uint64
	for e, err := range c.LogEntries(ctx, "prices", client.ReadLogInput{Page: client.Page{Limit: 1}}) {
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, e.Sequence)
		if e.Sequence == 4 && (!e.Deleted || e.Key != "GONE") {
			t.Fatalf("a deleting entry: %+v", e)
		}
	}
	if !slices.Equal(seqs, []uint64{1, 2, 3, 4}) {
		t.Fatalf("log entries: %v", seqs)
	}
	seqs = nil
	for e, err := range c.LogEntries(ctx, "prices", client.ReadLogInput{From: client.AtSequence(2), To: client.AtSequence(3), Page: client.Page{Limit: 1}}) {
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, e.Sequence)
	}
	if !slices.Equal(seqs, []uint64{2, 3}) {
		t.Fatalf("log entries 2 to 3, a page each: %v", seqs)
	}
	if f, err := c.ReadLog(ctx, "prices", client.ReadLogInput{Filter: client.Attr("region", "eu"), To: client.AtSequence(3)}); err != nil ||
		len(f.Messages) != 1 || f.Messages[0].Sequence != 1 {
		t.Fatalf("filtered log: %+v %v", f, err)
	}
	if f, err := c.ReadLog(ctx, "prices", client.ReadLogInput{From: client.AtTime(time.Now().Add(time.Hour))}); err != nil || len(f.Messages) != 0 {
		t.Fatalf("log from a future time: %+v %v", f, err)
	}
	if s, err := c.State(ctx, "prices", "AAPL"); err != nil || !sameJSON(t, s.Body, `{"ask":2,"bid":1}`) || s.Sequence != 3 || s.Attributes == nil {
		t.Fatalf("state: %+v %v", s, err)
	}
	if _, err := c.State(ctx, "prices", "GONE"); !client.IsNotFound(err) {
		t.Fatalf("state of a deleted key: %v", err)
	}
	if sp, err := c.ListState(ctx, "prices", client.Page{Limit: 10}); err != nil || len(sp.State) != 1 || sp.NextCursor != nil {
		t.Fatalf("list state: %+v %v", sp, err)
	}
	n := 0
	for s, err := range c.AllState(ctx, "prices") {
		if err != nil || s.Key != "AAPL" {
			t.Fatalf("all state: %+v %v", s, err)
		}
		n++
	}
	if n != 1 {
		t.Fatalf("all state: %d keys, want 1", n)
	}
	if tp, err := c.GetTopic(ctx, "prices"); err != nil || tp.LastSequence != 4 || tp.FirstSequence != 1 || tp.StoredBytes <= 0 {
		t.Fatalf("topic after publishes: %+v %v", tp, err)
	}
}

// receiveN receives from queue until it holds n messages, each receive long-polling (the
// copies arrive by the fan-out, which a publish wakes), and fails after a minute.
func receiveN(t *testing.T, c *client.Client, queue string, n int) []client.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var got []client.Message
	for len(got) < n {
		ms, err := c.Receive(ctx, queue, client.ReceiveInput{MaxMessages: 10, WaitSeconds: client.Int(5)})
		if err != nil {
			t.Fatalf("receive from %s after %d of %d: %v", queue, len(got), n, err)
		}
		got = append(got, ms...)
	}
	return got
}

// A publish reaches every bound queue its binding's filter selects, once, with the published
// message id; a fifo topic keeps per-group order into a fifo queue; the bindings count what
// they copied.
func TestTopicFanOut(t *testing.T) {
	ctx := t.Context()
	tn := newTenant(t, checked(openapicheck.NewChecker(t, srv.URL)))
	c := tn.c
	if _, err := c.CreateTopic(ctx, client.CreateTopicInput{Name: "orders"}); err != nil {
		t.Fatal(err)
	}
	tn.queue(t, client.CreateQueueInput{Name: "eu"})
	tn.queue(t, client.CreateQueueInput{Name: "all"})
	if _, err := c.Bind(ctx, "eu", client.BindInput{Topic: "orders", Filter: client.Attr("region", "eu")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Bind(ctx, "all", client.BindInput{Topic: "orders"}); err != nil {
		t.Fatal(err)
	}
	r, err := c.PublishBatch(ctx, "orders", []client.PublishMessage{
		{Body: "o1", Attributes: map[string]string{"region": "eu"}},
		{Body: "o2", Attributes: map[string]string{"region": "us"}},
		{Body: "o3", Attributes: map[string]string{"region": "eu"}},
	})
	if err != nil || r.Err() != nil {
		t.Fatalf("publish: %+v %v", r, err)
	}
	ids := map[string]string{}
	for i, m := range r.Messages {
		ids[[]string{"o1", "o2", "o3"}[i]] = m.MessageID
	}
	for queue, want := range map[string][]string{"eu": {"o1", "o3"}, "all": {"o1", "o2", "o3"}} {
		got := receiveN(t, c, queue, len(want))
		var bodies []string
		for _, m := range got {
			bodies = append(bodies, m.Body)
			if m.MessageID != ids[m.Body] {
				t.Fatalf("%s: copy of %s has id %s, published %s", queue, m.Body, m.MessageID, ids[m.Body])
			}
		}
		slices.Sort(bodies)
		if !slices.Equal(bodies, want) {
			t.Fatalf("%s received %v, want %v", queue, bodies, want)
		}
		if more, err := c.Receive(ctx, queue, client.ReceiveInput{WaitSeconds: client.Int(0)}); err != nil || len(more) != 0 {
			t.Fatalf("%s: a copy too many: %+v %v", queue, more, err)
		}
	}
	bs, err := c.TopicBindings(ctx, "orders")
	if err != nil || len(bs) != 2 {
		t.Fatalf("bindings: %+v %v", bs, err)
	}
	for _, b := range bs {
		if want := map[string]int64{"eu": 2, "all": 3}[b.Queue]; b.Copied != want {
			t.Fatalf("binding of %s copied %d, want %d (%+v)", b.Queue, b.Copied, want, b)
		}
	}
	fifoFanOut(t, c)
}

// fifoFanOut: a fifo topic's copies keep per-group order in a fifo queue.
func fifoFanOut(t *testing.T, c *client.Client) {
	ctx := t.Context()
	if _, err := c.CreateTopic(ctx, client.CreateTopicInput{Name: "ledger.fifo", Type: client.FIFO}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateQueue(ctx, client.CreateQueueInput{Name: "ledger.fifo", Type: client.FIFO}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Bind(ctx, "ledger.fifo", client.BindInput{Topic: "ledger.fifo"}); err != nil {
		t.Fatal(err)
	}
	var msgs []client.PublishMessage
	for i := range 10 {
		msgs = append(msgs, client.PublishMessage{Body: string(rune('a' + i)), GroupID: "acct"})
	}
	if r, err := c.PublishBatch(ctx, "ledger.fifo", msgs); err != nil || r.Err() != nil {
		t.Fatalf("fifo publish: %+v %v", r, err)
	}
	var order string
	for len(order) < 10 {
		got := receiveN(t, c, "ledger.fifo", 1)
		for _, m := range got {
			order += m.Body
			if err := c.Ack(ctx, m.ReceiptHandle); err != nil {
				t.Fatal(err)
			}
		}
	}
	if order != "abcdefghij" {
		t.Fatalf("fifo copies in order %q", order)
	}
}
