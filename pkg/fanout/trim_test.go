package fanout_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queueshq/queues/pkg/clock"
	"github.com/queueshq/queues/pkg/engine"
)

// An idle topic is let go with the time its oldest entry passes the retention as its wake
// time; once the clock passes it, a runner takes the topic up and trims it though nobody
// published, and lets it go again with the next wake time.
func TestIdleTopicTakenUpToTrim(t *testing.T) {
	g := newRig("standard")
	_, b := g.queue("")
	r := g.runner()
	r.IdleAfter = 20 * time.Millisecond
	run(t, r)
	published := g.clk.Now()
	g.f.publish(nil)
	g.f.await(t, "the caught-up topic let go", func() bool {
		return g.f.binding(b).Sequence == 1 && len(g.f.idled) == 1 && !g.f.active
	})
	g.f.mu.Lock()
	wake, trims, polls := g.f.wakeAt, g.f.trims, g.f.polls
	g.f.mu.Unlock()
	if want := published.Add(time.Hour); !wake.Equal(want) {
		t.Fatalf("let go with wake time %v, want %v (published + the retention)", wake, want)
	}

	g.clk.Advance(time.Hour - time.Second)
	g.f.await(t, "20 polls before the wake time", func() bool { return g.f.polls >= polls+20 })
	g.f.mu.Lock()
	if g.f.trims != trims || len(g.f.idled) != 1 {
		t.Fatalf("before its wake time the topic was trimmed %d times and idled %d (want %d and 1)", g.f.trims, len(g.f.idled), trims)
	}
	g.f.mu.Unlock()

	g.clk.Advance(time.Second)
	g.f.await(t, "the due topic trimmed and let go again", func() bool {
		return g.f.trims == trims+1 && len(g.f.idled) == 2 && !g.f.active && g.f.wakeAt.After(wake)
	})
	g.f.mu.Lock()
	defer g.f.mu.Unlock()
	// The fake's trim drops nothing: the next wake is a TrimEvery after the trim, not at once.
	if want := wake.Add(time.Minute); !g.f.wakeAt.Equal(want) {
		t.Errorf("let go again with wake time %v, want %v (a minute after the trim)", g.f.wakeAt, want)
	}
}

// A retention shortened while the topic is idle (the API wakes it) is applied at once, though
// the topic was trimmed moments ago with the longer one.
func TestShortenedRetentionTrimsAtOnce(t *testing.T) {
	g := newRig("standard")
	_, b := g.queue("")
	r := g.runner()
	r.IdleAfter = 20 * time.Millisecond
	run(t, r)
	published := g.clk.Now()
	g.f.publish(nil)
	g.f.await(t, "the caught-up topic let go", func() bool {
		return g.f.binding(b).Sequence == 1 && len(g.f.idled) == 1 && g.f.trims == 1 && !g.f.active
	})
	g.m.mu.Lock()
	g.m.topic.RetentionSeconds = 10
	g.m.mu.Unlock()
	must(t, g.f.WakeTopic(t.Context(), g.f.topic))
	g.f.await(t, "a trim with the new retention", func() bool { return g.f.trims == 2 })
	g.f.await(t, "the topic let go again", func() bool { return len(g.f.idled) == 2 && !g.f.active })
	g.f.mu.Lock()
	defer g.f.mu.Unlock()
	if g.f.trimmedAt != 10*time.Second {
		t.Errorf("trimmed with retention %v, want 10s", g.f.trimmedAt)
	}
	// The trim a moment ago bounds the wake time: a minute after it, not 10 s after the publish.
	if want := published.Add(time.Minute); !g.f.wakeAt.Equal(want) {
		t.Errorf("let go with wake time %v, want %v", g.f.wakeAt, want)
	}
}

func TestIntegrationIdleTopicTrimmed(t *testing.T) {
	onClockedEngines(t, testIdleTopicTrimmed)
}

// A topic nobody publishes to any more is trimmed as its entries pass the retention (an
// hour): the log's first sequence moves and the project's stored bytes drop, with no publish;
// once its log is empty it leaves the work list for good.
func testIdleTopicTrimmed(t *testing.T, mk clockedMaker) {
	clk := clock.NewFake(time.Now().Truncate(time.Millisecond))
	w := newWorld(t, func(t *testing.T) topicEngine { return mk(t, clk) }, "standard")
	r := w.runner()
	r.Clock, r.IdleAfter = clk, 50*time.Millisecond
	run(t, r)
	body := engine.PublishMessage{Message: engine.Message{Body: strings.Repeat("x", 1000)}}
	w.publish(t, body, body)
	clk.Advance(30 * time.Minute)
	res := w.publish(t, body)
	w.awaitCursors(t, res[0].Sequence)
	w.awaitIdle(t)
	before := w.storage(t)
	if before.bounds.First != 1 || before.bounds.Last != 3 {
		t.Fatalf("bounds %+v before any entry passed the retention", before.bounds)
	}

	clk.Advance(31 * time.Minute) // the first two entries are an hour and a minute old
	w.awaitTrimmedTo(t, 3)
	after := w.storage(t)
	if drop := before.stored - after.stored; drop < 2000 || before.bounds.Bytes-after.bounds.Bytes != drop {
		t.Errorf("stored bytes %d → %d and the log's %d → %d: want both to drop by the two entries' bytes",
			before.stored, after.stored, before.bounds.Bytes, after.bounds.Bytes)
	}
	w.awaitIdle(t)

	clk.Advance(30 * time.Minute) // the last entry is an hour and a minute old
	w.awaitTrimmedTo(t, 4)
	w.awaitIdle(t)
	clk.Advance(24 * time.Hour)
	active, err := w.eng.ActiveTopics(t.Context())
	must(t, err)
	if slices.Contains(active, w.topic.ID) {
		t.Errorf("a topic with an empty log is listed a day later")
	}
}

// stored is a topic's log bounds and its project's stored bytes.
type stored struct {
	bounds engine.LogBounds
	stored int64
}

func (w *world) storage(t *testing.T) stored {
	t.Helper()
	b, err := w.eng.Bounds(t.Context(), w.engineTopic())
	must(t, err)
	n, err := w.eng.StoredBytes(t.Context(), w.topic.ProjectID)
	must(t, err)
	return stored{b, n}
}

// awaitIdle waits until the topic is let go: released and off the work list.
func (w *world) awaitIdle(t *testing.T) {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		active, err := w.eng.ActiveTopics(t.Context())
		must(t, err)
		if !slices.Contains(active, w.topic.ID) {
			return
		}
		select {
		case <-w.eng.released:
		case <-deadline.C:
			t.Fatal("the caught-up topic was not let go")
		}
	}
}

// awaitTrimmedTo waits until the log's first sequence is first.
func (w *world) awaitTrimmedTo(t *testing.T, first uint64) {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		b, err := w.eng.Bounds(t.Context(), w.engineTopic())
		must(t, err)
		if b.First == first {
			return
		}
		select {
		case <-w.eng.trimmed:
		case <-deadline.C:
			t.Fatalf("the log's bounds are %+v, want its first sequence at %d", b, first)
		}
	}
}
