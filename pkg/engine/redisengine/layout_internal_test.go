package redisengine

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// Messages stored in the layout before state moved into m (payload alone in m, state in s)
// are still counted, browsed, received, extended, acknowledged and dead-lettered; a receive
// rewrites one in the current layout and its s field goes.
func TestOldLayoutMessagesStillServed(t *testing.T) {
	e, rdb, clk := newInternal(t)
	ctx := context.Background()
	q := engine.Queue{ID: ids.New(), Type: engine.Standard, VisibilityTimeout: time.Minute, Retention: time.Hour}
	k := keysOf(q.ID, 0)
	now := clk.Now().UnixMilli()
	old := func(body string) ids.ID {
		id := ids.New()
		pl := payload{Body: body, Attributes: map[string]string{"a": "b"}}
		if err := rdb.HSet(ctx, k.Messages, string(id[:]), pl.encode()).Err(); err != nil {
			t.Fatal(err)
		}
		rdb.HSet(ctx, k.LegacyStates, string(id[:]), "0|0|"+itoa(now+3_600_000)+"|"+itoa(now-1000))
		rdb.ZAdd(ctx, k.Scheduled, redisZ(now-1000, id))
		rdb.ZAdd(ctx, k.Expiry, redisZ(now+3_600_000, id))
		return id
	}
	a, b, c := old("one"), old("two"), old("three")
	st, err := e.Stats(ctx, q)
	if err != nil || st.Visible != 3 {
		t.Fatalf("stats %+v, %v", st, err)
	}
	br, err := e.Browse(ctx, q, engine.BrowseRequest{State: engine.StateVisible, Limit: 10})
	if err != nil || len(br.Messages) != 3 {
		t.Fatalf("browse %d, %v", len(br.Messages), err)
	}
	res, err := e.Receive(ctx, q, engine.ReceiveRequest{Max: 10, Visibility: time.Minute})
	if err != nil || len(res.Messages) != 3 {
		t.Fatalf("receive %d, %v", len(res.Messages), err)
	}
	bodies := map[ids.ID]string{}
	var ds []engine.Delivery
	for _, m := range res.Messages {
		bodies[m.MessageID] = m.Body
		if m.ReceiveCount != 1 || m.Attributes["a"] != "b" || m.SentAt.UnixMilli() != now-1000 {
			t.Fatalf("received %+v", m)
		}
		ds = append(ds, m.Delivery)
	}
	if bodies[a] != "one" || bodies[b] != "two" || bodies[c] != "three" {
		t.Fatalf("bodies %v", bodies)
	}
	if n := rdb.HLen(ctx, k.LegacyStates).Val(); n != 0 {
		t.Fatalf("%d old state fields left after the receive", n)
	}
	if errs, err := e.ChangeVisibility(ctx, q, []engine.VisibilityChange{{Delivery: ds[0], Visibility: time.Hour}}); err != nil || errs[0] != nil {
		t.Fatalf("extend: %v %v", errs, err)
	}
	if errs, err := e.Ack(ctx, q, ds[:2]); err != nil || errs[0] != nil || errs[1] != nil {
		t.Fatalf("ack: %v %v", errs, err)
	}
	if errs, err := e.DeadLetter(ctx, q, []engine.DeadLetterRequest{{Delivery: ds[2]}}); err != nil || errs[0] != nil {
		t.Fatalf("dead-letter: %v %v", errs, err)
	}
	if n := rdb.HLen(ctx, k.Messages).Val(); n != 0 {
		t.Fatalf("%d messages left", n)
	}
	// Acknowledging an old-layout message that was never received answers stale.
	d := old("four")
	if errs, _ := e.Ack(ctx, q, []engine.Delivery{{Queue: q.ID, MessageID: d, Attempt: 1}}); errs[0] == nil {
		t.Fatal("acknowledged a delivery that never happened")
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func redisZ(score int64, id ids.ID) redis.Z {
	return redis.Z{Score: float64(score), Member: string(id[:])}
}

// A message sent without delay is one element of the partition's list and nothing else until
// it is received; a delayed one, or one sent after the retention was shortened, is indexed in
// m, r and x. Receiving from the list moves a message into m, f and x, and acknowledging it
// leaves no key behind.
func TestListHoldsFreshMessages(t *testing.T) {
	e, rdb, _ := newInternal(t)
	ctx := context.Background()
	q := engine.Queue{ID: ids.New(), Type: engine.Standard, VisibilityTimeout: time.Minute, Retention: time.Hour}
	k := keysOf(q.ID, 0)
	if _, err := e.Send(ctx, q, []engine.Message{{Body: "a"}, {Body: "b"}}); err != nil {
		t.Fatal(err)
	}
	sizes := func() [5]int64 {
		return [5]int64{rdb.LLen(ctx, k.Visible).Val(), rdb.HLen(ctx, k.Messages).Val(), rdb.ZCard(ctx, k.Scheduled).Val(),
			rdb.ZCard(ctx, k.InFlight).Val(), rdb.ZCard(ctx, k.Expiry).Val()}
	}
	if got := sizes(); got != [5]int64{2, 0, 0, 0, 0} {
		t.Fatalf("after two sends: l, m, r, f, x = %v", got)
	}
	d := time.Minute
	if _, err := e.Send(ctx, q, []engine.Message{{Body: "delayed", Delay: &d}}); err != nil {
		t.Fatal(err)
	}
	short := q
	short.Retention = time.Minute
	if _, err := e.Send(ctx, short, []engine.Message{{Body: "short"}}); err != nil {
		t.Fatal(err)
	}
	if got := sizes(); got != [5]int64{2, 2, 2, 0, 2} {
		t.Fatalf("after a delayed send and one with a shorter retention: l, m, r, f, x = %v", got)
	}
	res, err := e.Receive(ctx, q, engine.ReceiveRequest{Max: 10, Visibility: time.Minute})
	if err != nil || len(res.Messages) != 3 {
		t.Fatalf("receive: %d, %v", len(res.Messages), err)
	}
	if got := sizes(); got != [5]int64{0, 4, 1, 3, 4} {
		t.Fatalf("after the receive: l, m, r, f, x = %v", got)
	}
	if n := rdb.Get(ctx, k.VisibleTaken).Val(); n != "2" {
		t.Fatalf("list head position %q, want 2", n)
	}
	var ds []engine.Delivery
	for _, m := range res.Messages {
		ds = append(ds, m.Delivery)
	}
	if _, err := e.Ack(ctx, q, ds); err != nil {
		t.Fatal(err)
	}
	if got := sizes(); got != [5]int64{0, 1, 1, 0, 1} {
		t.Fatalf("after the ack: l, m, r, f, x = %v", got)
	}
}
