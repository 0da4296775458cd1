// Package watch is the in-process registry of waiting receives that every engine shares: a
// waiter watches a queue and is signalled, without blocking the signaller, when messages may
// have become visible there. Signals coalesce (one pending signal per watcher is enough).
package watch

import (
	"sync"

	"github.com/queueshq/queues/pkg/ids"
)

type watcher struct{ ch chan struct{} }

// Hub holds the watchers of one engine. The zero value is ready to use.
type Hub struct {
	mu       sync.Mutex
	watchers map[ids.ID]map[*watcher]struct{}
}

// Watch registers a watcher on queue q; cancel removes it (safe to call more than once).
func (h *Hub) Watch(q ids.ID) (<-chan struct{}, func()) {
	w := &watcher{ch: make(chan struct{}, 1)}
	h.mu.Lock()
	if h.watchers == nil {
		h.watchers = map[ids.ID]map[*watcher]struct{}{}
	}
	set := h.watchers[q]
	if set == nil {
		set = map[*watcher]struct{}{}
		h.watchers[q] = set
	}
	set[w] = struct{}{}
	h.mu.Unlock()
	return w.ch, sync.OnceFunc(func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.watchers[q], w)
		if len(h.watchers[q]) == 0 {
			delete(h.watchers, q)
		}
	})
}

// Notify signals every watcher of q.
func (h *Hub) Notify(q ids.ID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.watchers[q] {
		select {
		case w.ch <- struct{}{}:
		default: // a signal is already pending
		}
	}
}

// Count is the number of watchers (waiting receives) of every queue.
func (h *Hub) Count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, set := range h.watchers {
		n += len(set)
	}
	return n
}
