package embeddedengine

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/engine"
	"github.com/queueshq/queues/pkg/ids"
)

// writes collects one operation's record changes; they are encoded under e.mu (so they are a
// snapshot of the index) and applied by the committer.
type writes struct {
	puts    []kv
	dels    []kv // value unused
	moves   []dlqMove
	touched map[ids.ID]bool // queues to wake after the commit
}

type kv struct {
	bucket []byte
	k, v   []byte
}

// dlqMove copies a message's payload from the source queue to the dead-letter queue, adding
// the dead-letter information, inside the commit (the payload is only on disk).
type dlqMove struct {
	from, to []byte
	info     engine.DeadLetterInfo
}

func (w *writes) put(b []byte, k, v []byte) { w.puts = append(w.puts, kv{b, k, v}) }
func (w *writes) del(b []byte, k []byte)    { w.dels = append(w.dels, kv{bucket: b, k: k}) }

func (w *writes) wake(q ids.ID) {
	if w.touched == nil {
		w.touched = map[ids.ID]bool{}
	}
	w.touched[q] = true
}

func (w *writes) empty() bool { return len(w.puts) == 0 && len(w.dels) == 0 && len(w.moves) == 0 }

func (w *writes) putMsg(q *queue, m *msg) { w.put(bucketState, key(q.id, m.id), encodeState(m)) }
func (w *writes) putQueue(q *queue)       { w.put(bucketQueue, slices.Clone(q.id[:]), encodeQueue(q)) }
func (w *writes) delMsg(q *queue, id ids.ID) {
	k := key(q.id, id)
	w.del(bucketState, k)
	w.del(bucketPayload, k)
}

func (w *writes) apply(tx *bolt.Tx) error {
	// Moves first: they read payloads that the deletions below remove.
	for _, mv := range w.moves {
		raw := tx.Bucket(bucketPayload).Get(mv.from)
		if raw == nil {
			continue // already moved by an earlier transaction
		}
		pl, err := decodePayload(raw)
		if err != nil {
			continue // an undecodable message is dropped rather than blocking every commit
		}
		info := mv.info
		pl.DeadLetter = &info
		if err := tx.Bucket(bucketPayload).Put(mv.to, encodePayload(pl)); err != nil {
			return err
		}
	}
	for _, d := range w.dels {
		if err := tx.Bucket(d.bucket).Delete(d.k); err != nil {
			return err
		}
	}
	for _, p := range w.puts {
		if err := tx.Bucket(p.bucket).Put(p.k, p.v); err != nil {
			return err
		}
	}
	return nil
}

// commit submits w (call under e.mu) and returns the wait for it; nothing to write answers at once.
func (e *Engine) commit(w *writes) <-chan error {
	if w.empty() {
		done := make(chan error, 1)
		done <- nil
		return done
	}
	return e.submit(w.apply)
}

func (e *Engine) wakeAll(w *writes) {
	for q := range w.touched {
		e.notify(q)
	}
}

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
				dks[i] = "i" + m.DedupID
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
	if err := overLimit(qi, q, msgs, dks, sizes, now); err != nil {
		e.mu.Unlock()
		return nil, err
	}
	for i, m := range msgs {
		if dk := dks[i]; dk != "" {
			if d, ok := qi.dedup[dk]; ok && d.expiresAt > now {
				res[i] = engine.SendResult{MessageID: d.id, Duplicate: true, Partition: -1}
				continue
			}
		}
		delay := q.Delay
		if m.Delay != nil && !fifo {
			delay = *m.Delay
		}
		mm := &msg{id: ids.New(), seq: qi.nextSeq, sentAt: now, expiresAt: now + ret, at: now + max(delay, 0).Milliseconds(), size: sizes[i]}
		qi.nextSeq++
		group := ""
		if fifo {
			group = m.GroupID
		}
		qi.add(mm, group, now)
		w.putMsg(qi, mm)
		w.put(bucketPayload, key(qi.id, mm.id), pls[i])
		if dk := dks[i]; dk != "" {
			d := dedupEntry{id: mm.id, expiresAt: now + engine.DedupWindow.Milliseconds()}
			qi.dedup[dk] = d
			qi.dedupQ = append(qi.dedupQ, dedupItem{key: dk, expiresAt: d.expiresAt})
			w.put(bucketDedup, dedupKey(qi.id, dk), encodeDedup(d))
		}
		res[i] = engine.SendResult{MessageID: mm.id}
	}
	w.putQueue(qi)
	done := e.commit(&w)
	e.mu.Unlock()
	if err := wait(done); err != nil {
		return nil, err
	}
	e.notify(q.ID)
	return res, nil
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
		return engine.ErrStoredBytesExceeded(q.MaxStoredBytes)
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
			nm := &msg{id: m.id, seq: di.nextSeq, sentAt: m.sentAt, expiresAt: now + retention(*dlq).Milliseconds(), at: now, size: m.size}
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
	w.del(bucketPayload, from)
}

// Receive claims up to req.Max visible messages: on standard queues the earliest visible
// first; on fifo queues, group by group (oldest first message first), each group's visible
// messages in order from its head, skipping groups with a message in flight.
func (e *Engine) Receive(ctx context.Context, q engine.Queue, req engine.ReceiveRequest) (engine.ReceiveResult, error) {
	if err := ctxErr(ctx); err != nil {
		return engine.ReceiveResult{}, err
	}
	if err := e.check(); err != nil {
		return engine.ReceiveResult{}, err
	}
	want := min(max(req.Max, 1), engine.MaxBatch)
	vis := max(req.Visibility, 0).Milliseconds()
	dlq, maxrc := redriveOf(q)
	now := e.nowMs()
	var w writes
	var taken []*msg
	e.mu.Lock()
	qi := e.queueOf(q.ID, q.Type)
	qi.advance(now)
	// consider handles one visible candidate; it reports whether m was taken.
	consider := func(m *msg) {
		switch {
		case m.expiresAt <= now:
			qi.remove(m)
			w.delMsg(qi, m.id)
		case maxrc > 0 && int(m.attempt) >= maxrc:
			e.moveOut(&w, qi, m, dlq, engine.RedriveReason, now)
		default:
			qi.markTaking(m)
			taken = append(taken, m)
		}
	}
	if !qi.fifo {
		for len(taken) < want && qi.visible.len() > 0 {
			consider(qi.visible.top())
		}
	} else {
		for len(taken) < want && len(qi.ready.a) > 0 {
			g := qi.ready.a[0]
			progressed := false
			for m := g.head; m != nil && len(taken) < want && m.st == stVisible; {
				next := m.gnext
				consider(m)
				progressed = true
				m = next
			}
			qi.refresh(g) // its head is no longer visible, or it has a message in flight
			if !progressed {
				qi.ready.remove(g) // cannot happen while the index is consistent; never spin
			}
		}
	}
	type snap struct {
		m engine.Received
		k []byte
	}
	out := make([]snap, len(taken))
	for i, m := range taken {
		m.attempt++
		m.receivedAt = now
		m.at = now + vis
		qi.place(m, now)
		w.putMsg(qi, m)
		r := engine.Received{
			Delivery:           engine.Delivery{Queue: q.ID, Partition: 0, MessageID: m.id, Attempt: m.attempt},
			ReceiveCount:       int(m.attempt),
			SentAt:             fromMs(m.sentAt),
			VisibilityDeadline: fromMs(now + vis),
		}
		if m.g != nil {
			r.GroupID = m.g.id
			r.SequenceNumber = m.seq
		}
		out[i] = snap{m: r, k: key(qi.id, m.id)}
	}
	var nextAt int64
	if len(taken) == 0 {
		nextAt = qi.nextAt()
	}
	done := e.commit(&w)
	e.mu.Unlock()
	if err := wait(done); err != nil {
		return engine.ReceiveResult{}, err
	}
	e.wakeAll(&w)
	var res engine.ReceiveResult
	if len(out) == 0 {
		res.NextVisibleAt = timeOrZero(nextAt)
		return res, nil
	}
	err := e.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketPayload)
		for _, s := range out {
			raw := b.Get(s.k)
			if raw == nil {
				continue // purged or deleted since the claim
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
	if err != nil {
		return engine.ReceiveResult{}, &apierr.Error{Code: apierr.Unavailable, Message: fmt.Sprintf("receive: reading messages: %v", err)}
	}
	return res, nil
}

// live returns the message a delivery names if the delivery is the message's current one and
// the message has not expired. Call under e.mu.
func live(qi *queue, q engine.Queue, d engine.Delivery, now int64) *msg {
	if qi == nil || d.Queue != q.ID || d.Partition != 0 || d.Attempt == 0 {
		return nil
	}
	m := qi.msgs[d.MessageID]
	if m == nil || m.attempt != d.Attempt || m.expiresAt <= now || m.st == stTaking {
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
			return apierr.ErrStale
		}
		qi.remove(m)
		w.delMsg(qi, m.id)
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
			return apierr.Invalid("visibilityTimeoutSeconds", "must be between 0 and %d", int(engine.MaxVisibility.Seconds()))
		}
		m := live(qi, q, c.Delivery, now)
		if m == nil {
			return apierr.ErrStale
		}
		d := c.Visibility.Milliseconds()
		if now+d > m.receivedAt+engine.MaxInFlight.Milliseconds() {
			return apierr.New(apierr.VisibilityLimitExceeded,
				"the new deadline would be more than %s after the message was received", engine.MaxInFlight)
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
	dlq, _ := redriveOf(q)
	return e.settle(ctx, q, len(rs), func(qi *queue, w *writes, i int, now int64) error {
		m := live(qi, q, rs[i].Delivery, now)
		if m == nil {
			return apierr.ErrStale
		}
		reason := rs[i].Reason
		if reason == "" {
			reason = engine.DefaultDLQReason
		}
		e.moveOut(w, qi, m, dlq, reason, now)
		if qi.fifo {
			w.wake(qi.id)
		}
		return nil
	})
}

// Purge removes every message sent before it, at most once per engine.PurgeInterval per queue
// (engine clock). The index forgets them at once; their records are deleted in the background
// (a restart skips them by their sequence number).
func (e *Engine) Purge(ctx context.Context, q engine.Queue) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if err := e.check(); err != nil {
		return err
	}
	now := e.nowMs()
	e.mu.Lock()
	qi := e.queueOf(q.ID, q.Type)
	if next := qi.lastPurge + engine.PurgeInterval.Milliseconds(); qi.lastPurge != 0 && now < next {
		e.mu.Unlock()
		d := time.Duration(next-now) * time.Millisecond
		return apierr.New(apierr.PurgeTooSoon, "a queue can be purged once every %s; the next purge is possible in %s",
			engine.PurgeInterval, d.Round(time.Second)).WithRetryAfter(d)
	}
	qi.lastPurge = now
	done := e.purge(qi)
	e.mu.Unlock()
	if err := wait(done); err != nil {
		return err
	}
	e.notify(q.ID)
	e.clean(q.ID)
	return nil
}

// purge forgets every message of qi and records the watermark. Call under e.mu.
func (e *Engine) purge(qi *queue) <-chan error {
	qi.purgeSeq = qi.nextSeq
	qi.clear()
	var w writes
	w.putQueue(qi)
	return e.commit(&w)
}

// clean asks the cleaner to delete a queue's purged records.
func (e *Engine) clean(q ids.ID) {
	select {
	case e.cleaning <- q:
	default: // the next Sweep asks again
		e.mu.Lock()
		if qi := e.queues[q]; qi != nil {
			qi.dirty = true
		}
		e.mu.Unlock()
	}
}

// DeleteQueue removes every message of the queue and its dedup windows; its handles go stale.
func (e *Engine) DeleteQueue(ctx context.Context, id ids.ID) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if err := e.check(); err != nil {
		return err
	}
	e.mu.Lock()
	qi := e.queues[id]
	if qi == nil {
		e.mu.Unlock()
		e.notify(id)
		return nil
	}
	qi.purgeSeq = qi.nextSeq
	qi.lastPurge = 0
	qi.clear()
	var w writes
	w.putQueue(qi)
	for k := range qi.dedup {
		w.del(bucketDedup, dedupKey(id, k))
	}
	qi.dedup, qi.dedupQ = map[string]dedupEntry{}, nil
	done := e.commit(&w)
	e.mu.Unlock()
	if err := wait(done); err != nil {
		return err
	}
	e.notify(id)
	e.clean(id)
	return nil
}

// Stats counts the queue's messages by state. Counts are exact; expired messages count until a
// receive or Sweep removes them. OldestSentAt is exact up to exactCountLimit messages, and
// beyond that the oldest among the first messages to expire.
func (e *Engine) Stats(ctx context.Context, q engine.Queue) (engine.Stats, error) {
	if err := ctxErr(ctx); err != nil {
		return engine.Stats{}, err
	}
	if err := e.check(); err != nil {
		return engine.Stats{}, err
	}
	now := e.nowMs()
	st := engine.Stats{Partitions: 1}
	e.mu.Lock()
	defer e.mu.Unlock()
	qi := e.queues[q.ID]
	if qi == nil {
		return st, nil
	}
	qi.advance(now)
	st.Visible, st.InFlight, st.Delayed = int64(qi.visible.len()), int64(qi.inflight.len()), int64(qi.delayed.len())
	st.InFlight += int64(len(qi.msgs)) - st.Visible - st.InFlight - st.Delayed // claims in progress
	// Messages past their retention are gone, swept or not.
	qi.expiry.eachExpired(now, func(m *msg) {
		switch m.st {
		case stVisible:
			st.Visible--
		case stDelayed:
			st.Delayed--
		default: // in flight, or being claimed
			st.InFlight--
		}
	})
	st.Truncated = st.Visible > exactCountLimit || st.InFlight > exactCountLimit || st.Delayed > exactCountLimit
	var oldest int64
	consider := func(m *msg) {
		if m.expiresAt > now && (oldest == 0 || m.sentAt < oldest) {
			oldest = m.sentAt
		}
	}
	if len(qi.msgs) <= exactCountLimit {
		for _, m := range qi.msgs {
			consider(m)
		}
	} else {
		for _, m := range qi.expiry.a[:min(64, len(qi.expiry.a))] {
			consider(m)
		}
	}
	st.OldestSentAt = timeOrZero(oldest)
	return st, nil
}

// Browse limits.
const (
	DefaultBrowseLimit = 100
	MaxBrowseLimit     = 1000
)

func encodeCursor(s engine.State, at int64, seq uint64) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "%s|%d|%d", s, at, seq))
}

func decodeCursor(s engine.State, v string) (int64, uint64, error) {
	bad := apierr.Invalid("cursor", "malformed cursor")
	raw, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		return 0, 0, bad
	}
	parts := strings.Split(string(raw), "|")
	if len(parts) != 3 || parts[0] != string(s) {
		return 0, 0, bad
	}
	at, err1 := strconv.ParseInt(parts[1], 10, 64)
	seq, err2 := strconv.ParseUint(parts[2], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, bad
	}
	return at, seq, nil
}

// Browse pages through the messages of one state in (time, sequence) order without changing
// any. Expired messages are left out. A page costs one pass over the state's messages.
func (e *Engine) Browse(ctx context.Context, q engine.Queue, req engine.BrowseRequest) (engine.BrowsePage, error) {
	if err := ctxErr(ctx); err != nil {
		return engine.BrowsePage{}, err
	}
	var st uint8
	switch req.State {
	case engine.StateVisible:
		st = stVisible
	case engine.StateInFlight:
		st = stInFlight
	case engine.StateDelayed:
		st = stDelayed
	default:
		return engine.BrowsePage{}, apierr.Invalid("state", "must be visible, inFlight or delayed")
	}
	limit := req.Limit
	if limit <= 0 {
		limit = DefaultBrowseLimit
	}
	limit = min(limit, MaxBrowseLimit)
	var curAt int64
	var curSeq uint64
	hasCur := req.Cursor != ""
	if hasCur {
		var err error
		if curAt, curSeq, err = decodeCursor(req.State, req.Cursor); err != nil {
			return engine.BrowsePage{}, err
		}
	}
	if err := e.check(); err != nil {
		return engine.BrowsePage{}, err
	}
	now := e.nowMs()
	type snap struct {
		m   engine.BrowsedMessage
		at  int64
		seq uint64
		k   []byte
	}
	var sel []snap
	more := false
	e.mu.Lock()
	if qi := e.queues[q.ID]; qi != nil {
		qi.advance(now)
		after := func(m *msg) bool { return !hasCur || m.at > curAt || (m.at == curAt && m.seq > curSeq) }
		lessKey := func(a, b *msg) bool { return a.at < b.at || (a.at == b.at && a.seq < b.seq) }
		// Keep the limit+1 smallest candidates in a max-heap: one beyond the page tells
		// whether anything follows it.
		keep := limit + 1
		best := make([]*msg, 0, keep)
		down := func(i int) {
			for {
				l := 2*i + 1
				if l >= len(best) {
					return
				}
				j := l
				if r := l + 1; r < len(best) && lessKey(best[l], best[r]) {
					j = r
				}
				if !lessKey(best[i], best[j]) {
					return
				}
				best[i], best[j] = best[j], best[i]
				i = j
			}
		}
		for _, m := range qi.heapOf(st).a {
			if m.expiresAt <= now || !after(m) {
				continue
			}
			if len(best) < keep {
				best = append(best, m)
				for j := len(best) - 1; j > 0; {
					i := (j - 1) / 2
					if !lessKey(best[i], best[j]) {
						break
					}
					best[i], best[j] = best[j], best[i]
					j = i
				}
			} else if lessKey(m, best[0]) {
				best[0] = m
				down(0)
			}
		}
		slices.SortFunc(best, func(a, b *msg) int {
			if lessKey(a, b) {
				return -1
			}
			return 1
		})
		more = len(best) > limit
		for _, m := range best[:min(len(best), limit)] {
			b := engine.BrowsedMessage{
				MessageID: m.id, ReceiveCount: int(m.attempt), SentAt: fromMs(m.sentAt),
				VisibleAt: fromMs(m.at), State: req.State,
			}
			if m.g != nil {
				b.GroupID, b.SequenceNumber = m.g.id, m.seq
			}
			sel = append(sel, snap{m: b, at: m.at, seq: m.seq, k: key(qi.id, m.id)})
		}
	}
	e.mu.Unlock()
	var page engine.BrowsePage
	if len(sel) == 0 {
		return page, nil
	}
	err := e.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketPayload)
		for _, s := range sel {
			raw := b.Get(s.k)
			if raw == nil {
				continue
			}
			pl, err := decodePayload(raw)
			if err != nil {
				continue
			}
			s.m.Body, s.m.Attributes, s.m.DeadLetter = pl.Body, pl.Attributes, pl.DeadLetter
			page.Messages = append(page.Messages, s.m)
		}
		return nil
	})
	if err != nil {
		return engine.BrowsePage{}, &apierr.Error{Code: apierr.Unavailable, Message: fmt.Sprintf("browse: %v", err)}
	}
	if more {
		last := sel[len(sel)-1]
		page.NextCursor = encodeCursor(req.State, last.at, last.seq)
	}
	return page, nil
}

var errNoGroups = apierr.Invalid("", "groups exist only on fifo queues")

// Group listing limits.
const (
	DefaultGroupsLimit = 100
	MaxGroupsLimit     = 1000
)

// Groups lists a fifo queue's groups in group id order.
func (e *Engine) Groups(ctx context.Context, q engine.Queue, limit int, cursor string) (engine.GroupPage, error) {
	if err := ctxErr(ctx); err != nil {
		return engine.GroupPage{}, err
	}
	if q.Type != engine.FIFO {
		return engine.GroupPage{}, errNoGroups
	}
	if limit <= 0 {
		limit = DefaultGroupsLimit
	}
	limit = min(limit, MaxGroupsLimit)
	after := ""
	if cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(cursor)
		a, ok := strings.CutPrefix(string(raw), "g|")
		if err != nil || !ok || a == "" {
			return engine.GroupPage{}, apierr.Invalid("cursor", "malformed cursor")
		}
		after = a
	}
	if err := e.check(); err != nil {
		return engine.GroupPage{}, err
	}
	now := e.nowMs()
	e.mu.Lock()
	defer e.mu.Unlock()
	var page engine.GroupPage
	qi := e.queues[q.ID]
	if qi == nil {
		return page, nil
	}
	qi.advance(now)
	names := make([]string, 0, len(qi.groups))
	for id := range qi.groups {
		if id > after {
			names = append(names, id)
		}
	}
	slices.Sort(names)
	more := len(names) > limit
	names = names[:min(limit, len(names))]
	for _, id := range names {
		g := qi.groups[id]
		page.Groups = append(page.Groups, engine.Group{GroupID: id, Messages: g.count, InFlight: g.inflight > 0})
	}
	if more {
		page.NextCursor = base64.RawURLEncoding.EncodeToString([]byte("g|" + names[len(names)-1]))
	}
	return page, nil
}

// PurgeGroup removes one fifo group's messages, in flight or not; their handles go stale.
func (e *Engine) PurgeGroup(ctx context.Context, q engine.Queue, groupID string) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if q.Type != engine.FIFO {
		return errNoGroups
	}
	if err := e.check(); err != nil {
		return err
	}
	var w writes
	e.mu.Lock()
	if qi := e.queues[q.ID]; qi != nil {
		if g := qi.groups[groupID]; g != nil {
			for m := g.head; m != nil; {
				next := m.gnext
				qi.remove(m)
				w.delMsg(qi, m.id)
				m = next
			}
		}
	}
	done := e.commit(&w)
	e.mu.Unlock()
	if err := wait(done); err != nil {
		return err
	}
	e.notify(q.ID)
	return nil
}

// Sweep deletes expired messages and dedup windows (in bounded chunks) and restarts the
// cleaning of purged records, for the queues given.
func (e *Engine) Sweep(ctx context.Context, qs []engine.Queue) error {
	if err := e.check(); err != nil {
		return err
	}
	for _, q := range qs {
		for {
			if err := ctxErr(ctx); err != nil {
				return err
			}
			more, err := e.sweepChunk(q)
			if err != nil {
				return err
			}
			if !more {
				break
			}
		}
	}
	return nil
}

func (e *Engine) sweepChunk(q engine.Queue) (bool, error) {
	now := e.nowMs()
	var w writes
	n := 0
	e.mu.Lock()
	qi := e.queues[q.ID]
	if qi == nil {
		e.mu.Unlock()
		return false, nil
	}
	if qi.dirty {
		qi.dirty = false
		select {
		case e.cleaning <- q.ID:
		default:
			qi.dirty = true
		}
	}
	for qi.expiry.len() > 0 && qi.expiry.top().expiresAt <= now && n < sweepChunk {
		m := qi.expiry.top()
		qi.remove(m)
		w.delMsg(qi, m.id)
		n++
	}
	for len(qi.dedupQ) > 0 && qi.dedupQ[0].expiresAt <= now && n < sweepChunk {
		it := qi.dedupQ[0]
		qi.dedupQ = qi.dedupQ[1:]
		if d, ok := qi.dedup[it.key]; ok && d.expiresAt == it.expiresAt {
			delete(qi.dedup, it.key)
			w.del(bucketDedup, dedupKey(qi.id, it.key))
		}
		n++
	}
	if len(qi.dedupQ) == 0 {
		qi.dedupQ = nil
	}
	done := e.commit(&w)
	e.mu.Unlock()
	return n >= sweepChunk, wait(done)
}
