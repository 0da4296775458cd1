// Package watch is the in-process registry of waiting receives that every engine shares: a
// waiter watches a queue and is signalled, without blocking the signaller, when messages may
// have become visible there. Signals coalesce (one pending signal per watcher is enough).
//
// A waiter may watch with an attribute filter (filter.Filter.WakeSets): a wake-up that names
// the attribute digests of what it brought (filter.WakeDigests) then signals it only when,
// for each attribute of its filter, one allowed value's digest is among them. So a send
// storm of messages no parked filtered receive wants wakes none of them. A wake-up that
// names no digests (a release, a purge, a send of too many pairs) signals every watcher.
package watch

import (
	"slices"
	"sync"

	"github.com/queueshq/queues/pkg/filter"
	"github.com/queueshq/queues/pkg/ids"
)

type watcher struct {
	ch   chan struct{}
	sets [][]uint64 // per filter attribute, its values' digests; nil: every wake-up
}

// wants reports whether a wake-up naming digests (sorted) may bring what w waits for.
func (w *watcher) wants(digests []uint64) bool {
	for _, set := range w.sets {
		if !slices.ContainsFunc(set, func(d uint64) bool { _, ok := slices.BinarySearch(digests, d); return ok }) {
			return false
		}
	}
	return true
}

func (w *watcher) signal() {
	select {
	case w.ch <- struct{}{}:
	default: // a signal is already pending
	}
}

// queueWatchers are one queue's watchers: those without a filter, and those with one indexed
// by each digest of their filter's first attribute (one of those must be in a wake-up that
// wakes them), so a wake-up looks only at filtered watchers it may concern.
type queueWatchers struct {
	all map[*watcher]struct{}
	by  map[uint64]map[*watcher]struct{}
	n   int
}

// Hub holds the watchers of one engine. The zero value is ready to use.
type Hub struct {
	mu       sync.Mutex
	watchers map[ids.ID]*queueWatchers
	signals  uint64 // filtered watchers signalled, for tests
}

// Watch registers a watcher of every wake-up of queue q; cancel removes it (safe to call more
// than once).
func (h *Hub) Watch(q ids.ID) (<-chan struct{}, func()) { return h.WatchFilter(q, nil) }

// WatchFilter registers a watcher on queue q that wake-ups naming attribute digests signal
// only when they may bring a message f selects (every wake-up when f is empty); cancel
// removes it (safe to call more than once).
func (h *Hub) WatchFilter(q ids.ID, f *filter.Filter) (<-chan struct{}, func()) {
	w := &watcher{ch: make(chan struct{}, 1), sets: f.WakeSets()}
	if len(w.sets) > 1 { // index by the attribute with fewest values
		i := 0
		for j, set := range w.sets {
			if len(set) < len(w.sets[i]) {
				i = j
			}
		}
		w.sets[0], w.sets[i] = w.sets[i], w.sets[0]
	}
	h.mu.Lock()
	if h.watchers == nil {
		h.watchers = map[ids.ID]*queueWatchers{}
	}
	qw := h.watchers[q]
	if qw == nil {
		qw = &queueWatchers{all: map[*watcher]struct{}{}, by: map[uint64]map[*watcher]struct{}{}}
		h.watchers[q] = qw
	}
	qw.n++
	if w.sets == nil {
		qw.all[w] = struct{}{}
	} else {
		for _, d := range w.sets[0] {
			set := qw.by[d]
			if set == nil {
				set = map[*watcher]struct{}{}
				qw.by[d] = set
			}
			set[w] = struct{}{}
		}
	}
	h.mu.Unlock()
	return w.ch, sync.OnceFunc(func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		qw := h.watchers[q]
		if w.sets == nil {
			delete(qw.all, w)
		} else {
			for _, d := range w.sets[0] {
				delete(qw.by[d], w)
				if len(qw.by[d]) == 0 {
					delete(qw.by, d)
				}
			}
		}
		if qw.n--; qw.n == 0 {
			delete(h.watchers, q)
		}
	})
}

// Notify signals every watcher of q.
func (h *Hub) Notify(q ids.ID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	qw := h.watchers[q]
	if qw == nil {
		return
	}
	for w := range qw.all {
		w.signal()
	}
	for _, set := range qw.by {
		for w := range set {
			w.signal()
			h.signals++
		}
	}
}

// NotifyDigests signals the watchers of q that a wake-up naming the attribute digests given
// (sorted, as filter.WakeDigests gives them) may concern: every unfiltered one, and the
// filtered ones it may bring a message for. nil digests signal every watcher (Notify).
func (h *Hub) NotifyDigests(q ids.ID, digests []uint64) {
	if digests == nil {
		h.Notify(q)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	qw := h.watchers[q]
	if qw == nil {
		return
	}
	for w := range qw.all {
		w.signal()
	}
	for _, d := range digests {
		for w := range qw.by[d] {
			if w.wants(digests) {
				w.signal()
				h.signals++
			}
		}
	}
}

// Count is the number of watchers (waiting receives) of every queue.
func (h *Hub) Count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, qw := range h.watchers {
		n += qw.n
	}
	return n
}

// FilteredSignals is how many times a filtered watcher was signalled (coalesced signals
// included), for tests that bound the wake-ups a send storm causes.
func (h *Hub) FilteredSignals() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.signals
}
