package sdkgo

import (
	"strings"
	"testing"

	"github.com/queueshq/queues/sdk/go/client"
)

// TestStreamLargeFrames: a receive stream hands out a batch of 1 MiB messages whose bodies
// escape to six times their size in JSON ('<' is written \u003c): three of them are an 18 MiB
// frame, which the client reads whole.
func TestStreamLargeFrames(t *testing.T) {
	ctx := t.Context()
	c := newTenant(t).c
	if _, err := c.CreateQueue(ctx, client.CreateQueueInput{Name: "big", MaxMessageBytes: client.Int(1 << 20)}); err != nil {
		t.Fatal(err)
	}
	body := strings.Repeat("<", 1<<20)
	for range 3 {
		if _, err := c.Send(ctx, "big", client.SendMessage{Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := c.Stream(ctx, "big", client.StreamOptions{MaxMessages: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Credit(ctx, 10); err != nil {
		t.Fatal(err)
	}
	got := 0
	for got < 3 {
		msgs, err := st.Next(ctx)
		if err != nil {
			t.Fatalf("after %d messages: %v", got, err)
		}
		for _, m := range msgs {
			if m.Body != body {
				t.Fatalf("a body of %d bytes, want 1 MiB", len(m.Body))
			}
		}
		got += len(msgs)
	}
}
