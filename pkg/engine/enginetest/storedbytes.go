package enginetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// bytesSuite checks a project's stored-bytes counter against what the test expects and
// against the harness's full recount of what the engine stores.
type bytesSuite struct {
	*suite
	h       Harness
	project ids.ID
	queues  []ids.ID
}

func (b *bytesSuite) queue(opts ...queueOpt) engine.Queue {
	b.t.Helper()
	q := b.suite.queue(append([]queueOpt{func(q *engine.Queue) { q.Project = b.project }}, opts...)...)
	b.queues = append(b.queues, q.ID)
	return q
}

func (b *bytesSuite) want(what string, n int64) {
	b.t.Helper()
	got, err := b.e.StoredBytes(b.ctx, b.project)
	if err != nil {
		b.t.Fatalf("%s: StoredBytes: %v", what, err)
	}
	if got != n {
		b.t.Fatalf("%s: StoredBytes = %d, want %d", what, got, n)
	}
	if b.h.Recount == nil {
		return
	}
	if re := b.h.Recount(b.t, b.e, b.project, b.queues); re != n {
		b.t.Fatalf("%s: a full recount finds %d bytes stored, want %d", what, re, n)
	}
}

func testStoredBytes(t *testing.T, s *suite, h Harness) {
	b := &bytesSuite{suite: s, h: h, project: ids.New()}
	b.want("new project", 0)
	dlq := b.queue()
	q := b.queue(withRedrive(dlq, 1))
	long := 15 * time.Minute
	// Sizes count the body and every attribute name and value, in UTF-8 bytes.
	b.sendMsgs(q, engine.Message{Body: "aaa"}, engine.Message{Body: "b", Attributes: map[string]string{"k": "vv"}},
		engine.Message{Body: "cccc", Delay: &long})
	b.want("send", 11)
	ms := b.receive(q, 2, time.Minute)
	if len(ms) != 2 {
		t.Fatalf("received %d, want 2", len(ms))
	}
	byBody := map[string]engine.Received{}
	for _, m := range ms {
		byBody[m.Body] = m
	}
	wantNil(t, "ack", b.ack(q, byBody["aaa"].Delivery)[0])
	b.want("ack", 8)
	wantNil(t, "dead-letter", b.deadLetter(q, byBody["b"].Delivery, ""))
	b.want("consumer dead-letter move", 8)
	wantNil(t, "ack in the dead-letter queue", b.ack(dlq, b.receiveOne(dlq, time.Minute).Delivery)[0])
	b.want("ack in the dead-letter queue", 4)

	b.send(q, "dd")
	b.receiveOne(q, time.Second)
	b.clk.Advance(2 * time.Second)
	b.receiveNone(q) // received maxReceiveCount times: moved to the dead-letter queue
	b.want("redrive at receive", 6)
	wantNil(t, "ack redriven", b.ack(dlq, b.receiveOne(dlq, time.Minute).Delivery)[0])
	b.want("ack redriven", 4)

	plain := b.queue()
	b.send(plain, "ééé") // 6 bytes of UTF-8
	b.want("send UTF-8", 10)
	wantNil(t, "dead-letter without redrive", b.deadLetter(plain, b.receiveOne(plain, time.Minute).Delivery, ""))
	b.want("dead-letter without redrive drops", 4)

	short := b.queue(withRetention(time.Minute))
	b.send(short, "ffffff")
	b.want("send to a short retention", 10)
	b.clk.Advance(2 * time.Minute)
	b.receiveNone(short)
	b.want("expired at receive", 4)
	d := 30 * time.Second
	b.sendMsgs(short, engine.Message{Body: "ggggggg"}, engine.Message{Body: "hh", Delay: &d})
	b.want("send for the sweeper", 13)
	b.clk.Advance(2 * time.Minute)
	wantNil(t, "sweep", b.e.Sweep(b.ctx, []engine.Queue{short}))
	b.want("expired by the sweeper", 4)

	b.send(q, "iii")
	b.want("send before purge", 7)
	wantNil(t, "purge", b.e.Purge(b.ctx, q))
	b.want("purge", 0)

	b.send(plain, "jjjj")
	b.receiveOne(plain, time.Minute) // in flight when deleted
	b.send(plain, "kk")
	b.want("send before delete", 6)
	wantNil(t, "delete", b.e.DeleteQueue(b.ctx, plain.ID))
	b.want("queue delete", 0)

	testStoredBytesFIFO(t, b)
}

func testStoredBytesFIFO(t *testing.T, b *bytesSuite) {
	fdlq := b.queue(fifo)
	f := b.queue(fifo, withRedrive(fdlq, 1))
	res := b.sendResults(f, engine.Message{Body: "11111", GroupID: "g1", DedupID: "d1"})
	b.want("fifo send", 5)
	if dup := b.sendResults(f, engine.Message{Body: "11111", GroupID: "g1", DedupID: "d1"}); !dup[0].Duplicate || dup[0].MessageID != res[0].MessageID {
		t.Fatalf("second send %+v, want a duplicate of %s", dup[0], res[0].MessageID)
	}
	b.want("fifo duplicate stores nothing", 5)
	b.sendResults(f, engine.Message{Body: "22", GroupID: "g2", DedupID: "d2"}, engine.Message{Body: "22", GroupID: "g2", DedupID: "d2"},
		engine.Message{Body: "333", GroupID: "g1"})
	b.want("fifo batch with a repeated dedup id", 10)
	wantNil(t, "purge group", b.e.PurgeGroup(b.ctx, f, "g1"))
	b.want("group purge", 2)
	b.receiveOne(f, time.Second)
	b.clk.Advance(2 * time.Second)
	b.receiveNone(f) // redriven into the fifo dead-letter queue
	b.want("fifo redrive at receive", 2)
	wantNil(t, "fifo ack in the dead-letter queue", b.ack(fdlq, b.receiveOne(fdlq, time.Minute).Delivery)[0])
	b.want("fifo ack", 0)

	g := b.queue(fifo, withRetention(time.Minute))
	b.sendG(g, "a", "444")
	wantNil(t, "fifo dead-letter without redrive", b.deadLetter(g, b.receiveOne(g, time.Minute).Delivery, ""))
	b.want("fifo dead-letter without redrive drops", 0)
	b.sendG(g, "a", "55555")
	b.sendG(g, "b", "6")
	b.want("fifo sends", 6)
	b.clk.Advance(2 * time.Minute)
	wantNil(t, "fifo sweep", b.e.Sweep(b.ctx, []engine.Queue{g}))
	b.want("fifo expired by the sweeper", 0)
	b.sendG(fdlq, "z", "77")
	wantNil(t, "fifo purge", b.e.Purge(b.ctx, fdlq))
	b.want("fifo purge", 0)
}

// testStoredBytesLimit: a send that would pass MaxStoredBytes fails whole and stores nothing;
// duplicates store nothing and pass; other projects are not counted.
func testStoredBytesLimit(t *testing.T, s *suite, h Harness) {
	b := &bytesSuite{suite: s, h: h, project: ids.New()}
	limit := func(q *engine.Queue) { q.MaxStoredBytes = 10 }
	q := b.queue(limit)
	b.send(q, "123456")
	_, err := b.e.Send(b.ctx, q, []engine.Message{{Body: "1"}, {Body: "2345"}, {Body: "6"}})
	wantQuota(t, err, 10)
	b.want("refused send", 6)
	b.wantCounts(q, 1, 0, 0)
	b.send(q, "7890")
	b.want("send up to the limit", 10)
	_, err = b.e.Send(b.ctx, q, []engine.Message{{Body: "x"}})
	wantQuota(t, err, 10)
	wantNil(t, "ack", b.ack(q, b.receiveOne(q, time.Minute).Delivery)[0])
	b.send(q, "x")

	f := b.queue(fifo, limit)
	// One queue's limit is the project's: f shares q's bytes.
	_, err = b.e.Send(b.ctx, f, []engine.Message{{Body: strings.Repeat("y", 6), GroupID: "g", DedupID: "d"}})
	wantQuota(t, err, 10)
	wantNil(t, "purge", b.e.Purge(b.ctx, q))
	b.want("purge", 0)
	b.sendResults(f, engine.Message{Body: strings.Repeat("y", 10), GroupID: "g", DedupID: "d"})
	dup := b.sendResults(f, engine.Message{Body: strings.Repeat("y", 10), GroupID: "g", DedupID: "d"})
	if !dup[0].Duplicate {
		t.Fatalf("send at the limit of a duplicate: %+v, want a duplicate", dup[0])
	}
	b.want("duplicate at the limit", 10)

	other := &bytesSuite{suite: s, h: h, project: ids.New()}
	oq := other.queue(func(q *engine.Queue) { q.MaxStoredBytes = 3 })
	other.send(oq, "abc")
	other.want("another project", 3)
	b.want("unchanged by another project", 10)
}

// wantQuota: err is the project's byte quota refusing a store, quoting the project's limit
// (the doors word it as quota_exceeded naming maxStoredBytes).
func wantQuota(t *testing.T, err error, limit int64) {
	t.Helper()
	wantRefusal(t, "a store past maxStoredBytes", err, engine.ErrStoredBytesExceeded)
	var sb *engine.StoredBytesExceeded
	if !errors.As(err, &sb) || sb.Limit != limit {
		t.Fatalf("a store past maxStoredBytes: %v, want an *engine.StoredBytesExceeded quoting %d", err, limit)
	}
	if !engine.IsRefusal(err) {
		t.Fatalf("a store past maxStoredBytes: %v is not a refusal", err)
	}
}

// testStoredBytesReserved: the service's own attributes (a traceparent, a replayed copy's
// origin) count toward neither stored bytes nor the limit (engine.PayloadBytes,
// docs/stored-bytes.md), on every path that stores or removes a message: a project limited to
// exactly the client's bytes takes such messages, on standard and fifo queues and by Copy,
// and their removal leaves nothing counted.
func testStoredBytesReserved(t *testing.T, s *suite, h Harness) {
	b := &bytesSuite{suite: s, h: h, project: ids.New()}
	attrs := map[string]string{"k": "vv"}
	traced := func() map[string]string {
		return engine.WithTraceparent(attrs, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	}
	replayed := func(seq uint64) map[string]string {
		return engine.WithReplayOf(attrs, engine.ReplayOf{Topic: ids.New(), Sequence: seq})
	}
	size := engine.PayloadBytes("abc", attrs) // 6: the reserved attributes are not counted
	limit := func(q *engine.Queue) { q.MaxStoredBytes = 2 * size }
	q := b.queue(limit)
	b.sendMsgs(q, engine.Message{Body: "abc", Attributes: traced()})
	b.want("a send with a traceparent", size)
	b.sendMsgs(q, engine.Message{Body: "abc", Attributes: replayed(7)})
	b.want("a replayed copy", 2*size)
	_, err := b.e.Send(b.ctx, q, []engine.Message{{Body: "x"}})
	wantQuota(t, err, 2*size) // the limit is reached by the client's bytes alone, not passed
	ms := b.receive(q, 2, time.Minute)
	if len(ms) != 2 {
		t.Fatalf("received %d, want 2", len(ms))
	}
	for _, err := range b.ack(q, ms[0].Delivery, ms[1].Delivery) {
		wantNil(t, "ack", err)
	}
	b.want("acked", 0)

	f := b.queue(fifo, limit)
	b.sendMsgs(f, engine.Message{Body: "abc", Attributes: traced(), GroupID: "g", DedupID: "d1"},
		engine.Message{Body: "abc", Attributes: replayed(8), GroupID: "g", DedupID: "d2"})
	b.want("fifo sends with reserved attributes", 2*size)
	wantNil(t, "fifo purge", b.e.Purge(b.ctx, f))
	b.want("fifo purge", 0)

	tp, ok := s.e.(engine.Topics)
	if !ok {
		return
	}
	c := b.queue(limit)
	msgs := []engine.CopyMessage{
		{Sequence: 1, ID: ids.New(), Message: engine.Message{Body: "abc", Attributes: traced()}},
		{Sequence: 2, ID: ids.New(), Message: engine.Message{Body: "abc", Attributes: replayed(2)}},
	}
	var errs []error
	errs, err = tp.Copy(b.ctx, c, engine.CopyBatch{Topic: ids.New(), Binding: ids.New(), Messages: msgs})
	wantNil(t, "Copy", err)
	for i, err := range errs {
		wantNil(t, fmt.Sprintf("Copy of message %d", i), err)
	}
	b.want("copies with reserved attributes", 2*size)
	wantNil(t, "purge the copies", b.e.Purge(b.ctx, c))
	b.want("purge the copies", 0)
}
