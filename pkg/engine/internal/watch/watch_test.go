package watch

import (
	"testing"

	"github.com/queueshq/queues/pkg/filter"

	"github.com/queueshq/queues/pkg/ids"
)

func TestNotifyCoalescesAndCancels(t *testing.T) {
	t.Parallel()
	var h Hub
	q, other := ids.New(), ids.New()
	ch, cancel := h.Watch(q)
	if h.Count() != 1 {
		t.Fatalf("count %d", h.Count())
	}
	h.Notify(other)
	select {
	case <-ch:
		t.Fatal("signalled for another queue")
	default:
	}
	h.Notify(q)
	h.Notify(q) // coalesces; must not block
	<-ch
	select {
	case <-ch:
		t.Fatal("two signals did not coalesce")
	default:
	}
	cancel()
	cancel()
	if h.Count() != 0 {
		t.Fatalf("count after cancel %d", h.Count())
	}
	h.Notify(q) // no watchers: no-op
}

func TestNotifyDigestsWakesOnlyMatchingFilters(t *testing.T) {
	t.Parallel()
	var h Hub
	q := ids.New()
	f := &filter.Filter{Attributes: map[string][]string{"color": {"blue", "green"}, "size": {"L"}}}
	fch, fcancel := h.WatchFilter(q, f)
	ach, acancel := h.Watch(q)
	pending := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	for range 200 {
		h.NotifyDigests(q, filter.WakeDigests(map[string]string{"color": "red", "size": "L"}))
	}
	h.NotifyDigests(q, filter.WakeDigests(map[string]string{"color": "blue"})) // size missing
	h.NotifyDigests(q, filter.WakeDigests(map[string]string{}))
	if pending(fch) || h.FilteredSignals() != 0 {
		t.Fatalf("a filtered watcher was signalled %d times by wake-ups it cannot want", h.FilteredSignals())
	}
	if !pending(ach) {
		t.Fatal("an unfiltered watcher was not signalled")
	}
	h.NotifyDigests(q, filter.WakeDigests(map[string]string{"color": "green", "size": "L", "x": "y"}))
	if !pending(fch) {
		t.Fatal("a matching wake-up did not signal the filtered watcher")
	}
	// Two messages of one send, each with half the match, may match: a spurious wake-up is
	// allowed, a missed one never.
	h.NotifyDigests(q, filter.WakeDigests(map[string]string{"color": "blue"}, map[string]string{"size": "L"}))
	if !pending(fch) {
		t.Fatal("a wake-up holding every wanted pair did not signal")
	}
	h.NotifyDigests(q, nil) // names nothing: everyone
	if !pending(fch) || !pending(ach) {
		t.Fatal("a wake-up without digests did not signal every watcher")
	}
	fcancel()
	acancel()
	if h.Count() != 0 {
		t.Fatalf("count after cancel %d", h.Count())
	}
}
