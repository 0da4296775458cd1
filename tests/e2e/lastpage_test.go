package e2e

import (
	"net/url"
	"testing"
)

// pageSizes pages through path (which has a query with limit) from its first page and returns
// the page sizes; every page is checked against openapi.yaml by the client.
func pageSizes(t *testing.T, c *client, path, key string) []int {
	t.Helper()
	var sizes []int
	cursor := ""
	for len(sizes) < 1000 {
		p := path
		if cursor != "" {
			p += "&cursor=" + url.QueryEscape(cursor)
		}
		r := c.do("GET", p, nil).must(t, 200)
		sizes = append(sizes, len(r.list(key)))
		if r.body["nextCursor"] == nil {
			return sizes
		}
		cursor = r.str("nextCursor")
	}
	t.Fatalf("%s: no end", path)
	return nil
}

// TestLastPageHasNoCursor: a page that ends a list answers "nextCursor": null even when it is
// full — queues, messages in every state, groups and projects (attempts: TestPushEndToEnd).
func TestLastPageHasNoCursor(t *testing.T) {
	tn := newTenant(t)
	tn.queue(t, "pages-a", nil)
	tn.queue(t, "pages-b", map[string]any{"delaySeconds": 900})
	tn.queue(t, "pages-f", map[string]any{"type": "fifo"})
	want := func(what string, got []int, sizes ...int) {
		t.Helper()
		if len(got) != len(sizes) {
			t.Fatalf("%s: pages %v, want %v", what, got, sizes)
		}
		for i := range got {
			if got[i] != sizes[i] {
				t.Fatalf("%s: pages %v, want %v", what, got, sizes)
			}
		}
	}
	want("queues limit 1", pageSizes(t, tn.a, "/v1/queues?prefix=pages-&limit=1", "queues"), 1, 1, 1)
	want("queues limit 3", pageSizes(t, tn.a, "/v1/queues?prefix=pages-&limit=3", "queues"), 3)

	tn.a.send(t, "pages-a", "one", "two", "three", "four")
	if got := tn.a.receive(t, "pages-a", map[string]any{"maxMessages": 2, "visibilityTimeoutSeconds": 600}); len(got) != 2 {
		t.Fatalf("received %d, want 2", len(got))
	}
	tn.a.send(t, "pages-b", "late-1", "late-2")
	for _, tc := range []struct{ queue, state string }{{"pages-a", "visible"}, {"pages-a", "inFlight"}, {"pages-b", "delayed"}} {
		want(tc.queue+" "+tc.state+" limit 1", pageSizes(t, tn.a, "/v1/queues/"+tc.queue+"/messages?state="+tc.state+"&limit=1", "messages"), 1, 1)
		want(tc.queue+" "+tc.state+" limit 2", pageSizes(t, tn.a, "/v1/queues/"+tc.queue+"/messages?state="+tc.state+"&limit=2", "messages"), 2)
	}

	tn.a.sendFIFO(t, "pages-f", msg("x", "g1"), msg("y", "g2"))
	want("groups limit 1", pageSizes(t, tn.a, "/v1/queues/pages-f/groups?limit=1", "groups"), 1, 1)
	want("groups limit 2", pageSizes(t, tn.a, "/v1/queues/pages-f/groups?limit=2", "groups"), 2)

	// Projects: other tests add projects meanwhile, so only the shape is pinned: with limit
	// 1 every page is full and the last one (not an empty page after it) has no cursor.
	for i, n := range pageSizes(t, tn.op, "/v1/projects?limit=1", "projects") {
		if n != 1 {
			t.Fatalf("projects limit 1: page %d has %d projects", i, n)
		}
	}
}
