package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/queueshq/queues/sdk/go/client"
)

// TestCLITopicStream: `topic stream` prints one JSON line per message from --from on, only
// those --attribute selects, keyed ones as patches with --delta, and stops at --max; a bad
// --attribute is a usage error. (On the shared Redis stack.)
func TestCLITopicStream(t *testing.T) {
	e := newCLIEnv(t)
	e.run(t, "", "topic", "create", "feed").ok(t)
	for _, m := range []client.PublishMessage{
		{Body: `{"p":1,"q":1}`, Key: "k", Attributes: map[string]string{"region": "eu"}},
		{Body: "us only", Attributes: map[string]string{"region": "us"}},
		{Body: `{"p":1,"q":2}`, Key: "k", Attributes: map[string]string{"region": "eu"}},
	} {
		if _, err := e.c.Publish(t.Context(), "feed", m); err != nil {
			t.Fatal(err)
		}
	}
	lines := func(out string) []client.StreamEntry {
		var es []client.StreamEntry
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			var en client.StreamEntry
			if err := json.Unmarshal([]byte(l), &en); err != nil {
				t.Fatalf("line %q: %v", l, err)
			}
			es = append(es, en)
		}
		return es
	}
	all := lines(e.run(t, "", "topic", "stream", "feed", "--from", "earliest", "--max", "3").ok(t).out)
	if len(all) != 3 || all[0].Sequence != 1 || all[1].Body != "us only" || all[2].Body != `{"p":1,"q":2}` || all[2].Delta {
		t.Fatalf("every message: %+v", all)
	}
	eu := lines(e.run(t, "", "topic", "stream", "feed", "--from", "1", "--attribute", "region=eu", "--delta", "--max", "2").ok(t).out)
	if len(eu) != 2 || eu[0].Body != `{"p":1,"q":1}` || eu[1].Sequence != 3 || eu[1].Body != `{"q":2}` || !eu[1].Delta || eu[1].Key != "k" {
		t.Fatalf("eu, delta: %+v", eu)
	}
	e.run(t, "", "topic", "stream", "feed", "--attribute", "region").fails(t, exitUsage, "--attribute wants NAME=VALUE")
	e.run(t, "", "topic", "stream", "feed", "--from", "99").fails(t, exitError, "from")
}
