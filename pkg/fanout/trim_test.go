package fanout_test

import (
	"testing"
	"time"
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
