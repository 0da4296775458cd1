package embeddedengine

import (
	"slices"

	"github.com/queueshq/queues/pkg/engine"
)

// Exclusive group policy (engine/grouppolicy.go). A queue's bindings live in its index, in
// memory, beside its groups: they are soft state, so a restarted process starts with none
// and the next receive of each group binds it afresh (as after a lapse). A binding is live
// while its group was active — received by its consumer, or a message of it acknowledged
// or dead-lettered — within the queue's affinity; expiry is read against the engine clock
// whenever a binding is consulted, so nothing needs to run for a binding to lapse.

// exclusiveScan is how many ready groups bound to other consumers an exclusive receive passes
// over before it stops looking (the Redis engine's bound, redisengine/groupbind.go).
const exclusiveScan = 200

// binding is a group's binding to a consumer and when the group was last active (ms).
type binding struct {
	consumer string
	last     int64
}

// bindState is a queue's bindings: by group, and the groups of each consumer.
type bindState struct {
	byGroup map[string]*binding
	byCons  map[string]map[string]struct{}
}

// live is the live binding of group g under affinity aff (ms) at now, nil when none;
// a lapsed one is forgotten.
func (b *bindState) live(g string, now, aff int64) *binding {
	if b == nil {
		return nil
	}
	bd := b.byGroup[g]
	if bd != nil && bd.last <= now-aff {
		b.unbind(g)
		return nil
	}
	return bd
}

func (b *bindState) unbind(g string) {
	bd := b.byGroup[g]
	if bd == nil {
		return
	}
	delete(b.byGroup, g)
	if set := b.byCons[bd.consumer]; set != nil {
		delete(set, g)
		if len(set) == 0 {
			delete(b.byCons, bd.consumer)
		}
	}
}

func (b *bindState) bind(g, consumer string, now int64) {
	if bd := b.byGroup[g]; bd != nil && bd.consumer == consumer {
		bd.last = now
		return
	}
	b.unbind(g)
	b.byGroup[g] = &binding{consumer: consumer, last: now}
	set := b.byCons[consumer]
	if set == nil {
		set = map[string]struct{}{}
		b.byCons[consumer] = set
	}
	set[g] = struct{}{}
}

// bindsOf is qi's binding state, made on first use. Call under e.mu.
func (q *queue) bindsOf() *bindState {
	if q.binds == nil {
		q.binds = &bindState{byGroup: map[string]*binding{}, byCons: map[string]map[string]struct{}{}}
	}
	return q.binds
}

// binder is one exclusive receive's view of the bindings: its consumer, its own live groups
// and the room left under its cap.
type binder struct {
	b      *bindState
	cid    string
	now    int64
	aff    int64
	room   int
	own    map[string]bool
	relook int64 // earliest lapse of a binding passed over (0: none)
}

// binderFor prepares an exclusive receive of consumer cid. Call under e.mu.
func (q *queue) binderFor(eq engine.Queue, cid string, now int64) *binder {
	bs := q.bindsOf()
	bd := &binder{b: bs, cid: cid, now: now, aff: eq.Affinity().Milliseconds(), room: eq.GroupCap(), own: map[string]bool{}}
	for g := range bs.byCons[cid] {
		if bs.live(g, now, bd.aff) != nil {
			bd.own[g] = true
			bd.room--
		}
	}
	return bd
}

// ownReady are the consumer's groups that can be received from now, oldest head first.
func (bd *binder) ownReady(q *queue) []*group {
	var out []*group
	for id := range bd.own {
		if g := q.groups[id]; g != nil && g.ridx >= 0 {
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b *group) int { return cmpU64(a.head.seq, b.head.seq) })
	return out
}

// may reports whether the receive may take from g: its own group, or a free one while it has
// room under its cap.
func (bd *binder) may(g *group) bool {
	if bd.own[g.id] {
		return true
	}
	if other := bd.b.live(g.id, bd.now, bd.aff); other != nil {
		if at := other.last + bd.aff; bd.relook == 0 || at < bd.relook {
			bd.relook = at
		}
		return false
	}
	return bd.room > 0
}

// took records that the receive took a batch of g: bound to its consumer, or refreshed.
func (bd *binder) took(g *group) {
	if !bd.own[g.id] {
		bd.own[g.id] = true
		bd.room--
	}
	bd.b.bind(g.id, bd.cid, bd.now)
}

// settleBinding follows the settlement (ack or dead-letter) of m: its group's binding is
// refreshed, or ended when m ends its group. Call under e.mu.
func (q *queue) settleBinding(m *msg, now int64) {
	if q.binds == nil || m.g == nil {
		return
	}
	bd := q.binds.byGroup[m.g.id]
	switch {
	case bd == nil:
	case m.endGroup:
		q.binds.unbind(m.g.id)
	default:
		bd.last = now
	}
}

// boundTo is the consumer g is bound to under q's affinity ("": none). Call under e.mu.
func (q *queue) boundTo(eq engine.Queue, g string, now int64) string {
	if !eq.Exclusive() || q.binds == nil {
		return ""
	}
	if bd := q.binds.live(g, now, eq.Affinity().Milliseconds()); bd != nil {
		return bd.consumer
	}
	return ""
}

// takeGroups is a fifo receive's claim: groups oldest head first, each from its head while
// visible. An exclusive receive (bd not nil) also serves its own groups wherever they stand,
// passes over the groups bound to others (at most exclusiveScan of them) and those it has
// no room to bind. Call under e.mu.
func (q *queue) takeGroups(bd *binder, want int, taken *[]*msg, consider func(*msg)) {
	var passed []*group
	defer func() { // the groups passed over go back to the ready heap
		for _, g := range passed {
			q.refresh(g)
		}
	}()
	var own []*group
	if bd != nil {
		own = bd.ownReady(q)
	}
	for len(*taken) < want {
		for len(own) > 0 && own[0].ridx < 0 {
			own = own[1:]
		}
		var g *group
		if len(q.ready.a) > 0 && (bd == nil || len(passed) < exclusiveScan) {
			g = q.ready.a[0]
		}
		if len(own) > 0 && (g == nil || own[0].head.seq < g.head.seq) {
			g = own[0]
		}
		if g == nil {
			return
		}
		if bd != nil && !bd.may(g) {
			q.ready.remove(g)
			passed = append(passed, g)
			continue
		}
		before := len(*taken)
		progressed := false
		for m := g.head; m != nil && len(*taken) < want && m.st == stVisible && !q.isParked(g.id); {
			next := m.gnext
			consider(m)
			progressed = true
			m = next
		}
		if bd != nil && len(*taken) > before {
			bd.took(g)
		}
		q.refresh(g) // its head is no longer visible, or it has a message in flight
		if !progressed {
			q.ready.remove(g) // cannot happen while the index is consistent; never spin
		}
	}
}
