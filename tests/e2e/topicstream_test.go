package e2e

import (
	"context"
	"testing"
	"time"

	queues "github.com/queueshq/queues/sdk/go/client"
)

// TestTopicStream: the topic stream (GET /v1/topics/{topic}/stream) delivers the log from a
// bookmark, in order, through the Go SDK over a checked connection; reconnecting from the
// bookmark + 1 neither skips nor repeats.
func TestTopicStream(t *testing.T) {
	tn := newTenant(t)
	tn.a.do("POST", "/v1/topics", map[string]any{"name": "ticks"}).must(t, 201)
	pub := tn.b.do("POST", "/v1/topics/ticks/messages", map[string]any{"messages": []any{
		map[string]any{"body": "one"}, map[string]any{"body": "two"}, map[string]any{"body": "three"},
	}}).must(t, 200).list("messages")
	sdk, err := queues.New(tn.a.base, queues.WithToken(tn.token), queues.WithHTTPClient(tn.a.hc))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	first := streamEntries(ctx, t, sdk, queues.FromEarliest, 2)
	if first[0].Sequence != 1 || first[1].Sequence != 2 || first[0].MessageID != pub[0]["messageId"] {
		t.Fatalf("from earliest: %+v", first)
	}
	next := streamEntries(ctx, t, sdk, queues.AtSequence(first[1].Sequence+1), 1)
	if next[0].Sequence != 3 || next[0].Body != "three" {
		t.Fatalf("from the bookmark: %+v", next)
	}
}

// streamEntries opens a topic stream at from, takes n entries and closes it.
func streamEntries(ctx context.Context, t *testing.T, sdk *queues.Client, from queues.Position, n int) []queues.StreamEntry {
	t.Helper()
	st, err := sdk.OpenTopicStream(ctx, "ticks", queues.TopicStreamOptions{From: from})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Credit(ctx, n); err != nil {
		t.Fatal(err)
	}
	var got []queues.StreamEntry
	for len(got) < n {
		evs, err := st.Next(ctx)
		if err != nil {
			t.Fatalf("after %d of %d entries: %v", len(got), n, err)
		}
		for _, e := range evs {
			if e.Entry == nil {
				t.Fatalf("unexpected event %+v", e)
			}
			got = append(got, *e.Entry)
		}
	}
	return got
}
