package enginetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// lifecycleTests are the conformance cases of conflation, long delays and delete by id
// (docs/lifecycle.md) (the concurrency case is in conflaterace.go).
func lifecycleTests(h Harness) []struct {
	name string
	fn   func(t *testing.T, s *suite)
} {
	return []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"ConflateReplace", testConflateReplace},
		{"ConflateKeepsDelay", testConflateKeepsDelay},
		{"ConflatePatch", testConflatePatch},
		{"ConflatePatchNotObject", testConflatePatchNotObject},
		{"ConflatePatchOverQueueLimit", testConflatePatchOverQueueLimit},
		{"ConflateBatchInOrder", testConflateBatchInOrder},
		{"ConflateKeyFreed", testConflateKeyFreed},
		{"ConflateStoredBytes", func(t *testing.T, s *suite) { testConflateStoredBytes(t, s, h) }},
		{"ConflateConcurrent", testConflateConcurrent},
		{"ConflateAcrossPartitionGrowth", func(t *testing.T, s *suite) { testConflateGrowth(t, h) }},
		{"LongDelay", testLongDelay},
		{"DeleteMessage", testDeleteMessage},
		{"DeleteMessageDeepInBacklog", testDeleteDeep},
		{"DeleteMessageKeepsOrder", testDeleteKeepsOrder},
		{"DeleteMessageFIFO", testDeleteFIFO},
		{"DeleteMessageStoredBytes", func(t *testing.T, s *suite) { testDeleteStoredBytes(t, s, h) }},
	}
}

func keyedMsg(key, body string, merge engine.MergeMode, attrs map[string]string) engine.Message {
	return engine.Message{Body: body, Key: key, Merge: merge, Attributes: attrs}
}

// sendKeyed sends and checks each result's merged flag.
func (s *suite) sendKeyed(q engine.Queue, merged []bool, msgs ...engine.Message) []ids.ID {
	s.t.Helper()
	res := s.sendResults(q, msgs...)
	out := make([]ids.ID, len(res))
	for i, r := range res {
		if r.Err != nil || r.MessageID.IsZero() || r.Duplicate {
			s.t.Fatalf("Send result %d: %+v", i, r)
		}
		if r.Merged != merged[i] {
			s.t.Fatalf("Send result %d: merged %v, want %v", i, r.Merged, merged[i])
		}
		out[i] = r.MessageID
	}
	return out
}

func testConflateReplace(t *testing.T, s *suite) {
	q := s.queue()
	a := s.sendKeyed(q, []bool{false}, keyedMsg("K", "v1", engine.MergeReplace, map[string]string{"x": "1", "y": "1"}))
	s.send(q, "other")
	b := s.sendKeyed(q, []bool{true}, keyedMsg("K", "v2", engine.MergeReplace, map[string]string{"x": "2"}))
	if a[0] != b[0] {
		t.Fatalf("merged send answered %s, want the waiting message %s", b[0], a[0])
	}
	s.wantCounts(q, 2, 0, 0)
	ms := s.receive(q, engine.MaxBatch, time.Minute)
	if len(ms) != 2 || ms[0].MessageID != a[0] || ms[0].Body != "v2" || !reflect.DeepEqual(ms[0].Attributes, map[string]string{"x": "2"}) || ms[0].ReceiveCount != 1 {
		t.Fatalf("received %+v, want the keyed message first (its place), body v2, attributes {x:2}", ms)
	}
	// In flight: the key's next send is a new message.
	c := s.sendKeyed(q, []bool{false}, keyedMsg("K", "v3", engine.MergeReplace, nil))
	if c[0] == a[0] {
		t.Fatal("a send while the key's message is in flight merged into it")
	}
	// Released, the first message waits again but was delivered: not merged into either.
	wantNil(t, "release", s.changeVis(q, ms[0].Delivery, 0))
	d := s.sendKeyed(q, []bool{true}, keyedMsg("K", "v4", engine.MergeReplace, nil))
	if d[0] != c[0] {
		t.Fatalf("merged into %s, want the never-delivered %s", d[0], c[0])
	}
	got := map[string]string{}
	for _, m := range s.receive(q, engine.MaxBatch, time.Minute) {
		got[m.MessageID.String()] = m.Body
	}
	if want := map[string]string{a[0].String(): "v2", c[0].String(): "v4"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("received %v, want %v", got, want)
	}
}

func testConflateKeepsDelay(t *testing.T, s *suite) {
	q := s.queue()
	hour := time.Hour
	m := keyedMsg("K", "v1", engine.MergeReplace, nil)
	m.Delay = &hour
	a := s.sendKeyed(q, []bool{false}, m)
	zero := time.Duration(0)
	m2 := keyedMsg("K", "v2", engine.MergeReplace, nil)
	m2.Delay = &zero
	if b := s.sendKeyed(q, []bool{true}, m2); b[0] != a[0] {
		t.Fatalf("merged into %s, want %s", b[0], a[0])
	}
	s.wantCounts(q, 0, 0, 1)
	s.receiveNone(q)
	s.clk.Advance(hour)
	got := s.receiveOne(q, time.Minute)
	if got.MessageID != a[0] || got.Body != "v2" {
		t.Fatalf("received %s %q, want %s v2 after its delay", got.MessageID, got.Body, a[0])
	}
}

func bodyJSON(t *testing.T, body string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("body %q is not a JSON object: %v", body, err)
	}
	return v
}

func testConflatePatch(t *testing.T, s *suite) {
	q := s.queue()
	a := s.sendKeyed(q, []bool{false}, keyedMsg("K", `{"a":1,"b":{"c":2,"k":12345678901234567890},"z":[]}`, engine.MergePatch, map[string]string{"x": "1", "y": "1"}))
	b := s.sendKeyed(q, []bool{true}, keyedMsg("K", `{"b":{"c":null,"d":3},"e":"é"}`, engine.MergePatch, map[string]string{"x": "2", "w": "3"}))
	if a[0] != b[0] {
		t.Fatalf("merged into %s, want %s", b[0], a[0])
	}
	got := s.receiveOne(q, time.Minute)
	want := `{"a":1,"b":{"k":12345678901234567890,"d":3},"z":[],"e":"é"}`
	if got.Body != want {
		t.Fatalf("body %s, want %s", got.Body, want)
	}
	if wa := map[string]string{"x": "2", "y": "1", "w": "3"}; !reflect.DeepEqual(got.Attributes, wa) {
		t.Fatalf("attributes %v, want %v", got.Attributes, wa)
	}
}

func testConflatePatchNotObject(t *testing.T, s *suite) {
	q := s.queue()
	a := s.sendKeyed(q, []bool{false}, keyedMsg("K", "plain text", engine.MergeReplace, nil))
	res := s.sendResults(q, keyedMsg("K", `{"a":1}`, engine.MergePatch, nil), keyedMsg("J", `{"a":1}`, engine.MergePatch, nil))
	if !errors.Is(res[0].Err, engine.ErrPatchWaitingNotObject) {
		t.Fatalf("patch onto a non-JSON waiting body: %+v, want engine.ErrPatchWaitingNotObject", res[0])
	}
	if res[1].Err != nil || res[1].Merged {
		t.Fatalf("the other message of the send: %+v, want stored", res[1])
	}
	res = s.sendResults(q, keyedMsg("J", `[1]`, engine.MergePatch, nil))
	if !errors.Is(res[0].Err, engine.ErrPatchNotObject) {
		t.Fatalf("a patch that is not an object: %+v, want engine.ErrPatchNotObject", res[0])
	}
	// Nothing changed: the waiting bodies are as sent.
	got := map[ids.ID]string{}
	for _, m := range s.receive(q, engine.MaxBatch, time.Minute) {
		got[m.MessageID] = m.Body
	}
	if len(got) != 2 || got[a[0]] != "plain text" || got[res[0].MessageID] != "" {
		t.Fatalf("received %v", got)
	}
}

// testConflatePatchOverQueueLimit: a patch merge whose result passes the queue's own
// maxMessageBytes (docs/api-tour.md) fails that message with the limit quoted and changes nothing;
// the same merge in a queue of the ceiling is stored.
func testConflatePatchOverQueueLimit(t *testing.T, s *suite) {
	small := s.queue(func(q *engine.Queue) { q.MaxMessageBytes = 1024 })
	wide := s.queue()
	first := keyedMsg("K", `{"a":"`+strings.Repeat("x", 600)+`"}`, engine.MergePatch, nil)
	second := keyedMsg("K", `{"b":"`+strings.Repeat("y", 600)+`"}`, engine.MergePatch, nil)
	for _, q := range []engine.Queue{small, wide} {
		s.sendKeyed(q, []bool{false}, first)
	}
	res := s.sendResults(small, second)
	var r *engine.Refusal
	if !errors.As(res[0].Err, &r) || r.Err != engine.ErrMergedTooLarge || r.Limit != 1024 || r.N <= 1024 {
		t.Fatalf("a merge past the queue's 1,024 bytes: %+v, want engine.ErrMergedTooLarge quoting 1024", res[0])
	}
	if got := s.receiveOne(small, time.Minute); got.Body != first.Body {
		t.Fatalf("the waiting message changed to %d bytes", len(got.Body))
	}
	s.sendKeyed(wide, []bool{true}, second)
	if got := s.receiveOne(wide, time.Minute); len(got.Body) <= 1024 {
		t.Fatalf("the merge in a queue of the ceiling: %d bytes", len(got.Body))
	}
}

func testConflateBatchInOrder(t *testing.T, s *suite) {
	q := s.queue()
	ids := s.sendKeyed(q, []bool{false, true, false, true, true},
		keyedMsg("K", `{"n":1}`, engine.MergePatch, nil),
		keyedMsg("K", `{"m":2}`, engine.MergePatch, nil),
		keyedMsg("J", "x", engine.MergeReplace, nil),
		keyedMsg("K", `{"n":3}`, engine.MergePatch, map[string]string{"a": "1"}),
		keyedMsg("J", "y", engine.MergeReplace, nil))
	if ids[0] != ids[1] || ids[0] != ids[3] || ids[2] != ids[4] || ids[0] == ids[2] {
		t.Fatalf("ids %v: want K's sends on one message and J's on another", ids)
	}
	got := map[string]string{}
	for _, m := range s.receive(q, engine.MaxBatch, time.Minute) {
		got[m.Body] = m.Attributes["a"]
	}
	if want := map[string]string{`{"n":3,"m":2}`: "1", "y": ""}; !reflect.DeepEqual(got, want) {
		t.Fatalf("received %v, want %v", got, want)
	}
}

// testConflateKeyFreed: once a keyed message leaves the waiting state, the key's next send
// stores a new message, whichever way it left.
func testConflateKeyFreed(t *testing.T, s *suite) {
	q := s.queue(withRetention(time.Hour))
	leave := map[string]func(id ids.ID){
		"ack": func(ids.ID) {
			m := s.receiveOne(q, time.Minute)
			wantNil(t, "ack", s.ack(q, m.Delivery)[0])
		},
		"delete": func(id ids.ID) { wantNil(t, "delete", s.e.DeleteMessage(s.ctx, q, id)) },
		"purge": func(ids.ID) {
			wantNil(t, "purge", s.e.Purge(s.ctx, q))
			s.clk.Advance(engine.PurgeInterval)
		},
		"expiry": func(ids.ID) {
			s.clk.Advance(time.Hour)
			wantNil(t, "sweep", s.e.Sweep(s.ctx, []engine.Queue{q}))
		},
	}
	for _, how := range []string{"ack", "delete", "purge", "expiry"} {
		a := s.sendKeyed(q, []bool{false}, keyedMsg("K", "before "+how, engine.MergeReplace, nil))
		leave[how](a[0])
		b := s.sendKeyed(q, []bool{false}, keyedMsg("K", "after "+how, engine.MergeReplace, nil))
		if a[0] == b[0] {
			t.Fatalf("after %s: the key's send merged into the message that left", how)
		}
		got := s.receiveOne(q, time.Minute)
		if got.MessageID != b[0] || got.Body != "after "+how {
			t.Fatalf("after %s: received %s %q, want %s", how, got.MessageID, got.Body, b[0])
		}
		wantNil(t, "ack", s.ack(q, got.Delivery)[0])
	}
}

func testConflateStoredBytes(t *testing.T, s *suite, h Harness) {
	b := &bytesSuite{suite: s, h: h, project: ids.New()}
	q := b.queue()
	b.sendKeyed(q, []bool{false}, keyedMsg("K", `{"a":"xx"}`, engine.MergePatch, map[string]string{"k": "v"}))
	b.want("keyed send", 10+2)
	b.sendKeyed(q, []bool{true}, keyedMsg("K", `{"b":1}`, engine.MergePatch, nil))
	b.want("patch", int64(len(`{"a":"xx","b":1}`))+2)
	b.sendKeyed(q, []bool{true}, keyedMsg("K", "z", engine.MergeReplace, nil))
	b.want("replace", 1)
	m := b.receiveOne(q, time.Minute)
	b.ack(q, m.Delivery)
	b.want("ack", 0)
}

// testConflateGrowth: a key keeps one message while the queue gains partitions.
func testConflateGrowth(t *testing.T, h Harness) {
	if h.NewWithPartitionRate == nil {
		t.Skip("the engine has no partitions")
	}
	e, clk := h.NewWithPartitionRate(t, 5)
	s := &suite{t: t, e: e, clk: clk, ctx: t.Context()}
	q := s.queue()
	keys := 20
	first := map[string]ids.ID{}
	for round := range 12 {
		msgs := make([]engine.Message, 0, 10)
		for k := range keys {
			msgs = append(msgs, keyedMsg(fmt.Sprintf("key-%d", k), fmt.Sprintf(`{"r%d":%d}`, round, round), engine.MergePatch, nil))
			if len(msgs) == 10 {
				for i, r := range s.sendResults(q, msgs...) {
					key := msgs[i].Key
					if r.Err != nil {
						t.Fatalf("round %d %s: %v", round, key, r.Err)
					}
					if id, ok := first[key]; ok && (r.MessageID != id || !r.Merged) {
						t.Fatalf("round %d %s: answered %s merged %v, want %s merged", round, key, r.MessageID, r.Merged, id)
					}
					first[key] = r.MessageID
				}
				msgs = msgs[:0]
			}
		}
		clk.Advance(1100 * time.Millisecond)
	}
	if st := s.stats(q); st.Partitions < 2 {
		t.Fatalf("partitions = %d, want growth", st.Partitions)
	} else if st.Visible != int64(keys) {
		t.Fatalf("visible = %d over %d partitions, want one per key (%d)", st.Visible, st.Partitions, keys)
	}
	n := 0
	for {
		ms := s.receive(q, engine.MaxBatch, time.Hour)
		if len(ms) == 0 {
			break
		}
		for _, m := range ms {
			if len(bodyJSON(t, m.Body)) != 12 {
				t.Fatalf("message %s has %s, want all 12 rounds merged", m.MessageID, m.Body)
			}
			n++
		}
	}
	if n != keys {
		t.Fatalf("received %d messages, want %d", n, keys)
	}
}

func testLongDelay(t *testing.T, s *suite) {
	q := s.queue(withRetention(14 * 24 * time.Hour))
	d := 10 * 24 * time.Hour
	s.sendMsgs(q, engine.Message{Body: "later", Delay: &d})
	s.wantCounts(q, 0, 0, 1)
	res, err := s.e.Receive(s.ctx, q, engine.ReceiveRequest{Max: 1, Visibility: time.Minute})
	wantNil(t, "receive", err)
	if len(res.Messages) != 0 {
		t.Fatal("a message delayed 10 days was received at once")
	}
	wantTime(t, "NextVisibleAt", res.NextVisibleAt, s.clk.Now().Add(d))
	s.clk.Advance(d - time.Second)
	s.receiveNone(q)
	s.clk.Advance(time.Second)
	if m := s.receiveOne(q, time.Minute); m.Body != "later" {
		t.Fatalf("received %q", m.Body)
	}
}

func testDeleteMessage(t *testing.T, s *suite) {
	q := s.queue()
	hour := time.Hour
	ids3 := s.sendMsgs(q, engine.Message{Body: "a"}, engine.Message{Body: "b"}, engine.Message{Body: "c", Delay: &hour})
	keyedID := s.sendKeyed(q, []bool{false}, keyedMsg("K", "k", engine.MergeReplace, nil))[0]
	wantNil(t, "delete visible", s.e.DeleteMessage(s.ctx, q, ids3[1]))
	wantNil(t, "delete delayed", s.e.DeleteMessage(s.ctx, q, ids3[2]))
	wantNil(t, "delete keyed", s.e.DeleteMessage(s.ctx, q, keyedID))
	s.wantCounts(q, 1, 0, 0)
	wantIs(t, "delete again", s.e.DeleteMessage(s.ctx, q, ids3[1]), engine.ErrNoMessage)
	wantIs(t, "delete unknown", s.e.DeleteMessage(s.ctx, q, ids.New()), engine.ErrNoMessage)
	m := s.receiveOne(q, time.Minute)
	if m.MessageID != ids3[0] {
		t.Fatalf("received %s, want the one left", m.Body)
	}
	wantIs(t, "delete in flight", s.e.DeleteMessage(s.ctx, q, m.MessageID), engine.ErrMessageInFlight)
	s.wantCounts(q, 0, 1, 0)
	// Its deadline passed, it is visible again: deletable.
	s.clk.Advance(time.Minute)
	wantNil(t, "delete after the deadline", s.e.DeleteMessage(s.ctx, q, m.MessageID))
	wantStale(t, "ack of a deleted message", s.ack(q, m.Delivery)[0])
	s.wantCounts(q, 0, 0, 0)
	s.receiveNone(q)
	other := s.queue()
	id := s.send(other, "x")[0]
	wantIs(t, "delete through another queue", s.e.DeleteMessage(s.ctx, q, id), engine.ErrNoMessage)
}

// testDeleteDeep deletes messages far down a backlog, past what one storage step looks at.
func testDeleteDeep(t *testing.T, s *suite) {
	q := s.queue()
	var all []ids.ID
	for b := range 105 {
		msgs := make([]engine.Message, 10)
		for i := range msgs {
			msgs[i] = engine.Message{Body: fmt.Sprint(b*10 + i)}
		}
		all = append(all, s.sendMsgs(q, msgs...)...)
	}
	for _, i := range []int{1049, 500, 0} {
		wantNil(t, fmt.Sprint("delete ", i), s.e.DeleteMessage(s.ctx, q, all[i]))
	}
	s.wantCounts(q, int64(len(all)-3), 0, 0)
	seen := 0
	for {
		ms := s.receive(q, engine.MaxBatch, time.Hour)
		if len(ms) == 0 {
			break
		}
		for _, m := range ms {
			if m.Body == "1049" || m.Body == "500" || m.Body == "0" {
				t.Fatalf("deleted message %s received", m.Body)
			}
			seen++
		}
	}
	if seen != len(all)-3 {
		t.Fatalf("received %d, want %d", seen, len(all)-3)
	}
}

// testDeleteKeepsOrder: deletes by id, of a message deep in the backlog and of an unknown id,
// change nothing else: every other message is received once, oldest first, before and after
// the sends that follow.
func testDeleteKeepsOrder(t *testing.T, s *suite) {
	q := s.queue()
	var all []ids.ID
	send := func(from, to int) {
		for b := from; b < to; b += 10 {
			msgs := make([]engine.Message, 0, 10)
			for i := b; i < min(b+10, to); i++ {
				msgs = append(msgs, engine.Message{Body: fmt.Sprint(i)})
			}
			all = append(all, s.sendMsgs(q, msgs...)...)
			s.clk.Advance(time.Millisecond)
		}
	}
	send(0, 250)
	wantNil(t, "delete 180", s.e.DeleteMessage(s.ctx, q, all[180]))
	for range 3 {
		wantIs(t, "delete unknown", s.e.DeleteMessage(s.ctx, q, ids.New()), engine.ErrNoMessage)
	}
	send(250, 260)
	wantIs(t, "delete unknown after more sends", s.e.DeleteMessage(s.ctx, q, ids.New()), engine.ErrNoMessage)
	send(260, 265)
	next := 0
	for {
		ms := s.receive(q, engine.MaxBatch, time.Hour)
		if len(ms) == 0 {
			break
		}
		for _, m := range ms {
			if next == 180 {
				next++
			}
			if m.Body != fmt.Sprint(next) {
				t.Fatalf("received %s, want %d (oldest first, 180 deleted)", m.Body, next)
			}
			next++
		}
	}
	if next != 265 {
		t.Fatalf("received up to %d, want 265", next)
	}
}

func testDeleteFIFO(t *testing.T, s *suite) {
	q := s.queue(fifo)
	res := s.sendResults(q, engine.Message{Body: "1", GroupID: "g"}, engine.Message{Body: "2", GroupID: "g"}, engine.Message{Body: "3", GroupID: "g"})
	m := s.receiveOne(q, time.Minute)
	if m.Body != "1" {
		t.Fatalf("received %q, want 1", m.Body)
	}
	wantIs(t, "delete in flight", s.e.DeleteMessage(s.ctx, q, m.MessageID), engine.ErrMessageInFlight)
	wantNil(t, "delete the group's second", s.e.DeleteMessage(s.ctx, q, res[1].MessageID))
	wantNil(t, "ack", s.ack(q, m.Delivery)[0])
	if got := s.receive(q, engine.MaxBatch, time.Minute); len(got) != 1 || got[0].Body != "3" {
		t.Fatalf("received %v, want [3]", bodies(got))
	}
	wantIs(t, "delete acknowledged", s.e.DeleteMessage(s.ctx, q, m.MessageID), engine.ErrNoMessage)
}

func testDeleteStoredBytes(t *testing.T, s *suite, h Harness) {
	b := &bytesSuite{suite: s, h: h, project: ids.New()}
	q := b.queue()
	hour := time.Hour
	got := b.sendMsgs(q, engine.Message{Body: "aaa"}, engine.Message{Body: "bb", Delay: &hour, Attributes: map[string]string{"k": "v"}})
	b.want("send", 7)
	wantNil(t, "delete", b.e.DeleteMessage(b.ctx, q, got[0]))
	b.want("delete visible", 4)
	wantNil(t, "delete", b.e.DeleteMessage(b.ctx, q, got[1]))
	b.want("delete delayed", 0)
}
