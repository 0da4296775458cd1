package e2e

import (
	"context"
	"testing"
	"time"

	queues "github.com/queueshq/queues/sdk/go/client"
)

// TestDeleteMessageByID: DELETE …/messages/{messageId} removes a visible or a delayed message
// (204), refuses one in flight (409 message_in_flight), and answers 404 for one that is gone.
func TestDeleteMessageByID(t *testing.T) {
	tn := newTenant(t)
	c := tn.a
	tn.queue(t, "work", nil)
	ids := c.send(t, "work", "visible", "taken")
	delayed := c.do("POST", "/v1/queues/work/messages", map[string]any{"messages": []any{
		map[string]any{"body": "later", "delaySeconds": 3600},
	}}).must(t, 200).list("messages")[0]["messageId"].(string)

	c.do("DELETE", "/v1/queues/work/messages/"+ids[0], nil).must(t, 204)
	c.do("DELETE", "/v1/queues/work/messages/"+delayed, nil).must(t, 204)
	c.do("DELETE", "/v1/queues/work/messages/"+ids[0], nil).fails(t, 404, "not_found", "")

	got := c.receive(t, "work", map[string]any{"maxMessages": 10})
	if len(got) != 1 || got[0]["messageId"] != ids[1] {
		t.Fatalf("received %v, want only %s", got, ids[1])
	}
	c.do("DELETE", "/v1/queues/work/messages/"+ids[1], nil).fails(t, 409, "message_in_flight", "")
	if counts := c.counts(t, "work"); counts["visible"] != 0.0 || counts["delayed"] != 0.0 || counts["inFlight"] != 1.0 {
		t.Fatalf("counts: %v", counts)
	}
}

// TestReceiveStream: the receive stream (GET …/stream) delivers what was sent and takes its
// acknowledgements, through the Go SDK over a checked connection.
func TestReceiveStream(t *testing.T) {
	tn := newTenant(t)
	tn.queue(t, "work", nil)
	sent := tn.a.send(t, "work", "one", "two")
	sdk, err := queues.New(tn.a.base, queues.WithToken(tn.token), queues.WithHTTPClient(tn.a.hc))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	st, err := sdk.Stream(ctx, "work", queues.StreamOptions{MaxMessages: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Credit(ctx, 10); err != nil {
		t.Fatal(err)
	}
	var handles []string
	seen := map[string]bool{}
	for len(handles) < len(sent) {
		batch, err := st.Next(ctx)
		if err != nil {
			t.Fatalf("after %d of %d messages: %v", len(handles), len(sent), err)
		}
		for _, m := range batch {
			seen[m.MessageID] = true
			handles = append(handles, m.ReceiptHandle)
		}
	}
	for _, id := range sent {
		if !seen[id] {
			t.Fatalf("message %s not streamed (got %v)", id, seen)
		}
	}
	if berrs, err := st.Ack(ctx, handles); err != nil || berrs.Err() != nil {
		t.Fatalf("ack over the stream: %v %v", berrs.Err(), err)
	}
	if counts := tn.a.counts(t, "work"); counts["visible"] != 0.0 || counts["inFlight"] != 0.0 {
		t.Fatalf("counts after the acks: %v", counts)
	}
}
