package e2e

import (
	"slices"
	"sort"
	"testing"
)

// TestFilteredReceiveAndBrowse: over /v1, a receive's filter takes only matching messages
// and leaves the others visible and uncounted; browse takes the filter as
// attribute.<name>=<value> parameters, a repeated name listing values; bad filters are 400s
// naming the field.
func TestFilteredReceiveAndBrowse(t *testing.T) {
	tn := newTenant(t)
	a, b := tn.a, tn.b
	tn.queue(t, "sorted", nil)
	msg := func(body, color, size string) map[string]any {
		return map[string]any{"body": body, "attributes": map[string]string{"color": color, "size": size}}
	}
	a.do("POST", "/v1/queues/sorted/messages", map[string]any{"messages": []any{
		msg("red-s", "red", "s"), msg("blue-l", "blue", "l"), msg("green-s", "green", "s"), msg("red-l", "red", "l"),
		map[string]any{"body": "plain"},
	}}).must(t, 200)

	bodiesOf := func(ms []map[string]any) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m["body"].(string))
		}
		sort.Strings(out)
		return out
	}
	browse := func(c *client, query string) []string {
		t.Helper()
		return bodiesOf(c.do("GET", "/v1/queues/sorted/messages?"+query, nil).must(t, 200).list("messages"))
	}
	if got := browse(b, "attribute.color=red"); !slices.Equal(got, []string{"red-l", "red-s"}) {
		t.Fatalf("browse color=red: %q", got)
	}
	if got := browse(a, "attribute.color=red&attribute.color=blue&attribute.size=l"); !slices.Equal(got, []string{"blue-l", "red-l"}) {
		t.Fatalf("browse color=red|blue, size=l: %q", got)
	}
	page := a.do("GET", "/v1/queues/sorted/messages?limit=1&attribute.size=s", nil).must(t, 200)
	next := b.do("GET", "/v1/queues/sorted/messages?limit=1&attribute.size=s&cursor="+page.str("nextCursor"), nil).must(t, 200)
	if got := append(bodiesOf(page.list("messages")), bodiesOf(next.list("messages"))...); !slices.Equal(got, []string{"red-s", "green-s"}) ||
		next.body["nextCursor"] != nil {
		t.Fatalf("pages of size=s: %q, last cursor %v", got, next.body["nextCursor"])
	}

	got := a.receive(t, "sorted", map[string]any{"maxMessages": 10, "waitSeconds": 0,
		"filter": map[string]any{"attributes": map[string]any{"color": []string{"red", "green"}, "size": "s"}}})
	if bodies := bodiesOf(got); !slices.Equal(bodies, []string{"green-s", "red-s"}) {
		t.Fatalf("filtered receive: %q", bodies)
	}
	if got := b.receive(t, "sorted", map[string]any{"waitSeconds": 0, "filter": map[string]any{"attributes": map[string]any{"color": "purple"}}}); len(got) != 0 {
		t.Fatalf("a receive for purple took %v", got)
	}
	if c := a.counts(t, "sorted"); c["visible"] != 3.0 || c["inFlight"] != 2.0 {
		t.Fatalf("counts after filtered receives: %v", c)
	}
	rest := b.receive(t, "sorted", map[string]any{"maxMessages": 10, "waitSeconds": 0, "filter": nil})
	for _, m := range rest {
		if m["receiveCount"] != 1.0 {
			t.Fatalf("%v was counted by a filtered receive that passed it over", m)
		}
	}
	if bodies := bodiesOf(rest); !slices.Equal(bodies, []string{"blue-l", "plain", "red-l"}) {
		t.Fatalf("the rest: %q", bodies)
	}

	for body, field := range map[string]string{
		`{"filter":{"attributes":{"color":["red",5]}}}`: "filter.attributes.color[1]",
		`{"filter":{"attributes":{"color":[]}}}`:        "filter.attributes.color",
		`{"filter":{"attrs":{}}}`:                       "filter.attrs",
		`{"filter":"color=red"}`:                        "filter",
		`{"filter":{"attributes":{"bad name":"x"}}}`:    "filter.attributes",
	} {
		a.doCT("POST", "/v1/queues/sorted/receive", body, "application/json").fails(t, 400, "invalid_argument", field)
	}
	for query, field := range map[string]string{
		"attribute.color=red&attribute.color=%ff": "attribute.color[1]",
		"attribute.bad%20name=x":                  "attribute.bad name",
		"attribute.=x":                            "attribute.",
	} {
		a.do("GET", "/v1/queues/sorted/messages?"+query, nil).fails(t, 400, "invalid_argument", field)
	}
}
