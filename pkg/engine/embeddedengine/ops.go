package embeddedengine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/filter"
	"github.com/queueshq/queues/pkg/ids"
)

// CreateQueue records the queue's type so its index can be rebuilt before its first message.
func (e *Engine) CreateQueue(ctx context.Context, q engine.Queue) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	e.mu.Lock()
	qi, _ := e.queueFor(q)
	var w writes
	w.putQueue(qi)
	done := e.commit(&w)
	e.mu.Unlock()
	return wait(done)
}

// Send stores the messages; it answers after their records are on disk. On fifo queues a send
// whose dedup key was seen within engine.DedupWindow answers the original id as a duplicate.
func (e *Engine) Send(ctx context.Context, q engine.Queue, msgs []engine.Message) ([]engine.SendResult, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	if err := e.check(); err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, nil
	}
	fifo := q.Type == engine.FIFO
	pls := make([][]byte, len(msgs))
	dks := make([]string, len(msgs))
	sizes := make([]uint32, len(msgs))
	for i, m := range msgs {
		pls[i] = encodePayload(&payload{Body: m.Body, Attributes: m.Attributes})
		sizes[i] = uint32(engine.PayloadBytes(m.Body, m.Attributes))
		if fifo {
			switch {
			case m.DedupID != "":
				dks[i] = explicitDedupKey(m.DedupID)
			case q.ContentBasedDedup:
				sum := sha256.Sum256([]byte(m.Body))
				dks[i] = "h" + string(sum[:])
			}
		}
	}
	now := e.nowMs()
	ret := retention(q).Milliseconds()
	res := make([]engine.SendResult, len(msgs))
	var w writes
	e.mu.Lock()
	qi, _ := e.queueFor(q)
	steps, err := e.sendLimit(qi, q, msgs, dks, sizes, now)
	if err != nil {
		e.mu.Unlock()
		return nil, err
	}
	stored := make([]*msg, len(msgs))
	for i, m := range msgs {
		if steps != nil && steps[i] != nil && (steps[i].err != nil || steps[i].into != nil || steps[i].intoIdx >= 0) {
			res[i] = e.mergeStep(&w, qi, steps[i], stored)
			continue
		}
		if dk := dks[i]; dk != "" {
			if d, ok := qi.dedup[dk]; ok && d.expiresAt > now {
				res[i] = engine.SendResult{MessageID: d.id, Duplicate: true, Partition: -1, SequenceNumber: d.seq}
				continue
			}
		}
		ckey := ""
		if steps != nil && steps[i] != nil {
			ckey = m.Key
		}
		mm := store(&w, qi, q, m, newMsg{id: ids.New(), ckey: ckey, dk: dks[i], pl: pls[i], size: sizes[i], now: now, ret: ret})
		stored[i] = mm
		res[i] = engine.SendResult{MessageID: mm.id}
		if fifo {
			res[i].SequenceNumber = mm.seq
		}
	}
	w.putQueue(qi)
	done := e.commit(&w)
	e.mu.Unlock()
	if err := wait(done); err != nil {
		return nil, err
	}
	e.watch.NotifyDigests(q.ID, sendDigests(msgs)) // only receives whose filter may match wake
	return res, nil
}

// explicitDedupKey is the dedup key of an explicit dedup id. A content-based key is "h" and
// the body's SHA-256; an explicit id that spells such a hash (64 lowercase hex digits, as the
// SQS door shows a content-based message's MessageDeduplicationId) is the same id (docs/sqs.md),
// so it takes that key, and any other id "i" and the id.
func explicitDedupKey(id string) string {
	if len(id) == 2*sha256.Size && strings.ToLower(id) == id {
		if sum, err := hex.DecodeString(id); err == nil {
			return "h" + string(sum)
		}
	}
	return "i" + id
}

// newMsg is what store needs of a message besides the send's: its id, its conflation key
// ("" for none), fifo dedup key ("" for none), encoded payload and size, and the times.
type newMsg struct {
	id       ids.ID
	ckey, dk string
	pl       []byte
	size     uint32
	now, ret int64
}

// store adds message m to qi's index and its records to w: the one insert path of sends and
// topic copies (Copy), so receive, browse, stats and stored bytes see both alike. Call under
// e.mu.
func store(w *writes, qi *queue, q engine.Queue, m engine.Message, n newMsg) *msg {
	fifo := q.Type == engine.FIFO
	delay := q.Delay
	if m.Delay != nil && !fifo {
		delay = *m.Delay
	}
	mm := &msg{id: n.id, seq: qi.nextSeq, sentAt: n.now, expiresAt: n.now + n.ret, at: n.now + max(delay, 0).Milliseconds(), size: n.size,
		barrier: m.Barrier && !fifo, endGroup: m.EndGroup && fifo}
	if !fifo {
		mm.prio = uint8(min(max(m.Priority, 0), engine.MaxPriority))
	}
	qi.nextSeq++
	group := ""
	if fifo {
		group = m.GroupID
	}
	qi.add(mm, group, n.now)
	if n.ckey != "" {
		qi.index(mm, n.ckey, m.Body, m.Attributes)
	}
	w.putMsg(qi, mm)
	w.put(bucketPayloads, key(qi.id, mm.id), n.pl)
	if mm.barrier {
		w.put(bucketBarrier, key(qi.id, mm.id), []byte{1})
	}
	if n.dk != "" {
		d := dedupEntry{id: mm.id, expiresAt: n.now + engine.DedupWindow.Milliseconds(), seq: mm.seq}
		qi.dedup[n.dk] = d
		qi.dedupQ = append(qi.dedupQ, dedupItem{key: n.dk, expiresAt: d.expiresAt})
		w.put(bucketDedup, dedupKey(qi.id, n.dk), encodeDedup(d))
	}
	return mm
}

// sendDigests are the attribute digests a send's wake-up names (filter.WakeDigests).
func sendDigests(msgs []engine.Message) []uint64 {
	attrs := make([]map[string]string, len(msgs))
	for i, m := range msgs {
		attrs[i] = m.Attributes
	}
	return filter.WakeDigests(attrs...)
}

// overLimit refuses a send that would take the project's stored bytes past q.MaxStoredBytes,
// counting the messages it would store (not duplicates, nor repeats of a dedup key within the
// batch). Call under e.mu, before changing anything: the check and the store are one step.
func overLimit(qi *queue, q engine.Queue, msgs []engine.Message, dks []string, sizes []uint32, now int64) error {
	if q.MaxStoredBytes <= 0 {
		return nil
	}
	var add int64
	seen := map[string]bool{}
	for i := range msgs {
		if dk := dks[i]; dk != "" {
			if d, ok := qi.dedup[dk]; (ok && d.expiresAt > now) || seen[dk] {
				continue
			}
			seen[dk] = true
		}
		add += int64(sizes[i])
	}
	if add > 0 && *qi.pb+add > q.MaxStoredBytes {
		return &engine.StoredBytesExceeded{Limit: q.MaxStoredBytes}
	}
	return nil
}

// redriveOf returns the dead-letter queue and max receive count of q (nil, 0 without a policy).
func redriveOf(q engine.Queue) (*engine.Queue, int) {
	if q.Redrive == nil || q.Redrive.DeadLetter == nil {
		return nil, 0
	}
	return q.Redrive.DeadLetter, max(q.Redrive.MaxReceiveCount, 1)
}

// moveOut takes m out of qi and, with a dead-letter queue, into it (same id, group, send time;
// receiveCount 0; retention from now). Call under e.mu.
func (e *Engine) moveOut(w *writes, qi *queue, m *msg, dlq *engine.Queue, reason string, now int64) {
	group := ""
	if m.g != nil {
		group = m.g.id
	}
	qi.remove(m)
	from := key(qi.id, m.id)
	if dlq != nil {
		di, _ := e.queueFor(*dlq)
		if _, dup := di.msgs[m.id]; !dup {
			nm := &msg{id: m.id, seq: di.nextSeq, sentAt: m.sentAt, expiresAt: now + retention(*dlq).Milliseconds(), at: now, size: m.size,
				base: m.nextBase()}
			di.nextSeq++
			if !di.fifo {
				group = ""
			}
			di.add(nm, group, now)
			w.moves = append(w.moves, dlqMove{from: from, to: key(di.id, m.id),
				info: engine.DeadLetterInfo{SourceQueue: qi.id, Reason: reason, At: fromMs(now)}})
			w.putMsg(di, nm)
			w.putQueue(di)
			w.wake(di.id)
		}
	}
	w.del(bucketState, from)
	w.del(bucketPayloads, from)
	if m.barrier {
		w.del(bucketBarrier, from) // a dead-lettered barrier is an ordinary message there
	}
}

// Receive claims up to req.Max visible messages: on standard queues the highest priority, then the earliest visible
// first; on fifo queues, group by group (oldest first message first), each group's visible
// messages in order from its head, skipping groups with a message in flight.
func (e *Engine) Receive(ctx context.Context, q engine.Queue, req engine.ReceiveRequest) (engine.ReceiveResult, error) {
	if err := ctxErr(ctx); err != nil {
		return engine.ReceiveResult{}, err
	}
	if req.Consumer != nil {
		return e.receiveAsConsumer(ctx, q, req) // consumers.go
	}
	if q.Exclusive() && req.BindTo == "" {
		return engine.ReceiveResult{}, engine.ErrConsumerRequired
	}
	if err := e.check(); err != nil {
		return engine.ReceiveResult{}, err
	}
	want := min(max(req.Max, 1), engine.MaxBatch)
	vis := max(req.Visibility, 0).Milliseconds()
	_, maxrc := redriveOf(q)
	now := e.nowMs()
	var w writes
	var taken []*msg
	e.mu.Lock()
	qi := e.queueOf(q.ID, q.Type)
	qi.advance(now)
	var bd *binder // an exclusive receive's bindings
	if q.Exclusive() && qi.fifo {
		bd = qi.binderFor(q, req.BindTo, now)
	}
	// consider handles one visible candidate; it reports whether m was taken.
	consider := func(m *msg) {
		switch {
		case m.expiresAt <= now:
			qi.remove(m)
			w.delMsg(qi, m)
		case maxrc > 0 && m.receiveCount() >= maxrc: // cancelled deliveries do not count
			if m.endGroup {
				qi.settleBinding(m, now) // redriven is settled: the group's binding ends
			}
			e.deadLetterParking(&w, qi, q, m, engine.RedriveReason, now)
		default:
			qi.markTaking(m)
			taken = append(taken, m)
		}
	}
	var ferr error
	if !req.Filter.Empty() {
		ferr = e.takeFiltered(qi, req.Filter, bd, want, now, &taken, consider) // filter.go
	} else if !qi.fifo {
		for len(taken) < want && qi.visible.len() > 0 {
			consider(qi.visible.top())
		}
	} else {
		qi.takeGroups(bd, want, &taken, consider) // groupbind.go
	}
	out := make([]snap, len(taken))
	for i, m := range taken {
		out[i] = e.handOut(&w, qi, q, m, now, vis)
	}
	var nextAt int64
	if len(taken) == 0 {
		nextAt = qi.nextAt()
		if bd != nil && bd.relook > 0 && (nextAt == 0 || bd.relook < nextAt) {
			nextAt = bd.relook // a binding passed over lapses
		}
	}
	done := e.commit(&w)
	e.mu.Unlock()
	if err := wait(done); err != nil {
		return engine.ReceiveResult{}, err
	}
	e.wakeAll(&w)
	var res engine.ReceiveResult
	if ferr != nil && len(out) == 0 {
		return res, engine.StoreUnavailable("receive: reading attributes", ferr)
	}
	if len(out) == 0 {
		res.NextVisibleAt = timeOrZero(nextAt)
		return res, nil
	}
	if err := e.payloads(q, out, &res); err != nil {
		return engine.ReceiveResult{}, engine.StoreUnavailable("receive: reading messages", err)
	}
	return res, nil
}

// snap is a message handed out by a receive before its payload is read: k names the
// payload, raw holds it when the commit read it (at-most-once queues).
type snap struct {
	m   engine.Received
	k   []byte
	raw *[]byte
}

// handOut claims a taken message for this receive (call under e.mu): in flight until the
// deadline, or, on an at-most-once queue, removed in the receive's own commit, which reads
// its payload first.
func (e *Engine) handOut(w *writes, qi *queue, q engine.Queue, m *msg, now, vis int64) snap {
	m.attempt++
	m.cut = false
	r := engine.Received{
		Delivery:     engine.Delivery{Queue: q.ID, Partition: 0, MessageID: m.id, Attempt: m.delivery()},
		ReceiveCount: m.receiveCount(),
		SentAt:       fromMs(m.sentAt),
		Priority:     int(m.prio),
	}
	if m.g != nil {
		r.GroupID = m.g.id
		r.SequenceNumber = m.seq
	}
	s := snap{m: r, k: key(qi.id, m.id)}
	if q.AtMostOnce && !qi.fifo {
		s.raw = new([]byte)
		w.takes = append(w.takes, take{k: s.k, dst: s.raw})
		qi.remove(m)
		w.delMsg(qi, m)
		return s
	}
	m.receivedAt = now
	m.at = now + vis
	qi.place(m, now)
	w.putMsg(qi, m)
	s.m.VisibilityDeadline = fromMs(now + vis)
	return s
}

// payloads fills in the handed-out messages' bodies: read by the commit, or from the store.
// A message purged or deleted since the claim is left out.
func (e *Engine) payloads(q engine.Queue, out []snap, res *engine.ReceiveResult) error {
	return e.db.View(func(tx *bolt.Tx) error {
		b := payloadsIn(tx)
		for _, s := range out {
			var raw []byte
			if s.raw != nil {
				raw = *s.raw
			} else {
				raw = b.get(s.k)
			}
			if raw == nil {
				continue
			}
			pl, err := decodePayload(raw)
			if err != nil {
				e.log.Error("embeddedengine: undecodable message skipped", "queue", q.ID.String(), "error", err)
				continue
			}
			s.m.Body, s.m.Attributes, s.m.DeadLetter = pl.Body, pl.Attributes, pl.DeadLetter
			res.Messages = append(res.Messages, s.m)
		}
		return nil
	})
}

// live returns the message a delivery names if the delivery is the message's current one and
// the message has not expired. Call under e.mu.
func live(qi *queue, q engine.Queue, d engine.Delivery, now int64) *msg {
	if qi == nil || d.Queue != q.ID || d.Partition != 0 || d.Attempt == 0 {
		return nil
	}
	m := qi.msgs[d.MessageID]
	if m == nil || m.delivery() != d.Attempt || m.expiresAt <= now || m.st == stTaking {
		return nil
	}
	return m
}

// settle runs one settle operation: fn handles entry i under e.mu and returns its error.
func (e *Engine) settle(ctx context.Context, q engine.Queue, n int, fn func(qi *queue, w *writes, i int, now int64) error) ([]error, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	if err := e.check(); err != nil {
		return nil, err
	}
	errs := make([]error, n)
	if n == 0 {
		return errs, nil
	}
	now := e.nowMs()
	var w writes
	e.mu.Lock()
	qi := e.queues[q.ID]
	if qi != nil {
		qi.advance(now)
	}
	for i := range n {
		errs[i] = fn(qi, &w, i, now)
	}
	done := e.commit(&w)
	e.mu.Unlock()
	if err := wait(done); err != nil {
		return nil, err
	}
	e.wakeAll(&w)
	return errs, nil
}

// Ack deletes the messages of valid deliveries.
func (e *Engine) Ack(ctx context.Context, q engine.Queue, ds []engine.Delivery) ([]error, error) {
	return e.settle(ctx, q, len(ds), func(qi *queue, w *writes, i int, now int64) error {
		m := live(qi, q, ds[i], now)
		if m == nil {
			return engine.ErrStale
		}
		qi.settleBinding(m, now) // groupbind.go
		qi.remove(m)
		w.delMsg(qi, m)
		if qi.fifo {
			w.wake(qi.id) // the group may be free again
		}
		return nil
	})
}

// ChangeVisibility sets valid deliveries' deadlines to now+d (0 releases them), refusing a
// deadline more than engine.MaxInFlight after the receive.
func (e *Engine) ChangeVisibility(ctx context.Context, q engine.Queue, cs []engine.VisibilityChange) ([]error, error) {
	return e.settle(ctx, q, len(cs), func(qi *queue, w *writes, i int, now int64) error {
		c := cs[i]
		if c.Visibility < 0 || c.Visibility > engine.MaxVisibility { // the API refuses these first
			return engine.ErrBadVisibility
		}
		m := live(qi, q, c.Delivery, now)
		if m == nil {
			return engine.ErrStale
		}
		d := c.Visibility.Milliseconds()
		if now+d > m.receivedAt+engine.MaxInFlight.Milliseconds() {
			return engine.ErrVisibilityLimit
		}
		m.at = now + d
		qi.place(m, now)
		w.putMsg(qi, m)
		if d == 0 {
			w.wake(qi.id)
		}
		return nil
	})
}

// DeadLetter moves valid deliveries to the queue's dead-letter queue now, or deletes them when
// the queue has no redrive policy.
func (e *Engine) DeadLetter(ctx context.Context, q engine.Queue, rs []engine.DeadLetterRequest) ([]error, error) {
	followed := map[ids.ID]bool{} // moved already behind an earlier one of this call (parkGroup)
	return e.settle(ctx, q, len(rs), func(qi *queue, w *writes, i int, now int64) error {
		m := live(qi, q, rs[i].Delivery, now)
		if m == nil {
			if followed[rs[i].Delivery.MessageID] {
				return nil
			}
			return engine.ErrStale
		}
		reason := rs[i].Reason
		if reason == "" {
			reason = engine.DefaultDLQReason
		}
		qi.settleBinding(m, now) // groupbind.go
		for _, id := range e.deadLetterParking(w, qi, q, m, reason, now) {
			followed[id] = true
		}
		if qi.fifo {
			w.wake(qi.id)
		}
		return nil
	})
}
