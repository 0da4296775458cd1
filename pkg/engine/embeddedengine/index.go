package embeddedengine

import (
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// The in-memory index. Every live message of every queue has one msg here (about 150 bytes
// with its map entry and heap slots); bodies and attributes stay on disk and are read when a
// message is handed out. The index is rebuilt from the state bucket at start-up.

// Message states in the index.
const (
	stNone     uint8 = iota
	stVisible        // receivable now (at <= now when it was placed)
	stDelayed        // never received, visible at at
	stInFlight       // received, visible again at at (its visibility deadline)
	stTaking         // being claimed by a receive in progress (counts as in flight for its group)
	stHeld           // waiting for a barrier (barrier.go): in no heap, counted as delayed
)

// msg is one message's state. Times are unix milliseconds of the engine clock.
type msg struct {
	id         ids.ID
	seq        uint64 // queue-wide send order; the fifo sequence number
	sentAt     int64
	expiresAt  int64
	at         int64 // never received: visible-from time; received: visibility deadline
	receivedAt int64 // time of the latest receive (0: never received)
	attempt    uint32
	cancels    uint32 // cancelled deliveries (docs/delivery-options.md#cancel): receiveCount is attempt - cancels
	cut        bool   // the delivery of this attempt was cancelled (a repeat counts nothing)
	// base is where this queue's attempts start among the message id's deliveries (0 until
	// it leaves a queue by a dead-letter or a move): a delivery's Attempt is base + attempt,
	// so a handle of an earlier life never names a later delivery (nextBase).
	base    uint32
	size    uint32 // stored bytes (engine.PayloadBytes); sizeUnknown only while loading
	st      uint8
	barrier bool // a barrier message (standard queues, barrier.go)
	// endGroup ends its group's binding when settled (fifo, engine.Message.EndGroup).
	endGroup bool
	prio     uint8 // priority 0 to engine.MaxPriority (standard queues, docs/delivery-options.md#priority)
	hidx     int32 // index in the heap of its state
	xidx     int32 // index in the expiry heap
	g        *group
	gprev    *msg // neighbours in the group, in seq order (fifo only)
	gnext    *msg
}

// sizeUnknown marks a message loaded from a record written before records carried their size.
const sizeUnknown = 1<<32 - 1

// group is a fifo message group: its messages in seq order and how many are in flight.
type group struct {
	id         string
	head, tail *msg
	count      int64
	inflight   int   // messages in stInFlight or stTaking
	ridx       int32 // index in the queue's ready heap, -1 when not there
}

// msgHeap is a min-heap of messages by (at, seq), or by (expiresAt, seq) for the expiry heap;
// the visible heap puts a higher priority first (byPriority), so a receive takes its top.
type msgHeap struct {
	a          []*msg
	expiry     bool
	byPriority bool
}

// eachExpired calls fn for every message of the expiry heap whose retention ended by now. The
// heap order lets it visit only those and their children: O(expired).
func (h *msgHeap) eachExpired(now int64, fn func(*msg)) {
	var walk func(i int)
	walk = func(i int) {
		if i >= len(h.a) || h.a[i].expiresAt > now {
			return
		}
		fn(h.a[i])
		walk(2*i + 1)
		walk(2*i + 2)
	}
	walk(0)
}

func (h *msgHeap) less(i, j int) bool {
	a, b := h.a[i], h.a[j]
	if h.byPriority && a.prio != b.prio {
		return a.prio > b.prio
	}
	ka, kb := a.at, b.at
	if h.expiry {
		ka, kb = a.expiresAt, b.expiresAt
	}
	if ka != kb {
		return ka < kb
	}
	return a.seq < b.seq
}

func (h *msgHeap) setIdx(i int) {
	if h.expiry {
		h.a[i].xidx = int32(i)
	} else {
		h.a[i].hidx = int32(i)
	}
}

func (h *msgHeap) idx(m *msg) int {
	if h.expiry {
		return int(m.xidx)
	}
	return int(m.hidx)
}

func (h *msgHeap) swap(i, j int) {
	h.a[i], h.a[j] = h.a[j], h.a[i]
	h.setIdx(i)
	h.setIdx(j)
}

func (h *msgHeap) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		j = i
	}
}

func (h *msgHeap) down(i int) bool {
	i0, n := i, len(h.a)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && h.less(r, l) {
			j = r
		}
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}

func (h *msgHeap) len() int { return len(h.a) }

func (h *msgHeap) top() *msg { return h.a[0] }

func (h *msgHeap) push(m *msg) {
	h.a = append(h.a, m)
	h.setIdx(len(h.a) - 1)
	h.up(len(h.a) - 1)
}

func (h *msgHeap) remove(m *msg) {
	i := h.idx(m)
	n := len(h.a) - 1
	if i < 0 || i > n || h.a[i] != m {
		return
	}
	if i != n {
		h.swap(i, n)
	}
	h.a[n] = nil
	h.a = h.a[:n]
	if i != n && !h.down(i) {
		h.up(i)
	}
	if h.expiry {
		m.xidx = -1
	} else {
		m.hidx = -1
	}
}

// init heapifies a slice built by appending.
func (h *msgHeap) init() {
	for i := range h.a {
		h.setIdx(i)
	}
	for i := len(h.a)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// groupHeap is a min-heap of ready fifo groups by their head's seq (oldest first).
type groupHeap struct{ a []*group }

func (h *groupHeap) less(i, j int) bool { return h.a[i].head.seq < h.a[j].head.seq }
func (h *groupHeap) swap(i, j int) {
	h.a[i], h.a[j] = h.a[j], h.a[i]
	h.a[i].ridx, h.a[j].ridx = int32(i), int32(j)
}

func (h *groupHeap) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		j = i
	}
}

func (h *groupHeap) down(i int) bool {
	i0, n := i, len(h.a)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && h.less(r, l) {
			j = r
		}
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}

func (h *groupHeap) push(g *group) {
	h.a = append(h.a, g)
	g.ridx = int32(len(h.a) - 1)
	h.up(len(h.a) - 1)
}

func (h *groupHeap) remove(g *group) {
	i, n := int(g.ridx), len(h.a)-1
	if i < 0 || i > n || h.a[i] != g {
		return
	}
	if i != n {
		h.swap(i, n)
	}
	h.a[n] = nil
	h.a = h.a[:n]
	if i != n && !h.down(i) {
		h.up(i)
	}
	g.ridx = -1
}

func (h *groupHeap) fix(g *group) {
	if !h.down(int(g.ridx)) {
		h.up(int(g.ridx))
	}
}

// dedupEntry is a fifo deduplication window: sends with the same key until expiresAt are
// duplicates of id, whose sequence number is seq (0 in records written before it was kept).
type dedupEntry struct {
	id        ids.ID
	expiresAt int64
	seq       uint64
}

type dedupItem struct {
	key       string
	expiresAt int64
}

// queue is one queue's index.
type queue struct {
	id       ids.ID
	fifo     bool
	msgs     map[ids.ID]*msg
	visible  msgHeap
	delayed  msgHeap
	inflight msgHeap
	expiry   msgHeap
	groups   map[string]*group
	ready    groupHeap
	dedup    map[string]dedupEntry
	dedupQ   []dedupItem // in expiry order (windows are all DedupWindow long)
	// nextSeq is the next message's seq; purgeSeq: records with a lower seq were purged.
	nextSeq   uint64
	purgeSeq  uint64
	lastPurge int64 // engine-clock ms of the last purge (0: never)
	dirty     bool  // purged records may remain on disk for the cleaner
	// project owns the queue (zero until an operation names it); bytes is the stored bytes of
	// the indexed messages, and pb the project's total, which add, remove and clear move with
	// them, under the engine's lock, in the same step as the index.
	project ids.ID
	bytes   int64
	pb      *int64
	// keys and keyOf are the key index of waiting keyed messages (conflate.go); nil until a
	// keyed send.
	keys  map[string]*keyed
	keyOf map[*msg]*keyed
	// Barriers (barrier.go): the barrier messages present in seq order, how many other
	// messages older than the first are present, how many messages are held, and the time of
	// the latest placement (releasing held messages places them).
	bars    []*msg
	before  int
	held    int
	lastNow int64
	// binds are the exclusive group policy's bindings (groupbind.go); nil until used.
	binds *bindState
	// parked are the fifo groups a poison policy parked (park.go); nil until one is.
	parked map[string]*parking
}

func newQueue(id ids.ID, fifo bool, pb *int64) *queue {
	return &queue{
		pb: pb,
		id: id, fifo: fifo,
		msgs:    map[ids.ID]*msg{},
		visible: msgHeap{byPriority: true},
		expiry:  msgHeap{expiry: true},
		groups:  map[string]*group{},
		dedup:   map[string]dedupEntry{},
		nextSeq: 1,
	}
}

func (q *queue) heapOf(st uint8) *msgHeap {
	switch st {
	case stVisible:
		return &q.visible
	case stDelayed:
		return &q.delayed
	case stInFlight:
		return &q.inflight
	}
	return nil
}

// unplace takes m out of its state heap (its state becomes stNone).
func (q *queue) unplace(m *msg) {
	if m.st == stHeld {
		q.held--
	}
	if h := q.heapOf(m.st); h != nil {
		h.remove(m)
	}
	if m.g != nil && (m.st == stInFlight || m.st == stTaking) {
		m.g.inflight--
	}
	m.st = stNone
}

// place puts m into the heap its state calls for at time now, then refreshes its group.
func (q *queue) place(m *msg, now int64) {
	q.unplace(m)
	q.lastNow = now
	if len(q.bars) > 0 && q.holds(m) {
		m.st = stHeld
		q.held++
		return
	}
	switch {
	case m.at <= now:
		m.st = stVisible
	case m.attempt > 0:
		m.st = stInFlight
	default:
		m.st = stDelayed
	}
	q.heapOf(m.st).push(m)
	if m.g != nil {
		if m.st == stInFlight {
			m.g.inflight++
		}
		q.refresh(m.g)
	}
}

// markTaking moves a visible message out of the visible heap while a receive claims it.
func (q *queue) markTaking(m *msg) {
	q.unkey(m)
	q.unplace(m)
	m.st = stTaking
	if m.g != nil {
		m.g.inflight++
		q.refresh(m.g)
	}
}

// refresh puts g in the ready heap exactly when it can be received from: nothing of it in
// flight and its first message visible.
func (q *queue) refresh(g *group) {
	want := g.inflight == 0 && g.head != nil && g.head.st == stVisible && !q.isParked(g.id)
	switch {
	case want && g.ridx < 0:
		q.ready.push(g)
	case want:
		q.ready.fix(g)
	case g.ridx >= 0:
		q.ready.remove(g)
	}
}

// add indexes a new message, at its place in its group by seq: the end, but for a message
// that a move brings back to a parked group (park.go).
func (q *queue) add(m *msg, groupID string, now int64) {
	m.hidx, m.xidx = -1, -1
	q.msgs[m.id] = m
	q.bytes += int64(m.size)
	*q.pb += int64(m.size)
	q.expiry.push(m)
	if q.fifo {
		g := q.groups[groupID]
		if g == nil {
			g = &group{id: groupID, ridx: -1}
			q.groups[groupID] = g
		}
		m.g = g
		prev := g.tail
		for prev != nil && prev.seq > m.seq {
			prev = prev.gprev
		}
		m.gprev = prev
		if prev != nil {
			m.gnext = prev.gnext
			prev.gnext = m
		} else {
			m.gnext = g.head
			g.head = m
		}
		if m.gnext != nil {
			m.gnext.gprev = m
		} else {
			g.tail = m
		}
		g.count++
	}
	if m.barrier {
		q.addBarrier(m)
	}
	q.place(m, now)
}

// remove forgets a message entirely.
func (q *queue) remove(m *msg) {
	q.unkey(m)
	q.unplace(m)
	q.expiry.remove(m)
	delete(q.msgs, m.id)
	q.bytes -= int64(m.size)
	*q.pb -= int64(m.size)
	if g := m.g; g != nil {
		if m.gprev != nil {
			m.gprev.gnext = m.gnext
		} else {
			g.head = m.gnext
		}
		if m.gnext != nil {
			m.gnext.gprev = m.gprev
		} else {
			g.tail = m.gprev
		}
		m.gprev, m.gnext = nil, nil
		g.count--
		if g.head == nil {
			if g.ridx >= 0 {
				q.ready.remove(g)
			}
			delete(q.groups, g.id)
		} else {
			q.refresh(g)
		}
		m.g = nil
	}
	if len(q.bars) > 0 {
		q.removed(m)
	}
}

// advance moves messages whose time has come into the visible heap.
func (q *queue) advance(now int64) {
	q.lastNow = now
	for q.delayed.len() > 0 && q.delayed.top().at <= now {
		q.place(q.delayed.top(), now)
	}
	for q.inflight.len() > 0 && q.inflight.top().at <= now {
		q.place(q.inflight.top(), now)
	}
}

// clear forgets every message (purge, delete); the dedup windows stay.
func (q *queue) clear() {
	*q.pb -= q.bytes
	q.bytes = 0
	q.msgs = map[ids.ID]*msg{}
	q.visible, q.delayed, q.inflight = msgHeap{byPriority: true}, msgHeap{}, msgHeap{}
	q.expiry = msgHeap{expiry: true}
	q.groups = map[string]*group{}
	q.ready = groupHeap{}
	q.keys, q.keyOf = nil, nil
	q.bars, q.before, q.held = nil, 0, 0
}

// nextAt is the earliest time a delayed or in-flight message becomes visible (0: none).
func (q *queue) nextAt() int64 {
	var at int64
	if q.delayed.len() > 0 {
		at = q.delayed.top().at
	}
	if q.inflight.len() > 0 && (at == 0 || q.inflight.top().at < at) {
		at = q.inflight.top().at
	}
	return at
}

// receiveCount is the message's receives that count: cancelled deliveries do not
// (docs/delivery-options.md#cancel).
func (m *msg) receiveCount() int { return int(m.attempt) - int(m.cancels) }

// delivery is the Attempt of m's current delivery, as handles name it.
func (m *msg) delivery() uint32 { return m.base + m.attempt }

// nextBase is the base m arrives with in the queue a dead-letter or a move takes it to: its
// attempts go on from its current one. A message without a base may have been stored by a
// version whose dead-letters and moves restarted attempts at 0, so its earlier handles are
// unknown: its base jumps by engine.DeliveryJump beyond them.
func (m *msg) nextBase() uint32 {
	if m.base > 0 {
		return m.delivery()
	}
	return m.attempt + engine.DeliveryJump
}
