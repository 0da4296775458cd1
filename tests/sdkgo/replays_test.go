package sdkgo

import (
	"testing"
	"time"

	"github.com/queueshq/queues/sdk/go/client"
)

// replayRoutes replays a topic's log into a queue through the SDK: a dry run, a replay
// followed to its end, the queue's one running task, listing, cancelling a finished replay,
// and the copies' ReplayOf.
func replayRoutes(t *testing.T, c *client.Client) {
	ctx := t.Context()
	tp, err := c.CreateTopic(ctx, client.CreateTopicInput{Name: "replay-src"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateQueue(ctx, client.CreateQueueInput{Name: "replayed"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PublishBatch(ctx, "replay-src", []client.PublishMessage{
		{Body: "one", Attributes: map[string]string{"region": "eu"}}, {Body: "two"}, {Body: "three"},
	}); err != nil {
		t.Fatal(err)
	}
	dry, err := c.StartReplay(ctx, "replay-src", client.StartReplayInput{Queue: "replayed", From: 1, DryRun: true, Filter: client.Attr("region", "eu")})
	if err != nil || dry.Status != "completed" || dry.ToMove != 1 || dry.Moved != 0 || !dry.DryRun || dry.Filter == nil {
		t.Fatalf("dry run: %+v %v", dry, err)
	}
	r, err := c.StartReplay(ctx, "replay-src", client.StartReplayInput{Queue: "replayed", From: "1", To: 2, MaxMessagesPerSecond: client.Int(100)})
	if err != nil || r.From != 1 || r.To != 2 || r.TopicID != tp.ID || r.Queue == nil || *r.Queue != "replayed" {
		t.Fatalf("start replay: %+v %v", r, err)
	}
	if r.Status == "running" {
		// A dry run: when the first has ended meanwhile, this one starts and copies nothing.
		_, err = c.StartReplay(ctx, "replay-src", client.StartReplayInput{Queue: "replayed", From: 1, DryRun: true})
		if err != nil { // the first may have ended meanwhile
			mustCode(t, err, client.CodeMoveTaskRunning, 409, "")
		}
	}
	for deadline := time.Now().Add(30 * time.Second); r.Status == "running"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("replay still running: %+v", r)
		}
		if r, err = c.GetReplay(ctx, "replay-src", r.ID); err != nil {
			t.Fatal(err)
		}
	}
	if r.Status != "completed" || r.Moved != 2 || r.ToMove != 2 || r.FinishedAt == nil {
		t.Fatalf("replay ended: %+v", r)
	}
	if again, err := c.CancelReplay(ctx, "replay-src", r.ID); err != nil || again.Status != "completed" {
		t.Fatalf("cancel a finished replay: %+v %v", again, err)
	}
	p, err := c.ListReplays(ctx, "replay-src", client.Page{Limit: 1})
	if err != nil || len(p.Replays) != 1 {
		t.Fatalf("list replays: %+v %v", p, err)
	}
	ms, err := c.Receive(ctx, "replayed", client.ReceiveInput{MaxMessages: 10})
	if err != nil {
		t.Fatal(err)
	}
	seqs := map[uint64]bool{}
	for _, m := range ms {
		if m.ReplayOf == nil || m.ReplayOf.Topic != tp.ID {
			t.Fatalf("replayed message: %+v", m)
		}
		seqs[m.ReplayOf.Sequence] = true
	}
	if len(ms) != 2 || !seqs[1] || !seqs[2] {
		t.Fatalf("received %d replayed messages of sequences %v, want 1 and 2", len(ms), seqs)
	}
}
