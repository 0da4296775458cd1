package e2e

import (
	"strings"
	"testing"

	"github.com/queueshq/queues/pkg/ids"
)

// TestUUIDShapedQueueNames: a queue name may look like a UUID (docs/api-tour.md). A UUID-shaped
// {queue} is tried as an id and then as a name, so a queue named with another queue's id is
// reached by its own id or slug, while the id finds the other queue; the name lookup stays
// case-sensitive while the id lookup takes any case.
func TestUUIDShapedQueueNames(t *testing.T) {
	tn := newTenant(t)
	c := tn.a
	name := ids.New().String()
	q := tn.queue(t, name, nil)
	if q.str("name") != name {
		t.Fatalf("created %s", q.raw)
	}
	// By name (through the other replica), by id, by slug: the same queue.
	for _, ref := range []string{name, q.str("id"), q.str("slug")} {
		if got := tn.b.do("GET", "/v1/queues/"+ref, nil).must(t, 200); got.str("id") != q.str("id") {
			t.Fatalf("GET %s answered %s", ref, got.raw)
		}
	}
	c.do("GET", "/v1/queues/"+strings.ToUpper(name), nil).fails(t, 404, "not_found", "")
	sent, _ := c.sendFIFO(t, name, map[string]any{"body": "hello"})
	if got := tn.b.receive(t, name, nil); len(got) != 1 || got[0]["messageId"] != sent[0]["messageId"] {
		t.Fatalf("received %v", got)
	}
	if l := c.do("GET", "/v1/queues?prefix="+name[:8], nil).must(t, 200).list("queues"); len(l) != 1 || l[0]["name"] != name {
		t.Fatalf("listed %v", l)
	}

	// A queue named with another queue's id: the id wins, in any case; the named queue is
	// reached by its own id and slug.
	other := tn.queue(t, "other", nil)
	twin := tn.queue(t, other.str("id"), nil)
	for _, ref := range []string{other.str("id"), strings.ToUpper(other.str("id"))} {
		if got := c.do("GET", "/v1/queues/"+ref, nil).must(t, 200); got.str("name") != "other" {
			t.Fatalf("GET %s answered %s, want the queue whose id it is", ref, got.raw)
		}
	}
	for _, ref := range []string{twin.str("id"), twin.str("slug")} {
		if got := c.do("GET", "/v1/queues/"+ref, nil).must(t, 200); got.str("name") != other.str("id") {
			t.Fatalf("GET %s answered %s", ref, got.raw)
		}
	}
	c.do("POST", "/v1/queues", map[string]any{"name": name}).fails(t, 409, "queue_exists", "name")
	c.do("POST", "/v1/queues", map[string]any{"name": "que_" + name[:8]}).fails(t, 400, "invalid_argument", "name")
	c.do("DELETE", "/v1/queues/"+name, nil).must(t, 204)
	c.do("GET", "/v1/queues/"+q.str("id"), nil).fails(t, 404, "not_found", "")
}
