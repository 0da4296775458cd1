package sdkgo

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/queueshq/queues/pkg/openapicheck"
	"github.com/queueshq/queues/sdk/go/client"
)

// pageCounter counts the GET requests of each path it carries (to chk, which checks them
// against openapi.yaml), so a test sees how many pages an iterator read.
type pageCounter struct {
	next http.RoundTripper
	mu   sync.Mutex
	gets map[string]int
}

func (p *pageCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet {
		p.mu.Lock()
		p.gets[r.URL.Path]++
		p.mu.Unlock()
	}
	return p.next.RoundTrip(r)
}

func (p *pageCounter) pages(path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.gets[path]
	delete(p.gets, path)
	return n
}

// collect takes every item of seq, failing the test at an error.
func collect[T any](t *testing.T, seq iter.Seq2[T, error]) []T {
	t.Helper()
	var out []T
	for v, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// Every paginated list's iterator reads page after page (limit 2 here, so 3 items or more
// take two pages or more) and yields each item once; the one-page lists (bindings, sources)
// iterate too.
func TestIterators(t *testing.T) {
	ctx := t.Context()
	pc := &pageCounter{next: openapicheck.NewChecker(t, srv.URL), gets: map[string]int{}}
	tn := newTenant(t, client.WithHTTPClient(&http.Client{Transport: pc}))
	c, two := tn.c, client.Page{Limit: 2}
	// check asserts what an iteration yielded (by key) and that it took want pages of path.
	check := func(what string, got []string, want []string, path string, pages int) {
		t.Helper()
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: iterated %v, want %v", what, got, want)
		}
		if n := pc.pages(path); n != pages {
			t.Fatalf("%s: %d pages of %s read, want %d", what, n, path, pages)
		}
	}

	var ids []string
	for i := range 3 {
		p, err := tn.op.CreateProject(ctx, fmt.Sprintf("iter %d", i))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.ID)
	}
	var seen []string
	for p, err := range tn.op.AllProjects(ctx, two) {
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(ids, p.ID) || p.ID == tn.project {
			seen = append(seen, p.ID)
		}
	}
	// Other tests' projects are listed too: at least this tenant's 4, so 2 pages or more.
	if n := pc.pages("/v1/projects"); n < 2 {
		t.Fatalf("projects: %d pages read, want 2 or more", n)
	}
	check("projects", seen, append(ids, tn.project), "/v1/projects", 0)

	tn.queue(t, client.CreateQueueInput{Name: "fifo", Type: client.FIFO, ContentBasedDedup: true})
	for _, g := range []string{"g1", "g2", "g3"} {
		if _, err := c.Send(ctx, "fifo", client.SendMessage{Body: g, GroupID: g}); err != nil {
			t.Fatal(err)
		}
	}
	var groups []string
	for _, g := range collect(t, c.AllGroups(ctx, "fifo", two)) {
		groups = append(groups, g.GroupID)
	}
	check("groups", groups, []string{"g1", "g2", "g3"}, "/v1/queues/fifo/groups", 2)

	dlq := tn.queue(t, client.CreateQueueInput{Name: "iter-dlq"})
	tn.queue(t, client.CreateQueueInput{Name: "iter", Redrive: &client.Redrive{DeadLetterQueue: dlq.ID, MaxReceiveCount: 5}})
	bodies := tn.send(t, "iter", "a", "b", "c", "d", "e")
	var browsed []string
	for _, m := range collect(t, c.BrowseAll(ctx, "iter", client.BrowseInput{Page: two})) {
		browsed = append(browsed, m.MessageID)
	}
	check("browse", browsed, bodies, "/v1/queues/iter/messages", 3)

	var consumers []string
	for _, id := range []string{"w-1", "w-2", "w-3"} {
		if _, err := c.Receive(ctx, "iter", client.ReceiveInput{WaitSeconds: client.Int(0), ConsumerID: id}); err != nil {
			t.Fatal(err)
		}
	}
	for _, cs := range collect(t, c.AllConsumers(ctx, "iter", two)) {
		consumers = append(consumers, cs.ConsumerID)
	}
	check("consumers", consumers, []string{"w-1", "w-2", "w-3"}, "/v1/queues/iter/consumers", 2)

	// Three move tasks, one after the other (a queue runs one at a time); a dry run within
	// one batch is not stored, so each moves a message.
	var tasks, started []string
	for i := range 3 {
		tn.send(t, "iter-dlq", fmt.Sprint("dead ", i))
		mt, err := c.StartMoveTask(ctx, "iter-dlq", client.StartMoveTaskInput{Destination: "iter", MaxMessagesPerSecond: client.Int(10000)})
		for err == nil && mt.Status == "running" {
			mt, err = c.GetMoveTask(ctx, "iter-dlq", mt.ID)
		}
		if err != nil || mt.Status != "completed" {
			t.Fatalf("move task: %+v %v", mt, err)
		}
		started = append(started, mt.ID)
	}
	for _, mt := range collect(t, c.AllMoveTasks(ctx, "iter-dlq", two)) {
		tasks = append(tasks, mt.ID)
	}
	check("move tasks", tasks, started, "/v1/queues/iter-dlq/move-tasks", 2)

	iteratePublished(t, c, pc, check)
	iterateAttempts(t, tn, pc, check)
}

// iteratePublished: a topic's replays (three dry runs), its bindings and a queue's sources.
func iteratePublished(t *testing.T, c *client.Client, pc *pageCounter, check func(string, []string, []string, string, int)) {
	t.Helper()
	ctx := t.Context()
	if _, err := c.CreateTopic(ctx, client.CreateTopicInput{Name: "iter-topic"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Publish(ctx, "iter-topic", client.PublishMessage{Body: "one"}); err != nil {
		t.Fatal(err)
	}
	// Three replays, one after the other (a queue takes one at a time); a dry run within one
	// read is not stored, so each copies the message.
	var replays, started []string
	for range 3 {
		r, err := c.StartReplay(ctx, "iter-topic", client.StartReplayInput{Queue: "iter", From: 1, MaxMessagesPerSecond: client.Int(10000)})
		for err == nil && r.Status == "running" {
			r, err = c.GetReplay(ctx, "iter-topic", r.ID)
		}
		if err != nil || r.Status != "completed" {
			t.Fatalf("replay: %+v %v", r, err)
		}
		started = append(started, r.ID)
	}
	for _, r := range collect(t, c.AllReplays(ctx, "iter-topic", client.Page{Limit: 2})) {
		replays = append(replays, r.ID)
	}
	check("replays", replays, started, "/v1/topics/iter-topic/replays", 2)

	b, err := c.Bind(ctx, "iter", client.BindInput{Topic: "iter-topic"})
	if err != nil {
		t.Fatal(err)
	}
	var bound []string
	for _, x := range collect(t, c.AllBindings(ctx, "iter-topic")) {
		bound = append(bound, x.ID)
	}
	check("bindings", bound, []string{b.ID}, "/v1/topics/iter-topic/bindings", 1)
	bound = bound[:0]
	for _, x := range collect(t, c.AllSources(ctx, "iter")) {
		bound = append(bound, x.ID)
	}
	check("sources", bound, []string{b.ID}, "/v1/queues/iter/sources", 1)
}

// iterateAttempts: a subscription's push attempts, one message a push to an endpoint that
// answers 200.
func iterateAttempts(t *testing.T, tn *tenant, pc *pageCounter, check func(string, []string, []string, string, int)) {
	t.Helper()
	ctx := t.Context()
	pushed := make(chan string, 3)
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pushed <- r.Header.Get(client.HeaderWebhookID)
	}))
	defer endpoint.Close()
	c := subscriptionClient(t, tn, tn.c)
	tn.queue(t, client.CreateQueueInput{Name: "iter-pushed"})
	if _, err := c.CreateSubscription(ctx, "iter-pushed", client.SubscriptionInput{Endpoint: endpoint.URL, BatchSize: client.Int(1)}); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, body := range []string{"p1", "p2", "p3"} {
		tn.send(t, "iter-pushed", body) // one at a time: each its own push
		want = append(want, await(t, pushed, 20*time.Second, "a push"))
	}
	// The attempt is recorded once the pusher has read the answer: no event to wait on.
	waitFor(t, func() bool {
		p, err := c.ListAttempts(ctx, "iter-pushed", 100)
		return err == nil && len(p.Attempts) >= 3
	}, "three push attempts to be recorded")
	pc.pages("/v1/queues/iter-pushed/subscription/attempts")
	var got []string
	for _, a := range collect(t, c.AllAttempts(ctx, "iter-pushed", client.Page{Limit: 2})) {
		got = append(got, a.AttemptID)
	}
	check("attempts", got, want, "/v1/queues/iter-pushed/subscription/attempts", 2)
}

// Breaking out of an iterator's loop reads no further page, and so does stopping a pulled
// iterator; an error ends the iteration, yielded once with the zero item.
func TestIteratorStopsEarly(t *testing.T) {
	ctx := t.Context()
	pc := &pageCounter{next: http.DefaultTransport, gets: map[string]int{}}
	tn := newTenant(t, client.WithHTTPClient(&http.Client{Transport: pc}))
	c := tn.c
	tn.queue(t, client.CreateQueueInput{Name: "early"})
	tn.send(t, "early", "a", "b", "c", "d", "e")
	path := "/v1/queues/early/messages"

	n := 0
	for m, err := range c.BrowseAll(ctx, "early", client.BrowseInput{Page: client.Page{Limit: 2}}) {
		if err != nil || m.MessageID == "" {
			t.Fatal(m, err)
		}
		if n++; n == 3 { // the first item of the second page
			break
		}
	}
	if got := pc.pages(path); got != 2 {
		t.Fatalf("break after 3 of 5 items at 2 a page: %d pages read, want 2", got)
	}

	next, stop := iter.Pull2(c.BrowseAll(ctx, "early", client.BrowseInput{Page: client.Page{Limit: 2}}))
	if _, err, ok := next(); !ok || err != nil {
		t.Fatal(ok, err)
	}
	stop()
	if _, _, ok := next(); ok {
		t.Fatal("a stopped iterator yielded")
	}
	if got := pc.pages(path); got != 1 {
		t.Fatalf("pull one item, stop: %d pages read, want 1", got)
	}

	var errs []error
	for m, err := range c.AllGroups(ctx, "missing", client.Page{}) {
		if m.GroupID != "" {
			t.Fatalf("an error yielded with %+v", m)
		}
		errs = append(errs, err)
	}
	if len(errs) != 1 || !client.IsNotFound(errs[0]) {
		t.Fatalf("iterating a missing queue's groups: %v", errs)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	errs = errs[:0]
	for _, err := range c.AllProjects(cctx, client.Page{}) {
		errs = append(errs, err)
	}
	if len(errs) != 1 || !strings.Contains(fmt.Sprint(errs[0]), "context canceled") {
		t.Fatalf("iterating with a cancelled context: %v", errs)
	}
}

// iterators is the Go iterator of each operation of openapi.yaml whose answer pages with
// nextCursor.
var iterators = map[string]string{
	"listProjects": "AllProjects", "listQueues": "AllQueues", "browseMessages": "BrowseAll",
	"listGroups": "AllGroups", "listConsumers": "AllConsumers", "listMoveTasks": "AllMoveTasks",
	"listSubscriptionAttempts": "AllAttempts", "listTopics": "AllTopics", "readTopicLog": "LogEntries",
	"getTopicState": "AllState", "listReplays": "AllReplays", "listTopicBindings": "AllBindings",
	"listSources": "AllSources",
}

// Every GET of openapi.yaml answering a nextCursor has an iterator in the SDK (a new list
// route without one fails here).
func TestEveryListHasAnIterator(t *testing.T) {
	doc := openapicheck.LoadSpec(t)
	ct := reflect.TypeFor[*client.Client]()
	found := 0
	for _, path := range doc.Paths.InMatchingOrder() {
		op := doc.Paths.Value(path).Get
		if op == nil || !pagesWithCursor(op) {
			continue
		}
		found++
		name, ok := iterators[op.OperationID]
		if !ok {
			t.Errorf("GET %s (%s) answers a nextCursor and has no iterator in the Go SDK", path, op.OperationID)
			continue
		}
		m, ok := ct.MethodByName(name)
		if !ok || m.Type.NumOut() != 1 || !strings.HasPrefix(m.Type.Out(0).String(), "iter.Seq2[") {
			t.Errorf("%s: (*client.Client).%s is not an iterator", op.OperationID, name)
		}
	}
	if found != len(iterators) {
		t.Errorf("%d paginated GETs in openapi.yaml, %d iterators listed", found, len(iterators))
	}
}

// pagesWithCursor: the operation's 200 answer (or one of its alternatives) has nextCursor.
func pagesWithCursor(op *openapi3.Operation) bool {
	r := op.Responses.Value("200")
	if r == nil || r.Value == nil || r.Value.Content["application/json"] == nil {
		return false
	}
	s := r.Value.Content["application/json"].Schema
	schemas := openapi3.SchemaRefs{s}
	if s != nil && s.Value != nil {
		schemas = append(schemas, s.Value.OneOf...)
		schemas = append(schemas, s.Value.AnyOf...)
	}
	for _, s := range schemas {
		if s != nil && s.Value != nil && s.Value.Properties["nextCursor"] != nil {
			return true
		}
	}
	return false
}
