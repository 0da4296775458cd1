package redisengine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/enginetest"
	"github.com/queueshq/queues/pkg/engine/redisengine"
	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/rediskeys"
)

// copyBatch makes a batch of the log entries, as the fan-out does.
func copyBatch(top engine.Topic, binding ids.ID, log []engine.LogEntry) engine.CopyBatch {
	b := engine.CopyBatch{Topic: top.ID, Binding: binding}
	for _, l := range log {
		dedup := l.DedupID
		if dedup == "" {
			dedup = "m-" + l.MessageID.String()
		}
		b.Messages = append(b.Messages, engine.CopyMessage{Sequence: l.Sequence, ID: l.MessageID,
			Message: engine.Message{Body: l.Body, Attributes: l.Attributes, GroupID: l.GroupID, DedupID: dedup}})
	}
	return b
}

func receiveAll(t *testing.T, e *redisengine.Engine, q engine.Queue) []engine.Received {
	t.Helper()
	var out []engine.Received
	for {
		res, err := e.Receive(context.Background(), q, engine.ReceiveRequest{Max: 10, Visibility: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) == 0 {
			return out
		}
		out = append(out, res.Messages...)
	}
}

// testCopyCrashWindow: Copy applied, AdvanceBindings never called (a crash), and a Copy of
// an overlapping batch, by another replica, stores nothing twice; every copy keeps the
// published message id. Unbind then forgets the mark: the same batch, acknowledged, is copied again.
func testCopyCrashWindow(t *testing.T, env topicEnv) {
	ctx := context.Background()
	clk := enginetest.NewClock()
	e1, e2 := env.engine(t, clk), env.engine(t, clk)
	top := newTopic(engine.Standard)
	q := engine.Queue{ID: ids.New(), Project: top.Project, Type: engine.Standard}
	if err := e1.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		publish(t, e1, top, engine.PublishMessage{Message: engine.Message{Body: string(rune('a' + i)),
			Attributes: map[string]string{"n": string(rune('0' + i))}}})
	}
	log := mustLog(t, e1, top)
	bind := ids.New()
	errs, err := e1.Copy(ctx, q, copyBatch(top, bind, log[:3]))
	if err != nil || len(errs) != 3 || errors.Join(errs...) != nil {
		t.Fatalf("first copy: %v %v", errs, err)
	}
	// The replica crashed before AdvanceBindings; another takes the lease over and copies
	// from the topic-side cursor (0), a batch overlapping the first.
	errs, err = e2.Copy(ctx, q, copyBatch(top, bind, log[1:]))
	if err != nil || len(errs) != 4 || errors.Join(errs...) != nil {
		t.Fatalf("overlapping copy: %v %v", errs, err)
	}
	got := receiveAll(t, e2, q)
	if len(got) != 5 {
		t.Fatalf("received %d copies, want 5", len(got))
	}
	seen := map[ids.ID]bool{}
	for _, r := range got {
		seen[r.MessageID] = true
	}
	for _, l := range log {
		if !seen[l.MessageID] {
			t.Fatalf("entry %d (%s) not received under its published id", l.Sequence, l.MessageID)
		}
	}
	// Once the copies are acknowledged (a copy the queue still holds is not stored twice),
	// an unbind forgets the mark: the same batch is copied again.
	ds := make([]engine.Delivery, 0, len(got))
	for _, r := range got {
		ds = append(ds, r.Delivery)
	}
	if _, err := e2.Ack(ctx, q, ds); err != nil {
		t.Fatal(err)
	}
	if err := e1.Unbind(ctx, top, bind, q.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e1.Copy(ctx, q, copyBatch(top, bind, log[:1])); err != nil {
		t.Fatal(err)
	}
	if got := receiveAll(t, e1, q); len(got) != 1 {
		t.Fatalf("after unbind the mark is gone: received %d, want 1", len(got))
	}
	if err := e1.DeleteQueue(ctx, q.ID); err != nil {
		t.Fatal(err)
	}
	rdb := env.newClient()
	defer rdb.Close()
	if n, _ := rdb.Exists(ctx, rediskeys.TopicCopied(q.ID)).Result(); n != 0 {
		t.Fatal("DeleteQueue left the copy marks")
	}
}

func testCopyFifo(t *testing.T, env topicEnv) {
	ctx := context.Background()
	e := env.engine(t, enginetest.NewClock())
	top := newTopic(engine.FIFO)
	q := engine.Queue{ID: ids.New(), Project: top.Project, Type: engine.FIFO}
	if err := e.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	publish(t, e, top, engine.PublishMessage{Message: engine.Message{Body: "a", GroupID: "g", DedupID: "d1"}},
		engine.PublishMessage{Message: engine.Message{Body: "b", GroupID: "g"}},
		engine.PublishMessage{Message: engine.Message{Body: "c", GroupID: "h"}})
	log := mustLog(t, e, top)
	bind := ids.New()
	for range 2 { // the second is the crash window's retry: stored once
		errs, err := e.Copy(ctx, q, copyBatch(top, bind, log))
		if err != nil || errors.Join(errs...) != nil {
			t.Fatalf("copy: %v %v", errs, err)
		}
	}
	// A message of the queue's own holding dedup id d1: a copy naming it is refused.
	other, err := e.Send(ctx, q, []engine.Message{{Body: "own", GroupID: "g", DedupID: "d2"}})
	if err != nil || other[0].Err != nil {
		t.Fatal(err)
	}
	clash := copyBatch(top, bind, log[:1])
	clash.Messages[0].Message.DedupID = "d2"
	clash.Messages[0].ID = ids.New()
	errs, err := e.Copy(ctx, q, clash)
	if err != nil || len(errs) != 1 || errs[0] == nil {
		t.Fatalf("a copy whose dedup id another message holds: %v %v", errs, err)
	}
	got := receiveAll(t, e, q)
	byID := map[ids.ID]engine.Received{}
	for _, r := range got {
		byID[r.MessageID] = r
	}
	if len(got) != 4 || len(byID) != 4 {
		t.Fatalf("received %d messages (%d ids), want 4", len(got), len(byID))
	}
	for _, l := range log {
		if r, ok := byID[l.MessageID]; !ok || r.GroupID != l.GroupID || r.Body != l.Body {
			t.Fatalf("entry %d: received %+v", l.Sequence, r)
		}
	}
}

func testTopicQuota(t *testing.T, env topicEnv) {
	ctx := context.Background()
	e := env.engine(t, enginetest.NewClock())
	top := newTopic(engine.Standard)
	top.MaxStoredBytes = 10
	publish(t, e, top, pm("12345"))
	_, err := e.Publish(ctx, top, []engine.PublishMessage{pm("1"), pm("123456")})
	if !errors.Is(err, engine.ErrStoredBytesExceeded) {
		t.Fatalf("a publish past maxStoredBytes: %v", err)
	}
	if b, _ := e.Bounds(ctx, top); b.Last != 1 || b.Bytes != 5 {
		t.Fatalf("a refused publish changed the log: %+v", b)
	}
	// Copies count against the same project: of 3 + 3 bytes, the first fits.
	q := engine.Queue{ID: ids.New(), Project: top.Project, MaxStoredBytes: 10, Type: engine.Standard}
	if err := e.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	b := engine.CopyBatch{Topic: top.ID, Binding: ids.New(), Messages: []engine.CopyMessage{
		{Sequence: 1, ID: ids.New(), Message: engine.Message{Body: "abc"}},
		{Sequence: 2, ID: ids.New(), Message: engine.Message{Body: "def"}}}}
	errs, err := e.Copy(ctx, q, b)
	if err != nil || len(errs) != 2 || errs[0] != nil || !errors.Is(errs[1], engine.ErrStoredBytesExceeded) {
		t.Fatalf("copies past the quota: %v %v", errs, err)
	}
	if n, _ := e.StoredBytes(ctx, top.Project); n != 8 {
		t.Fatalf("project bytes %d, want 8", n)
	}
}

// testTopicSlotsApart: a topic's keys and its bound queue's copy keys are in different
// Cluster slots (different hash tags), and Copy and AdvanceBindings work across them.
func testTopicSlotsApart(t *testing.T, env topicEnv) {
	if !env.cluster {
		t.Skip("slots exist on Redis Cluster only")
	}
	ctx := context.Background()
	e := env.engine(t, enginetest.NewClock())
	rdb := env.newClient().(*redis.ClusterClient)
	defer rdb.Close()
	top := newTopic(engine.Standard)
	q := engine.Queue{ID: ids.New(), Project: top.Project, Type: engine.Standard}
	ts, err := rdb.ClusterKeySlot(ctx, rediskeys.TopicLog(top.ID)).Result()
	if err != nil {
		t.Fatal(err)
	}
	qs, _ := rdb.ClusterKeySlot(ctx, rediskeys.TopicCopied(q.ID)).Result()
	ps, _ := rdb.ClusterKeySlot(ctx, rediskeys.PartitionOf(q.ID, 0).Messages).Result()
	if ts == qs || qs != ps {
		t.Fatalf("topic slot %d, copy marks %d, partition 0 %d", ts, qs, ps)
	}
	if err := e.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	publish(t, e, top, pm("x"))
	bind := engine.Binding{ID: ids.New(), Queue: q.ID}
	if err := e.Bind(ctx, top, bind); err != nil {
		t.Fatal(err)
	}
	if errs, err := e.Copy(ctx, q, copyBatch(top, bind.ID, mustLog(t, e, top))); err != nil || errs[0] != nil {
		t.Fatalf("copy: %v %v", errs, err)
	}
	if err := e.AdvanceBindings(ctx, top, []engine.Advance{{Binding: bind.ID, Through: 1, Copied: 1}}); err != nil {
		t.Fatal(err)
	}
	if got := receiveAll(t, e, q); len(got) != 1 || got[0].Body != "x" {
		t.Fatalf("received %+v", got)
	}
}
