package enginetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/filter"
)

// filterTests are the conformance cases of filtered receive and browse
// (docs/delivery-options.md#filtered-receive-and-browse).
func filterTests(h Harness) []struct {
	name string
	fn   func(t *testing.T, s *suite)
} {
	return []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"FilterMatch", testFilterMatch},
		{"FilterLeavesOthersAlone", testFilterLeavesOthers},
		{"FilterCandidateBound", testFilterBound},
		{"FilterFIFO", testFilterFIFO},
		{"FilterBrowse", testFilterBrowse},
		{"FilterBrowseBound", testFilterBrowseBound},
		{"FilterBarrier", testFilterBarrier},
		{"FilterConsumer", testFilterConsumer},
		{"FilterPartitions", func(t *testing.T, _ *suite) { testFilterPartitions(t, h) }},
		{"FilterWake", testFilterWake},
	}
}

// amsg is a message with attributes given as name, value pairs.
func amsg(body string, kv ...string) engine.Message {
	m := engine.Message{Body: body, Attributes: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		m.Attributes[kv[i]] = kv[i+1]
	}
	return m
}

// flt is a filter of name, values pairs ("color", "red|blue" lists two values).
func flt(kv ...[]string) *filter.Filter {
	f := &filter.Filter{Attributes: map[string][]string{}}
	for _, p := range kv {
		f.Attributes[p[0]] = p[1:]
	}
	return f
}

func (s *suite) receiveF(q engine.Queue, f *filter.Filter, max int, vis time.Duration) engine.ReceiveResult {
	s.t.Helper()
	res, err := s.e.Receive(s.ctx, q, engine.ReceiveRequest{Max: max, Visibility: vis, Filter: f})
	if err != nil {
		s.t.Fatalf("filtered Receive: %v", err)
	}
	for _, m := range res.Messages {
		if !f.Match(m.Attributes) {
			s.t.Fatalf("filtered receive returned %q with attributes %v, which %v does not select", m.Body, m.Attributes, f.Attributes)
		}
	}
	return res
}

// wantF receives with a filter and wants exactly these bodies, in this order.
func (s *suite) wantF(q engine.Queue, f *filter.Filter, max int, want ...string) []engine.Received {
	s.t.Helper()
	res := s.receiveF(q, f, max, time.Minute)
	if got := bodies(res.Messages); !slices.Equal(got, want) {
		s.t.Fatalf("filtered receive (%v) took %q, want %q", f.Attributes, got, want)
	}
	if len(want) == 0 && !res.NextVisibleAt.IsZero() && !res.NextVisibleAt.After(s.clk.Now()) {
		// Unmatched messages are no reason to ask again at once: a long poll must wait.
		s.t.Fatalf("an empty filtered receive answered NextVisibleAt %v, not after now %v", res.NextVisibleAt, s.clk.Now())
	}
	return res.Messages
}

// testFilterMatch: every named attribute must match, a list matches any of its values, and
// a message without the attribute never matches; both for never-received messages and for
// ones back from flight (and delayed ones once visible).
func testFilterMatch(t *testing.T, s *suite) {
	q := s.queue()
	s.sendMsgs(q,
		amsg("red-s", "color", "red", "size", "s"),
		amsg("blue-l", "color", "blue", "size", "l"),
		amsg("none"),
		amsg("green-s", "color", "green", "size", "s"),
		amsg("red-l", "color", "red", "size", "l"),
		amsg("odd", "color", "a:b|c\x00d ünï", "size", "s"),
	)
	d := 2 * time.Second
	s.sendMsgs(q, engine.Message{Body: "red-s-delayed", Attributes: map[string]string{"color": "red", "size": "s"}, Delay: &d})
	s.wantF(q, flt([]string{"color", "purple"}), 10)
	s.wantF(q, flt([]string{"color", "red"}, []string{"size", "s"}), 10, "red-s")
	s.wantF(q, flt([]string{"color", "blue", "green"}), 10, "blue-l", "green-s")
	s.wantF(q, flt([]string{"color", "a:b|c\x00d ünï"}), 10, "odd")
	s.wantF(q, flt([]string{"size", "l", "s"}, []string{"color", "red", "x"}), 10, "red-l")
	s.wantF(q, flt([]string{"size", "s"}), 10)
	s.clk.Advance(3 * time.Second)
	got := s.wantF(q, flt([]string{"size", "s"}), 10, "red-s-delayed")
	// Back from flight (released) it is a candidate like any other.
	wantNil(t, "release", s.changeVis(q, got[0].Delivery, 0))
	s.wantF(q, flt([]string{"color", "blue"}), 10)
	again := s.wantF(q, flt([]string{"color", "red"}), 10, "red-s-delayed")
	if again[0].ReceiveCount != 2 {
		t.Fatalf("redelivered with receiveCount %d, want 2", again[0].ReceiveCount)
	}
	// What was left is what no filter took: the message without attributes.
	s.wantBodies(q, 10, time.Minute, "none")
}

// testFilterLeavesOthers: a message a filtered receive passes over keeps its state: it is not
// claimed (counts, visibility), its receiveCount is unchanged, and it is not dead-lettered
// even when it was received maxReceiveCount times already.
func testFilterLeavesOthers(t *testing.T, s *suite) {
	dlq := s.queue()
	q := s.queue(withRedrive(dlq, 1))
	s.sendMsgs(q, amsg("seen", "kind", "a"))
	first := s.receiveOne(q, time.Second)
	s.clk.Advance(2 * time.Second) // its deadline passes: visible, received once (= maxReceiveCount)
	s.sendMsgs(q, amsg("fresh", "kind", "a"), amsg("wanted", "kind", "b"))
	for range 3 {
		s.wantF(q, flt([]string{"kind", "c"}), 10)
	}
	got := s.wantF(q, flt([]string{"kind", "b"}), 10, "wanted")
	s.wantCounts(q, 2, 1, 0)
	s.wantCounts(dlq, 0, 0, 0)
	page, err := s.e.Browse(s.ctx, q, engine.BrowseRequest{State: engine.StateVisible, Limit: 10})
	wantNil(t, "browse", err)
	rc := map[string]int{}
	for _, m := range page.Messages {
		rc[m.Body] = m.ReceiveCount
	}
	if want := map[string]int{"seen": 1, "fresh": 0}; fmt.Sprint(rc) != fmt.Sprint(want) {
		t.Fatalf("visible after filtered receives: %v, want %v", rc, want)
	}
	// The old handle of "seen" is still its latest delivery: nothing received it meanwhile.
	wantNil(t, "ack of the untouched message's handle", s.ack(q, first.Delivery)[0])
	s.ackAll(q, got)
	fresh := s.receiveOne(q, time.Minute)
	if fresh.Body != "fresh" || fresh.ReceiveCount != 1 {
		t.Fatalf("then received %q with receiveCount %d, want fresh with 1", fresh.Body, fresh.ReceiveCount)
	}
}

// testFilterBound: a filtered receive examines at most filter.MaxCandidates candidates:
// with 1,001 unmatched messages ahead of the matching one it takes nothing, and once two of
// them left it takes the matching one.
func testFilterBound(t *testing.T, s *suite) {
	q := s.queue()
	n := filter.MaxCandidates + 1
	s.sendUnmatched(q, n)
	s.sendMsgs(q, amsg("wanted", "k", "want"))
	f := flt([]string{"k", "want"})
	s.wantF(q, f, 1)
	s.ackAll(q, s.wantBodies(q, 1, time.Minute, "other0"))
	s.wantF(q, f, 1) // 1,000 unmatched ahead: still beyond the bound
	s.ackAll(q, s.wantBodies(q, 1, time.Minute, "other1"))
	s.wantF(q, f, 1, "wanted")
	s.wantCounts(q, int64(n-2), 1, 0)
}

// testFilterFIFO: on a fifo queue only each available group's next message is a candidate;
// a group whose next message does not match gives nothing, and a group's batch ends at its
// first message that does not match, so no group's order is broken.
func testFilterFIFO(t *testing.T, s *suite) {
	q := s.queue(fifo)
	s.sendMsgs(q,
		engine.Message{Body: "a1", GroupID: "a", Attributes: map[string]string{"c": "red"}},
		engine.Message{Body: "b1", GroupID: "b", Attributes: map[string]string{"c": "blue"}},
		engine.Message{Body: "a2", GroupID: "a", Attributes: map[string]string{"c": "blue"}},
		engine.Message{Body: "c1", GroupID: "c", Attributes: map[string]string{"c": "red"}},
		engine.Message{Body: "c2", GroupID: "c", Attributes: map[string]string{"c": "red"}},
		engine.Message{Body: "b2", GroupID: "b", Attributes: map[string]string{"c": "red"}},
	)
	red, blue := flt([]string{"c", "red"}), flt([]string{"c", "blue"})
	gotRed := s.wantF(q, red, 10, "a1", "c1", "c2")
	for i, m := range gotRed {
		if i > 0 && m.SequenceNumber <= gotRed[i-1].SequenceNumber && m.GroupID == gotRed[i-1].GroupID {
			t.Fatalf("group order broken: %q after %q", m.Body, gotRed[i-1].Body)
		}
	}
	// a is locked by a1 in flight, c by its batch: only b's head is a candidate.
	gotBlue := s.wantF(q, blue, 10, "b1")
	s.wantF(q, red, 10) // b2 waits behind b1, a2 behind a1
	s.ackAll(q, gotRed[:1])
	s.wantF(q, red, 10) // a's head is a2 now: blue
	s.wantF(q, blue, 10, "a2")
	s.ackAll(q, gotBlue)
	s.wantF(q, red, 10, "b2")
}

// browseF pages through one state with a filter, checking every page's messages match and
// that the pages make progress; it answers the bodies and the number of pages.
func (s *suite) browseF(q engine.Queue, st engine.State, f *filter.Filter, limit int) ([]string, int) {
	s.t.Helper()
	var got []string
	cursor := ""
	for pages := 1; ; pages++ {
		if pages > 20 {
			s.t.Fatalf("filtered browse: no end after 20 pages")
		}
		page, err := s.e.Browse(s.ctx, q, engine.BrowseRequest{State: st, Limit: limit, Cursor: cursor, Filter: f})
		wantNil(s.t, "browse", err)
		if len(page.Messages) > limit {
			s.t.Fatalf("a page of limit %d holds %d", limit, len(page.Messages))
		}
		for _, m := range page.Messages {
			if !f.Match(m.Attributes) {
				s.t.Fatalf("filtered browse returned %q with %v", m.Body, m.Attributes)
			}
			got = append(got, m.Body)
		}
		if page.NextCursor == "" {
			return got, pages
		}
		if page.NextCursor == cursor {
			s.t.Fatalf("the cursor did not move: %q", cursor)
		}
		cursor = page.NextCursor
	}
}

// testFilterBrowse: a filtered browse shows only matching messages, pages through them all
// once, ends with no cursor, and leases nothing.
func testFilterBrowse(t *testing.T, s *suite) {
	q := s.queue()
	var want []string
	for i := range 25 {
		c := "blue"
		if i%3 == 0 {
			c = "red"
			want = append(want, fmt.Sprintf("m%02d", i))
		}
		s.sendMsgs(q, amsg(fmt.Sprintf("m%02d", i), "c", c))
	}
	red := flt([]string{"c", "red"})
	for _, limit := range []int{1, 3, 9, 100} {
		got, _ := s.browseF(q, engine.StateVisible, red, limit)
		if !slices.Equal(got, want) {
			t.Fatalf("limit %d: browsed %q, want %q", limit, got, want)
		}
	}
	// A full last page ends the list: 9 red messages, pages of 9 and 3.
	for _, limit := range []int{9, 3} {
		if _, pages := s.browseF(q, engine.StateVisible, red, limit); pages != 9/limit {
			t.Fatalf("limit %d: %d pages, want %d (the full last page names no cursor)", limit, pages, 9/limit)
		}
	}
	if got, _ := s.browseF(q, engine.StateVisible, flt([]string{"c", "green"}), 10); len(got) != 0 {
		t.Fatalf("browse for green: %q", got)
	}
	s.wantCounts(q, 25, 0, 0)
	ms := s.receive(q, 10, time.Minute) // m00..m09: red m00, m03, m06, m09 in flight
	if got, _ := s.browseF(q, engine.StateInFlight, red, 2); !slices.Equal(got, want[:4]) {
		t.Fatalf("in flight, red: %q, want %q", got, want[:4])
	}
	if got, _ := s.browseF(q, engine.StateVisible, red, 2); !slices.Equal(got, want[4:]) {
		t.Fatalf("visible, red: %q, want %q", got, want[4:])
	}
	s.ackAll(q, ms)
}

// testFilterBrowseBound: a filtered page examines at most filter.MaxCandidates messages: one
// with nothing matching in its first 1,000 candidates is empty but names a cursor, and the
// next one goes on from there.
func testFilterBrowseBound(t *testing.T, s *suite) {
	q := s.queue()
	n := filter.MaxCandidates + 5
	s.sendUnmatched(q, n)
	s.sendMsgs(q, amsg("wanted", "k", "want"))
	f := flt([]string{"k", "want"})
	page, err := s.e.Browse(s.ctx, q, engine.BrowseRequest{State: engine.StateVisible, Limit: 10, Filter: f})
	wantNil(t, "browse", err)
	if len(page.Messages) != 0 || page.NextCursor == "" {
		t.Fatalf("first page: %d messages, cursor %q; want none and a cursor", len(page.Messages), page.NextCursor)
	}
	page, err = s.e.Browse(s.ctx, q, engine.BrowseRequest{State: engine.StateVisible, Limit: 10, Filter: f, Cursor: page.NextCursor})
	wantNil(t, "browse", err)
	if got := browsedBodies(page.Messages); !slices.Equal(got, []string{"wanted"}) || page.NextCursor != "" {
		t.Fatalf("second page: %q, cursor %q; want [wanted] and no cursor", got, page.NextCursor)
	}
}

func browsedBodies(ms []engine.BrowsedMessage) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Body
	}
	return out
}

// testFilterBarrier: the barrier rules hold for filtered receives too: nothing after a
// barrier is delivered before it, and it waits for every message before it, matching or not.
func testFilterBarrier(t *testing.T, s *suite) {
	q := s.queue()
	s.sendMsgs(q, amsg("before", "c", "blue"))
	b := amsg("barrier", "c", "red")
	b.Barrier = true
	s.sendMsgs(q, b)
	s.sendMsgs(q, amsg("after", "c", "red"))
	red := flt([]string{"c", "red"})
	// Held behind the barrier, they are browsed as delayed: a filter applies there too.
	for _, tc := range []struct {
		f    *filter.Filter
		want []string
	}{{flt([]string{"c", "blue"}), nil}, {red, []string{"barrier", "after"}}} {
		page, err := s.e.Browse(s.ctx, q, engine.BrowseRequest{State: engine.StateDelayed, Limit: 10, Filter: tc.f})
		wantNil(t, "browse", err)
		var got []string
		for _, m := range page.Messages {
			got = append(got, m.Body)
		}
		if !slices.Equal(got, tc.want) {
			t.Fatalf("filtered browse of the held messages (%v): %q, want %q", tc.f.Attributes, got, tc.want)
		}
	}
	if ms := s.receiveF(q, red, 10, time.Minute).Messages; len(ms) != 0 {
		t.Fatalf("with %q waiting before the barrier, a red receive took %q", "before", bodies(ms))
	}
	s.ackAll(q, s.wantBodies(q, 10, time.Minute, "before"))
	got := s.receiveF(q, red, 10, time.Minute).Messages
	if !slices.Equal(bodies(got), []string{"barrier"}) {
		t.Fatalf("after the earlier message left, a red receive took %q, want [barrier]", bodies(got))
	}
	s.ackAll(q, got)
	var after []engine.Received
	for range 5 { // the barrier's departure may take a step to release what it held
		if after = s.receiveF(q, red, 10, time.Minute).Messages; len(after) > 0 {
			break
		}
		s.clk.Advance(time.Second)
	}
	if !slices.Equal(bodies(after), []string{"after"}) {
		t.Fatalf("after the barrier left: %q, want [after]", bodies(after))
	}
}

// testFilterConsumer: a named consumer's filtered receive stays within its backlog and
// counts only what it took.
func testFilterConsumer(t *testing.T, s *suite) {
	q := s.queue()
	s.sendMsgs(q, amsg("x1", "c", "blue"), amsg("r1", "c", "red"), amsg("r2", "c", "red"), amsg("r3", "c", "red"))
	red := flt([]string{"c", "red"})
	req := engine.ReceiveRequest{Max: 10, Visibility: time.Minute, Filter: red, Consumer: &engine.ConsumerOf{ID: "c1", MaxBacklog: 2}}
	res, err := s.e.Receive(s.ctx, q, req)
	wantNil(t, "receive", err)
	if got := bodies(res.Messages); !slices.Equal(got, []string{"r1", "r2"}) {
		t.Fatalf("consumer with backlog 2 took %q, want [r1 r2]", got)
	}
	res, err = s.e.Receive(s.ctx, q, req)
	wantNil(t, "receive", err)
	if len(res.Messages) != 0 || !res.BacklogFull {
		t.Fatalf("with a full backlog: %q, BacklogFull %v", bodies(res.Messages), res.BacklogFull)
	}
	s.wantBodies(q, 10, time.Minute, "x1", "r3")
}

// testFilterPartitions: over several partitions a filtered receive finds the matching
// messages wherever they are and never returns another; standard and fifo.
func testFilterPartitions(t *testing.T, h Harness) {
	if h.NewWithPartitionRate == nil {
		t.Skip("the engine has no partitions")
	}
	e, clk := h.NewWithPartitionRate(t, 5)
	s := &suite{t: t, e: e, clk: clk, ctx: context.Background()}
	for _, opts := range [][]queueOpt{nil, {fifo}} {
		q := s.queue(opts...)
		want := map[string]bool{}
		for r := range 20 {
			var batch []engine.Message
			for i := range 10 {
				m := amsg(fmt.Sprintf("m%d-%d", r, i), "k", "other")
				if i == r%10 && r%4 == 0 {
					m.Attributes["k"] = "want"
					want[m.Body] = true
				}
				m.GroupID = map[bool]string{true: fmt.Sprintf("g%d", r)}[q.Type == engine.FIFO]
				batch = append(batch, m)
			}
			s.sendMsgs(q, batch...)
			clk.Advance(300 * time.Millisecond)
		}
		if st := s.stats(q); st.Partitions < 2 {
			t.Fatalf("%s: %d partitions after 200 messages at a rate of 5/s, want several", q.Type, st.Partitions)
		}
		f := flt([]string{"k", "want"})
		if q.Type == engine.FIFO {
			// Only a group's head is a candidate: take the heads that do not match away.
			for range 40 {
				got := s.receive(q, engine.MaxBatch, time.Hour)
				var others []engine.Received
				for _, m := range got {
					if m.Attributes["k"] != "want" {
						others = append(others, m)
					} else {
						wantNil(t, "release", s.changeVis(q, m.Delivery, 0))
					}
				}
				s.ackAll(q, others)
				if len(others) == 0 {
					break
				}
			}
		}
		// 200 candidates at most, within the bound: one receive finds them all.
		seen := map[string]bool{}
		for _, m := range s.receiveF(q, f, engine.MaxBatch, time.Hour).Messages {
			seen[m.Body] = true
		}
		if len(seen) != len(want) {
			t.Fatalf("%s: a filtered receive over the partitions found %v, want %v", q.Type, seen, want)
		}
	}
}

// sendUnmatched sends n messages "other0"… with attribute k=other, in batches.
func (s *suite) sendUnmatched(q engine.Queue, n int) {
	for i := 0; i < n; i += engine.MaxBatch {
		var batch []engine.Message
		for j := i; j < min(i+engine.MaxBatch, n); j++ {
			batch = append(batch, amsg(fmt.Sprintf("other%d", j), "k", "other"))
		}
		s.sendMsgs(q, batch...)
	}
}

// testFilterWake: a send wakes a receive parked with a filter only when it may hold a message
// the filter selects: 200 sends of others (plain, keyed, fifo) signal it never, a matching one
// does; an unfiltered watcher is signalled by all. A send to another queue after them, awaited
// on its own watcher, fences the wake-ups (they travel in order), so "never" is observed.
func testFilterWake(t *testing.T, s *suite) {
	for _, kind := range []string{"standard", "keyed", "fifo"} {
		var opts []queueOpt
		if kind == "fifo" {
			opts = append(opts, fifo)
		}
		q, fence := s.queue(opts...), s.queue()
		f := flt([]string{"color", "blue", "green"}, []string{"size", "L"})
		fw, fstop := s.e.WatchFilter(q.ID, f)
		aw, astop := s.e.Watch(q.ID)
		gw, gstop := s.e.Watch(fence.ID)
		msg := func(i int, kv ...string) engine.Message {
			m := amsg(fmt.Sprintf("%s-%d", kind, i), kv...)
			switch kind {
			case "keyed":
				m.Key = fmt.Sprintf("k%d", i)
			case "fifo":
				m.GroupID = "g"
			}
			return m
		}
		for i := range 200 {
			kv := []string{"color", "red", "size", "L"} // size matches, color does not
			if i%2 == 1 {
				kv = []string{"color", "blue"} // color matches, size missing
			}
			s.sendMsgs(q, msg(i, kv...))
		}
		// One send of as many distinct pairs as a send can hold (10 messages × 10
		// attributes) names them all: it cannot wake every receive by overflowing.
		wide := make([]engine.Message, engine.MaxBatch)
		for i := range wide {
			var kv []string
			for j := range engine.MaxAttributes {
				kv = append(kv, fmt.Sprintf("a%d", j), fmt.Sprintf("v%d-%d", i, j))
			}
			wide[i] = msg(300+i, kv...)
		}
		s.sendMsgs(q, wide...)
		s.send(fence, "fence")
		waitSignal(t, gw, kind+": the fence's wake-up")
		select {
		case <-fw:
			t.Fatalf("%s: 200 sends the filter cannot select woke the filtered receive", kind)
		default:
		}
		waitSignal(t, aw, kind+": an unfiltered watcher")
		s.sendMsgs(q, msg(200, "color", "green", "size", "L"))
		waitSignal(t, fw, kind+": a matching send")
		fstop()
		astop()
		gstop()
	}
}
