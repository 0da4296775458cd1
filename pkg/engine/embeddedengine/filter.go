package embeddedengine

import (
	bolt "go.etcd.io/bbolt"

	"github.com/queueshq/queues/pkg/filter"
)

// Filtered receives (docs/delivery-options.md#filtered-receive-and-browse). The index holds no
// attributes, so a filtered receive looks at its candidates' stored payloads, at most
// filter.MaxCandidates of them and at most filter.MaxScanBytes of them (and the one that crosses
// it), in one read transaction under the engine's lock (as the cleaner reads under it); it decodes
// only their attributes. A candidate whose payload is not on disk yet (its send's commit is still
// under way) does not match: the send's wake-up, which follows its commit, brings the receive back.

// takeFiltered offers consider the visible messages of qi that f selects, in delivery order,
// until want are taken, filter.MaxCandidates were examined or filter.MaxScanBytes read; expired candidates are offered
// too (consider drops them). A message f does not select is not touched. On an exclusive
// queue (bd not nil) only the groups the receive may take are offered. Call under e.mu.
func (e *Engine) takeFiltered(qi *queue, f *filter.Filter, bd *binder, want int, now int64, taken *[]*msg, consider func(*msg)) error {
	return e.db.View(func(tx *bolt.Tx) error {
		pb := payloadsIn(tx)
		read := 0 // bytes of stored messages looked at
		match := func(m *msg) bool {
			raw := pb.get(key(qi.id, m.id))
			if raw == nil {
				return false
			}
			read += len(raw)
			attrs, err := decodeAttributes(raw)
			return err == nil && f.Match(attrs)
		}
		spent := func() bool { return read >= filter.MaxScanBytes }
		defer func() { e.scanBytes.Add(int64(read)) }()
		budget := filter.MaxCandidates
		if !qi.fifo {
			for _, m := range inOrder(len(qi.visible.a), budget, qi.visible.less, func(i int) *msg { return qi.visible.a[i] }) {
				if len(*taken) >= want || spent() {
					break
				}
				if m.expiresAt <= now || match(m) {
					consider(m)
				}
			}
			return nil
		}
		// Fifo: each available group's messages from its head while they match; the first
		// that does not ends the group's batch, so no group's order is broken.
		for _, g := range inOrder(len(qi.ready.a), budget, qi.ready.less, func(i int) *group { return qi.ready.a[i] }) {
			if bd != nil && !bd.may(g) {
				continue
			}
			before := len(*taken)
			for m := g.head; m != nil && len(*taken) < want && budget > 0 && !spent() && m.st == stVisible && !qi.isParked(g.id); {
				budget--
				next := m.gnext
				if m.expiresAt > now && !match(m) {
					break
				}
				consider(m)
				m = next
			}
			if bd != nil && len(*taken) > before {
				bd.took(g)
			}
			if budget <= 0 || spent() || len(*taken) >= want {
				break
			}
		}
		for _, m := range *taken {
			if m.g != nil {
				qi.refresh(m.g)
			}
		}
		return nil
	})
}

// inOrder is up to k elements of a binary min-heap of n elements (less compares two of its
// indexes; at reads one), smallest first, without changing the heap: a best-first walk from
// the root, O(k log k).
func inOrder[T any](n, k int, less func(i, j int) bool, at func(int) T) []T {
	out := make([]T, 0, min(n, k))
	if n == 0 {
		return out
	}
	front := []int{0} // a min-heap of heap indexes by less
	up := func(j int) {
		for j > 0 {
			i := (j - 1) / 2
			if !less(front[j], front[i]) {
				return
			}
			front[i], front[j] = front[j], front[i]
			j = i
		}
	}
	down := func() {
		i := 0
		for {
			l := 2*i + 1
			if l >= len(front) {
				return
			}
			j := l
			if r := l + 1; r < len(front) && less(front[r], front[l]) {
				j = r
			}
			if !less(front[j], front[i]) {
				return
			}
			front[i], front[j] = front[j], front[i]
			i = j
		}
	}
	for len(front) > 0 && len(out) < k {
		top := front[0]
		out = append(out, at(top))
		front[0] = front[len(front)-1]
		front = front[:len(front)-1]
		down()
		for _, c := range []int{2*top + 1, 2*top + 2} {
			if c < n {
				front = append(front, c)
				up(len(front) - 1)
			}
		}
	}
	return out
}
