package embeddedengine_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/engine/embeddedengine"
	"github.com/queueshq/queues/pkg/engine/enginetest"
	"github.com/queueshq/queues/pkg/ids"
)

// must returns v, panicking (so failing the test) on an error.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func noErrs(t *testing.T, what string, r settled) {
	t.Helper()
	errs, err := r.errs, r.err
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	for i, e := range errs {
		if e != nil {
			t.Fatalf("%s entry %d: %v", what, i, e)
		}
	}
}

// TestRestart writes every kind of state, closes the engine, reopens the same file and checks
// that the state is there: messages, in-flight deadlines and receive counts, acknowledgements,
// visibility changes, dead-letter moves, purges, fifo groups, dedup windows and sequence numbers.
func TestRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "messages.db")
	clk := enginetest.NewClock()
	e, err := embeddedengine.Open(path, clk, embeddedengine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	newQ := func(typ engine.Type, opts ...func(*engine.Queue)) engine.Queue {
		q := engine.Queue{ID: ids.New(), Type: typ, VisibilityTimeout: 30 * time.Second, Retention: 24 * time.Hour}
		for _, o := range opts {
			o(&q)
		}
		if err := e.CreateQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
		return q
	}
	dlq := newQ(engine.Standard)
	std := newQ(engine.Standard, func(q *engine.Queue) { q.Redrive = &engine.Redrive{DeadLetter: &dlq, MaxReceiveCount: 3} })
	purged := newQ(engine.Standard)
	fifo := newQ(engine.FIFO, func(q *engine.Queue) { q.ContentBasedDedup = true })

	msgs := func(bodies ...string) []engine.Message {
		out := make([]engine.Message, len(bodies))
		for i, b := range bodies {
			out[i] = engine.Message{Body: b, Attributes: map[string]string{"n": b}}
		}
		return out
	}
	must(e.Send(ctx, std, msgs("acked", "inflight", "released", "dead", "visible")))
	d := time.Hour
	must(e.Send(ctx, std, []engine.Message{{Body: "delayed", Delay: &d}}))
	got := must(e.Receive(ctx, std, engine.ReceiveRequest{Max: 10, Visibility: 10 * time.Minute})).Messages
	if len(got) != 5 {
		t.Fatalf("received %d, want 5", len(got))
	}
	by := map[string]engine.Received{}
	for _, m := range got {
		by[m.Body] = m
	}
	noErrs(t, "ack", must2(e.Ack(ctx, std, []engine.Delivery{by["acked"].Delivery})))
	noErrs(t, "release", must2(e.ChangeVisibility(ctx, std, []engine.VisibilityChange{
		{Delivery: by["released"].Delivery}, {Delivery: by["visible"].Delivery}})))
	noErrs(t, "retry after", must2(e.ChangeVisibility(ctx, std, []engine.VisibilityChange{
		{Delivery: by["inflight"].Delivery, Visibility: 20 * time.Minute}})))
	noErrs(t, "dead-letter", must2(e.DeadLetter(ctx, std, []engine.DeadLetterRequest{{Delivery: by["dead"].Delivery, Reason: "bad"}})))
	must(e.Send(ctx, purged, msgs("p1", "p2")))
	if err := e.Purge(ctx, purged); err != nil {
		t.Fatal(err)
	}
	must(e.Send(ctx, purged, msgs("after purge")))

	fm := []engine.Message{{Body: "f1", GroupID: "g"}, {Body: "f2", GroupID: "g"}, {Body: "f3", GroupID: "h", DedupID: "x"}}
	sent := must(e.Send(ctx, fifo, fm))
	fr := must(e.Receive(ctx, fifo, engine.ReceiveRequest{Max: 1, Visibility: time.Hour})).Messages
	if len(fr) != 1 || fr[0].Body != "f1" {
		t.Fatalf("fifo received %+v", fr)
	}
	lastSeq := uint64(0)
	for _, m := range must(e.Browse(ctx, fifo, engine.BrowseRequest{State: engine.StateVisible})).Messages {
		lastSeq = max(lastSeq, m.SequenceNumber)
	}
	before := must(e.Stats(ctx, std))
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	clk.Advance(30 * time.Second)
	e = open(t, path, clk)
	if err := e.Purge(ctx, purged); apierr.CodeOf(err) != apierr.PurgeTooSoon {
		t.Fatalf("second purge within 60 s of one before the restart: %v", err)
	}
	// The dedup windows hold (by dedup id, and by content).
	dup := must(e.Send(ctx, fifo, []engine.Message{{Body: "other body", GroupID: "h", DedupID: "x"}, {Body: "f1", GroupID: "z"}}))
	if !dup[0].Duplicate || dup[0].MessageID != sent[2].MessageID || !dup[1].Duplicate || dup[1].MessageID != sent[0].MessageID {
		t.Fatalf("dedup after restart: %+v", dup)
	}
	after := must(e.Stats(ctx, std))
	if after.Counts != before.Counts {
		t.Fatalf("counts after restart %+v, before %+v", after.Counts, before.Counts)
	}
	// released + visible come back with receiveCount 2; the in-flight ones stay in flight.
	got = must(e.Receive(ctx, std, engine.ReceiveRequest{Max: 10, Visibility: time.Hour})).Messages
	if len(got) != 2 {
		t.Fatalf("received %d after restart, want 2 (released, visible)", len(got))
	}
	for _, m := range got {
		if (m.Body != "released" && m.Body != "visible") || m.ReceiveCount != 2 || m.Attributes["n"] != m.Body {
			t.Fatalf("after restart received %+v", m)
		}
	}
	// The stale handle of a delivery before the restart stays stale; the current one works.
	errs, _ := e.Ack(ctx, std, []engine.Delivery{by["visible"].Delivery})
	if !errors.Is(errs[0], apierr.ErrStale) {
		t.Fatalf("old handle after restart: %v", errs[0])
	}
	// "inflight" (retried after 20 min) returns at its deadline, with its receive count.
	clk.Advance(10*time.Minute - time.Millisecond) // 11 min after the receive: the 10-minute deadline passed, but not the retry's
	if ms := must(e.Receive(ctx, std, engine.ReceiveRequest{Max: 10, Visibility: time.Hour})).Messages; len(ms) != 0 {
		t.Fatalf("received %q before its deadline", ms[0].Body)
	}
	clk.Advance(9*time.Minute + 30*time.Second + time.Millisecond)
	ms := must(e.Receive(ctx, std, engine.ReceiveRequest{Max: 10, Visibility: time.Hour})).Messages
	if len(ms) != 1 || ms[0].Body != "inflight" || ms[0].ReceiveCount != 2 {
		t.Fatalf("at the deadline received %+v, want inflight with receiveCount 2", ms)
	}
	// The dead-lettered message is in the dead-letter queue with its info.
	dm := must(e.Receive(ctx, dlq, engine.ReceiveRequest{Max: 10, Visibility: time.Hour})).Messages
	if len(dm) != 1 || dm[0].Body != "dead" || dm[0].DeadLetter == nil || dm[0].DeadLetter.Reason != "bad" || dm[0].ReceiveCount != 1 {
		t.Fatalf("dead-letter queue after restart: %+v", dm)
	}
	// The purge holds: only the message sent after it is there.
	pm := must(e.Receive(ctx, purged, engine.ReceiveRequest{Max: 10, Visibility: time.Hour})).Messages
	if len(pm) != 1 || pm[0].Body != "after purge" {
		t.Fatalf("purged queue after restart: %+v", pm)
	}
	// fifo: group g is blocked by f1 in flight; h's f3 is receivable; the dedup window holds.
	fr2 := must(e.Receive(ctx, fifo, engine.ReceiveRequest{Max: 10, Visibility: time.Hour})).Messages
	if len(fr2) != 1 || fr2[0].Body != "f3" || fr2[0].GroupID != "h" {
		t.Fatalf("fifo after restart received %+v, want f3 only", fr2)
	}
	noErrs(t, "ack f1", must2(e.Ack(ctx, fifo, []engine.Delivery{fr[0].Delivery})))
	next := must(e.Receive(ctx, fifo, engine.ReceiveRequest{Max: 10, Visibility: time.Hour})).Messages
	if len(next) != 1 || next[0].Body != "f2" {
		t.Fatalf("after acking f1 received %+v, want f2", next)
	}
	noErrs(t, "ack", must2(e.Ack(ctx, fifo, []engine.Delivery{next[0].Delivery, fr2[0].Delivery})))
	// Sequence numbers keep increasing across a restart of an emptied queue.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = open(t, path, clk)
	nr := must(e.Send(ctx, fifo, []engine.Message{{Body: "new", GroupID: "g"}}))
	m := must(e.Receive(ctx, fifo, engine.ReceiveRequest{Max: 1, Visibility: time.Hour})).Messages
	if len(m) != 1 || m[0].MessageID != nr[0].MessageID || m[0].SequenceNumber <= lastSeq {
		t.Fatalf("after restart received %+v, want sequence number above %d", m, lastSeq)
	}
	// The dedup window ended 5 minutes after the first send.
	again := must(e.Send(ctx, fifo, []engine.Message{{Body: "x", GroupID: "h", DedupID: "x"}}))
	if again[0].Duplicate {
		t.Fatal("dedup window outlived 5 minutes")
	}
}

type settled struct {
	errs []error
	err  error
}

func must2(errs []error, err error) settled { return settled{errs, err} }

// TestLargeRestart loads many messages and checks the index comes back whole.
func TestLargeRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "messages.db")
	clk := enginetest.NewClock()
	e, err := embeddedengine.Open(path, clk, embeddedengine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	q := engine.Queue{ID: ids.New(), Type: engine.Standard, Retention: time.Hour}
	const n = 5000
	for i := range n / 10 {
		ms := make([]engine.Message, 10)
		for j := range ms {
			ms[j] = engine.Message{Body: fmt.Sprint(i*10 + j)}
		}
		must(e.Send(ctx, q, ms))
	}
	must(e.Receive(ctx, q, engine.ReceiveRequest{Max: 10, Visibility: time.Minute}))
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = open(t, path, clk)
	st := must(e.Stats(ctx, q))
	if st.Visible != n-10 || st.InFlight != 10 {
		t.Fatalf("after restart %+v", st.Counts)
	}
}

// TestStoredBytesRestart: a project's stored bytes are rebuilt from the records at start-up,
// purged and acknowledged messages excluded, and a limit holds across the restart.
func TestStoredBytesRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "messages.db")
	clk := enginetest.NewClock()
	project := ids.New()
	e, err := embeddedengine.Open(path, clk, embeddedengine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	q := engine.Queue{ID: ids.New(), Project: project, Type: engine.Standard, VisibilityTimeout: 30 * time.Second,
		Retention: time.Hour, MaxStoredBytes: 20}
	purged := engine.Queue{ID: ids.New(), Project: project, Type: engine.Standard, Retention: time.Hour}
	for _, x := range []engine.Queue{q, purged} {
		if err := e.CreateQueue(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	must(e.Send(ctx, q, []engine.Message{{Body: "12345", Attributes: map[string]string{"ab": "cd"}}, {Body: "678"}}))
	must(e.Send(ctx, purged, []engine.Message{{Body: "gone"}}))
	if err := e.Purge(ctx, purged); err != nil {
		t.Fatal(err)
	}
	m := must(e.Receive(ctx, q, engine.ReceiveRequest{Max: 10, Visibility: time.Minute})).Messages
	for _, r := range m {
		if r.Body == "678" {
			must(e.Ack(ctx, q, []engine.Delivery{r.Delivery}))
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e, err = embeddedengine.Open(path, clk, embeddedengine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if n := must(e.StoredBytes(ctx, project)); n != 9 {
		t.Fatalf("StoredBytes after a restart = %d, want 9", n)
	}
	if _, err := e.Send(ctx, q, []engine.Message{{Body: "12345678901x"}}); !errors.Is(err, engine.ErrStoredBytesExceeded) {
		t.Fatalf("send past the limit after a restart: %v, want engine.ErrStoredBytesExceeded", err)
	}
	must(e.Send(ctx, q, []engine.Message{{Body: "12345678901"}}))
	if n := must(e.StoredBytes(ctx, project)); n != 20 {
		t.Fatalf("StoredBytes = %d, want 20", n)
	}
}

// TestPriorityRestart: priorities are in the records: after a restart the highest still goes
// first, a keyed one included (its record carries both the key and the priority).
func TestPriorityRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "messages.db")
	clk := enginetest.NewClock()
	e := open(t, path, clk)
	q := engine.Queue{ID: ids.New(), Type: engine.Standard, Retention: time.Hour}
	must(e.Send(ctx, q, []engine.Message{{Body: "low"}, {Body: "keyed", Key: "k", Priority: 3}, {Body: "high", Priority: 9}}))
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = open(t, path, clk)
	res := must(e.Receive(ctx, q, engine.ReceiveRequest{Max: 10, Visibility: time.Minute}))
	var got []string
	for _, m := range res.Messages {
		got = append(got, fmt.Sprintf("%s/%d", m.Body, m.Priority))
	}
	if fmt.Sprint(got) != "[high/9 keyed/3 low/0]" {
		t.Fatalf("after restart received %v, want [high/9 keyed/3 low/0]", got)
	}
}

// TestCancelRestart: a message's cancels survive a restart (the record's optional tail), with
// and without a priority before them.
func TestCancelRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "messages.db")
	clk := enginetest.NewClock()
	e := open(t, path, clk)
	q := engine.Queue{ID: ids.New(), Type: engine.Standard, Retention: time.Hour, MaxCancels: 1}
	must(e.Send(ctx, q, []engine.Message{{Body: "plain"}, {Body: "high", Priority: 5}}))
	res := must(e.Receive(ctx, q, engine.ReceiveRequest{Max: 10, Visibility: time.Minute}))
	var ds []engine.Delivery
	for _, m := range res.Messages {
		ds = append(ds, m.Delivery)
	}
	noErrs(t, "cancel", must2(e.Cancel(ctx, q, ds)))
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = open(t, path, clk)
	res = must(e.Receive(ctx, q, engine.ReceiveRequest{Max: 10, Visibility: time.Minute}))
	if len(res.Messages) != 2 {
		t.Fatalf("after restart received %d, want 2", len(res.Messages))
	}
	for _, m := range res.Messages {
		if m.ReceiveCount != 1 {
			t.Fatalf("%s: receiveCount %d after a cancel and a restart, want 1", m.Body, m.ReceiveCount)
		}
		noErrs(t, "the cancel beyond maxCancels", must2(e.Cancel(ctx, q, []engine.Delivery{m.Delivery})))
	}
	if st := must(e.Stats(ctx, q)); st.Visible+st.InFlight != 0 {
		t.Fatalf("after the second cancels: %+v", st)
	}
}

// TestRestartKeepsAttemptBase: a message dead-lettered and received there keeps its attempt
// base across a restart, so the handle it gets after the restart is not one of before.
func TestRestartKeepsAttemptBase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "messages.db")
	clk := enginetest.NewClock()
	e := must(embeddedengine.Open(path, clk, embeddedengine.Options{}))
	dlq := engine.Queue{ID: ids.New(), Type: engine.Standard, VisibilityTimeout: 30 * time.Second, Retention: 24 * time.Hour}
	q := dlq
	q.ID = ids.New()
	q.Redrive = &engine.Redrive{DeadLetter: &dlq, MaxReceiveCount: 5}
	for _, x := range []engine.Queue{dlq, q} {
		if err := e.CreateQueue(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	must(e.Send(ctx, q, []engine.Message{{Body: "x"}}))
	first := must(e.Receive(ctx, q, engine.ReceiveRequest{Max: 1, Visibility: time.Minute})).Messages[0]
	must(e.DeadLetter(ctx, q, []engine.DeadLetterRequest{{Delivery: first.Delivery}}))
	before := must(e.Receive(ctx, dlq, engine.ReceiveRequest{Max: 1, Visibility: time.Second})).Messages[0]
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	e = must(embeddedengine.Open(path, clk, embeddedengine.Options{}))
	defer e.Close()
	after := must(e.Receive(ctx, dlq, engine.ReceiveRequest{Max: 1, Visibility: time.Minute})).Messages
	if len(after) != 1 || after[0].Attempt != before.Attempt+1 || after[0].ReceiveCount != 2 {
		t.Fatalf("after the restart: %+v; want attempt %d, receiveCount 2", after, before.Attempt+1)
	}
}
