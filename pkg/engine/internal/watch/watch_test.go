package watch

import (
	"testing"

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
