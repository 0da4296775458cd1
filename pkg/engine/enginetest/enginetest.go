// Package enginetest is the conformance suite of engine.Engine: the behaviour every engine
// (Redis, Redis Cluster, embedded) must show, written once and run by each implementation's
// tests through a Harness. Time is a clock.Fake the tests advance; nothing sleeps.
package enginetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// Harness makes engines for the suite.
type Harness struct {
	// New returns a fresh engine and the fake clock it reads, for one subtest. Engines made by
	// different calls may share storage: the suite uses a new queue id in every subtest.
	New func(t *testing.T) (engine.Engine, *clock.Fake)
	// NewWithPartitionRate, when set, returns an engine that gives a queue another partition
	// once one partition takes more than rate messages a second. Engines without partitions
	// leave it nil and the partition tests are skipped.
	NewWithPartitionRate func(t *testing.T, rate int) (engine.Engine, *clock.Fake)
	// Recount, when set, counts the stored bytes of a project's messages in the given queues
	// by reading everything the engine stores for them, independently of its counter.
	Recount func(t *testing.T, e engine.Engine, project ids.ID, queues []ids.ID) int64
}

// Epoch is a convenient start for harness clocks.
var Epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// NewClock returns a fake clock at Epoch.
func NewClock() *clock.Fake { return clock.NewFake(Epoch) }

// waitTimeout bounds waiting for an event that should come at once (a wake-up); it is never
// how long a passing test takes.
const waitTimeout = 10 * time.Second

// Run runs the suite. Subtests run in parallel, each with its own engine, clock and queues.
func Run(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"SendReceiveAck", testSendReceiveAck},
		{"RoundTrip", testRoundTrip},
		{"Delay", testDelay},
		{"VisibilityTimeoutExpiry", testVisibilityExpiry},
		{"Release", testRelease},
		{"RetryAfter", testRetryAfter},
		{"VisibilityLimit", testVisibilityLimit},
		{"HandleValidAfterDeadline", testHandleAfterDeadline},
		{"StaleHandles", testStaleHandles},
		{"StaleHandleChangesNothing", testStaleChangesNothing},
		{"BatchSettleMixed", testBatchMixed},
		{"RedriveAtReceive", testRedrive},
		{"ConsumerDeadLetter", testConsumerDeadLetter},
		{"DeadLetterWithoutRedrive", testDeadLetterNoRedrive},
		{"RetentionLazy", testRetentionLazy},
		{"RetentionSweep", testRetentionSweep},
		{"RetentionShortened", testRetentionShortened},
		{"CountsLeaveOutExpired", testCountsLeaveOutExpired},
		{"Purge", testPurge},
		{"DeleteQueue", testDeleteQueue},
		{"Counts", testCounts},
		{"Browse", testBrowse},
		{"BrowseWhileReceiving", testBrowseWhileReceiving},
		{"PurgeThenBrowse", testPurgeThenBrowse},
		{"LastPageNoCursor", testLastPageNoCursor},
		{"Watch", testWatch},
		{"ReceiveMax", testReceiveMax},
		{"ConcurrentConsumers", testConcurrentConsumers},
		{"NextVisibleAt", testNextVisibleAt},
		{"GroupsOnStandard", testGroupsOnStandard},
		{"PartitionGrowth", func(t *testing.T, s *suite) { testPartitionGrowth(t, h) }},
		{"StoredBytes", func(t *testing.T, s *suite) { testStoredBytes(t, s, h) }},
		{"StoredBytesLimit", func(t *testing.T, s *suite) { testStoredBytesLimit(t, s, h) }},
		{"StoredBytesReserved", func(t *testing.T, s *suite) { testStoredBytesReserved(t, s, h) }},
	}
	tests = append(tests, fifoTests(h)...)
	tests = append(tests, poisonTests()...)
	tests = append(tests, moveTests(h)...)
	tests = append(tests, lifecycleTests(h)...)
	tests = append(tests, barrierTests(h)...)
	tests = append(tests, barrierPathTests()...)
	tests = append(tests, consumerTests(h)...)
	tests = append(tests, priorityTests(h)...)
	tests = append(tests, atMostOnceTests(h)...)
	tests = append(tests, cancelTests()...)
	tests = append(tests, filterTests(h)...)
	tests = append(tests, attemptTests()...)
	tests = append(tests, topicTests()...)
	tests = append(tests, groupPolicyTests(h)...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, clk := h.New(t)
			tc.fn(t, &suite{t: t, e: e, clk: clk, ctx: context.Background()})
		})
	}
}

// suite is one subtest's engine and helpers; helpers fail the test on unexpected errors.
type suite struct {
	t   *testing.T
	e   engine.Engine
	clk *clock.Fake
	ctx context.Context
}

type queueOpt func(*engine.Queue)

func withRetention(d time.Duration) queueOpt { return func(q *engine.Queue) { q.Retention = d } }
func withDelay(d time.Duration) queueOpt     { return func(q *engine.Queue) { q.Delay = d } }
func withRedrive(dlq engine.Queue, max int) queueOpt {
	return func(q *engine.Queue) { q.Redrive = &engine.Redrive{DeadLetter: &dlq, MaxReceiveCount: max} }
}

func (s *suite) queue(opts ...queueOpt) engine.Queue {
	s.t.Helper()
	q := engine.Queue{
		ID:                ids.New(),
		Type:              engine.Standard,
		VisibilityTimeout: 30 * time.Second,
		Retention:         4 * 24 * time.Hour,
	}
	for _, o := range opts {
		o(&q)
	}
	if err := s.e.CreateQueue(s.ctx, q); err != nil {
		s.t.Fatalf("CreateQueue: %v", err)
	}
	return q
}

func (s *suite) sendMsgs(q engine.Queue, msgs ...engine.Message) []ids.ID {
	s.t.Helper()
	res, err := s.e.Send(s.ctx, q, msgs)
	if err != nil {
		s.t.Fatalf("Send: %v", err)
	}
	if len(res) != len(msgs) {
		s.t.Fatalf("Send answered %d results for %d messages", len(res), len(msgs))
	}
	out := make([]ids.ID, len(res))
	for i, r := range res {
		if r.MessageID.IsZero() || r.Duplicate {
			s.t.Fatalf("Send result %d: %+v", i, r)
		}
		out[i] = r.MessageID
	}
	return out
}

func (s *suite) send(q engine.Queue, bodies ...string) []ids.ID {
	s.t.Helper()
	msgs := make([]engine.Message, len(bodies))
	for i, b := range bodies {
		msgs[i] = engine.Message{Body: b}
	}
	return s.sendMsgs(q, msgs...)
}

func (s *suite) receive(q engine.Queue, max int, vis time.Duration) []engine.Received {
	s.t.Helper()
	res, err := s.e.Receive(s.ctx, q, engine.ReceiveRequest{Max: max, Visibility: vis})
	if err != nil {
		s.t.Fatalf("Receive: %v", err)
	}
	return res.Messages
}

func (s *suite) receiveOne(q engine.Queue, vis time.Duration) engine.Received {
	s.t.Helper()
	ms := s.receive(q, 1, vis)
	if len(ms) != 1 {
		s.t.Fatalf("Receive got %d messages, want 1", len(ms))
	}
	return ms[0]
}

func (s *suite) receiveNone(q engine.Queue) {
	s.t.Helper()
	if ms := s.receive(q, engine.MaxBatch, time.Minute); len(ms) != 0 {
		s.t.Fatalf("Receive got %d messages (first %q), want none", len(ms), ms[0].Body)
	}
}

func (s *suite) ack(q engine.Queue, ds ...engine.Delivery) []error {
	s.t.Helper()
	errs, err := s.e.Ack(s.ctx, q, ds)
	if err != nil {
		s.t.Fatalf("Ack: %v", err)
	}
	if len(errs) != len(ds) {
		s.t.Fatalf("Ack answered %d results for %d deliveries", len(errs), len(ds))
	}
	return errs
}

func (s *suite) changeVis(q engine.Queue, d engine.Delivery, vis time.Duration) error {
	s.t.Helper()
	errs, err := s.e.ChangeVisibility(s.ctx, q, []engine.VisibilityChange{{Delivery: d, Visibility: vis}})
	if err != nil {
		s.t.Fatalf("ChangeVisibility: %v", err)
	}
	if len(errs) != 1 {
		s.t.Fatalf("ChangeVisibility answered %d results for 1", len(errs))
	}
	return errs[0]
}

func (s *suite) deadLetter(q engine.Queue, d engine.Delivery, reason string) error {
	s.t.Helper()
	errs, err := s.e.DeadLetter(s.ctx, q, []engine.DeadLetterRequest{{Delivery: d, Reason: reason}})
	if err != nil {
		s.t.Fatalf("DeadLetter: %v", err)
	}
	if len(errs) != 1 {
		s.t.Fatalf("DeadLetter answered %d results for 1", len(errs))
	}
	return errs[0]
}

func (s *suite) stats(q engine.Queue) engine.Stats {
	s.t.Helper()
	st, err := s.e.Stats(s.ctx, q)
	if err != nil {
		s.t.Fatalf("Stats: %v", err)
	}
	return st
}

// wantCounts checks visible, in flight and delayed.
func (s *suite) wantCounts(q engine.Queue, visible, inFlight, delayed int64) {
	s.t.Helper()
	st := s.stats(q)
	if st.Visible != visible || st.InFlight != inFlight || st.Delayed != delayed || st.Truncated {
		s.t.Fatalf("counts = visible %d, inFlight %d, delayed %d (truncated %v); want %d, %d, %d",
			st.Visible, st.InFlight, st.Delayed, st.Truncated, visible, inFlight, delayed)
	}
}

func wantNil(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func wantCode(t *testing.T, what string, err error, code apierr.Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want %s", what, code)
	}
	if got := apierr.CodeOf(err); got != code {
		t.Fatalf("%s: error %v (code %s), want %s", what, err, got, code)
	}
}

// wantRefusal: err is the engine's refusal sentinel (the API gives it its code and field).
func wantRefusal(t *testing.T, what string, err, sentinel error) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("%s: error %v, want %v", what, err, sentinel)
	}
}

func wantStale(t *testing.T, what string, err error) {
	t.Helper()
	wantIs(t, what, err, engine.ErrStale)
}

// wantIs: err is the engine's sentinel (errors.Is), which the doors word for the client, and
// still reads as the sentinel's code for callers that switch on codes.
func wantIs(t *testing.T, what string, err, sentinel error) {
	t.Helper()
	wantRefusal(t, what, err, sentinel)
	wantCode(t, what, err, apierr.CodeOf(sentinel))
}

func wantTime(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if !got.Equal(want) {
		t.Fatalf("%s = %s, want %s", what, got.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano))
	}
}

func testSendReceiveAck(t *testing.T, s *suite) {
	q := s.queue()
	sent := s.send(q, "hello")
	s.wantCounts(q, 1, 0, 0)
	now := s.clk.Now()
	m := s.receiveOne(q, 30*time.Second)
	if m.MessageID != sent[0] || m.Body != "hello" || m.ReceiveCount != 1 || m.Attempt != 1 {
		t.Fatalf("received %+v, want message %s body hello receiveCount 1", m, sent[0])
	}
	if m.Queue != q.ID || m.DeadLetter != nil || m.GroupID != "" {
		t.Fatalf("received %+v: wrong queue, dead-letter info or group", m)
	}
	wantTime(t, "SentAt", m.SentAt, now)
	wantTime(t, "VisibilityDeadline", m.VisibilityDeadline, now.Add(30*time.Second))
	s.wantCounts(q, 0, 1, 0)
	s.receiveNone(q)
	wantNil(t, "ack", s.ack(q, m.Delivery)[0])
	s.wantCounts(q, 0, 0, 0)
	s.clk.Advance(time.Minute)
	s.receiveNone(q)
}

func testRoundTrip(t *testing.T, s *suite) {
	q := s.queue()
	big := strings.Repeat("a", engine.MaxMessageBytes)
	attrs := map[string]string{
		"plain":     "value",
		"unicode":   "naïve café — 日本語 🎉",
		"empty":     "",
		"with.dots": "pipe|and\nnewline\x00nul",
	}
	for i := range engine.MaxAttributes - len(attrs) {
		attrs[fmt.Sprintf("a-%d_x", i)] = strings.Repeat("v", i)
	}
	msgs := []engine.Message{
		{Body: "héllo, wörld — 世界 🎉 \u2028"},
		{Body: big},
		{Body: "with attributes", Attributes: attrs},
		{Body: "|1|2|3|\n"},
	}
	ids := s.sendMsgs(q, msgs...)
	got := map[string]engine.Received{}
	for _, m := range s.receive(q, engine.MaxBatch, time.Minute) {
		got[m.MessageID.String()] = m
	}
	for i, want := range msgs {
		m, ok := got[ids[i].String()]
		if !ok {
			t.Fatalf("message %d (%s) not received", i, ids[i])
		}
		if m.Body != want.Body {
			t.Fatalf("message %d: body of %d bytes differs from the %d sent", i, len(m.Body), len(want.Body))
		}
		if len(want.Attributes) == 0 && len(m.Attributes) != 0 {
			t.Fatalf("message %d: attributes %v, want none", i, m.Attributes)
		}
		if len(want.Attributes) > 0 && !maps.Equal(m.Attributes, want.Attributes) {
			t.Fatalf("message %d: attributes %q, want %q", i, m.Attributes, want.Attributes)
		}
	}
}

func testDelay(t *testing.T, s *suite) {
	q := s.queue()
	d := 10 * time.Second
	s.sendMsgs(q, engine.Message{Body: "later", Delay: &d})
	s.wantCounts(q, 0, 0, 1)
	res, err := s.e.Receive(s.ctx, q, engine.ReceiveRequest{Max: 1, Visibility: time.Minute})
	wantNil(t, "receive", err)
	if len(res.Messages) != 0 {
		t.Fatalf("received a delayed message")
	}
	wantTime(t, "NextVisibleAt", res.NextVisibleAt, s.clk.Now().Add(d))
	s.clk.Advance(d - time.Millisecond)
	s.wantCounts(q, 0, 0, 1)
	s.receiveNone(q)
	s.clk.Advance(time.Millisecond)
	s.wantCounts(q, 1, 0, 0)
	if m := s.receiveOne(q, time.Minute); m.Body != "later" {
		t.Fatalf("received %q", m.Body)
	}

	// The queue's delay applies unless the message names its own.
	qd := s.queue(withDelay(5 * time.Second))
	zero := time.Duration(0)
	s.sendMsgs(qd, engine.Message{Body: "queue delay"}, engine.Message{Body: "no delay", Delay: &zero})
	s.wantCounts(qd, 1, 0, 1)
	if m := s.receiveOne(qd, time.Minute); m.Body != "no delay" {
		t.Fatalf("received %q before the queue's delay ended", m.Body)
	}
	s.clk.Advance(5 * time.Second)
	if m := s.receiveOne(qd, time.Minute); m.Body != "queue delay" {
		t.Fatalf("received %q", m.Body)
	}
}

func testVisibilityExpiry(t *testing.T, s *suite) {
	q := s.queue()
	s.send(q, "m")
	first := s.receiveOne(q, 10*time.Second)
	s.clk.Advance(10*time.Second - time.Millisecond)
	s.wantCounts(q, 0, 1, 0)
	s.receiveNone(q)
	s.clk.Advance(time.Millisecond)
	s.wantCounts(q, 1, 0, 0)
	second := s.receiveOne(q, 10*time.Second)
	if second.MessageID != first.MessageID || second.ReceiveCount != 2 || second.Attempt != 2 {
		t.Fatalf("second receive %+v, want the same message with receiveCount 2", second)
	}
	wantStale(t, "ack with the first handle", s.ack(q, first.Delivery)[0])
	s.wantCounts(q, 0, 1, 0)
	wantNil(t, "ack with the second handle", s.ack(q, second.Delivery)[0])
	s.wantCounts(q, 0, 0, 0)
}

func testRelease(t *testing.T, s *suite) {
	q := s.queue()
	s.send(q, "m")
	m := s.receiveOne(q, time.Hour)
	w, cancel := s.e.Watch(q.ID)
	defer cancel()
	wantNil(t, "release", s.changeVis(q, m.Delivery, 0))
	s.wantCounts(q, 1, 0, 0)
	waitSignal(t, w, "release")
	again := s.receiveOne(q, time.Hour)
	if again.MessageID != m.MessageID || again.ReceiveCount != 2 {
		t.Fatalf("after release received %+v", again)
	}
}

func testRetryAfter(t *testing.T, s *suite) {
	q := s.queue()
	s.send(q, "m")
	m := s.receiveOne(q, 10*time.Second)
	wantNil(t, "retry after 60s", s.changeVis(q, m.Delivery, time.Minute))
	s.clk.Advance(30 * time.Second) // past the original deadline: still in flight
	s.wantCounts(q, 0, 1, 0)
	res, err := s.e.Receive(s.ctx, q, engine.ReceiveRequest{Max: 1, Visibility: time.Minute})
	wantNil(t, "receive", err)
	if len(res.Messages) != 0 {
		t.Fatal("received a message retried after 60 s after 30 s")
	}
	wantTime(t, "NextVisibleAt", res.NextVisibleAt, s.clk.Now().Add(30*time.Second))
	s.clk.Advance(30 * time.Second)
	s.wantCounts(q, 1, 0, 0)
	if again := s.receiveOne(q, time.Minute); again.ReceiveCount != 2 {
		t.Fatalf("receiveCount %d after a retry, want 2", again.ReceiveCount)
	}
}

func testVisibilityLimit(t *testing.T, s *suite) {
	q := s.queue()
	s.send(q, "m")
	m := s.receiveOne(q, time.Hour)
	s.clk.Advance(11 * time.Hour)
	wantIs(t, "extend past 12h from the receive", s.changeVis(q, m.Delivery, time.Hour+time.Second), engine.ErrVisibilityLimit)
	// The refused change changed nothing: the deadline of the receive has passed.
	s.wantCounts(q, 1, 0, 0)
	wantNil(t, "extend to exactly 12h from the receive", s.changeVis(q, m.Delivery, time.Hour))
	s.wantCounts(q, 0, 1, 0)
	s.clk.Advance(time.Hour)
	s.wantCounts(q, 1, 0, 0)
	wantIs(t, "extend after 12h", s.changeVis(q, m.Delivery, time.Second), engine.ErrVisibilityLimit)
	wantNil(t, "release after 12h", s.changeVis(q, m.Delivery, 0))
}

func testHandleAfterDeadline(t *testing.T, s *suite) {
	q := s.queue()
	s.send(q, "a", "b")
	ms := s.receive(q, 2, 10*time.Second)
	if len(ms) != 2 {
		t.Fatalf("received %d, want 2", len(ms))
	}
	s.clk.Advance(time.Minute)
	s.wantCounts(q, 2, 0, 0)
	wantNil(t, "ack after the deadline", s.ack(q, ms[0].Delivery)[0])
	wantNil(t, "extend after the deadline", s.changeVis(q, ms[1].Delivery, time.Minute))
	s.wantCounts(q, 0, 1, 0)
	s.receiveNone(q)
}

func testStaleHandles(t *testing.T, s *suite) {
	dlq := s.queue()
	q := s.queue(withRetention(time.Hour), withRedrive(dlq, 5))
	s.send(q, "acked", "dead", "expired")
	ms := s.receive(q, 3, 2*time.Hour)
	if len(ms) != 3 {
		t.Fatalf("received %d, want 3", len(ms))
	}
	byBody := map[string]engine.Received{}
	for _, m := range ms {
		byBody[m.Body] = m
	}
	acked := byBody["acked"].Delivery
	wantNil(t, "ack", s.ack(q, acked)[0])
	wantStale(t, "second ack", s.ack(q, acked)[0])
	wantStale(t, "visibility after ack", s.changeVis(q, acked, time.Minute))
	wantStale(t, "dead-letter after ack", s.deadLetter(q, acked, ""))

	dead := byBody["dead"].Delivery
	wantNil(t, "dead-letter", s.deadLetter(q, dead, "bad"))
	wantStale(t, "ack after dead-letter", s.ack(q, dead)[0])

	// Forged or mismatched deliveries are stale too.
	exp := byBody["expired"].Delivery
	for name, d := range map[string]engine.Delivery{
		"attempt 0":       {Queue: exp.Queue, Partition: exp.Partition, MessageID: exp.MessageID},
		"later attempt":   {Queue: exp.Queue, Partition: exp.Partition, MessageID: exp.MessageID, Attempt: 2},
		"other queue":     {Queue: dlq.ID, Partition: exp.Partition, MessageID: exp.MessageID, Attempt: 1},
		"other partition": {Queue: exp.Queue, Partition: exp.Partition + 1, MessageID: exp.MessageID, Attempt: 1},
		"no such message": {Queue: exp.Queue, Partition: exp.Partition, MessageID: ids.New(), Attempt: 1},
	} {
		wantStale(t, name, s.ack(q, d)[0])
	}
	s.wantCounts(q, 0, 1, 0)

	s.clk.Advance(time.Hour) // retention ends while in flight
	wantStale(t, "ack after expiry", s.ack(q, exp)[0])
	wantStale(t, "visibility after expiry", s.changeVis(q, exp, time.Minute))
	wantNil(t, "sweep", s.e.Sweep(s.ctx, []engine.Queue{q, dlq}))
	s.wantCounts(q, 0, 0, 0)

	// Purge and delete: see testPurge and testDeleteQueue.
}

func testStaleChangesNothing(t *testing.T, s *suite) {
	dlq := s.queue()
	q := s.queue(withRedrive(dlq, 5))
	s.send(q, "m")
	first := s.receiveOne(q, 10*time.Second)
	s.clk.Advance(10 * time.Second)
	second := s.receiveOne(q, time.Minute)
	wantStale(t, "stale release", s.changeVis(q, first.Delivery, 0))
	wantStale(t, "stale dead-letter", s.deadLetter(q, first.Delivery, ""))
	wantStale(t, "stale ack", s.ack(q, first.Delivery)[0])
	s.wantCounts(q, 0, 1, 0)
	s.wantCounts(dlq, 0, 0, 0)
	s.clk.Advance(time.Minute - time.Millisecond)
	s.wantCounts(q, 0, 1, 0) // the second delivery's deadline is untouched
	wantNil(t, "current handle", s.ack(q, second.Delivery)[0])
}

func testBatchMixed(t *testing.T, s *suite) {
	q := s.queue()
	s.send(q, "a", "b", "c", "d")
	ms := s.receive(q, 4, time.Minute)
	if len(ms) != 4 {
		t.Fatalf("received %d, want 4", len(ms))
	}
	wantNil(t, "ack", s.ack(q, ms[0].Delivery)[0])
	bogus := ms[1].Delivery
	bogus.MessageID = ids.New()
	errs := s.ack(q, ms[1].Delivery, ms[0].Delivery, ms[2].Delivery, bogus)
	wantNil(t, "entry 0", errs[0])
	wantStale(t, "entry 1", errs[1])
	wantNil(t, "entry 2", errs[2])
	wantStale(t, "entry 3", errs[3])
	s.wantCounts(q, 0, 1, 0)

	verrs, err := s.e.ChangeVisibility(s.ctx, q, []engine.VisibilityChange{
		{Delivery: ms[0].Delivery, Visibility: 0},
		{Delivery: ms[3].Delivery, Visibility: 0},
	})
	wantNil(t, "change visibility", err)
	wantStale(t, "visibility entry 0", verrs[0])
	wantNil(t, "visibility entry 1", verrs[1])
	s.wantCounts(q, 1, 0, 0)

	none, err := s.e.Ack(s.ctx, q, nil)
	if err != nil || len(none) != 0 {
		t.Fatalf("empty ack: %v, %v", none, err)
	}
}

func testRedrive(t *testing.T, s *suite) {
	dlq := s.queue(withRetention(2 * time.Hour))
	q := s.queue(withRedrive(dlq, 2))
	attrs := map[string]string{"k": "v"}
	id := s.sendMsgs(q, engine.Message{Body: "poison", Attributes: attrs})[0]
	sentAt := s.clk.Now()
	var last engine.Received
	for i := 1; i <= 2; i++ {
		last = s.receiveOne(q, 10*time.Second)
		if last.ReceiveCount != i {
			t.Fatalf("receive %d: receiveCount %d", i, last.ReceiveCount)
		}
		s.clk.Advance(10 * time.Second)
	}
	movedAt := s.clk.Now()
	s.receiveNone(q) // the third receive moves it instead of returning it
	s.wantCounts(q, 0, 0, 0)
	wantStale(t, "handle after redrive", s.ack(q, last.Delivery)[0])
	s.wantCounts(dlq, 1, 0, 0)

	m := s.receiveOne(dlq, time.Minute)
	if m.MessageID != id || m.Body != "poison" || !maps.Equal(m.Attributes, attrs) {
		t.Fatalf("dead-lettered message %+v lost its id, body or attributes", m)
	}
	if m.ReceiveCount != 1 {
		t.Fatalf("receiveCount in the dead-letter queue = %d, want 1 (restarted)", m.ReceiveCount)
	}
	if m.DeadLetter == nil || m.DeadLetter.SourceQueue != q.ID || m.DeadLetter.Reason != engine.RedriveReason {
		t.Fatalf("dead-letter info %+v, want source %s reason %s", m.DeadLetter, q.ID, engine.RedriveReason)
	}
	wantTime(t, "DeadLetter.At", m.DeadLetter.At, movedAt)
	wantTime(t, "SentAt", m.SentAt, sentAt)

	// Its retention in the dead-letter queue counts from the move.
	wantNil(t, "release", s.changeVis(dlq, m.Delivery, 0))
	s.clk.Advance(2*time.Hour - time.Millisecond)
	s.wantCounts(dlq, 1, 0, 0)
	s.clk.Advance(time.Millisecond)
	s.receiveNone(dlq)
}

func testConsumerDeadLetter(t *testing.T, s *suite) {
	dlq := s.queue()
	q := s.queue(withRedrive(dlq, 10))
	s.send(q, "with reason", "default reason")
	ms := s.receive(q, 2, time.Minute)
	if len(ms) != 2 {
		t.Fatalf("received %d, want 2", len(ms))
	}
	at := s.clk.Now()
	errs, err := s.e.DeadLetter(s.ctx, q, []engine.DeadLetterRequest{
		{Delivery: ms[0].Delivery, Reason: "cannot parse"},
		{Delivery: ms[1].Delivery},
	})
	wantNil(t, "dead-letter", err)
	wantNil(t, "entry 0", errs[0])
	wantNil(t, "entry 1", errs[1])
	s.wantCounts(q, 0, 0, 0)
	s.wantCounts(dlq, 2, 0, 0)
	want := map[ids.ID]string{ms[0].MessageID: "cannot parse", ms[1].MessageID: engine.DefaultDLQReason}
	for _, m := range s.receive(dlq, 10, time.Minute) {
		if m.DeadLetter == nil || m.DeadLetter.Reason != want[m.MessageID] || m.DeadLetter.SourceQueue != q.ID {
			t.Fatalf("message %s dead-letter info %+v, want reason %q", m.MessageID, m.DeadLetter, want[m.MessageID])
		}
		wantTime(t, "DeadLetter.At", m.DeadLetter.At, at)
		if m.ReceiveCount != 1 {
			t.Fatalf("receiveCount %d in the dead-letter queue, want 1", m.ReceiveCount)
		}
		delete(want, m.MessageID)
	}
	if len(want) != 0 {
		t.Fatalf("not in the dead-letter queue: %v", want)
	}
}

func testDeadLetterNoRedrive(t *testing.T, s *suite) {
	q := s.queue()
	s.send(q, "m")
	m := s.receiveOne(q, time.Minute)
	wantNil(t, "dead-letter", s.deadLetter(q, m.Delivery, "x"))
	s.wantCounts(q, 0, 0, 0)
	s.clk.Advance(time.Hour)
	s.receiveNone(q)
}

func testRetentionLazy(t *testing.T, s *suite) {
	q := s.queue(withRetention(time.Minute))
	s.send(q, "old")
	s.clk.Advance(30 * time.Second)
	s.send(q, "young")
	s.clk.Advance(30 * time.Second)
	m := s.receiveOne(q, time.Minute) // "old" expired just now
	if m.Body != "young" {
		t.Fatalf("received %q, want young", m.Body)
	}
	s.receiveNone(q)
	s.wantCounts(q, 0, 1, 0)
	s.clk.Advance(30 * time.Second)
	wantStale(t, "ack after expiry", s.ack(q, m.Delivery)[0])
	s.receiveNone(q)
	s.wantCounts(q, 0, 0, 0)
	wantNil(t, "sweep", s.e.Sweep(s.ctx, []engine.Queue{q}))
	s.wantCounts(q, 0, 0, 0)
}

func testRetentionSweep(t *testing.T, s *suite) {
	q := s.queue(withRetention(time.Minute))
	s.send(q, "a", "b", "c")
	s.receiveOne(q, time.Hour)
	d := 10 * time.Minute
	s.sendMsgs(q, engine.Message{Body: "delayed", Delay: &d})
	s.wantCounts(q, 2, 1, 1)
	s.clk.Advance(time.Minute)
	wantNil(t, "sweep", s.e.Sweep(s.ctx, []engine.Queue{q}))
	s.wantCounts(q, 0, 0, 0)
	st := s.stats(q)
	if !st.OldestSentAt.IsZero() {
		t.Fatalf("OldestSentAt %s of an empty queue", st.OldestSentAt)
	}
	wantNil(t, "second sweep", s.e.Sweep(s.ctx, []engine.Queue{q}))
}

// testRetentionShortened: a new retention applies to messages sent from then on (docs/api-tour.md),
// so after it is shortened newer messages expire before older ones, and both are removed on time.
func testRetentionShortened(t *testing.T, s *suite) {
	q := s.queue(withRetention(time.Hour))
	s.send(q, "long-1", "long-2")
	s.clk.Advance(time.Second)
	q.Retention = time.Minute
	s.send(q, "short-1", "short-2")
	s.clk.Advance(time.Second)
	q.Retention = time.Hour
	s.send(q, "long-3")
	s.wantCounts(q, 5, 0, 0)
	s.clk.Advance(time.Minute)
	wantNil(t, "sweep", s.e.Sweep(s.ctx, []engine.Queue{q}))
	s.wantCounts(q, 3, 0, 0)
	got := bodies(s.receive(q, 10, time.Minute))
	slices.Sort(got)
	if !slices.Equal(got, []string{"long-1", "long-2", "long-3"}) {
		t.Fatalf("received %v after the short retention ended, want the three long ones", got)
	}
	s.clk.Advance(time.Hour)
	wantNil(t, "sweep", s.e.Sweep(s.ctx, []engine.Queue{q}))
	s.wantCounts(q, 0, 0, 0)

	// Expired messages are never delivered, even before a sweep.
	q.Retention = time.Hour
	s.send(q, "later-long")
	q.Retention = time.Minute
	s.send(q, "later-short")
	s.clk.Advance(time.Minute)
	if got := bodies(s.receive(q, 10, time.Minute)); !slices.Equal(got, []string{"later-long"}) {
		t.Fatalf("received %v, want only later-long", got)
	}
}

func testPurge(t *testing.T, s *suite) {
	q := s.queue()
	s.send(q, "a", "b")
	d := time.Minute
	s.sendMsgs(q, engine.Message{Body: "delayed", Delay: &d})
	inflight := s.receiveOne(q, time.Hour)
	w, cancel := s.e.Watch(q.ID)
	defer cancel()
	wantNil(t, "purge", s.e.Purge(s.ctx, q))
	waitSignal(t, w, "purge")
	s.wantCounts(q, 0, 0, 0)
	wantStale(t, "ack after purge", s.ack(q, inflight.Delivery)[0])
	s.send(q, "after")
	if m := s.receiveOne(q, time.Minute); m.Body != "after" {
		t.Fatalf("received %q after the purge", m.Body)
	}
	s.clk.Advance(time.Hour)
	if m := s.receiveOne(q, time.Minute); m.Body != "after" {
		t.Fatalf("received %q after the purge", m.Body)
	}

	other := s.queue()
	wantNil(t, "purge of another queue", s.e.Purge(s.ctx, other))
	s.clk.Advance(20 * time.Second)
	err := s.e.Purge(s.ctx, other)
	wantIs(t, "second purge within 60 s", err, engine.ErrPurgeTooSoon)
	var r *engine.Refusal
	if !errors.As(err, &r) || r.Wait != 40*time.Second {
		t.Fatalf("second purge: %#v, want a wait of 40s", err)
	}
	s.clk.Advance(40 * time.Second)
	wantNil(t, "purge after 60 s", s.e.Purge(s.ctx, other))
}

func testDeleteQueue(t *testing.T, s *suite) {
	q := s.queue()
	s.send(q, "a", "b")
	m := s.receiveOne(q, time.Hour)
	w, cancel := s.e.Watch(q.ID)
	defer cancel()
	wantNil(t, "delete", s.e.DeleteQueue(s.ctx, q.ID))
	waitSignal(t, w, "delete")
	wantStale(t, "ack after delete", s.ack(q, m.Delivery)[0])
	s.wantCounts(q, 0, 0, 0)
	s.receiveNone(q)
	wantNil(t, "delete again", s.e.DeleteQueue(s.ctx, q.ID))
}

func testCounts(t *testing.T, s *suite) {
	q := s.queue()
	st := s.stats(q)
	if st.Partitions < 1 || !st.OldestSentAt.IsZero() {
		t.Fatalf("empty queue stats %+v", st)
	}
	first := s.clk.Now()
	s.send(q, "v1")
	s.clk.Advance(time.Second)
	s.send(q, "v2", "v3", "f1")
	d := time.Minute
	s.sendMsgs(q, engine.Message{Body: "d1", Delay: &d}, engine.Message{Body: "d2", Delay: &d})
	s.wantCounts(q, 4, 0, 2)
	ms := s.receive(q, 2, 10*time.Second)
	if len(ms) != 2 {
		t.Fatalf("received %d, want 2", len(ms))
	}
	s.wantCounts(q, 2, 2, 2)
	wantNil(t, "retry after", s.changeVis(q, ms[0].Delivery, time.Hour))
	s.clk.Advance(10 * time.Second) // ms[1]'s deadline passes: visible again
	s.wantCounts(q, 3, 1, 2)
	st = s.stats(q)
	wantTime(t, "OldestSentAt", st.OldestSentAt, first)
	s.clk.Advance(time.Minute) // the delays end
	s.wantCounts(q, 5, 1, 0)
	wantNil(t, "ack", s.ack(q, ms[0].Delivery)[0])
	s.wantCounts(q, 5, 0, 0)
}

func testBrowse(t *testing.T, s *suite) {
	q := s.queue()
	var visible, inflight, delayed []string
	for i := range 5 {
		visible = append(visible, fmt.Sprintf("visible-%d", i))
	}
	s.send(q, visible...)
	for i := range 3 {
		inflight = append(inflight, fmt.Sprintf("inflight-%d", i))
	}
	s.send(q, inflight...)
	d := time.Hour
	for i := range 4 {
		b := fmt.Sprintf("delayed-%d", i)
		delayed = append(delayed, b)
		s.sendMsgs(q, engine.Message{Body: b, Delay: &d, Attributes: map[string]string{"n": b}})
	}
	// Receive everything visible, release the visible ones again (they then live among the
	// received messages) and keep the in-flight ones.
	ms := s.receive(q, 10, time.Minute)
	if len(ms) != 8 {
		t.Fatalf("received %d, want 8", len(ms))
	}
	for _, m := range ms {
		if strings.HasPrefix(m.Body, "visible") {
			wantNil(t, "release", s.changeVis(q, m.Delivery, 0))
		}
	}
	s.send(q, "visible-new") // and one never received
	visible = append(visible, "visible-new")

	for _, tc := range []struct {
		state engine.State
		want  []string
	}{
		{engine.StateVisible, visible},
		{engine.StateInFlight, inflight},
		{engine.StateDelayed, delayed},
	} {
		for _, limit := range []int{1, 2, 3, 100} {
			var got []string
			cursor := ""
			for pages := 0; ; pages++ {
				if pages > 20 {
					t.Fatalf("%s limit %d: no end after 20 pages", tc.state, limit)
				}
				page, err := s.e.Browse(s.ctx, q, engine.BrowseRequest{State: tc.state, Limit: limit, Cursor: cursor})
				wantNil(t, "browse", err)
				if len(page.Messages) > limit {
					t.Fatalf("%s: page of %d, limit %d", tc.state, len(page.Messages), limit)
				}
				for _, m := range page.Messages {
					if m.State != tc.state || m.MessageID.IsZero() || m.SentAt.IsZero() {
						t.Fatalf("browsed %+v in state %s", m, tc.state)
					}
					if tc.state == engine.StateDelayed && m.Attributes["n"] != m.Body {
						t.Fatalf("browsed attributes %v of %q", m.Attributes, m.Body)
					}
					if tc.state == engine.StateInFlight && (m.ReceiveCount != 1 || !m.VisibleAt.After(s.clk.Now())) {
						t.Fatalf("browsed in-flight %+v", m)
					}
					got = append(got, m.Body)
				}
				if page.NextCursor == "" {
					break
				}
				cursor = page.NextCursor
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tc.want))
			if !slices.Equal(got, want) {
				t.Fatalf("browse %s with limit %d: %v, want %v", tc.state, limit, got, want)
			}
		}
	}
	// Browsing leases nothing.
	s.wantCounts(q, 6, 3, 4)

	_, err := s.e.Browse(s.ctx, q, engine.BrowseRequest{State: engine.StateVisible, Limit: 2, Cursor: "not a cursor"})
	wantRefusal(t, "browse with a bad cursor", err, engine.ErrBadCursor)
	page, err := s.e.Browse(s.ctx, q, engine.BrowseRequest{State: engine.StateVisible, Limit: 1})
	wantNil(t, "browse", err)
	_, err = s.e.Browse(s.ctx, q, engine.BrowseRequest{State: engine.StateDelayed, Limit: 1, Cursor: page.NextCursor})
	wantRefusal(t, "browse with another state's cursor", err, engine.ErrBadCursor)
	// An unknown state is the engine's sentinel (the API names the parameter, not the engine).
	if _, err = s.e.Browse(s.ctx, q, engine.BrowseRequest{State: "gone", Limit: 1}); !errors.Is(err, engine.ErrInvalidState) {
		t.Fatalf("browse of an unknown state: %v, want engine.ErrInvalidState", err)
	}
}

// browseAll pages through one state from cursor with the given page size.
func (s *suite) browseAll(q engine.Queue, state engine.State, limit int, cursor string) []string {
	s.t.Helper()
	var got []string
	for pages := 0; ; pages++ {
		if pages > 50 {
			s.t.Fatalf("browse %s: no end after 50 pages", state)
		}
		page, err := s.e.Browse(s.ctx, q, engine.BrowseRequest{State: state, Limit: limit, Cursor: cursor})
		wantNil(s.t, "browse", err)
		for _, m := range page.Messages {
			got = append(got, m.Body)
		}
		if page.NextCursor == "" {
			return got
		}
		cursor = page.NextCursor
	}
}

// testBrowseWhileReceiving: a cursor stays good while receives take messages from the front:
// the next page neither repeats nor skips a message still visible.
func testBrowseWhileReceiving(t *testing.T, s *suite) {
	q := s.queue()
	var all []string
	for i := range 8 {
		all = append(all, fmt.Sprintf("m-%d", i))
	}
	s.send(q, all...)
	page, err := s.e.Browse(s.ctx, q, engine.BrowseRequest{State: engine.StateVisible, Limit: 3})
	wantNil(t, "browse", err)
	if len(page.Messages) != 3 || page.NextCursor == "" {
		t.Fatalf("first page: %d messages, cursor %q", len(page.Messages), page.NextCursor)
	}
	seen := map[string]bool{}
	for _, m := range page.Messages {
		seen[m.Body] = true
	}
	taken := map[string]bool{}
	for _, m := range s.receive(q, 2, time.Hour) {
		taken[m.Body] = true
	}
	rest := s.browseAll(q, engine.StateVisible, 2, page.NextCursor)
	for _, b := range rest {
		if seen[b] || taken[b] {
			t.Fatalf("after the cursor: %q again (seen %v, received %v)", b, seen, taken)
		}
		seen[b] = true
	}
	for _, b := range all {
		if !seen[b] && !taken[b] {
			t.Fatalf("browse skipped %q (first page and rest %v, received %v)", b, seen, taken)
		}
	}
}

// testPurgeThenBrowse: a cursor from before a purge neither shows a purged message nor skips
// one sent after the purge.
func testPurgeThenBrowse(t *testing.T, s *suite) {
	q := s.queue()
	s.send(q, "a", "b", "c", "d")
	page, err := s.e.Browse(s.ctx, q, engine.BrowseRequest{State: engine.StateVisible, Limit: 2})
	wantNil(t, "browse", err)
	wantNil(t, "purge", s.e.Purge(s.ctx, q))
	s.send(q, "after-1", "after-2", "after-3")
	got := s.browseAll(q, engine.StateVisible, 10, page.NextCursor)
	slices.Sort(got)
	if !slices.Equal(got, []string{"after-1", "after-2", "after-3"}) {
		t.Fatalf("browse from a cursor taken before the purge: %v", got)
	}
	all := s.browseAll(q, engine.StateVisible, 10, "")
	slices.Sort(all)
	if !slices.Equal(all, []string{"after-1", "after-2", "after-3"}) {
		t.Fatalf("browse after the purge: %v", all)
	}
}

func waitSignal(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitTimeout):
		t.Fatalf("no wake-up after %s within %s", what, waitTimeout)
	}
}

func testWatch(t *testing.T, s *suite) {
	q := s.queue()
	ch, cancel := s.e.Watch(q.ID)
	ch2, cancel2 := s.e.Watch(q.ID)
	defer cancel2()
	s.send(q, "wake")
	waitSignal(t, ch, "send")
	waitSignal(t, ch2, "send (second watcher)")
	cancel()
	cancel() // idempotent
	d := time.Minute
	s.sendMsgs(q, engine.Message{Body: "delayed", Delay: &d})
	waitSignal(t, ch2, "a delayed send") // a long poll must learn the new earliest time
	// Signals coalesce and never block the sender.
	for range 5 {
		s.send(q, "more")
	}
	waitSignal(t, ch2, "sends")
}

func testReceiveMax(t *testing.T, s *suite) {
	q := s.queue()
	for range 2 {
		s.send(q, "1", "2", "3", "4", "5", "6", "7", "8", "9", "10")
	}
	seen := map[ids.ID]bool{}
	for _, tc := range []struct{ max, want int }{{3, 3}, {1, 1}, {engine.MaxBatch, engine.MaxBatch}, {engine.MaxBatch, 6}} {
		ms := s.receive(q, tc.max, time.Minute)
		if len(ms) != tc.want {
			t.Fatalf("receive Max %d got %d, want %d", tc.max, len(ms), tc.want)
		}
		for _, m := range ms {
			if seen[m.MessageID] {
				t.Fatalf("message %s received twice", m.MessageID)
			}
			seen[m.MessageID] = true
		}
	}
	s.receiveNone(q)
}

func testConcurrentConsumers(t *testing.T, s *suite) {
	q := s.queue()
	const total = 300
	want := map[ids.ID]bool{}
	for range total / engine.MaxBatch {
		bodies := make([]string, engine.MaxBatch)
		for i := range bodies {
			bodies[i] = "m"
		}
		for _, id := range s.send(q, bodies...) {
			want[id] = true
		}
	}
	var (
		mu         sync.Mutex
		got        = map[ids.ID]int{}
		deliveries int
		errs       []error
		wg         sync.WaitGroup
	)
	for range 8 {
		wg.Go(func() {
			for {
				res, err := s.e.Receive(s.ctx, q, engine.ReceiveRequest{Max: 3, Visibility: time.Hour})
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				if len(res.Messages) == 0 {
					return
				}
				ds := make([]engine.Delivery, len(res.Messages))
				mu.Lock()
				for i, m := range res.Messages {
					got[m.MessageID]++
					deliveries++
					ds[i] = m.Delivery
				}
				runaway := deliveries > 2*total // a broken engine must fail the test, not hang it
				mu.Unlock()
				if runaway {
					return
				}
				if i := len(ds) / 2; i > 0 { // ack half; the rest stay in flight
					if _, err := s.e.Ack(s.ctx, q, ds[:i]); err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
					}
				}
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("consumers failed: %v", errors.Join(errs...))
	}
	for id, n := range got {
		if n != 1 {
			t.Fatalf("message %s received %d times while in flight", id, n)
		}
		if !want[id] {
			t.Fatalf("received unknown message %s", id)
		}
	}
	if len(got) != total {
		t.Fatalf("received %d distinct messages, want %d", len(got), total)
	}
}

func testNextVisibleAt(t *testing.T, s *suite) {
	q := s.queue()
	res, err := s.e.Receive(s.ctx, q, engine.ReceiveRequest{Max: 1, Visibility: time.Minute})
	wantNil(t, "receive", err)
	if len(res.Messages) != 0 || !res.NextVisibleAt.IsZero() {
		t.Fatalf("empty queue answered %+v", res)
	}
	s.send(q, "m")
	s.receiveOne(q, 45*time.Second)
	res, err = s.e.Receive(s.ctx, q, engine.ReceiveRequest{Max: 1, Visibility: time.Minute})
	wantNil(t, "receive", err)
	wantTime(t, "NextVisibleAt", res.NextVisibleAt, s.clk.Now().Add(45*time.Second))
}

func testGroupsOnStandard(t *testing.T, s *suite) {
	q := s.queue()
	_, err := s.e.Groups(s.ctx, q, 10, "", "")
	wantRefusal(t, "groups of a standard queue", err, engine.ErrNoGroups)
	wantRefusal(t, "purge group of a standard queue", s.e.PurgeGroup(s.ctx, q, "g"), engine.ErrNoGroups)
}

func testPartitionGrowth(t *testing.T, h Harness) {
	if h.NewWithPartitionRate == nil {
		t.Skip("the engine has no partitions")
	}
	e, clk := h.NewWithPartitionRate(t, 5)
	s := &suite{t: t, e: e, clk: clk, ctx: context.Background()}
	q := s.queue()
	want := map[ids.ID]bool{}
	for range 20 {
		for range 3 {
			for _, id := range s.send(q, "0", "1", "2", "3", "4", "5", "6", "7", "8", "9") {
				want[id] = true
			}
		}
		clk.Advance(1100 * time.Millisecond)
	}
	st := s.stats(q)
	if st.Partitions < 2 || st.Partitions > engine.MaxPartitions {
		t.Fatalf("partitions = %d after 30 messages/s against a rate of 5, want growth", st.Partitions)
	}
	if st.Visible != int64(len(want)) {
		t.Fatalf("visible = %d over %d partitions, want %d", st.Visible, st.Partitions, len(want))
	}
	used := map[int]bool{}
	for len(want) > 0 {
		ms := s.receive(q, engine.MaxBatch, time.Hour)
		if len(ms) == 0 {
			t.Fatalf("receive found nothing with %d messages left over %d partitions", len(want), st.Partitions)
		}
		ds := make([]engine.Delivery, len(ms))
		for i, m := range ms {
			if !want[m.MessageID] {
				t.Fatalf("message %s received twice or unknown", m.MessageID)
			}
			delete(want, m.MessageID)
			used[m.Partition] = true
			ds[i] = m.Delivery
		}
		for i, err := range s.ack(q, ds...) {
			wantNil(t, fmt.Sprintf("ack %d", i), err)
		}
	}
	if len(used) < 2 {
		t.Fatalf("messages came from %d partition(s), want several", len(used))
	}
	s.wantCounts(q, 0, 0, 0)
}
